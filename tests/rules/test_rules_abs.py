"""ABS-style rule: hand trace with fixed K, the K and τ_max schedules, adaptation in a run."""

from __future__ import annotations

import numpy as np
from rulekit import drops, run, scenario, trace, workers

from netsim.rules.abs import next_k, tau_max
from netsim.sim.engine import Simulation


def test_trace_fixed_k_preempts_stale_worker():
    # p = 0 keeps K = K0 = 2; M = 4, c = 1: τ_max = ⌈4/2⌉ = 2. Workers 1.0, 1.4, 2.1, 5.0 s.
    #   1.4 v1 (w0 at 1.0, w1): w2, w3 read v0, 1 behind: keep
    #   2.4 v2 (w2 at 2.1, stale 1; w0): w3 read v0 -> 2 behind: PRE-EMPTED, restarts on v2 (-> 7.4)
    #   3.4 v3 (w1 at 2.8, stale 1; w0): w2, w3 read v2, 1 behind
    #   4.5 v4 (w0 at 4.4; w2 read v2, stale 1): w3 read v2 -> 2 behind: PRE-EMPTED (-> 9.5)
    #   5.5 v5 (w1 at 4.8, read v3, stale 1; w0)
    #   6.6 v6 (w0 at 6.5; w2 read v4, stale 1): w3 read v4 -> 2 behind: PRE-EMPTED
    result = run(workers(1.0, 1.4, 2.1, 5.0), "abs", 6.8, k0=2, p=0.0, c=1.0)
    assert trace(result) == [
        (1.4, 0, 0, 1),
        (1.4, 1, 0, 1),
        (2.4, 2, 1, 2),
        (2.4, 0, 0, 2),
        (3.4, 1, 1, 3),
        (3.4, 0, 0, 3),
        (4.5, 0, 0, 4),
        (4.5, 2, 1, 4),
        (5.5, 1, 1, 5),
        (5.5, 0, 0, 5),
        (6.6, 0, 0, 6),
        (6.6, 2, 1, 6),
    ]
    assert drops(result) == []
    w3 = result.workers[3]
    assert w3.gradients_pushed == 0 and w3.compute_s == 6.8  # always computing, always cancelled


def test_without_preemption_bound_it_is_kasync():
    # c large: τ_max never reached, p = 0: ABS-style is K-async with K = K0.
    ws = workers(1.0, 1.4, 2.1, 5.0)
    sc = scenario(
        ws, {"abs": {"lr": 0.1, "k0": 2, "p": 0.0, "c": 100.0}, "kasync": {"lr": 0.1, "k": 2}}, 30.0
    )
    a, b = Simulation(sc, "abs").run(), Simulation(sc, "kasync").run()
    assert trace(a) == trace(b)
    assert np.array_equal(a.final_w, b.final_w)


def test_schedules():
    # K^{t+1} = min(M, max(K^t, ⌈K0 (F0/Ft)^p⌉)); τ_max = ⌈c ⌈M/K⌉⌉
    assert next_k(4, 4, 1.0, 0.5, 16) == 4
    assert next_k(4, 4, 2.25, 0.5, 16) == 6  # 4 · 1.5
    assert next_k(6, 4, 1.2, 1.0, 16) == 6  # ⌈4.8⌉ = 5 < 6: never decreases
    assert next_k(6, 4, 0.5, 1.0, 16) == 6
    assert next_k(6, 4, 9.0, 1.0, 16) == 16  # capped at M
    assert next_k(3, 3, 7.0, 0.0, 16) == 3  # p = 0: fixed K
    assert (tau_max(16, 4, 1.0), tau_max(16, 5, 1.0), tau_max(3, 2, 1.5)) == (4, 4, 3)


def test_k_grows_and_never_decreases_in_a_run():
    ws = [{"name": "a", "count": 6, "compute": {"dist": "exponential", "mean": 1.0}}]
    sc = scenario(
        ws, {"abs": {"lr": 0.2, "k0": 2, "p": 1.0, "smoothing": 0.8}}, 150.0, batch_size=16
    )
    sim = Simulation(sc)
    sim.run()
    ks = sim.rule.k_history_
    assert ks[0] == 2 and all(b >= a for a, b in zip(ks, ks[1:])) and ks[-1] <= 6
    assert ks[-1] > 2  # the gradient-norm signal fell, so K grew
