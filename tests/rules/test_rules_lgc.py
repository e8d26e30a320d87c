"""LGC-style rule and the PS's partial-gradient hook (``ps.collect``), traced by hand."""

from __future__ import annotations

import numpy as np
import pytest
from rulekit import drops, run, scenario, trace, workers

from netsim.rng import Streams
from netsim.rules.asgd import ASGD
from netsim.rules.base import Push
from netsim.rules.blocks import block_rows, completed_blocks
from netsim.sim.engine import Simulation, prepare, simulate
from netsim.sim.worker import BatchSampler

# Workers 1.0, 1.4, 2.0 s; batch 8 in 4 blocks of 2 rows (0.5 s each for worker 2); K = 2.
THREE = workers(1.0, 1.4, 2.0)
EXPECTED = [
    # 1.4: w0, w1 fresh; w2 (read v0, 1.4 of 2.0 s) has 2 blocks done: 4 rows, stale 0
    (1.4, 0, 0, 1),
    (1.4, 1, 0, 1),
    (1.4, 2, 0, 1),
    # 2.0: w2 finishes; its last 4 rows (read v0) wait for round 1; it restarts on v1.
    # 2.8: w0 (2.4), w1 fresh; w2's remainder (stale 1); w2's new job (0.8 of 2.0 s): 1 block, 2 rows
    (2.8, 0, 0, 2),
    (2.8, 1, 0, 2),
    (2.8, 2, 1, 2),
    (2.8, 2, 0, 2),
    # 4.0: w2 finishes (read v1): 6 rows left, stale 1 at 4.2; restarts on v2.
    # 4.2: w0 (3.8), w1 fresh; w2's remainder; w2's new job has no block done (0.2 s)
    (4.2, 0, 0, 3),
    (4.2, 1, 0, 3),
    (4.2, 2, 1, 3),
    # 5.6: w0 (5.2), w1 fresh; w2 (read v2, 1.6 s in) hands in 3 blocks, stale 1, and is
    # pre-empted (its last block would be two updates old)
    (5.6, 0, 0, 4),
    (5.6, 1, 0, 4),
    (5.6, 2, 1, 4),
]


def test_trace():
    result = run(THREE, "lgc", 6.5, k=2, blocks=4)
    assert trace(result) == EXPECTED
    assert drops(result) == []
    assert result.workers[2].gradients_pushed == 2


def test_first_two_updates_by_hand():
    # Sample-weighted: update 1 = (8 g0 + 8 g1 + 4 g2[:4]) / 20 at w0;
    # update 2 = (8 g0' + 8 g1' + 4 g2[4:8] + 2 g2'[:2]) / 22, with g2[4:8] at w0 and the rest at w1.
    lr = 0.1
    sc = scenario(THREE, {"lgc": {"lr": lr, "k": 2, "blocks": 4}}, 3.0)
    prep = prepare(sc)
    result = simulate(sc, prepared=prep)
    assert result.updates == 2
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    streams = Streams(sc.run.seed)
    batches = [BatchSampler(prep.shards[i], 8, streams.rng("batch", i)) for i in range(3)]
    b0, b1, b2 = ([s.next(), s.next()] for s in batches)
    g = lambda w, rows: model.gradient(w, X[rows], y[rows])
    w0 = prep.w0
    w1 = w0 - lr * (8 * g(w0, b0[0]) + 8 * g(w0, b1[0]) + 4 * g(w0, b2[0][:4])) / 20
    w2 = (
        w1
        - lr
        * (8 * g(w1, b0[1]) + 8 * g(w1, b1[1]) + 4 * g(w0, b2[0][4:]) + 2 * g(w1, b2[1][:2]))
        / 22
    )
    np.testing.assert_allclose(result.final_w, w2, rtol=1e-12, atol=1e-15)


def test_remainder_two_updates_old_is_dropped():
    # K = 1, 2 blocks of 4 rows. Worker 0: 0.9 s. Worker 1: 1.5 s compute, 2.5 s push.
    # 0.9: w1 (0.9 of 1.5 s) has 1 block done: 4 rows in v1. Its push (computed 0-1.5)
    # arrives at 4.0, after v2, v3, v4: the other 4 rows are 4 updates old -> dropped.
    ws = workers(0.9) + [
        {"name": "w1", "count": 1, "compute": 1.5, "pull_latency": 0.0, "push_latency": 2.5}
    ]
    result = run(ws, "lgc", 4.6, k=1, blocks=2)
    assert trace(result) == [
        (0.9, 0, 0, 1),
        (0.9, 1, 0, 1),
        (1.8, 0, 0, 2),
        (2.7, 0, 0, 3),
        (3.6, 0, 0, 4),
        (4.5, 0, 0, 5),
    ]
    assert drops(result) == [(4.0, 1, 0)]


