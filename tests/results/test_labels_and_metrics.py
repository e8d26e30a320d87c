"""Runs are labelled end to end, and each metric has one value wherever it is shown."""

from __future__ import annotations

import csv
import json
import re

from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli import app

QUICK = str(ROOT / "scenarios" / "quickstart.toml")
CRASH = str(ROOT / "scenarios" / "crash.toml")
SHORT = ["--set", "run.until=20", "--set", "run.eval_every=5"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_groupings_compare_labels_lines_rows_and_ignores_older_runs(tmp_path):
    # an earlier compare into the same folder: refused, then replaced with --overwrite
    assert (
        invoke(
            "compare", QUICK, "--algorithms", "asgd", "--no-live", *SHORT, "--out", tmp_path
        ).exit_code
        == 0
    )
    again = [
        "compare",
        QUICK,
        "--groupings",
        "auto,hand,equal:4",
        "--plots",
        "--no-live",
        *SHORT,
        "--set",
        "run.until=40",  # the measurement of auto and equal:4 takes 21.5 s: some training
        "--out",
        tmp_path,
    ]
    assert invoke(*again).exit_code == 2
    res = invoke(*again, "--overwrite")
    assert res.exit_code == 0, res.output
    labels = ["gsgd[auto]", "gsgd[hand]", "gsgd[equal:4]"]
    listed = json.loads((tmp_path / "compare.json").read_text())
    assert [s["label"] for s in listed] == labels
    assert [
        json.loads((tmp_path / s["folder"] / "summary.json").read_text())["label"] for s in listed
    ] == labels
    runs = netsim.open_runs(tmp_path)
    assert [r.label for r in runs] == labels  # three runs, three legend entries
    assert len({r.data.group for r in runs}) == 3  # three colours, not "one line per seed"
    assert not (tmp_path / "asgd").exists()  # no stale run left behind
    report = netsim.write_report(tmp_path).read_text()
    rows = [line for line in report.splitlines() if line.startswith("| gsgd[")]
    assert [line.split("|")[1].strip() for line in rows[:3]] == labels
    for label in labels:
        assert label in res.output


def test_idle_share_is_one_number_in_run_sweep_and_report(tmp_path):
    res = invoke("run", CRASH, "--no-live", "--set", "run.until=100", "--out", tmp_path / "run")
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    workers = summary["workers"]
    assert any(w["down_s"] > 0 for w in workers)  # the crash makes the definitions differ
    idle = sum(w["idle_s"] for w in workers)
    total = sum(w["compute_s"] + w["comm_s"] + w["idle_s"] + w["down_s"] for w in workers)
    expected = f"{100 * idle / total:.1f}"
    assert f"{summary['idle_pct']:.1f}" == expected
    table_row = next(line for line in res.output.splitlines() if "gsgd" in line and "│" in line)
    assert expected in [c.strip() for c in table_row.split("│")]
    res = invoke(
        "sweep",
        CRASH,
        "--grid",
        "run.batch_size=16",
        "--set",
        "run.until=100",
        "--workers",
        "1",
        "--no-live",
        "--out",
        tmp_path / "sweep",
    )
    assert res.exit_code == 0, res.output
    with open(tmp_path / "sweep" / "sweep.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert f"{float(row['idle_pct']):.1f}" == expected
    report = netsim.write_report(tmp_path / "run").read_text()
    run_row = next(line for line in report.splitlines() if line.startswith("| gsgd"))
    assert expected in [c.strip() for c in run_row.split("|")]


def test_staleness_per_gradient_and_per_update_by_hand():
    """Two groups finishing together: per-update staleness averages each update's gradients."""
    from netsim.sim.records import staleness_stats, update_staleness

    # updates 1 (two gradients, τ 0 and 0), 2 (two gradients, τ 1 and 1), 3 (one gradient, τ 4)
    tau, version = [0, 0, 1, 1, 4], [1, 1, 2, 2, 3]
    assert staleness_stats(tau)["mean"] == 6 / 5
    assert staleness_stats(update_staleness(tau, version))["mean"] == (0 + 1 + 4) / 3
    assert re.fullmatch(r"\d+", str(staleness_stats(tau)["max"]))
