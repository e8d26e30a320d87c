"""summary.json has one contract (netsim.sim.summary.Summary): every run keeps it, every
reader checks it, and the flat row (sweep.csv, to_pandas) is derived from it."""

from __future__ import annotations

import pytest
from conftest import ROOT, base_raw, make_scenario

from netsim.config.scenario import load_scenario
from netsim.rules import RULES
from netsim.sim.engine import simulate
from netsim.sim.summary import FLAT, flat, problems, summarize, undeclared

MINIMAL = {
    "algorithm": "asgd",
    "seed": 1,
    "status": "ok",
    "sim_time": 2.0,
    "updates": 3,
    "gradients_applied": 3,
    "gradients_dropped": 0,
    "final_loss": None,
    "final_test_accuracy": 0.5,
    "workers": [{"id": 0, "worker_class": "w", "compute_s": 1.0, "comm_s": 0, "idle_s": 1.0}],
    "groups": [{"id": 0, "members": [0], "updates": 3}],
    "wall_s": 0.01,
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_writes_only_declared_fields_of_the_declared_types(rule):
    """The paper's cluster on digits, 20 time units: every key declared, every type right,
    and the η the rule ran with is recorded (the scenario sets 0.05 for every rule)."""
    sc = load_scenario(
        ROOT / "scenarios" / "gsgd_paper.toml",
        ['data.source="digits"', "run.until=20", f"algorithms.{rule}.lr=0.05"],
    )
    summary = summarize(simulate(sc, rule))
    assert undeclared(summary) == []
    assert problems(summary) is None
    assert summary["step"]["lr"] == 0.05


def test_a_networked_stalled_run_keeps_the_contract_too():
    raw = base_raw(run={"seed": 3, "algorithm": "ssgd", "until": 5.0, "batch_size": 8})
    raw["network"] = {
        "topology": {"builder": "star", "args": {"n_hosts": 4, "bandwidth": 0.0, "latency": 0.0}},
        "message_bytes": 1e6,
    }
    summary = summarize(simulate(make_scenario(raw), "ssgd"))
    assert summary["status"] == "stalled" and "stalled_at" in summary and "network" in summary
    assert undeclared(summary) == [] and problems(summary) is None


def test_an_extra_outside_the_contract_is_refused():
    result = simulate(make_scenario(base_raw()), "asgd")
    result.extra["made_up"] = 1
    with pytest.raises(TypeError, match="made_up"):
        summarize(result)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seed": True}, "'seed' has the wrong type (bool)"),
        ({"updates": 3.0}, "'updates' has the wrong type (float)"),
        ({"final_loss": "low"}, "'final_loss' has the wrong type (str)"),
        (
            {"staleness_per_gradient": {"mean": 1, "p50": 1, "p95": 2}},
            "per_gradient: missing 'max'",
        ),
        ({"workers": [MINIMAL["workers"][0], {"id": 1}]}, "workers[1]: missing 'worker_class'"),
        ({"groups": [{"id": 0, "members": 0, "updates": 3}]}, "groups[0]: 'members' has the wrong"),
    ],
)
def test_readers_name_the_first_broken_field(change, message):
    assert problems(MINIMAL) is None  # a float field takes an int; None where declared
    assert message in problems({**MINIMAL, **change}, where="x/summary.json")


def test_the_flat_row_of_an_old_summary_has_none_where_fields_are_missing():
    """A folder written before staleness and idle figures existed still gives a row."""
    row = flat(MINIMAL)
    assert list(row) == list(FLAT)
    assert row["label"] == "asgd" and row["groups"] == 1 and row["updates"] == 3
    assert row["staleness_mean"] is None and row["idle_pct"] is None
