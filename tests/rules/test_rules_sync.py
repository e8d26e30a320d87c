"""Hand-traced synchronous-family rules: backup workers, K-sync, K-batch-sync; equivalences with SSGD."""

from __future__ import annotations

import numpy as np
from rulekit import drops, run, scenario, trace, workers

from netsim.sim.engine import prepare, simulate

# Worker 0 takes 1.0 s, worker 1 1.4 s, worker 2 replays 2.5, 0.8, 2.5, 0.8, ... (s); no latency.
THREE = workers(1.0, 1.4, [2.5, 0.8])


def test_backup_finish_then_drop_trace():
    # N = 2, b = 1. Workers 0 and 1 form every step (1.4, 2.8, 4.2, 5.6). Worker 2 finishes
    # late each time, is dropped, then takes the newest model:
    #   t=2.5 pushes its v0 gradient (v1 current) -> dropped; restarts on v1 with 0.8 s
    #   t=3.3 pushes its v1 gradient (v2 current) -> dropped; restarts on v2 with 2.5 s
    #   t=5.8 pushes its v2 gradient (v4 current) -> dropped.
    result = run(THREE, "backup", 6.1, backups=1, late_policy="finish_then_drop")
    assert trace(result) == [
        (1.4, 0, 0, 1),
        (1.4, 1, 0, 1),
        (2.8, 0, 0, 2),
        (2.8, 1, 0, 2),
        (4.2, 0, 0, 3),
        (4.2, 1, 0, 3),
        (5.6, 0, 0, 4),
        (5.6, 1, 0, 4),
    ]
    assert drops(result) == [(2.5, 2, 0), (3.3, 2, 1), (5.8, 2, 2)]
    assert result.workers[2].gradients_dropped == 3
    assert result.records.drop_reason[0].startswith("late")


def test_backup_cancel_trace():
    # N = 2, b = 1, late workers pre-empted at every update and restarted on the new model:
    #   t=1.4 v1 (0, 1): worker 2 (2.5 s draw) cancelled, restarts with 0.8 s -> done 2.2
    #   t=2.4 v2 (2 at 2.2, then 0): worker 1 (busy 1.4 -> 2.8) cancelled, restarts -> 3.8
    #   t=3.8 v3 (0 at 3.4, 1): worker 2 (2.5 s draw, 2.4 -> 4.9) cancelled, restarts with 0.8 -> 4.6
    #   t=4.8 v4 (2 at 4.6, 0 at 4.8): worker 1 (3.8 -> 5.2) cancelled -> 6.2 > T.
    result = run(THREE, "backup", 6.1, backups=1, late_policy="cancel")
    expected = [
        (1.4, 0, 0, 1),
        (1.4, 1, 0, 1),
        (2.4, 2, 0, 2),
        (2.4, 0, 0, 2),
        (3.8, 0, 0, 3),
        (3.8, 1, 0, 3),
        (4.8, 2, 0, 4),
        (4.8, 0, 0, 4),
    ]
    assert trace(result) == expected
    assert drops(result) == []  # cancelled work never becomes a gradient


def test_ksync_is_backup_with_cancel():
    # K-sync with K = 2 of 3 is the cancel trace above, model included.
    sc = scenario(
        THREE,
        {
            "ksync": {"lr": 0.1, "k": 2},
            "backup": {"lr": 0.1, "backups": 1, "late_policy": "cancel"},
        },
        6.1,
    )
    prep = prepare(sc)
    a, b = simulate(sc, "ksync", prepared=prep), simulate(sc, "backup", prepared=prep)
    assert (
        trace(a)
        == trace(b)
        == [
            (1.4, 0, 0, 1),
            (1.4, 1, 0, 1),
            (2.4, 2, 0, 2),
            (2.4, 0, 0, 2),
            (3.8, 0, 0, 3),
            (3.8, 1, 0, 3),
            (4.8, 2, 0, 4),
            (4.8, 0, 0, 4),
        ]
    )
    assert np.array_equal(a.final_w, b.final_w)


def test_kbatch_sync_trace():
    # Workers 0.8, 1.4, 2.5 s; K = 3 minibatches per step, all on the current model.
    #   t=0.8 w0 #1, t=1.4 w1 #2, t=1.6 w0 #3 -> v1; w1 (1.4 -> 2.8) and w2 pre-empted, all restart at 1.6
    #   t=2.4 w0, t=3.0 w1, t=3.2 w0 -> v2 at 3.2; again at 4.0 (w0), 4.6 (w1), 4.8 (w0) -> v3.
    result = run(workers(0.8, 1.4, 2.5), "kbatch_sync", 5.0, k=3)
    assert trace(result) == [
        (1.6, 0, 0, 1),
        (1.6, 1, 0, 1),
        (1.6, 0, 0, 1),
        (3.2, 0, 0, 2),
        (3.2, 1, 0, 2),
        (3.2, 0, 0, 2),
        (4.8, 0, 0, 3),
        (4.8, 1, 0, 3),
        (4.8, 0, 0, 3),
    ]
    assert drops(result) == []
    assert result.workers[2].gradients_pushed == 0
    assert result.workers[0].idle_s == 0.0  # never waits: keeps computing on the same model


def test_kbatch_sync_drops_gradient_in_flight():
    # K = 1. Worker 0 computes 1 s, no latency. Worker 1 pulls 0.5 s, computes 0.3 s, pushes 0.5 s:
    # it reads v0 at 0 and its push is on the wire (not pre-emptible) from 0.8 to 1.3. Worker 0's
    # gradient makes v1 at 1.0, so worker 1's v0 gradient arrives late at 1.3 and is dropped.
    ws = workers(1.0) + [{"name": "w1", "count": 1, "compute": 0.3, "latency": 0.5}]
    result = run(ws, "kbatch_sync", 1.5, k=1)
    assert trace(result) == [(1.0, 0, 0, 1)]
    assert drops(result) == [(1.3, 1, 0)]


def test_equivalent_to_ssgd_backup_b0_and_ksync_k_equals_p():
    ws = [
        {"name": "a", "count": 3, "compute": {"dist": "exponential", "mean": 1.0}, "latency": 0.05},
        {"name": "b", "count": 1, "compute": {"dist": "pareto", "shape": 2.0, "scale": 1.0}},
    ]
    sc = scenario(
        ws,
        {"ssgd": {"lr": 0.1}, "backup": {"lr": 0.1, "backups": 0}, "ksync": {"lr": 0.1, "k": 4}},
        60.0,
    )
    prep = prepare(sc)
    ref = simulate(sc, "ssgd", prepared=prep)
    assert ref.updates > 10
    for name in ("backup", "ksync"):
        other = simulate(sc, name, prepared=prep)
        assert trace(other) == trace(ref)
        assert np.array_equal(other.final_w, ref.final_w)
        assert drops(other) == []
