"""The shipped non-IID scenario: what it declares, and GSGD weighting variants in a comparison."""

from __future__ import annotations

import pytest
from conftest import ROOT, base_raw, make_scenario

from netsim import api
from netsim.config.scenario import load_scenario
from netsim.errors import ScenarioError

PATH = ROOT / "scenarios" / "noniid_speed_skew.toml"


def test_noniid_speed_skew_declares_disjoint_digits_on_the_paper_classes():
    sc = load_scenario(PATH)
    assert [(wc.name, wc.count, wc.compute.mean()) for wc in sc.workers] == [
        ("fast", 4, 1.0),
        ("medium", 4, 2.0),
        ("slow", 8, 3.0),
    ]
    labels = {wc.name: set(wc.labels) for wc in sc.workers}
    assert labels["slow"] == {0, 1, 2, 3, 4} and labels["fast"] == labels["medium"] == {
        5,
        6,
        7,
        8,
        9,
    }
    assert (
        sc.data.source == "mnist" and sc.data.labels == "multiclass" and sc.model.name == "softmax"
    )
    mlp = load_scenario(PATH, ['model.name="mlp"'])
    assert mlp.model.init == "he" and mlp.rule("asgd").lr == 0.05


def test_weighting_variants_are_labelled_gsgd_runs():
    sc = make_scenario(base_raw())
    plan = api.variants(sc, ["asgd"], weightings=["none", "fedat"])
    assert [(v.label, v.folder, v.algorithm) for v in plan] == [
        ("asgd", "asgd", "asgd"),
        ("gsgd[none]", "gsgd-none", "gsgd"),
        ("gsgd[fedat]", "gsgd-fedat", "gsgd"),
    ]
    assert plan[2].scenario.rule("gsgd").grouping.weighting == "fedat"
    with pytest.raises(ScenarioError, match="group_weighting"):
        api.variants(sc, [], weightings=["bogus"])
