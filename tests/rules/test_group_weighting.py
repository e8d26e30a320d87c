"""Bias-aware GSGD group weighting: closed forms and a hand-traced run."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.rng import Streams
from netsim.rules.gsgd import group_weights
from netsim.sim.engine import prepare, simulate
from netsim.sim.worker import BatchSampler


def test_inverse_rate_weights():
    # c = counts + 1 = 10, 5, 2; 1/c = 0.1, 0.2, 0.5 with mean 0.8/3
    assert group_weights([9, 4, 1], "inverse_rate") == pytest.approx([0.375, 0.75, 1.875])


def test_fedat_weights_swap_counts_by_rank():
    # the busiest group gets the count of the idlest: weights ∝ 2, 5, 10, mean 17/3
    assert group_weights([9, 4, 1], "fedat") == pytest.approx([6 / 17, 15 / 17, 30 / 17])
    assert group_weights([1, 9, 4], "fedat") == pytest.approx([30 / 17, 6 / 17, 15 / 17])


@pytest.mark.parametrize("method", ["none", "inverse_rate", "fedat"])
def test_equal_counts_give_unit_weights(method):
    assert group_weights([3, 3, 3, 3], method).tolist() == [1.0] * 4


def two_groups(weighting):
    raw = base_raw(workers=[{"name": "fast", "count": 1, "compute": 1.0}, {"name": "slow", "count": 1, "compute": 2.5}],
                   algorithms={"gsgd": {"lr": 0.1, "group_weighting": weighting}})
    raw["run"].update(until=3.5, algorithm="gsgd")
    return make_scenario(raw)


def test_inverse_rate_run_by_hand():
    # fast updates at t = 1, 2, 3 and slow at t = 2.5 (on the initial model). Counts before
    # each update → weights: t=1 [0,0] → 1; t=2 [1,0] → (1/2)/(3/4) = 2/3; t=2.5 [2,0] → 1/(2/3) = 1.5;
    # t=3 [2,1] → (1/3)/(5/12) = 0.8.
    sc = two_groups("inverse_rate")
    r = simulate(sc)
    prep = prepare(sc)
    X, y, grad = prep.dataset.X_train, prep.dataset.y_train, prep.model.gradient
    fast = BatchSampler(prep.shards[0], 8, Streams(sc.run.seed).rng("batch", 0))
    slow = BatchSampler(prep.shards[1], 8, Streams(sc.run.seed).rng("batch", 1))

    def g(w, sampler):
        rows = sampler.next()
        return grad(w, X[rows], y[rows])

    w0 = prep.w0
    w1 = w0 - 0.1 * g(w0, fast)
    w2 = w1 - 0.1 * (2 / 3) * g(w1, fast)
    w3 = w2 - 0.1 * 1.5 * g(w0, slow)
    w4 = w3 - 0.1 * 0.8 * g(w2, fast)
    assert r.updates == 4 and np.allclose(r.final_w, w4, rtol=1e-12, atol=1e-15)


def test_none_is_the_default():
    a, b = simulate(two_groups("none")), simulate(make_scenario(base_raw()), "gsgd")
    assert a.updates == 4 and b.updates > 0
    raw = base_raw()
    raw["algorithms"]["gsgd"]["group_weighting"] = "none"
    assert simulate(make_scenario(raw), "gsgd").final_w.tobytes() == b.final_w.tobytes()


def test_bad_weighting():
    with pytest.raises(ScenarioError) as info:
        two_groups("bogus")
    assert info.value.key == "algorithms.gsgd.group_weighting"
