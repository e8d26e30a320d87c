"""Grouping from measured times, and the advisor's closed forms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import ROOT
from sklearn.metrics import adjusted_rand_score

from netsim.config.scenario import load_scenario
from netsim.grouping.clustering import (
    choose_grouping,
    equal_groups,
    features,
    kmeans_groups,
    parse_method,
)
from netsim.rng import Streams
from netsim.sim.measurement import measure
from netsim.tuning.advisor import predict, rank


def labels_of(groups, n):
    lab = np.empty(n, int)
    for k, g in enumerate(groups):
        lab[list(g)] = k
    return lab


def test_auto_recovers_the_paper_groups_with_jitter():
    # The paper's 4/4/8 workers at 1/2/3 units, each draw with 10 % lognormal jitter.
    over = [
        'workers.0.compute={dist="lognormal", median=1.0, sigma=0.1}',
        'workers.1.compute={dist="lognormal", median=2.0, sigma=0.1}',
        'workers.2.compute={dist="lognormal", median=3.0, sigma=0.1}',
    ]
    sc = load_scenario(ROOT / "scenarios" / "gsgd_paper.toml", over)
    m = measure(sc, 785, 5, Streams(sc.run.seed))
    auto = choose_grouping("auto", m.iteration, k_max=8)
    hand = sc.rules["gsgd"].groups
    assert adjusted_rand_score(labels_of(hand, 16), labels_of(auto.groups, 16)) == 1.0
    assert auto.k == 3 and set(auto.criterion) == set(range(2, 9))


def test_auto_finds_the_datacenters_of_the_geo_scenario():
    sc = load_scenario(ROOT / "scenarios" / "geo_gsgd.toml")
    m = measure(sc, 65, 5, Streams(sc.run.seed))
    auto = choose_grouping("auto", m.iteration)
    assert auto.groups == (tuple(range(5)), tuple(range(5, 10)), tuple(range(10, 15)))
    # the probe's round trip grows with the WAN latency: 2 × (1, 20, 80) ms plus the LAN
    assert m.rtt[0] < 0.003 and 0.040 < m.rtt[5] < 0.041 and 0.160 < m.rtt[10] < 0.161


def test_kmeans_is_optimal_in_one_dimension():
    # Optimal 1-D k-means clusters are contiguous in sorted order: brute force all cuts.
    rng = np.random.default_rng(7)
    for trial in range(5):
        x = np.sort(rng.lognormal(0, 1, 9))
        X = np.log(x)[:, None]
        for k in (2, 3, 4):
            best = min(
                sum(((X[a:b] - X[a:b].mean()) ** 2).sum() for a, b in zip((0,) + cuts, cuts + (9,)))
                for cuts in itertools.combinations(range(1, 9), k - 1)
            )
            lab = kmeans_groups(X, k, seed=0)
            got = sum(((X[lab == c] - X[lab == c].mean()) ** 2).sum() for c in np.unique(lab))
            assert got == pytest.approx(best, rel=1e-12)


def test_equal_groups_by_hand():
    mean = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 6.0])
    assert equal_groups(mean, 3) == ((1, 3), (2, 4), (0, 5))
    assert equal_groups(mean, 4) == ((1, 3), (2, 4), (0,), (5,))


def test_homogeneous_gives_one_group_and_no_structure_gives_singletons():
    same = np.full((6, 3), 2.0) * np.array([1.0, 1.05, 0.95])
    assert choose_grouping("auto", same).groups == (tuple(range(6)),)
    spread = np.exp(np.linspace(0, 3, 8))[:, None] * np.ones((8, 3))
    g = choose_grouping("auto", spread, k_max=4)
    assert g.k == 8 and all(len(x) == 1 for x in g.groups)


def test_features_shapes():
    t = np.array([[1.0, 1.0], [np.e, np.e]])
    np.testing.assert_allclose(features(t), [[0.0], [1.0]])
    assert features(t, jitter=True).shape == (2, 2)


@pytest.mark.parametrize("text", ["kmeans:0", "kmeans:17", "equal:x", "spectral", "auto:3"])
def test_bad_methods(text):
    with pytest.raises(ValueError, match="allowed"):
        parse_method(text, 16)


def test_advisor_closed_forms():
    # Constant times: groups of 1-unit and 3-unit workers update at rates 1 and 1/3 (1/s);
    # τ_fast = (4/3 − 1)/1 = 1/3, τ_slow = (4/3 − 1/3)/(1/3) = 3; weighted mean = K − 1 = 1.
    times = np.array([[1.0], [1.0], [3.0], [3.0]])
    p = predict("two", [[0, 1], [2, 3]], times, alpha=0.5)
    assert p.group_rates == pytest.approx((1.0, 1 / 3))
    assert p.group_staleness == pytest.approx((1 / 3, 3.0))
    assert p.mean_staleness == pytest.approx(1.0)
    assert p.progress == pytest.approx(1.0 * 2**0.5 / (4 / 3) + (1 / 3) * 2**0.5 / 4)
    assert predict("two", [[0, 1], [2, 3]], times, lr_sync=0.3).lr == pytest.approx(
        0.3 / 2
    )  # η_sync / (1 + τ̄)
    one = predict("one", [[0, 1, 2, 3]], times, lr_sync=0.3)
    assert one.update_rate == pytest.approx(1 / 3) and one.mean_staleness == 0.0
    assert one.progress == pytest.approx(1 / 3) and one.lr == pytest.approx(0.3)


def test_advisor_expected_max_of_exponentials():
    # E[max of 2 i.i.d. Exp(1)] = 1 + 1/2 → rate 2/3.
    rng = np.random.default_rng(1)
    times = rng.exponential(1.0, (2, 20000))
    p = predict("pair", [[0, 1]], times, samples=200000, rng=np.random.default_rng(2))
    assert p.update_rate == pytest.approx(2 / 3, rel=0.02)


def test_rank_orders_by_progress_each_grouping_at_its_own_step():
    """The paper's cluster (4 workers at 1 s, 4 at 2 s, 8 at 3 s), α = 0: P = Σ r_k / (1 + τ_k)
    = Σ r_k² / R. Three classes: (1 + 1/4 + 1/9) / (11/6) = 0.7424; singletons: (4 + 4/4 + 8/9)
    / (26/3) = 0.6795; one group: 1/3. The paper's tuned steps follow η_sync / (1 + τ̄) with
    η_sync = 0.2: 0.2, 0.067 (paper 0.08) and 0.0125 (paper 0.01)."""
    times = np.array([[1.0]] * 4 + [[2.0]] * 4 + [[3.0]] * 8)
    ranking = rank(
        {
            "ssgd": [list(range(16))],
            "asgd": [[i] for i in range(16)],
            "gsgd": [[0, 1, 2, 3], [4, 5, 6, 7], list(range(8, 16))],
        },
        times,
        lr_sync=0.2,
    )
    assert [p.name for p in ranking] == ["gsgd", "asgd", "ssgd"]
    assert [p.progress for p in ranking] == pytest.approx(
        [(1 + 1 / 4 + 1 / 9) / (11 / 6), (4 + 1 + 8 / 9) / (26 / 3), 1 / 3]
    )
    assert [p.lr for p in ranking] == pytest.approx([0.2 / 3, 0.2 / 16, 0.2])


def test_rank_identical_workers_tie_and_fewer_groups_win():
    """Identical constant workers: every grouping has P = 1/T (K groups at rate 1/T each, τ = K − 1),
    so the tie goes to one group."""
    times = np.full((6, 3), 2.0)
    ranking = rank(
        {
            "singletons": [[i] for i in range(6)],
            "pairs": [[0, 1], [2, 3], [4, 5]],
            "one": [list(range(6))],
        },
        times,
    )
    assert [p.name for p in ranking] == ["one", "pairs", "singletons"]
    assert [p.progress for p in ranking] == pytest.approx([0.5] * 3)


def test_kmeans_takes_seeds_beyond_32_bits():
    """run.seed has no upper bound; scikit-learn's KMeans takes seeds below 2**32, so a
    larger seed is reduced mod 2**32 (found by a scenario fuzzer: seed 2**32 crashed)."""
    X = np.array([[1.0], [1.1], [1.2], [5.0], [5.2], [9.0], [9.1]])
    expected = [0, 0, 0, 1, 1, 2, 2]
    for seed in (0, 2**32 - 1, 2**32, 2**63 - 1):
        labels = kmeans_groups(X, 3, seed)
        assert adjusted_rand_score(labels, expected) == 1.0
    assert (kmeans_groups(X, 3, 2**32 + 7) == kmeans_groups(X, 3, 7)).all()


def test_kmeans_asked_for_more_groups_than_distinct_speeds_forms_those_that_exist():
    import warnings

    from netsim.grouping.clustering import kmeans_groups

    X = np.array([[1.0], [1.0], [1.0], [3.0], [3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn's ConvergenceWarning would raise here
        labels = kmeans_groups(X, 3, seed=0)
    assert len(set(labels[:3])) == 1 and len(set(labels[3:])) == 1 and labels[0] != labels[3]
