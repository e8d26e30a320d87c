"""Hand-traced asynchronous-family rules: K-async, K-batch-async, SSP, staleness-aware ASGD."""

from __future__ import annotations

import numpy as np
import pytest
from rulekit import drops, run, scenario, trace, workers

from netsim.sim.engine import prepare, simulate

# Worker 0 takes 1.0 s, worker 1 1.4 s, worker 2 2.6 s; no latency.
THREE = workers(1.0, 1.4, 2.6)
RANDOM = [
    {"name": "a", "count": 3, "compute": {"dist": "exponential", "mean": 1.0}, "latency": 0.05},
    {"name": "b", "count": 2, "compute": {"dist": "pareto", "shape": 2.0, "scale": 1.0}},
]


def test_kasync_trace():
    # K = 2; a pusher waits until its gradient is applied, then only the K contributors get the model.
    #   1.0 w0(v0) waits; 1.4 w1(v0) -> v1; w0, w1 restart on v1 (-> 2.4, 2.8)
    #   2.4 w0(v1) waits; 2.6 w2(v0) -> v2 (w2 stale 1); w0 -> 3.6, w2 -> 5.2 on v2
    #   2.8 w1(v1) waits; 3.6 w0(v2) -> v3 (w1 stale 1); w0 -> 4.6, w1 -> 5.0 on v3
    #   4.6 w0(v3) waits; 5.0 w1(v3) -> v4; w0 -> 6.0, w1 -> 6.4
    #   5.2 w2(v2) waits 0.8 s; 6.0 w0(v4) -> v5 (w2 stale 4 - 2 = 2)
    result = run(THREE, "kasync", 6.1, k=2)
    assert trace(result) == [
        (1.4, 0, 0, 1),
        (1.4, 1, 0, 1),
        (2.6, 0, 0, 2),
        (2.6, 2, 1, 2),
        (3.6, 1, 1, 3),
        (3.6, 0, 0, 3),
        (5.0, 0, 0, 4),
        (5.0, 1, 0, 4),
        (6.0, 2, 2, 5),
        (6.0, 0, 0, 5),
    ]
    assert drops(result) == []
    w0, w1, w2 = result.workers
    assert w0.idle_s == pytest.approx(0.4 + 0.2 + 0.4)  # waits 1.0-1.4, 2.4-2.6, 4.6-5.0
    assert w1.idle_s == pytest.approx(0.8)  # waits 2.8-3.6
    assert w2.idle_s == pytest.approx(0.8)  # waits 5.2-6.0


def test_kbatch_async_trace():
    # K = 2 minibatches per update; every pusher restarts at once on the current model (never idle).
    #   1.0 w0(v0) -> restarts on v0;  1.4 w1(v0) -> v1, w1 restarts on v1
    #   2.0 w0(v0);  2.6 w2(v0) -> v2 (both stale 1);  2.8 w1(v1);  3.0 w0(v1) -> v3 (both stale 1)
    #   4.0 w0(v3);  4.2 w1(v2) -> v4 (0 and 1);  5.0 w0(v3);  5.2 w2(v2) -> v5 (1 and 2)
    result = run(THREE, "kbatch_async", 5.9, k=2)
    assert trace(result) == [
        (1.4, 0, 0, 1),
        (1.4, 1, 0, 1),
        (2.6, 0, 1, 2),
        (2.6, 2, 1, 2),
        (3.0, 1, 1, 3),
        (3.0, 0, 1, 3),
        (4.2, 0, 0, 4),
        (4.2, 1, 1, 4),
        (5.2, 0, 1, 5),
        (5.2, 2, 2, 5),
    ]
    assert drops(result) == []
    assert all(w.idle_s == 0.0 for w in result.workers)


