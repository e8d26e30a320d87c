"""Crashes and recoveries at awkward instants, stalled runs, round timeouts: hand traces."""

from __future__ import annotations

import pytest
from conftest import base_raw, make_scenario

from netsim.sim.engine import simulate
from netsim.sim.summary import summarize
from netsim.tuning.race import decide


def pushes_of(result, wid):
    rec = result.records
    return [round(t, 9) for t, w in zip(rec.time, rec.worker) if w == wid]


def trace(result):
    rec = result.records
    return [
        (v, round(t, 9), w, s)
        for v, t, w, s in zip(rec.version, rec.time, rec.worker, rec.staleness)
    ]


def test_crash_and_recover_at_the_same_instant():
    # ASGD; worker 0 (1 s) crashes and recovers at 2.5: the iteration started at 2 is lost,
    # it restarts at 2.5 → pushes 1, 2, 3.5, 4.5, 5.5; never down.
    raw = base_raw()
    raw["run"]["until"] = 6.0
    raw["events"] = [
        {"time": 2.5, "kind": "crash", "worker": 0},
        {"time": 2.5, "kind": "recover", "worker": 0},
    ]
    result = simulate(make_scenario(raw), "asgd")
    assert pushes_of(result, 0) == [1.0, 2.0, 3.5, 4.5, 5.5]
    assert result.workers[0].down_s == 0.0


def test_crash_recover_crash_at_one_instant():
    # ... and crashes again at 2.5 for 1 s (the interrupt lands while it is waiting to come
    # back): back at 3.5 → pushes 4.5, 5.5; down 1 s.
    raw = base_raw()
    raw["run"]["until"] = 6.0
    raw["events"] = [
        {"time": 2.5, "kind": "crash", "worker": 0},
        {"time": 2.5, "kind": "recover", "worker": 0},
        {"time": 2.5, "kind": "crash", "worker": 0, "duration": 1.0},
    ]
    result = simulate(make_scenario(raw), "asgd")
    assert result.status == "ok"
    assert pushes_of(result, 0) == [1.0, 2.0, 4.5, 5.5]
    assert result.workers[0].down_s == pytest.approx(1.0)


def test_crash_and_recover_at_zero_with_auto_grouping():
    # The worker is back before training starts; it waits for GSGD's first models.
    raw = base_raw()
    raw["run"]["until"] = 30.0
    raw["algorithms"]["gsgd"].update(grouping="auto", probe_rounds=2)
    raw["events"] = [
        {"time": 0.0, "kind": "crash", "worker": 0},
        {"time": 0.0, "kind": "recover", "worker": 0},
    ]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    duration = result.extra["grouping"]["measurement"]["duration_s"]
    assert result.status == "ok"
    assert min(pushes_of(result, 0)) > duration  # no push before training started


def test_regrouping_from_singletons_keeps_per_group_figures():
    # Six singleton groups regroup into fewer: every update after the last regroup belongs
    # to exactly one final group, so the final groups' update counts add up to them.
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 3, "compute": 1.0},
            {"name": "slow", "count": 3, "compute": 4.0},
        ]
    )
    raw["run"]["until"] = 60.0
    raw["algorithms"]["gsgd"].update(
        groups=[[0], [1], [2], [3], [4], [5]], regroup_every=10, regroup_window=3
    )
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    summary = summarize(result)
    last = [e for e in result.records.events if e["kind"] == "regroup"][-1]
    assert len(summary["groups"]) < 6
    assert sum(g["updates"] for g in summary["groups"]) == result.updates - last["update"]


# -- a worker that pushed, crashes and returns within the round ---------------------------
def test_ssgd_crash_after_push_applies_each_gradient_once():
    # Workers 0, 1 (1 s), 2 (2.4 s). Worker 0 pushes at 1, crashes at 1.5, is back at 1.6 and
    # waits for the round's end. Round 1 closes at 2.4 with 0, 1, 2 (each once, staleness 0);
    # round 2 at 4.8.
    raw = base_raw()
    raw["run"]["until"] = 6.0
    raw["events"] = [{"time": 1.5, "kind": "crash", "worker": 0, "duration": 0.1}]
    result = simulate(make_scenario(raw), "ssgd")
    assert trace(result) == [
        (1, 2.4, 0, 0),
        (1, 2.4, 1, 0),
        (1, 2.4, 2, 0),
        (2, 4.8, 0, 0),
        (2, 4.8, 1, 0),
        (2, 4.8, 2, 0),
    ]
    assert [w.gradients_pushed for w in result.workers] == [3, 3, 2]  # 0, 1 also at 5.8


