"""A misspelt table or key is named with a did-you-mean, not reported as the one it hides missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from netsim.config.scenario import parse_scenario
from netsim.errors import ScenarioError

BASE = {
    "run": {"until": 1.0, "algorithm": "asgd"},
    "workers": [{"name": "a", "count": 1, "compute": 1.0}],
    "algorithms": {"asgd": {"lr": 0.1}},
}


def refusal(raw: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(raw, Path("s.toml"))
    return err.value


def test_a_singular_workers_table_is_named_with_did_you_mean():
    raw = {k: v for k, v in BASE.items() if k != "workers"}
    err = refusal({**raw, "worker": BASE["workers"]})
    assert err.key == "worker"
    assert "did you mean workers?" in str(err)


@pytest.mark.parametrize("typo, meant", [("modle", "model"), ("algorithm", "algorithms")])
def test_an_unknown_top_level_table_is_named_before_the_readers_run(typo, meant):
    raw = {k: v for k, v in BASE.items() if k != meant}
    err = refusal({**raw, typo: BASE.get(meant, {"name": "softmax"})})
    assert err.key == typo and f"did you mean {meant}?" in str(err)


def test_a_missing_key_names_the_close_one_given():
    """``lrr`` for the required ``lr``: the refusal of lr names lrr."""
    err = refusal({**BASE, "algorithms": {"asgd": {"lrr": 0.1}}})
    assert err.key == "algorithms.asgd.lr"
    assert "found algorithms.asgd.lrr: did you mean algorithms.asgd.lr?" in str(err)
