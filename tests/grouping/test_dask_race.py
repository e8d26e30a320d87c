"""The grouping race on a Dask cluster (``netsim group --scheduler``): each pilot kept by the
actor where it first ran; the same pick and table as the local race."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import netsim

QUICK = ["run.until=60"]


def _without_wall(value):
    if isinstance(value, dict):
        return {k: _without_wall(v) for k, v in value.items() if "wall" not in k}
    if isinstance(value, list):
        return [_without_wall(v) for v in value]
    return value


def test_a_race_on_two_dask_workers_picks_and_ranks_as_the_local_race():
    distributed = pytest.importorskip("distributed")
    local = netsim.group("quickstart", overrides=QUICK, jobs=1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        dask = netsim.group("quickstart", overrides=QUICK, scheduler=cluster.scheduler_address)
        with distributed.Client(cluster.scheduler_address) as client:  # the pilots ran there
            prefixes = client.run_on_scheduler(
                lambda dask_scheduler: list(dask_scheduler.task_prefixes)
            )
    assert prefixes == ["Host"]  # the pilots' actors (netsim.tuning.dask_pool._Host)
    assert local["recommended"] and len(local["candidates"]) > 4
    assert _without_wall(dask) == _without_wall(local)


def test_an_unreachable_scheduler_is_refused_in_one_line_with_status_2():
    pytest.importorskip("distributed")
    # its own process: a Client that fails to connect leaves distributed's "IO loop" thread
    # running, and in this process it would keep later tests' pools from forking
    res = subprocess.run(
        [sys.executable, "-m", "netsim", "group", "quickstart", "--set", "run.until=60"]
        + ["--scheduler", "tcp://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DASK_NETSIM_SCHEDULER_TIMEOUT": "1s"},  # not the default 10 s
    )
    output = res.stdout + res.stderr
    assert res.returncode == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--scheduler" in lines[0] and "Traceback" not in output