def test_backup_crash_after_push_applies_each_gradient_once():
    # Backup, N = 2 of a (1 s), b (2.5 s), c (4 s). a pushes at 1, crashes at 1.2, back at 1.3,
    # waits. Step 1 closes at 2.5 with a, b; c's v0 gradient at 4.0 is late and dropped; step 2:
    # a 3.5, b 5.0.
    raw = base_raw(
        workers=[
            {"name": "a", "count": 1, "compute": 1.0},
            {"name": "b", "count": 1, "compute": 2.5},
            {"name": "c", "count": 1, "compute": 4.0},
        ]
    )
    raw["algorithms"]["backup"] = {"lr": 0.1, "backups": 1}
    raw["run"]["until"] = 5.5
    raw["events"] = [{"time": 1.2, "kind": "crash", "worker": 0, "duration": 0.1}]
    result = simulate(make_scenario(raw), "backup")
    assert trace(result) == [(1, 2.5, 0, 0), (1, 2.5, 1, 0), (2, 5.0, 0, 0), (2, 5.0, 1, 0)]
    rec = result.records
    assert list(zip(rec.drop_time, rec.drop_worker, rec.drop_version)) == [(4.0, 2, 0)]


# -- stalled runs --------------------------------------------------------------------------
def stalled(result, time, workers):
    assert result.status == "stalled"
    assert result.sim_time == pytest.approx(time)
    assert f"stalled at simulated time {time:g} s" in result.message
    assert f"waits for workers {workers}" in result.message


def test_ssgd_stalls_when_a_worker_crashes_for_good():
    raw = base_raw()
    raw["run"]["until"] = 20.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 2}]
    result = simulate(make_scenario(raw), "ssgd")
    stalled(result, 0.5, [2])
    assert result.updates == 0


def test_a_network_run_stalled_at_time_zero_ends_with_its_files():
    """A crash at t = 0 on a topology: the run stalls before any simulated time passes, so
    no link carried anything and no utilisation is defined (found by a scenario fuzzer:
    the utilisation's division by zero time raised)."""
    raw = base_raw()
    raw["network"] = {"topology": "fat_tree_k4"}
    raw["events"] = [{"time": 0.0, "kind": "crash", "worker": 1}]
    result = simulate(make_scenario(raw), "ssgd")
    stalled(result, 0.0, [1])
    assert result.extra["network"]["busiest_links"] == []


def test_ssp_stalls_once_everyone_waits_for_the_crashed_slowest():
    # s = 1; worker 2 crashes at 0.5. Workers 0, 1 push at 1 (clock 1, allowed) and 2 (clock
    # 2 > 0 + 1: blocked); at 2.0 both are blocked on worker 2 → stalled, 4 updates.
    raw = base_raw()
    raw["algorithms"]["ssp"] = {"lr": 0.1, "s": 1}
    raw["run"]["until"] = 20.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 2}]
    result = simulate(make_scenario(raw), "ssp")
    stalled(result, 2.0, [2])
    assert result.updates == 4


def test_abs_stalls_when_fewer_than_k_workers_remain():
    raw = base_raw()
    raw["algorithms"]["abs"] = {"lr": 0.1, "k0": 3, "p": 0.0}
    raw["run"]["until"] = 20.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 1}]
    stalled(simulate(make_scenario(raw), "abs"), 0.5, [1])


def test_all_workers_down_for_good_stalls_any_rule():
    raw = base_raw()
    raw["run"]["until"] = 20.0
    raw["events"] = [{"time": 3.0, "kind": "crash", "worker": [0, 1, 2]}]
    result = simulate(make_scenario(raw), "asgd")
    stalled(result, 3.0, [0, 1, 2])
    assert pushes_of(result, 0) == [1.0, 2.0]


def test_gsgd_stalls_only_when_every_group_is_blocked():
    raw = base_raw()
    raw["run"]["until"] = 20.0
    raw["events"] = [
        {"time": 0.5, "kind": "crash", "worker": 1},
        {"time": 3.0, "kind": "crash", "worker": 2},
    ]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    stalled(result, 3.0, [1, 2])
    assert result.updates == 1  # group 1 (worker 2) at 2.4


def test_a_scheduled_recovery_is_not_a_stall():
    raw = base_raw()
    raw["run"]["until"] = 10.0
    raw["events"] = [
        {"time": 3.0, "kind": "crash", "worker": [0, 1, 2]},
        {"time": 6.0, "kind": "recover", "worker": [0, 1, 2]},
    ]
    result = simulate(make_scenario(raw), "ssgd")
    assert result.status == "ok" and result.sim_time == 10.0
    # rounds at 2.4; crash at 3 loses round 2; back at 6 → 8.4
    assert sorted({round(t, 9) for t in result.records.time}) == [2.4, 8.4]


# -- round timeouts ------------------------------------------------------------------------
def test_ssgd_round_timeout_proceeds_without_the_crashed_worker():
    # Worker 2 crashes at 0.5 for good; rounds start at 0, 1.5, 3.0 and close 1.5 s later
    # with workers 0 and 1 (pushed at 1.0, 2.5, 4.0).
    raw = base_raw()
    raw["algorithms"]["ssgd"]["round_timeout"] = 1.5
    raw["run"]["until"] = 5.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 2}]
    result = simulate(make_scenario(raw), "ssgd")
    assert result.status == "ok"
    assert trace(result) == [
        (1, 1.5, 0, 0),
        (1, 1.5, 1, 0),
        (2, 3.0, 0, 0),
        (2, 3.0, 1, 0),
        (3, 4.5, 0, 0),
        (3, 4.5, 1, 0),
    ]
    timeouts = [
        (e["time"], e["present"], e["missing"])
        for e in result.records.events
        if e["kind"] == "round_timeout"
    ]
    assert timeouts == [(1.5, [0, 1], [2]), (3.0, [0, 1], [2]), (4.5, [0, 1], [2])]