def test_k_equals_m_with_one_block_is_ssgd():
    ws = [{"name": "a", "count": 3, "compute": {"dist": "exponential", "mean": 1.0}}]
    sc = scenario(ws, {"lgc": {"lr": 0.1, "k": 3, "blocks": 1}, "ssgd": {"lr": 0.1}}, 30.0)
    prep = prepare(sc)
    a, b = simulate(sc, "lgc", prepared=prep), simulate(sc, "ssgd", prepared=prep)
    assert trace(a) == trace(b)
    np.testing.assert_allclose(a.final_w, b.final_w, rtol=1e-12)  # Σ 8g/24 vs Σ g/3: rounding only


def test_block_arithmetic():
    assert [completed_blocks(t, 2.0, 4) for t in (0.0, 0.49, 0.5, 1.6, 2.0, 3.0)] == [
        0,
        0,
        1,
        3,
        4,
        4,
    ]
    assert completed_blocks(2.0, 3.0, 3) == 2  # 2·3/3 with round-off still counts as 2
    assert [block_rows(8, 4, k) for k in range(5)] == [0, 2, 4, 6, 8]
    assert [block_rows(3, 5, k) for k in range(6)] == [0, 1, 2, 3, 3, 3]


class Probe(ASGD):
    """ASGD that, when worker 0 pushes at t = 1, looks inside worker 1's computation."""

    lean = False  # it reads and collects: its workers must be processes

    def start(self, ps):
        self.seen_ = {}
        super().start(ps)

    def on_push(self, ps, push):
        if push.worker == 0 and "partial" not in self.seen_:
            self.seen_.update(
                partial=ps.collect(1, 4),
                none_new=ps.collect(1, 4, first=1),
                reading=(ps.reading(0), ps.reading(1)),
                w=ps.w,
            )
        if push.worker == 1 and "push" not in self.seen_:
            # a copy: ASGD's apply_one consumes the push's gradient (scales it in place)
            self.seen_["push"] = Push(
                push.worker, push.grad.copy(), push.version, push.sent, push.samples
            )
        super().on_push(ps, push)


def test_collect_hook_reads_prefix_of_the_minibatch_without_changing_the_run():
    # Worker 1 computes 2.4 s from t = 0 on w0; at t = 1 it has done ⌊1·4/2.4⌋ = 1 of 4 blocks: 2 rows.
    sc = scenario(workers(1.0, 2.4), {"asgd": {"lr": 0.1}}, 5.0)
    prep = prepare(sc)
    sim = Simulation(sc, "asgd", prep)
    probe = Probe(0.1, sim.rule.groups)
    sim.rule = sim.ps.rule = probe
    result = sim.run()
    seen = probe.seen_
    assert seen["reading"] == (None, 0)  # worker 0 is pushing; worker 1 computes on v0
    part, done = seen["partial"]
    assert (done, part.samples, part.version, part.worker, part.sent) == (1, 2, 0, 1, 1.0)
    empty, done2 = seen["none_new"]
    assert (done2, empty.samples) == (1, 0) and not empty.grad.any()
    rows = BatchSampler(prep.shards[1], 8, Streams(sc.run.seed).rng("batch", 1)).next()
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    np.testing.assert_array_equal(part.grad, model.gradient(prep.w0, X[rows[:2]], y[rows[:2]]))
    np.testing.assert_array_equal(seen["push"].grad, model.gradient(prep.w0, X[rows], y[rows]))
    plain = simulate(sc, "asgd", prepared=prep)
    assert trace(result) == trace(plain) and np.array_equal(result.final_w, plain.final_w)


@pytest.mark.parametrize("blocks", [1, 3, 16])
def test_runs_with_latency_and_random_times(blocks):
    ws = [
        {"name": "a", "count": 3, "compute": {"dist": "exponential", "mean": 1.0}, "latency": 0.2},
        {"name": "b", "count": 2, "compute": {"dist": "pareto", "shape": 2.0, "scale": 1.0}},
    ]
    result = run(ws, "lgc", 60.0, k=3, blocks=blocks)
    assert result.status == "ok" and result.updates > 10
    assert max(result.records.staleness) <= 1
    for w in result.workers:
        assert w.compute_s + w.comm_s + w.idle_s == pytest.approx(result.sim_time)


def test_peek_never_changes_the_minibatch_sequence():
    shard = np.arange(10, 30)
    plain = BatchSampler(shard, 6, np.random.default_rng(5))
    peeky = BatchSampler(shard, 6, np.random.default_rng(5))
    for i in range(12):  # crosses several epoch boundaries (20 rows, batches of 6)
        if i % 2:
            ahead = peeky.peek()
            np.testing.assert_array_equal(ahead, peeky.peek())
            np.testing.assert_array_equal(ahead, peeky.next())
            plain.next()
        else:
            np.testing.assert_array_equal(plain.next(), peeky.next())
