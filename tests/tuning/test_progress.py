"""Update rates and staleness of a grouping, against hand-computed values."""

import numpy as np
import pytest

from netsim.tuning.progress import group_timing


def test_round_time_is_the_mean_of_the_per_round_maximum():
    # rounds: worker 0 takes 1 then 3 s, worker 1 takes 2 then 2 s -> maxima 2 and 3 -> 2.5 s
    g = group_timing(np.array([[1.0, 3.0], [2.0, 2.0]]), [[0, 1]])
    assert g.round_s.tolist() == [2.5]
    assert g.rate.tolist() == [0.4] and g.staleness.tolist() == [0.0]


def test_paper_classes():
    # 4 workers at 1 s, 4 at 2 s, 8 at 3 s; the three classes as groups
    times = np.array([[1.0] * 3] * 4 + [[2.0] * 3] * 4 + [[3.0] * 3] * 8)
    g = group_timing(times, [range(4), range(4, 8), range(8, 16)])
    assert g.rate == pytest.approx([1.0, 0.5, 1 / 3])
    # staleness: rounds of 1, 2, 3 s times the other groups' 5/6, 4/3 and 3/2 updates per s
    assert g.staleness == pytest.approx([5 / 6, 8 / 3, 4.5])
    assert g.updates_per_s == pytest.approx(11 / 6)
    assert g.gradients_per_s == pytest.approx(4 + 2 + 8 / 3)
    # rate-weighted mean staleness: (5/6 + 4/3 + 3/2) / (11/6) = 2
    assert g.mean_staleness == pytest.approx(2.0)
    singletons = group_timing(times, [[i] for i in range(16)])
    assert singletons.mean_size == 1.0 and singletons.updates_per_s == pytest.approx(26 / 3)
