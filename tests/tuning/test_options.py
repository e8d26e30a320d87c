"""RaceOptions: the race's settings as one checked value; the target the user sets."""

from __future__ import annotations

import math
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from netsim.tuning.options import GUARD, TIE, RaceOptions, RecommendError, Target


def test_the_defaults_are_the_documented_race():
    o = RaceOptions()
    assert (o.factor, o.first, o.last, o.finalists, o.replicates) == (2.0, 1 / 8, 1 / 2, 3, 3)
    assert (o.guard, o.tie, o.widen, o.eval_rows, o.alike) == (GUARD, TIE, 3, 2000, 0.0)
    assert GUARD == 1.5 and TIE == 0.0
    assert o.lrs is None and o.grid == () and o.ratio == 3.0
    assert (o.aim, o.references, o.slack, o.plateau, o.look) == ("level", 2, 0.2, 0.05, 0.4)


def test_a_grid_is_sorted_once_each_and_its_ratio_read_off():
    o = RaceOptions(lrs=[0.9, 0.1, 0.3, 0.3])
    assert o.lrs == (0.1, 0.3, 0.9) and o.ratio == pytest.approx(3.0)
    assert RaceOptions(lrs=(2.0,)).ratio == 3.0  # a grid of one: the default step


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"lrs": ()}, "grid is empty"),
        ({"lrs": (0.1, -1.0)}, "finite and > 0, got -1.0"),
        ({"lrs": (0.1, math.nan)}, "finite and > 0"),
        ({"factor": 1.0}, "need factor > 1"),
        ({"first": 0.6, "last": 0.5}, "0 < first <= last <= 1"),
        ({"last": 1.5}, "0 < first <= last <= 1"),
        ({"replicates": 0}, "replicates must be >= 1, got 0"),
        ({"decide": -1}, "decide must be >= 0, got -1"),
        ({"guard": 0.5}, "guard must be >= 1"),
        ({"jobs": 0}, "jobs must be >= 1, got 0"),
        ({"aim": "ssgd"}, "aim must be one of level, one_group, auto, got 'ssgd'"),
        ({"plateau": 1.0}, "0 <= plateau < 1"),
        ({"slack": -0.1}, "slack >= 0"),
        ({"references": 0}, "references >= 1"),
        ({"look": 1.0}, "need 0 <= look < 1, got 1.0"),
        ({"look": float("nan")}, "need 0 <= look < 1, got nan"),
    ],
)
def test_a_bad_setting_is_refused_in_one_line(bad, match):
    with pytest.raises(RecommendError, match=match) as info:
        RaceOptions(**bad)
    assert "\n" not in str(info.value)
    with pytest.raises(RecommendError, match=match):
        replace(RaceOptions(), **bad)  # a changed copy is checked too


def test_the_target_the_user_sets_and_where_it_comes_from():
    assert Target.asked(0.5, 0.0) == Target(0.5, "given", True)
    assert Target.asked(None, 0.25) == Target(0.25, "run.target_loss", True)
    assert Target.asked(0.5, 0.25).source == "given"  # the option wins over the scenario
    assert Target.asked(None, 0.0) is None and Target.asked(0.0, 0.3) is None  # 0: none
    with pytest.raises(RecommendError, match="target loss must be > 0, got -1.0"):
        Target.asked(-1.0, 0.0)
    with pytest.raises(RecommendError, match="target loss must be > 0"):
        Target.asked(None, -0.5)


def test_the_regret_benchmark_takes_race_options_by_field_name(capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import grouping_regret as gr
    finally:
        sys.path.pop(0)
    for argv, says in (
        (["--option", "nosuch=1"], "'nosuch' is not a field of RaceOptions"),
        (["--option", "guard=0.5"], "guard must be >= 1"),
        (["--option", "finalists"], "expected KEY=VALUE"),
        (["--baseline", "nosuch=1"], "--baseline 'nosuch=1': 'nosuch' is not a field"),
        (["--option", "look=0.4", "--baseline", "look=1"], "--baseline: need 0 <= look < 1"),
    ):
        with pytest.raises(SystemExit) as info:
            gr.main(argv)
        assert info.value.code == 2 and says in capsys.readouterr().err
    assert {f.name for f in fields(RaceOptions)} >= {"factor", "first", "tie", "guard", "lrs"}