def test_ssp_trace_s1():
    # s = 1; each gradient applied on arrival (v += 1); clocks c = pushes so far.
    #   1.0 w0 -> v1, c=(1,0,0), 1-0 <= 1: continue     1.4 w1 -> v2 (stale 1), c=(1,1,0)
    #   2.0 w0 -> v3 (stale 1), c0=2, 2-0 > 1: w0 BLOCKED
    #   2.6 w2 -> v4 (stale 3), c=(2,1,1): min rises to 1, w0 released on v4 (-> 3.6)
    #   2.8 w1 -> v5 (read v2: stale 2), c1=2, 2-1 <= 1      3.6 w0 -> v6 (stale 1), c0=3: BLOCKED
    #   4.2 w1 -> v7 (stale 1), c1=3: BLOCKED
    #   5.2 w2 -> v8 (read v4: stale 3), c=(3,3,2): min 2, w0 and w1 released on v8
    #   6.2 w0 -> v9 (stale 0), c0=4: BLOCKED            6.6 w1 -> v10 (stale 1), c1=4: BLOCKED
    result = run(THREE, "ssp", 7.0, s=1)
    assert trace(result) == [
        (1.0, 0, 0, 1),
        (1.4, 1, 1, 2),
        (2.0, 0, 1, 3),
        (2.6, 2, 3, 4),
        (2.8, 1, 2, 5),
        (3.6, 0, 1, 6),
        (4.2, 1, 1, 7),
        (5.2, 2, 3, 8),
        (6.2, 0, 0, 9),
        (6.6, 1, 1, 10),
    ]
    w0, w1, w2 = result.workers
    assert w0.idle_s == pytest.approx(0.6 + 1.6 + 0.8)  # blocked 2.0-2.6, 3.6-5.2, 6.2-7.0
    assert w1.idle_s == pytest.approx(1.0 + 0.4)  # blocked 4.2-5.2, 6.6-7.0
    assert w2.idle_s == 0.0


def test_ssp_s0_has_ssgd_timing_but_one_update_per_gradient():
    # s = 0 is a barrier: every worker starts iteration c only when all finished c - 1, as in
    # SSGD, so the time accounting is identical. But each gradient is its own update (3 per
    # round, staleness 0, 1, 2 within a round): not the same update sequence as SSGD.
    sc = scenario(THREE, {"ssp": {"lr": 0.1, "s": 0}, "ssgd": {"lr": 0.1}}, 8.0)
    ssp, ssgd = simulate(sc, "ssp"), simulate(sc, "ssgd")
    assert [t for t, *_ in trace(ssgd)][::3] == [2.6, 5.2, 7.8]
    assert trace(ssp) == [
        (1.0, 0, 0, 1),
        (1.4, 1, 1, 2),
        (2.6, 2, 2, 3),
        (3.6, 0, 0, 4),
        (4.0, 1, 1, 5),
        (5.2, 2, 2, 6),
        (6.2, 0, 0, 7),
        (6.6, 1, 1, 8),
        (7.8, 2, 2, 9),
    ]
    for a, b in zip(ssp.workers, ssgd.workers):
        assert (a.compute_s, a.idle_s) == pytest.approx((b.compute_s, b.idle_s))


def test_sa_asgd_trace_and_model():
    # Workers 1 s and 2.4 s, full-batch gradients: the ASGD version pattern of
    # test_engine_traces, with the step of a tau-stale gradient divided by max(1, tau).
    ws = workers(1.0, 2.4)
    sc = scenario(ws, {"sa_asgd": {"lr": 0.1}}, 5.0, batch_size=100000)
    prep = prepare(sc)
    result = simulate(sc, prepared=prep)
    assert trace(result) == [
        (1.0, 0, 0, 1),
        (2.0, 0, 0, 2),
        (2.4, 1, 2, 3),
        (3.0, 0, 1, 4),
        (4.0, 0, 0, 5),
        (4.8, 1, 2, 6),
    ]
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    s0, s1 = prep.shards
    g = lambda w, s: model.gradient(w, X[s], y[s])
    lr = 0.1
    w = [prep.w0]
    w.append(w[0] - lr * g(w[0], s0))  # tau 0
    w.append(w[1] - lr * g(w[1], s0))  # tau 0
    w.append(w[2] - lr / 2 * g(w[0], s1))  # tau 2: half step
    w.append(w[3] - lr * g(w[2], s0))  # tau 1: max(1, 1) = 1
    w.append(w[4] - lr * g(w[4], s0))  # tau 0
    w.append(w[5] - lr / 2 * g(w[3], s1))  # tau 2
    np.testing.assert_allclose(result.final_w, w[6], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "name, params", [("kasync", {"k": 1}), ("ssp", {"s": 10**6}), ("dcasgd_c", {"lambda0": 0.0})]
)
def test_equivalent_to_asgd_bit_for_bit(name, params):
    sc = scenario(RANDOM, {"asgd": {"lr": 0.05}, name: {"lr": 0.05, **params}}, 40.0)
    prep = prepare(sc)
    ref, other = simulate(sc, "asgd", prepared=prep), simulate(sc, name, prepared=prep)
    assert ref.updates > 50
    assert trace(other) == trace(ref)
    assert np.array_equal(other.final_w, ref.final_w)
