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
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 1, "compute": 1.0},
            {"name": "slow", "count": 1, "compute": 2.5},
        ],
        algorithms={"gsgd": {"lr": 0.1, "group_weighting": weighting}},
    )
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


def test_fedat_tied_groups_share_their_ranks_weights():
    # c = 6, 6, 2: ranks 0-1 tie and share (2 + 6) / 2 = 4, rank 2 gets 6; mean 14/3
    assert group_weights([5, 5, 1], "fedat") == pytest.approx([6 / 7, 6 / 7, 9 / 7])
    # c = 8, 3, 3, 3: rank 0 gets 3; ranks 1-3 share (3 + 3 + 8) / 3; mean 17/4
    assert group_weights([7, 2, 2, 2], "fedat") == pytest.approx(
        [12 / 17, 56 / 51, 56 / 51, 56 / 51]
    )


def test_fedat_weights_follow_the_groups_under_any_permutation_of_ties():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(0, 6), min_size=1, max_size=9), st.randoms(use_true_random=False))
    def check(counts, rnd):
        w = group_weights(counts, "fedat")
        assert w.mean() == pytest.approx(1.0)
        for value in set(counts):  # equal counts, equal weights
            tied = [w[i] for i, c in enumerate(counts) if c == value]
            assert max(tied) - min(tied) <= 1e-12
        perm = list(range(len(counts)))
        rnd.shuffle(perm)
        w_perm = group_weights([counts[i] for i in perm], "fedat")
        assert np.allclose(w_perm, w[perm], rtol=0, atol=1e-12)  # the weights follow their groups
        assert np.allclose(np.sort(w_perm), np.sort(w), rtol=0, atol=1e-12)

    check()


def test_two_identical_groups_get_equal_step_shares():
    """The issue's reproducer on a small cluster: the slow class split into two identical
    groups; both make as many updates and carry as many gradients, so under fedat their step
    shares are equal too (the first-listed was halved)."""
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 2, "compute": 1.0},
            {"name": "slow", "count": 4, "compute": 3.0},
        ],
        algorithms={
            "gsgd": {"lr": 0.1, "group_weighting": "fedat", "groups": [["fast"], [2, 3], [4, 5]]}
        },
    )
    raw["run"].update(until=60.0, algorithm="gsgd")
    from netsim.sim.summary import summarize

    summary = summarize(simulate(make_scenario(raw), "gsgd"))
    groups = summary["groups"]
    assert groups[1]["updates"] == groups[2]["updates"] > 0
    grad, step = summary["bias"]["gradient_share_by_group"], summary["bias"]["step_share_by_group"]
    assert grad[1] == pytest.approx(grad[2]) and step[1] == pytest.approx(step[2], rel=1e-12)


def test_compare_runs_the_scenarios_own_weighting_once():
    from netsim.api import variants

    sc = two_groups("none")
    assert [v.label for v in variants(sc, ["gsgd"], weightings=["none", "fedat"])] == [
        "gsgd",
        "gsgd[fedat]",
    ]
    assert [v.label for v in variants(sc, weightings=["none", "fedat"])] == [
        "gsgd[none]",
        "gsgd[fedat]",
    ]
