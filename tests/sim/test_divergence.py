"""Divergence is called divergence: a loss a million times its initial value ends the run."""

from __future__ import annotations

import pytest
from conftest import ROOT

from netsim.config.scenario import load_scenario
from netsim.rules import RULES
from netsim.sim.engine import simulate
from netsim.sim.evaluation import DIVERGENCE_FACTOR, divergence_limit


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_reports_a_huge_step_as_diverged(rule):
    """η = 1e6 for 30 s on the paper's cluster (digits instead of MNIST): every rule's loss
    explodes, finite or not, and the run ends as diverged, not ok."""
    sc = load_scenario(
        ROOT / "scenarios" / "gsgd_paper.toml",
        [
            'data.source="digits"',
            "run.until=30",
            "run.eval_every=1",
            f"algorithms.{rule}.lr=1e6",
            f'run.algorithm="{rule}"',
        ],
    )
    result = simulate(sc, rule)
    assert result.status == "diverged", (rule, result.status, result.records.curve[-1])


def test_healthy_runs_stay_far_below_the_limit():
    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml", [])
    for rule in ("ssgd", "asgd", "gsgd"):
        result = simulate(sc, rule)
        losses = [c[2] for c in result.records.curve]
        assert result.status == "ok" and max(losses) < divergence_limit(losses[0]) / 1e5


def test_the_limit_is_a_million_times_the_initial_loss_at_least_one():
    assert DIVERGENCE_FACTOR == 1e6
    assert divergence_limit(0.69) == 1e6 and divergence_limit(2.3) == pytest.approx(2.3e6)


def test_a_typo_in_a_per_model_table_is_refused_with_a_suggestion():
    from conftest import base_raw, make_scenario

    from netsim.errors import ScenarioError

    raw = base_raw(algorithms={"asgd": {"lr": {"logistic": 0.1, "logisitc": 5.0}}})
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == "algorithms.asgd.lr.logisitc" and "did you mean 'logistic'" in str(
        err.value
    )


def test_a_scenario_file_over_the_size_bound_is_refused_before_parsing(tmp_path):
    from netsim.config.scenario import MAX_SCENARIO_BYTES
    from netsim.errors import ScenarioError

    f = tmp_path / "big.toml"
    f.write_text("# " + "x" * MAX_SCENARIO_BYTES + "\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(f)
    assert err.value.key == "(file)" and "at most 8,388,608" in str(err.value)
