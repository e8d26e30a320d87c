"""model.mmap_threshold: read and checked for torch models, refused for numpy ones, and with
it a freed large block leaves the resident set at once (glibc)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.workload.allocator import (
    DEFAULT_THRESHOLD,
    MAX_THRESHOLD,
    huge_pages_for_torch,
    map_large_blocks,
)

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _torch_model(**keys) -> dict:
    return {"backend": "torch", "name": "mlp", "hidden": [8], **keys}


def test_the_threshold_is_four_mebibytes_for_torch_models_and_zero_switches_it_off():
    pytest.importorskip("torch", reason="optional extra: pip install 'netsim[torch]'")
    assert DEFAULT_THRESHOLD == 4 * 2**20 and MAX_THRESHOLD == 32 * 2**20
    assert make_scenario(base_raw(model=_torch_model())).model.mmap_threshold == 4 * 2**20
    assert make_scenario(base_raw(model=_torch_model(mmap_threshold=0))).model.mmap_threshold == 0


@pytest.mark.parametrize("value", [-1, 32 * 2**20 + 1, 1.5, "4M"])
def test_a_threshold_out_of_range_names_the_key(value):
    pytest.importorskip("torch", reason="optional extra: pip install 'netsim[torch]'")
    with pytest.raises(ScenarioError) as err:
        make_scenario(base_raw(model=_torch_model(mmap_threshold=value)))
    assert err.value.key == "model.mmap_threshold"


def test_numpy_models_do_not_read_the_key():
    with pytest.raises(ScenarioError) as err:
        make_scenario(base_raw(model={"name": "logistic", "mmap_threshold": 0}))
    assert err.value.key == "model.mmap_threshold"
    assert "unknown key" in str(err.value)


@pytest.mark.parametrize("value", [0, MAX_THRESHOLD + 1])
def test_the_setting_refuses_a_threshold_glibc_would_not_take(value):
    with pytest.raises(ValueError):
        map_large_blocks(value)


RESIDENT_AFTER_FREE = textwrap.dedent(
    """
    import sys
    import numpy as np
    from pathlib import Path
    from netsim.workload.allocator import map_large_blocks

    def resident():
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

    if sys.argv[1] == "on":
        assert map_large_blocks(4 * 2**20)
    base = resident()
    for _ in range(3):  # the first free raises glibc's own threshold; the later blocks stay
        block = np.ones(20 * 2**20, np.uint8)
        del block
    print((resident() - base) / 2**20)
    """
)


@pytest.mark.skipif(not GLIBC, reason="mallopt's threshold is glibc's")
def test_with_the_threshold_a_freed_20_mib_block_leaves_the_resident_set():
    """Three 20 MiB blocks made, touched and freed in turn. glibc alone serves the second and
    third from its heap (its threshold rose to 20 MiB at the first free) and keeps 20 MiB
    resident after them (below its trim threshold, twice that); with a 4 MiB threshold each
    is a memory map of its own, unmapped at free: nothing stays."""
    # glibc's defaults: any MALLOC_*_ variable (Dask sets MALLOC_TRIM_THRESHOLD_ once a
    # cluster has run in this process) fixes its thresholds, and GLIBC_TUNABLES may too
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"
    }
    grown = {}
    for mode in ("off", "on"):
        out = subprocess.run(
            [sys.executable, "-c", RESIDENT_AFTER_FREE, mode],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        grown[mode] = float(out.stdout)
    assert grown["off"] >= 19, grown
    assert grown["on"] < 2, grown


def test_torch_is_asked_for_huge_pages_unless_the_user_said_otherwise(monkeypatch):
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    huge_pages_for_torch()
    assert os.environ["THP_MEM_ALLOC_ENABLE"] == "1"
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "0")
    huge_pages_for_torch()
    assert os.environ["THP_MEM_ALLOC_ENABLE"] == "0"