def test_ssgd_round_timeout_drops_a_late_gradient():
    # No crash: worker 2 (2.4 s) misses round 1 (closed at 1.5); its v0 gradient at 2.4 is
    # dropped and it restarts on v1 → pushes at 4.8 a v1 gradient, late again (v3 at 4.5).
    raw = base_raw()
    raw["algorithms"]["ssgd"]["round_timeout"] = 1.5
    raw["run"]["until"] = 5.0
    result = simulate(make_scenario(raw), "ssgd")
    rec = result.records
    assert list(zip(rec.drop_time, rec.drop_worker, rec.drop_version)) == [(2.4, 2, 0), (4.8, 2, 1)]
    assert result.updates == 3


def test_ssp_round_timeout_releases_blocked_workers():
    raw = base_raw()
    raw["algorithms"]["ssp"] = {"lr": 0.1, "s": 1, "round_timeout": 1.0}
    raw["run"]["until"] = 6.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 2}]
    result = simulate(make_scenario(raw), "ssp")
    # 0, 1 push at 1, 2 (blocked at 2, released at 3), 4 (blocked, released at 5), 6 is the end.
    assert result.status == "ok"
    assert pushes_of(result, 0) == [1.0, 2.0, 4.0]
    released = [
        (e["time"], e["worker"]) for e in result.records.events if e["kind"] == "round_timeout"
    ]
    assert released == [(3.0, 0), (3.0, 1), (5.0, 0), (5.0, 1)]


def test_abs_round_timeout_keeps_going():
    raw = base_raw()
    raw["algorithms"]["abs"] = {"lr": 0.1, "k0": 3, "p": 0.0, "round_timeout": 1.5}
    raw["run"]["until"] = 5.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 1}]
    result = simulate(make_scenario(raw), "abs")
    # K = 3 with worker 1 gone: each round closes at its timeout with worker 0's gradient
    # (pushed 1.0, 2.5, 4.0 → updates at 1.5, 3.0, 4.5). τ_max = ⌈1·⌈3/3⌉⌉ = 1, so worker 2
    # (2.4 s), one update behind at every update, is pre-empted each time and never pushes.
    assert result.status == "ok"
    assert trace(result) == [(1, 1.5, 0, 0), (2, 3.0, 0, 0), (3, 4.5, 0, 0)]
    assert [e["present"] for e in result.records.events if e["kind"] == "round_timeout"] == [
        [0],
        [0],
        [0],
    ]


@pytest.mark.parametrize("rule", ["dcasgd_c", "dcasgd_a"])
def test_dcasgd_survives_a_crash_and_rejoin(rule):
    # Worker 0 (1 s) crashes at 2.5 and is back at 4: it pushes at 1, 2, then 5, 6 (as ASGD).
    raw = base_raw()
    raw["algorithms"][rule] = {"lr": 0.1}
    raw["run"]["until"] = 6.5
    raw["events"] = [{"time": 2.5, "kind": "crash", "worker": 0, "duration": 1.5}]
    result = simulate(make_scenario(raw), rule)
    assert result.status == "ok"
    assert pushes_of(result, 0) == [1.0, 2.0, 5.0, 6.0]


@pytest.mark.parametrize(
    "rule,table",
    [
        ("lgc", {"lr": 0.1, "k": 2}),
        ("kasync", {"lr": 0.1, "k": 2}),
        ("abs", {"lr": 0.1, "k0": 2}),
        ("ksync", {"lr": 0.1, "k": 2}),
        ("kbatch_sync", {"lr": 0.1, "k": 2}),
        ("ssp", {"lr": 0.1, "s": 1}),
    ],
)
def test_crash_and_return_within_a_round_applies_each_gradient_once(rule, table):
    # Worker 0 pushes at 1 and crashes at 1.2 for 0.1 s, worker 2 (2.4 s) for good at 2.0
    # (the K = 2 rules keep going on workers 0 and 1). No update may credit one worker twice.
    raw = base_raw()
    raw["algorithms"][rule] = table
    raw["run"]["until"] = 8.0
    raw["events"] = [
        {"time": 1.2, "kind": "crash", "worker": 0, "duration": 0.1},
        {"time": 2.0, "kind": "crash", "worker": 2},
    ]
    result = simulate(make_scenario(raw), rule)
    assert result.status in ("ok", "stalled")
    rec = result.records
    per_update = {}
    for v, w in zip(rec.version, rec.worker):
        per_update.setdefault(v, []).append(w)
    if rule != "kbatch_sync":  # K-batch-sync may take several minibatches of one worker by design
        assert all(len(ws) == len(set(ws)) for ws in per_update.values())
    assert sum(w.gradients_applied for w in result.workers) == len(rec.version)
