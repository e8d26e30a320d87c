"""The race's progress: the share of its planned work done, rung by rung."""

from __future__ import annotations

import pytest
from conftest import ROOT

import netsim
from netsim import api
from netsim.tuning.evidence import Pilot
from netsim.tuning.halving import done_share
from netsim.tuning.options import RaceOptions


def test_the_share_prices_the_plan_at_the_cost_of_the_pilots_still_racing():
    # 6 pilots ran rung 0 (to 2 s): the 4 still racing cost 3 wall s per simulated s (6 s
    # each), the 2 that left 1 (2 s each): 28 wall s spent. Plan from rung 1 (rungs 2, 4,
    # 8 s; a third kept, at least 2; 3 runs per finalist): 4 candidates × 2 s, then 2 × 4 s,
    # then 2 finalists × 2 more runs × 8 s = 48 simulated s, at 3 wall s each: 144.
    pilots = [Pilot("g", ((0,),), 1.0, sim_s=2.0, wall_s=6.0) for _ in range(4)]
    pilots += [Pilot("g", ((0,),), 1.0, sim_s=2.0, wall_s=2.0) for _ in range(2)]
    options = RaceOptions(factor=3.0, finalists=2, replicates=3)
    share = done_share(pilots, [2.0, 4.0, 8.0], [0, 1, 2, 3], 1, options)
    assert share == pytest.approx(28 / (28 + 144))


def test_a_race_reports_its_share_before_each_rung_from_none_to_all():
    sc = netsim.load(str(ROOT / "scenarios" / "quickstart.toml"), ["run.until=40"])
    shares, rungs = [], []
    api.recommend(
        sc, lrs=[0.05, 0.15], on_rung=lambda r, n, k: rungs.append(r), on_progress=shares.append
    )
    assert rungs == [0, 1, 2] and len(shares) == 4
    assert shares[0] == 0.0 and shares[-1] == 1.0
    assert all(a < b for a, b in zip(shares, shares[1:]))
