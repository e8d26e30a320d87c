"""DC-ASGD: the compensation step by hand, the per-worker backup, adaptive λ, an engine trace."""

from __future__ import annotations

import numpy as np
import pytest
from rulekit import scenario, trace, workers

from netsim.rules import RULES
from netsim.rules.base import Push
from netsim.rules.dcasgd import (
    DCASGDAdaptive,
    DCASGDConstant,
    adaptive_lambda,
    dc_delta,
    mean_square,
)
from netsim.sim.engine import prepare, simulate


class FakePS:
    """Just enough of the PS for a rule: model, version, step, send."""

    def __init__(self, w0):
        self.w = np.asarray(w0, float)
        self.version = 0
        self.sent = []

    def step(self, delta, pushes, group, scale=1.0, owned=False):
        self.w = self.w - delta
        self.version += 1

    def send(self, workers):
        self.sent.extend(workers)


def test_dc_delta_by_hand():
    # w = (1, 2), w_bak = (0.5, 2.5), g = (2, -1), η = 0.1, λ = 0.04:
    # g⊙g = (4, 1); w − w_bak = (0.5, −0.5); λ·g⊙g⊙(w − w_bak) = 0.04·(2, −0.5) = (0.08, −0.02)
    # η·(g + that) = 0.1·(2.08, −1.02) = (0.208, −0.102).
    delta = dc_delta(np.array([1.0, 2.0]), np.array([0.5, 2.5]), np.array([2.0, -1.0]), 0.1, 0.04)
    np.testing.assert_allclose(delta, [0.208, -0.102], rtol=1e-14)
    np.testing.assert_allclose(
        mean_square(np.array([1.0, 1.0]), np.array([2.0, 0.0]), 0.75), [1.75, 0.75]
    )
    np.testing.assert_allclose(adaptive_lambda(np.array([4.0, 0.25]), 2.0, 0.0), [1.0, 4.0])


def test_constant_rule_uses_the_backup_of_the_pushing_worker():
    # w0 = (1, 2), η = 0.1, λ = 0.04, both workers read v0 (backup w0).
    # Worker 0, g = (1, −2): w − w_bak = 0, so w1 = w0 − 0.1·g = (0.9, 2.2); its backup becomes w1.
    # Worker 1, g = (2, −1), read v0: w1 − w0 = (−0.1, 0.2); g⊙g = (4, 1);
    #   λ·g⊙g⊙Δ = 0.04·(−0.4, 0.2) = (−0.016, 0.008); g + … = (1.984, −0.992)
    #   w2 = (0.9, 2.2) − 0.1·(1.984, −0.992) = (0.7016, 2.2992).
    rule = DCASGDConstant(0.1, [[0], [1]], lambda0=0.04)
    ps = FakePS([1.0, 2.0])
    rule.start(ps)
    rule.on_push(ps, Push(0, np.array([1.0, -2.0]), 0, 1.0, 8))
    np.testing.assert_allclose(ps.w, [0.9, 2.2], rtol=1e-14)
    assert rule.backup_[0][0] == 1 and np.array_equal(rule.backup_[0][1], ps.w)
    rule.on_push(ps, Push(1, np.array([2.0, -1.0]), 0, 1.5, 8))
    np.testing.assert_allclose(ps.w, [0.7016, 2.2992], rtol=1e-14)
    assert ps.sent == [0, 1, 0, 1]


def test_adaptive_lambda_is_recomputed_from_lambda0_not_compounded():
    # m = 0, so MS = g⊙g and λ = λ0/|g| (ε = 1e-7 is negligible at this tolerance).
    # Worker 0, g = (2, −2): λ = (1, 1), Δ = 0: w1 = (1, 2) − 0.1·(2, −2) = (0.8, 2.2).
    # Worker 1 (read v0), g = (4, 1): λ = 2/(4, 1) = (0.5, 2) (compounding would give (0.25, 1));
    #   Δ = w1 − w0 = (−0.2, 0.2); λ·g⊙g⊙Δ = (0.5·16·−0.2, 2·1·0.2) = (−1.6, 0.4)
    #   w2 = (0.8, 2.2) − 0.1·(4 − 1.6, 1 + 0.4) = (0.56, 2.06).
    rule = DCASGDAdaptive(0.1, [[0], [1]], lambda0=2.0, m=0.0, eps=1e-7)
    ps = FakePS([1.0, 2.0])
    rule.start(ps)
    rule.on_push(ps, Push(0, np.array([2.0, -2.0]), 0, 1.0, 8))
    np.testing.assert_allclose(ps.w, [0.8, 2.2], rtol=1e-12)
    rule.on_push(ps, Push(1, np.array([4.0, 1.0]), 0, 1.5, 8))
    np.testing.assert_allclose(ps.w, [0.56, 2.06], rtol=1e-7)


def test_defaults():
    assert DCASGDConstant(0.1, [[0]]).lambda0 == 0.04
    a = DCASGDAdaptive(0.1, [[0]])
    assert (a.lambda0, a.m, a.eps) == (2.0, 0.95, 1e-7)
    assert RULES["dcasgd_c"] is DCASGDConstant and RULES["dcasgd_a"] is DCASGDAdaptive


def test_engine_trace_and_model_with_full_batches():
    # Workers 1 s and 2.4 s: ASGD's version pattern; w_bak of worker 1 is w0 until its push at 2.4.
    lam, lr = 5.0, 0.1
    sc = scenario(
        workers(1.0, 2.4),
        {"dcasgd_c": {"lr": lr, "lambda0": lam}, "asgd": {"lr": lr}},
        3.5,
        batch_size=100000,
    )
    prep = prepare(sc)
    result = simulate(sc, prepared=prep)
    assert trace(result) == [(1.0, 0, 0, 1), (2.0, 0, 0, 2), (2.4, 1, 2, 3), (3.0, 0, 1, 4)]
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    s0, s1 = prep.shards
    g = lambda w, s: model.gradient(w, X[s], y[s])
    w0 = prep.w0
    w1 = w0 - lr * g(w0, s0)  # w_bak(0) = w0 = w: no compensation
    w2 = w1 - lr * g(w1, s0)  # w_bak(0) = w1 = w
    g1 = g(w0, s1)
    w3 = w2 - lr * (g1 + lam * g1 * g1 * (w2 - w0))  # worker 1 read v0
    g0 = g(w2, s0)
    w4 = w3 - lr * (g0 + lam * g0 * g0 * (w3 - w2))  # worker 0 read v2
    np.testing.assert_allclose(result.final_w, w4, rtol=1e-12, atol=1e-14)
    asgd = simulate(sc, "asgd", prepared=prep)
    assert np.abs(asgd.final_w - w4).max() > 1e-6  # the compensation did something


def test_lambda_must_be_non_negative():
    from netsim.errors import ScenarioError

    with pytest.raises(ScenarioError, match=r"algorithms\.dcasgd_c\.lambda0.*>= 0"):
        scenario(workers(1.0), {"dcasgd_c": {"lr": 0.1, "lambda0": -0.5}}, 1.0)
