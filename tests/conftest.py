"""Shared fixtures: scenario dicts built in code, the shared data folder."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest

from netsim.config.scenario import parse_scenario

for _size in ("COLUMNS", "LINES"):  # the CLI fits its tables to COLUMNS when it is set:
    os.environ.pop(_size, None)  # the tests ask for the width they check, or none
ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


def base_raw(**sections) -> dict:
    """A small digits scenario; keyword arguments replace whole sections."""
    raw = {
        "name": "t",
        "run": {"seed": 3, "algorithm": "asgd", "until": 10.0, "batch_size": 8},
        "data": {"source": "digits", "labels": "odd_even"},
        "model": {"name": "logistic", "l2": 0.01},
        "workers": [
            {"name": "fast", "count": 2, "compute": 1.0},
            {"name": "slow", "count": 1, "compute": 2.4},
        ],
        "algorithms": {
            "ssgd": {"lr": 0.1},
            "asgd": {"lr": 0.1},
            "gsgd": {"lr": 0.1},
        },  # default groups: one per class
    }
    raw.update(copy.deepcopy(sections))
    return raw


def make_scenario(raw: dict, path: str = "test.toml"):
    return parse_scenario(raw, Path(path))


@pytest.fixture
def raw():
    return base_raw()


def mnist_dir() -> Path:
    return SHARED_DATA / "mnist"


needs_mnist = pytest.mark.skipif(
    not (SHARED_DATA / "mnist" / "train-images-idx3-ubyte.gz").exists(),
    reason="MNIST not found at ../shared/data/mnist (only in the project workspace)",
)


def central_differences(f, w, h=1e-5):
    """Gradient of the scalar *f* at *w* (d,) by central differences of step *h*: (d,)."""
    g = np.empty_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e[i] = h
        g[i] = (f(w + e) - f(w - e)) / (2 * h)
    return g


@pytest.fixture
def fork_beside_dask(monkeypatch):
    """Let the race's pool fork beside Dask's idle offload thread.

    The pool refuses to fork while another thread runs; the Dask sweep tests leave
    distributed's offload thread idle for the life of the process, and forking beside an
    idle thread is safe, so tests that fork count the threads without it."""
    import threading

    import netsim.tuning.pool as pool

    def active_count() -> int:
        return sum(not t.name.startswith("Dask-Offload") for t in threading.enumerate())

    monkeypatch.setattr(pool.threading, "active_count", active_count)


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """A test that runs the console entry in this process (netsim.signals.install) leaves
    pytest's SIGINT and SIGTERM handlers as they were."""
    import signal

    from netsim import signals

    old = {sig: signal.getsignal(sig) for sig in signals.STOP_SIGNALS}
    installed = signals._state["installed"]
    yield
    for sig, handler in old.items():
        signal.signal(sig, handler)
    signals._state["installed"] = installed


SLOWEST_FIRST = (
    "tests/test_documented_commands.py",
    "tests/test_signal_harness.py",
    "tests/sweeps/test_sweep_signals.py",
    "tests/testbed/test_real_run.py",
    "tests/results/test_plots.py",
    "tests/tuning/test_race.py",
    "tests/test_compare_dask.py",
    "tests/test_cli_usability.py",
    "tests/results/test_output_safety.py",
    "tests/config/test_bad_input.py",
    "tests/test_paper_story.py",
)
"""The modules that take longest (tens of seconds each on 2 cores), run first: pytest-xdist
hands whole modules to its workers in this order (``--dist loadfile``), so the two workers
end together instead of one running the longest module alone at the end."""


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}

    # a test's node id starts with its module's path from the root (pyproject's folder)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable
