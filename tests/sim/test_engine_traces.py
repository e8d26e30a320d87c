"""Hand-computed traces of the engine: update times, versions, staleness, time accounting."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.sim.engine import prepare, simulate


def trace(result):
    rec = result.records
    return list(zip(rec.time, rec.worker, rec.staleness, rec.version))


def test_asgd_trace_two_speeds():
    # worker 0 takes 1 s, worker 1 takes 2.4 s; no latency; T = 7.5 s.
    # Worker 1 pushes at 2.4 (read v0), 4.8 (read v3) and 7.2 (read v6): see the docstring table.
    raw = base_raw(
        workers=[
            {"name": "a", "count": 1, "compute": 1.0},
            {"name": "b", "count": 1, "compute": 2.4},
        ]
    )
    raw["run"]["until"] = 7.5
    result = simulate(make_scenario(raw), "asgd")
    expected = [
        (1.0, 0, 0, 1),
        (2.0, 0, 0, 2),
        (2.4, 1, 2, 3),
        (3.0, 0, 1, 4),
        (4.0, 0, 0, 5),
        (4.8, 1, 2, 6),
        (5.0, 0, 1, 7),
        (6.0, 0, 0, 8),
        (7.0, 0, 0, 9),
        (7.2, 1, 3, 10),
    ]
    got = [(round(t, 9), w, s, v) for t, w, s, v in trace(result)]
    assert got == expected
    assert result.updates == 10


def test_gsgd_trace_group_staleness():
    # group A = workers 0,1 (1 s each), group B = worker 2 (2.4 s): same version pattern
    # as the ASGD trace, each A update crediting both members with one staleness.
    raw = base_raw()
    raw["run"]["until"] = 7.5
    result = simulate(make_scenario(raw), "gsgd")
    rec = result.records
    per_version = {}
    for t, w, g, s, v in zip(rec.time, rec.worker, rec.group, rec.staleness, rec.version):
        per_version.setdefault(v, []).append((round(t, 9), w, g, s))
    assert per_version[1] == [(1.0, 0, 0, 0), (1.0, 1, 0, 0)]
    assert per_version[3] == [(2.4, 2, 1, 2)]
    assert per_version[4] == [(3.0, 0, 0, 1), (3.0, 1, 0, 1)]
    assert per_version[6] == [(4.8, 2, 1, 2)]
    assert per_version[10] == [(7.2, 2, 1, 3)]
    assert result.updates == 10


def test_ssgd_rounds_and_idle_closed_form():
    # Round time = slowest worker = 2.4 s; T = 10 → 4 rounds (at 2.4, 4.8, 7.2, 9.6), no staleness.
    # A 1 s worker idles 1.4 s in each of the 4 rounds (5.6 s) and computes 4 s, then spends
    # the last 0.4 s (9.6 → 10) computing round 5: compute 4.4 s.
    result = simulate(make_scenario(base_raw()), "ssgd")
    assert result.updates == 4
    assert set(result.records.staleness) == {0}
    fast, slow = result.workers[0], result.workers[2]
    assert fast.idle_s == pytest.approx(5.6)
    assert fast.compute_s == pytest.approx(4.4)
    assert slow.idle_s == pytest.approx(0.0)
    assert slow.compute_s == pytest.approx(10.0)  # 4 rounds + 0.4 s of the fifth
    assert result.workers[1].gradients_applied == 4


def test_latency_accounting():
    # One ASGD worker, 1 s compute, 0.1 s pull, 0.2 s push: an update every 1.3 s.
    raw = base_raw(
        workers=[
            {"name": "a", "count": 1, "compute": 1.0, "pull_latency": 0.1, "push_latency": 0.2}
        ]
    )
    raw["run"]["until"] = 6.6
    result = simulate(make_scenario(raw), "asgd")
    assert [round(t, 9) for t in result.records.time] == [1.3, 2.6, 3.9, 5.2, 6.5]
    w = result.workers[0]
    assert w.compute_s == pytest.approx(5.0)
    assert w.comm_s == pytest.approx(5 * 0.3 + 0.1)
    assert w.idle_s == pytest.approx(0.0)


def test_time_buckets_add_up_to_sim_time():
    raw = base_raw(
        workers=[
            {
                "name": "a",
                "count": 3,
                "compute": {"dist": "exponential", "mean": 1.0},
                "latency": 0.05,
            },
            {"name": "b", "count": 2, "compute": {"dist": "pareto", "shape": 2.0, "scale": 1.0}},
        ],
        algorithms={"gsgd": {"lr": 0.05, "groups": [["a"], ["b"]]}},
    )
    raw["run"]["algorithm"] = "gsgd"
    result = simulate(make_scenario(raw))
    for w in result.workers:
        assert w.compute_s + w.comm_s + w.idle_s == pytest.approx(result.sim_time)


def test_model_matches_bare_numpy_asgd_with_full_batches():
    # Full-batch gradients make the run deterministic in data: replay the same
    # version pattern with a plain loop over the model's gradient.
    raw = base_raw(
        workers=[
            {"name": "a", "count": 1, "compute": 1.0},
            {"name": "b", "count": 1, "compute": 2.4},
        ]
    )
    raw["run"].update(until=5.0, batch_size=100000)
    sc = make_scenario(raw)
    prep = prepare(sc)
    result = simulate(sc, "asgd", prepared=prep)
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    s0, s1 = (np.sort(s) for s in prep.shards)
    g = lambda w, s: model.gradient(w, X[s], y[s])
    lr = 0.1
    w = [prep.w0]
    w.append(w[0] - lr * g(w[0], s0))  # t=1, worker 0 read v0
    w.append(w[1] - lr * g(w[1], s0))  # t=2, worker 0 read v1
    w.append(w[2] - lr * g(w[0], s1))  # t=2.4, worker 1 read v0
    w.append(w[3] - lr * g(w[2], s0))  # t=3, worker 0 read v2
    w.append(w[4] - lr * g(w[4], s0))  # t=4, worker 0 read v4
    w.append(w[5] - lr * g(w[3], s1))  # t=4.8, worker 1 read v3
    assert result.updates == 6
    np.testing.assert_allclose(result.final_w, w[6], rtol=1e-12, atol=1e-14)


def test_timeline_spans_by_hand():
    # SSGD, workers of 1 s, 1 s and 2.4 s: worker 0 computes [0, 1], idles [1, 2.4],
    # computes [2.4, 3.4], idles [3.4, 4.8]; spans are recorded up to t = 5 only.
    raw = base_raw()
    raw["run"].update(until=10.0, timeline_until=5.0)
    result = simulate(make_scenario(raw), "ssgd")
    spans = sorted((s for s in result.records.spans if s[0] == 0), key=lambda s: s[2])
    got = [(p, round(a, 9), round(b, 9)) for _, p, a, b in spans]
    assert got == [(2, 0.0, 1.0), (0, 1.0, 2.4), (2, 2.4, 3.4), (0, 3.4, 4.8), (2, 4.8, 5.0)]
    slow = [
        (p, round(a, 9), round(b, 9))
        for w, p, a, b in sorted(result.records.spans, key=lambda s: s[2])
        if w == 2
    ]
    assert slow == [(2, 0.0, 2.4), (2, 2.4, 4.8), (2, 4.8, 5.0)]


def test_an_unchanged_model_is_evaluated_once():
    # ASGD, one worker of 1.1 s, evaluated every 0.25 s over 3.5 s: updates at 1.1, 2.2 and
    # 3.3 s, so the 15 rows (t = 0, 0.25, ..., 3.5) hold 4 distinct models.
    raw = base_raw(workers=[{"name": "a", "count": 1, "compute": 1.1}])
    raw["run"].update(until=3.5, eval_every=0.25)
    sc = make_scenario(raw)
    prepared = prepare(sc)
    calls = []
    loss = prepared.model.loss

    def counted(w, X, y):
        calls.append(w)
        return loss(w, X, y)

    prepared.model.loss = counted
    curve = simulate(sc, "asgd", prepared=prepared).curve
    rows = [(v, t) for v, t, _, _ in curve]
    assert [v for v, _ in rows] == [0] * 5 + [1] * 4 + [2] * 5 + [3]
    assert [t for _, t in rows] == [0.25 * k for k in range(15)]
    assert len(calls) == 4
    for version in range(4):  # every row of one model carries that model's loss and accuracy
        same = {(c[2], c[3]) for c in curve if c[0] == version}
        assert len(same) == 1
