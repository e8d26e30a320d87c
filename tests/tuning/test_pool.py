"""StickyPool: placement worked out by hand, state kept per key, the same outcomes for any jobs."""

from __future__ import annotations

import os
import threading

import pytest

from netsim.tuning.pool import StickyPool, usable_jobs

FORKS = usable_jobs(2) == 2  # Linux, no other Python thread
needs_fork = pytest.mark.skipif(not FORKS, reason="forking is not used on this platform")
pytestmark = pytest.mark.usefixtures("fork_beside_dask")


@pytest.fixture(autouse=True)
def _no_idle_dask_thread(monkeypatch, request):
    """An earlier test's Dask client leaves its idle offload thread for the whole process
    (distributed keeps it); the pool would then rightly refuse to fork. These tests are about
    the pool itself, so they count threads without that one (except the thread test)."""
    if request.node.name.startswith("test_jobs_fall_back"):
        return
    others = [t for t in threading.enumerate() if not t.name.startswith("Dask-Offload")]
    monkeypatch.setattr("netsim.tuning.pool.threading.active_count", lambda: len(others))


def test_assign_longest_first_then_owners_stay_and_moves_lower_the_peak():
    pool = StickyPool(lambda task: task, jobs=1)
    pool.jobs = 2  # placement only: nothing runs
    # costs 5, 3, 3, 1 (keys a-d): 5 -> p0; 3 -> p1; 3 -> p1 (3 < 5); 1 -> p0 (5 < 6)
    assert pool.assign(list("abcd"), [5, 3, 3, 1]) == [0, 1, 1, 0]
    # next batch: a (p0, 4) and b, c (p1, 4 + 4): p1 carries 8 against 4. Moving b or c away
    # costs 6 there (a replay): p0 = 10, worse than 8, so nothing moves.
    assert pool.assign(list("abc"), [4, 4, 4], moved=[6, 6, 6]) == [0, 1, 1]
    # with a replay of 5: p0 = 9 > 8, still no move; with 3: p0 = 7, p1 = 4 -> b moves (the first of
    # the ties found on p1 is b), and then nothing more helps
    assert pool.assign(list("abc"), [4, 4, 4], moved=[3, 3, 3]) == [0, 0, 1]
    assert pool.owner["b"] == 0
    # keyless tasks fill the least loaded process, ties to the lowest index
    assert pool.assign([None, None, None], [2, 2, 2]) == [0, 1, 0]


class Counter:
    """A stateful task function: per key, how many tasks this process ran for it."""

    def __init__(self):
        self.seen = {}

    def __call__(self, task):
        key, value = task
        self.seen[key] = self.seen.get(key, 0) + 1
        if value == "boom":
            raise ValueError("boom in a task")
        return key, value * 2, self.seen[key], os.getpid()


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_outcomes_in_task_order_and_state_stays_with_its_key(jobs):
    if jobs > 1 and not FORKS:
        pytest.skip("forking is not used on this platform")
    with StickyPool(Counter(), jobs) as pool:
        first = pool.run([(k, k) for k in range(6)], list(range(6)), [1] * 6)
        second = pool.run([(k, 10 + k) for k in range(6)], list(range(6)), [1] * 6)
    assert [o[:3] for o in first] == [(k, 2 * k, 1) for k in range(6)]
    assert [o[:3] for o in second] == [
        (k, 20 + 2 * k, 2) for k in range(6)
    ]  # the same process saw it before
    assert [o[3] for o in first] == [o[3] for o in second]
    assert len({o[3] for o in first}) == jobs


@needs_fork
def test_a_failing_child_raises_with_its_traceback_and_the_pool_closes():
    pool = StickyPool(Counter(), 2)
    with pytest.raises(RuntimeError, match="boom in a task"):
        pool.run([("a", 1), ("b", "boom")], ["a", "b"], [2, 1])  # b runs in the child
    assert pool._procs == []


def test_jobs_fall_back_to_one_when_another_thread_runs():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert usable_jobs(4) == 1
    finally:
        stop.set()
        thread.join()
    with pytest.raises(ValueError):
        usable_jobs(0)


_RACE_WITH_REGROUPING = """
import sys
sys.path.insert(0, {tests!r})
from conftest import base_raw, make_scenario
from netsim.sim.engine import prepare
from netsim.tuning.race import recommend
raw = base_raw(workers=[{{"name": "fast", "count": 3, "compute": 1.0}}, {{"name": "slow", "count": 3, "compute": 3.0}}])
raw["run"].update(algorithm="gsgd", until=30.0, eval_every=0.3)
raw["algorithms"] = {{"gsgd": {{"lr": 1.0, "probe_rounds": 3, "regroup_every": 5, "regroup_window": 3}}}}
sc = make_scenario(raw)
prep = prepare(sc)
picks = [recommend(sc, prep, lrs=(0.3, 1.0), jobs=j) for j in (2, 1)]
print([(r.name, r.lr, [p.curve for p in r.pilots]) == (picks[0].name, picks[0].lr, [p.curve for p in picks[0].pilots])
       for r in picks])
"""


@needs_fork
def test_pilots_that_regroup_by_kmeans_in_forked_processes_finish():
    """Pilots with online regrouping run scikit-learn's k-means in the forked processes,
    after the parent ran it (forming the candidates): the OpenMP runtime is not fork-safe
    with more than one thread (the child waited forever). A fresh interpreter, with a
    time limit, so a hang fails instead of stalling the suite; same pilots for 1 and 2."""
    import subprocess
    import sys
    from pathlib import Path

    script = _RACE_WITH_REGROUPING.format(tests=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[True, True]"
