"""compare's variants (a grouping or a group weighting of GSGD) are made by replace on the
parsed scenario (:meth:`Scenario.with_rule_keys`): the same scenario, the same runs and the
same refusals as the scenario with the same overrides parsed again."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.config.grid import toml_value
from netsim.config.scenario import Scenario
from netsim.errors import ScenarioError
from netsim.sim.engine import simulate
from netsim.workflows.compare import variants

GROUPINGS = ["hand", "auto", "silhouette", "kmeans:2", "equal:2", "equal:3"]
WEIGHTINGS = ["none", "inverse_rate", "fedat"]


def reparsed(sc: Scenario, key: str, value: object) -> Scenario:
    """What compare made before: the override written as TOML and everything parsed again."""
    return sc.with_overrides([f"algorithms.gsgd.{key}={toml_value(value)}", 'run.algorithm="gsgd"'])


def assert_same(a: Scenario, b: Scenario) -> None:
    """Every field equal; the rules (objects without ==) by type and attributes."""
    for f in fields(Scenario):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "rules":
            assert list(x) == list(y)
            for name in x:
                assert type(x[name]) is type(y[name]) and vars(x[name]) == vars(y[name]), name
        else:
            assert x == y, f.name


def scenarios() -> list[Scenario]:
    """The small digits scenario (3 workers: 2 fast, 1 slow; gsgd's groups one per class),
    as parsed and after a rule chosen and an override recorded (both kept in a variant)."""
    sc = make_scenario(base_raw())
    return [sc, sc.with_overrides(["run.until=8.0"]).with_algorithm("ssgd")]


@pytest.mark.parametrize("sc", scenarios(), ids=["parsed", "overridden"])
@pytest.mark.parametrize(
    "key,value",
    [("grouping", g) for g in GROUPINGS] + [("group_weighting", w) for w in WEIGHTINGS],
)
def test_a_variant_is_the_scenario_parsed_again(sc, key, value):
    made = sc.with_rule_keys("gsgd", {key: value})
    assert_same(made, reparsed(sc, key, value))
    assert made.run.algorithm == "gsgd" and made.overrides[-2:] == (
        f'algorithms.gsgd.{key}="{value}"',
        'run.algorithm="gsgd"',
    )
    assert made.raw["algorithms"]["gsgd"][key] == value and key not in sc.raw["algorithms"]["gsgd"]


@pytest.mark.parametrize(
    "key,value",
    [("grouping", "equal:2"), ("grouping", "kmeans:2")]
    + [("group_weighting", w) for w in WEIGHTINGS],
)
def test_a_variant_runs_as_the_scenario_parsed_again(key, value):
    """Same updates, groups, loss curve and final model, bit for bit (40 s of digits: the
    measured groupings' 5 probe rounds take 12 s)."""
    sc = make_scenario(base_raw(run={"seed": 3, "until": 40.0, "batch_size": 8}))
    a, b = (
        simulate(s) for s in (sc.with_rule_keys("gsgd", {key: value}), reparsed(sc, key, value))
    )
    assert a.updates == b.updates > 0 and a.groups == b.groups and a.curve == b.curve
    assert a.final_w is not None and b.final_w is not None
    assert np.array_equal(a.final_w, b.final_w)


@pytest.mark.parametrize(
    "key,value",
    [
        ("grouping", "kmeans:4"),
        ("grouping", "kmeans"),
        ("grouping", "k"),
        ("group_weighting", "x"),
        ("grouping", 3),
    ],
)
def test_a_variant_not_allowed_is_refused_as_the_parse_refuses_it(key, value):
    """kmeans:4 on 3 workers, a grouping or weighting that does not exist, a number for a
    name: the same key, message and file as the scenario parsed again."""
    sc = make_scenario(base_raw(), "s.toml")
    with pytest.raises(ScenarioError) as made:
        sc.with_rule_keys("gsgd", {key: value})
    with pytest.raises(ScenarioError) as parsed:
        reparsed(sc, key, value)
    assert (made.value.key, str(made.value), made.value.file) == (
        parsed.value.key,
        str(parsed.value),
        parsed.value.file,
    )
    assert made.value.key == f"algorithms.gsgd.{key}" and made.value.file == "s.toml"


def test_compare_makes_its_variants_by_replace():
    """The grouping and weighting variants compare plans equal the scenario parsed again."""
    sc = scenarios()[0]
    plan = variants(sc, ["asgd"], groupings=["equal:2"], weightings=["fedat"])
    assert [v.label for v in plan] == ["asgd", "gsgd[equal:2]", "gsgd[fedat]"]
    assert_same(plan[1].scenario, reparsed(sc, "grouping", "equal:2"))
    assert_same(plan[2].scenario, reparsed(sc, "group_weighting", "fedat"))
