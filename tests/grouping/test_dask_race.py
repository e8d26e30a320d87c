"""The grouping race on a Dask cluster (``netsim group --scheduler``): each pilot kept by the
actor where it first ran; the same pick and table as the local race."""

from __future__ import annotations

import pytest
from daskkit import refused_scheduler

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
    refused_scheduler("group", "quickstart", "--set", "run.until=60")
