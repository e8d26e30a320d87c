"""With a target loss set by the user, the race's rungs rank pilots by their time to it (the
user's goal), not by their loss at the rung's end; that time is where each run's curve first
crosses the target, linear between evaluations, as ``netsim predict`` and the comparisons
with real runs read it."""

from __future__ import annotations

import math
from types import SimpleNamespace

from pytest import approx

from netsim.tuning.halving import _rung_key, rung_key

# Smoothed over 1 s (horizon 20 s): the trailing median of each point and the one before.
LATE_LOW = [(0.0, 1.0), (1.0, 0.9), (2.0, 0.6), (3.0, 0.3), (4.0, 0.2)]  # 1, .95, .75, .45, .25
EARLY_HIGH = [(0.0, 1.0), (1.0, 0.5), (2.0, 0.45), (3.0, 0.44), (4.0, 0.44)]  # 1, .75, .475, ...
NEVER = [(0.0, 1.0), (1.0, 0.95), (2.0, 0.9), (3.0, 0.85), (4.0, 0.8)]


def _pilot(label, curve, curves=(), status="ok"):
    return SimpleNamespace(label=label, curve=curve, curves=list(curves), status=status)


def _best(pilots, ids, keep, aim=None, level=None):
    """The *keep* of *ids* a rung at the end of the curves keeps (horizon 20 s, slack 0.2)."""
    key = _rung_key(aim, level, (math.inf, 20.0), 0.2)
    return sorted(ids, key=lambda i: key(pilots[i]))[:keep]


def test_without_a_target_the_lowest_loss_at_the_rungs_end_goes_on():
    pilots = [_pilot("early", EARLY_HIGH), _pilot("late", LATE_LOW), _pilot("never", NEVER)]
    assert _best(pilots, [0, 1, 2], 1) == [1]  # last quarter: 0.25 against 0.44


def test_with_a_target_the_first_to_reach_it_goes_on_then_the_others_by_loss():
    pilots = [_pilot("never", NEVER), _pilot("late", LATE_LOW), _pilot("early", EARLY_HIGH)]
    aim = (0.7, 20.0)
    # 1.0 → 0.5 between 0 and 1 s: 0.7 at 0.3/0.5 = 0.6 s; 0.9 → 0.6 between 1 and 2 s: 1 + 0.2/0.3
    assert rung_key(pilots[2], 0.7) == approx((0.6, 0.44))
    assert rung_key(pilots[1], 0.7) == approx((1 + 0.2 / 0.3, 0.25))
    assert rung_key(pilots[0], 0.7) == (math.inf, 0.825)
    assert _best(pilots, [0, 1, 2], 3, aim) == [2, 1, 0]


def test_a_dip_below_the_target_counts_as_reaching_it():
    # one evaluation at 0.6 then back above: the curve reached 0.7 at 1 + 0.1/0.2 = 1.5 s
    dip = [(0.0, 1.0), (1.0, 0.8), (2.0, 0.6), (3.0, 0.9), (4.0, 0.9)]
    assert rung_key(_pilot("dip", dip), 0.7)[0] == approx(1.5)


def test_a_candidate_counts_as_there_only_when_every_run_is():
    both = _pilot("both", EARLY_HIGH, [EARLY_HIGH, LATE_LOW])  # mean of 0.6 and 1.67 s
    one = _pilot("one", EARLY_HIGH, [EARLY_HIGH, NEVER])
    diverged = _pilot("diverged", EARLY_HIGH, status="diverged")
    assert rung_key(both, 0.7)[0] == approx((0.6 + 1 + 0.2 / 0.3) / 2)
    assert rung_key(one, 0.7)[0] == math.inf
    assert rung_key(diverged, 0.7) == (math.inf, math.inf)


def test_aiming_at_a_level_the_first_to_settle_there_goes_on():
    # level 0.5: EARLY_HIGH's smoothed curve ends at 0.44 (below 1.2 · 0.5) after crossing
    # 0.5 at 2 s; LATE_LOW crosses at 4 s (0.25); a dip to 0.3 that ends at 2.0 does not count.
    dip = [
        (0.0, 1.0),
        (1.0, 0.3),
        (2.0, 0.3),
        (3.0, 2.0),
        (4.0, 2.0),
    ]  # smoothed: 1, .65, .3, 1.15, 2
    pilots = [_pilot("late", LATE_LOW), _pilot("dip", dip), _pilot("early", EARLY_HIGH)]
    assert _best(pilots, [0, 1, 2], 3, level=0.5) == [2, 0, 1]
