"""The models a real run's server keeps for its curve (netsim/testbed/snapshots.py)."""

import numpy as np

from netsim.testbed.snapshots import Snapshots, time_snapshots


def test_time_snapshots_counts_the_loop_evaluation_times():
    """The server keeps the initial model and one at each k × eval_every before until:
    until 10, every 2.5 units: 2.5, 5, 7.5 (10 is the final model, kept apart): 4."""
    assert time_snapshots(10.0, 2.5) == 4
    assert time_snapshots(10.0, 3.0) == 4  # 3, 6, 9
    assert time_snapshots(10.0, 20.0) == 1  # none before the end
    assert time_snapshots(10.0, 0.0) == 1  # no periodic evaluation


def test_snapshots_are_copies_in_order_beyond_capacity_too():
    """Each kept model is the value it had when taken, not a view of the live model; rows
    past the capacity are kept as well (fresh copies)."""
    w = np.arange(3.0)
    keep = Snapshots(w, capacity=2)
    w += 1.0
    keep.take(1, 0.5, w)
    w += 1.0
    keep.take(2, 1.0, w)
    w += 1.0
    got = [(v, t, list(m)) for v, t, m in keep]
    assert got == [(0, 0.0, [0.0, 1.0, 2.0]), (1, 0.5, [1.0, 2.0, 3.0]), (2, 1.0, [2.0, 3.0, 4.0])]
    assert len(keep) == 3
