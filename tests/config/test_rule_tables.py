"""Out-of-range rule hyper-parameters: one ScenarioError naming the key and what is allowed."""

from __future__ import annotations

import pytest
from conftest import base_raw, make_scenario, needs_mnist
from typer.testing import CliRunner

from netsim.cli import app
from netsim.errors import ScenarioError
from netsim.rules import RULES

# base_raw has 3 workers (2 fast + 1 slow).
BAD = [
    ("backup", {"backups": 3}, "algorithms.backup.backups", "allowed: 0..2"),
    ("backup", {"backups": -1}, "algorithms.backup.backups", "allowed: 0..2"),
    ("backup", {}, "algorithms.backup.backups", "missing"),
    (
        "backup",
        {"backups": 1, "late_policy": "sometimes"},
        "algorithms.backup.late_policy",
        "allowed: finish_then_drop, cancel",
    ),
    ("ksync", {"k": 0}, "algorithms.ksync.k", "allowed: 1..3"),
    ("ksync", {"k": 4}, "algorithms.ksync.k", "allowed: 1..3"),
    ("kbatch_sync", {"k": 0}, "algorithms.kbatch_sync.k", "allowed: 1..3"),
    ("kasync", {"k": 4}, "algorithms.kasync.k", "allowed: 1..3"),
    ("kbatch_async", {"k": -2}, "algorithms.kbatch_async.k", "allowed: 1..3"),
    ("lgc", {"k": 4}, "algorithms.lgc.k", "allowed: 1..3"),
    ("lgc", {"k": 2, "blocks": 0}, "algorithms.lgc.blocks", "allowed: an integer >= 1"),
    ("abs", {"k0": 0}, "algorithms.abs.k0", "allowed: 1..3"),
    ("abs", {"k0": 2, "c": 0.5}, "algorithms.abs.c", ">= 1"),
    ("abs", {"k0": 2, "p": -1}, "algorithms.abs.p", ">= 0"),
    ("abs", {"k0": 2, "smoothing": 1.0}, "algorithms.abs.smoothing", "0 <= smoothing < 1"),
    ("ssp", {"s": -1}, "algorithms.ssp.s", ">= 0"),
    ("ssp", {"s": 1.5}, "algorithms.ssp.s", "an integer"),
    ("dcasgd_c", {"lambda0": -0.04}, "algorithms.dcasgd_c.lambda0", ">= 0"),
    ("dcasgd_a", {"lambda0": -2}, "algorithms.dcasgd_a.lambda0", ">= 0"),
    ("dcasgd_a", {"m": 1.0}, "algorithms.dcasgd_a.m", "0 <= m < 1"),
    ("dcasgd_a", {"eps": 0}, "algorithms.dcasgd_a.eps", "> 0"),
    ("sa_asgd", {"lr": -1}, "algorithms.sa_asgd.lr", "> 0"),
    ("sa_asgd", {"tau": 3}, "algorithms.sa_asgd.tau", "unknown key"),
]


@pytest.mark.parametrize("name, params, key, allowed", BAD)
def test_bad_hyper_parameter(name, params, key, allowed):
    raw = base_raw(algorithms={name: {"lr": 0.1, **params}})
    raw["run"]["algorithm"] = name
    with pytest.raises(ScenarioError) as info:
        make_scenario(raw)
    assert info.value.key == key
    assert allowed in info.value.message


def test_lr_is_required_and_per_model():
    raw = base_raw(algorithms={"kasync": {"k": 2}})
    raw["run"]["algorithm"] = "kasync"
    with pytest.raises(ScenarioError, match="algorithms.kasync.lr: missing"):
        make_scenario(raw)
    raw["algorithms"]["kasync"]["lr"] = {"smooth_svm": 0.01}
    with pytest.raises(ScenarioError, match="no learning rate for model 'logistic'"):
        make_scenario(raw)


def test_every_rule_has_metadata():
    for name, cls in RULES.items():
        assert cls.name == name
        assert cls.description and "\n" not in cls.description
        assert "ALGORITHMS.md §" in cls.source
    assert "ABS-style" in RULES["abs"].description and "LGC-style" in RULES["lgc"].description


def test_cli_validate_one_line_exit_2(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        '[run]\nalgorithm = "backup"\n[[workers]]\ncount = 16\ncompute = 1.0\n'
        "[algorithms.backup]\nlr = 0.1\nbackups = 16\n"
    )
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert "algorithms.backup.backups" in lines[0] and "allowed: 0..15" in lines[0]
    assert "Traceback" not in res.output


@needs_mnist
def test_cli_validate_ok_for_paper_scenario():
    from conftest import ROOT, mnist_dir

    res = CliRunner().invoke(
        app, ["validate", str(ROOT / "scenarios" / "gsgd_paper.toml"), "--data-dir", mnist_dir()]
    )
    assert res.exit_code == 0, res.output
    for name in ("backup", "abs", "lgc", "dcasgd_a", "ssp", "kasync"):
        assert name in res.output


def test_keys_come_from_the_readers_so_a_rule_no_preset_names_is_listed(monkeypatch):
    """``netsim keys`` parses each registered rule alone: a new rule reading ``damping``
    (which no shipped scenario configures) is listed with its default and bound."""
    from netsim.config import schema
    from netsim.rules import RULES, Rule
    from netsim.rules.base import read_lr

    class Damped(Rule):
        name = "damped"
        description = "made up for this test"

        @classmethod
        def from_table(cls, table, ctx):
            table.get("damping", float, 0.5, positive=True, maximum=1.0)
            return cls(read_lr(table, ctx), [[i] for i in range(ctx.n_workers)])

    monkeypatch.setitem(RULES, "damped", Damped)
    keys = {k.key: k for k in schema.scenario_keys()}
    assert keys["algorithms.damped.damping"].default == 0.5
    assert keys["algorithms.damped.damping"].allowed == "> 0, <= 1"
    assert "algorithms.damped.lr" in keys


def test_without_run_algorithm_the_rule_is_gsgd_else_the_first_configured():
    raw = base_raw(algorithms={"dcasgd_a": {"lr": 0.1}, "asgd": {"lr": 0.1}})
    del raw["run"]["algorithm"]
    assert make_scenario(raw).run.algorithm == "dcasgd_a"  # no gsgd table: the first one
    raw["algorithms"]["gsgd"] = {"lr": 0.1}
    assert make_scenario(raw).run.algorithm == "gsgd"
    raw = base_raw(algorithms={"asgd": {"lr": 0.1}})
    raw["run"]["algorithm"] = "ssgd"  # given: it must be configured
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == "run.algorithm" and "configured: asgd" in str(err.value)


def test_overrides_keep_the_rule_chosen():
    """A scenario whose rule was chosen with with_algorithm keeps it through overrides
    (netsim.run(scenario.with_algorithm("asgd"), seed=3) runs ASGD), unless an override
    sets run.algorithm."""
    raw = base_raw()
    raw["run"]["algorithm"] = "gsgd"
    sc = make_scenario(raw).with_algorithm("asgd")
    assert sc.with_overrides(["run.seed=3"]).run.algorithm == "asgd"
    assert sc.with_overrides(["run.algorithm='gsgd'"]).run.algorithm == "gsgd"
