"""The verdict line: the default target worked out by hand, the winner by time to target
and by final loss with the margins computed from the runs' own curves, the intervals with
seeds; compare, sweep, report and group print it (quickstart and, with MNIST, the paper
cluster, on short horizons)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import ROOT, SHARED_DATA, needs_mnist
from typer.testing import CliRunner

from netsim.cli import app
from netsim.results.verdict import Entry, default_target, first_time, verdict_line

runner = CliRunner()
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
PAPER = str(ROOT / "scenarios" / "gsgd_paper.toml")


def test_default_target_is_half_way():
    assert default_target(0.69, 0.29) == pytest.approx(0.49)
    assert default_target(1.0, 1.0) == 1.0


def test_first_time_is_the_first_evaluation_at_or_below():
    assert first_time([0, 5, 10, 15], [0.7, 0.6, 0.5, 0.4], 0.5) == 10.0
    assert first_time([0, 5], [0.7, 0.6], 0.5) is None
    assert first_time([0, 5, 10], [0.7, 0.4, 0.6], 0.5) == 5.0  # the first, not the last


def test_verdict_line_by_hand():
    items = [Entry("a", [30.0], [0.30]), Entry("b", [20.0], [0.32]), Entry("c", [None], [0.5])]
    line = verdict_line(items, 0.45, "given")
    # b first: 10 s ahead of a, 10/30 = 33 %; a lowest: 0.02 below b
    assert "b first at 20 s, 10 s (33%) ahead of a" in line
    assert "lowest final loss: a 0.3, 0.02 below b" in line
    assert "intervals" not in line  # one run each


def test_a_tie_at_the_start_is_a_tie():
    """A target at the initial loss is reached at 0 by both: no ratio of times (found by
    the scenario fuzzer: a division by zero)."""
    items = [Entry("a", [0.0], [0.30]), Entry("b", [0.0], [0.32])]
    line = verdict_line(items, 2.303, "default")
    assert "a first at 0 s, with b; lowest final loss: a 0.3" in line


def test_verdict_with_seeds_says_whether_intervals_separate():
    # a: times 10, 11, 12 (mean 11, s = 1, t(0.975, 2) = 4.303, half-width 2.484)
    # b: times 20, 21, 22 (mean 21): |21 − 11| = 10 > 4.97, separate
    a = Entry("a", [10.0, 11.0, 12.0], [0.3, 0.3, 0.3])
    b = Entry("b", [20.0, 21.0, 22.0], [0.3, 0.31, 0.32])
    assert "a first at 11 s (mean), 10 s (48%) ahead of b; 95 % intervals separate" in (
        verdict_line([a, b], 0.5, "scenario")
    )
    c = Entry("c", [11.0, 14.0, 17.0], [0.3, 0.3, 0.3])  # half-width 4.303·3/√3 = 7.45
    assert "95 % intervals overlap" in verdict_line([a, c], 0.5, "scenario")


def _curve(folder):
    rows = [l.split(",") for l in (folder / "curve.csv").read_text().splitlines()]
    head = rows[0]
    cols = {h: np.array([float(r[i]) for r in rows[1:]]) for i, h in enumerate(head)}
    return cols["sim_time"], cols["loss"]


def test_compare_prints_the_verdict_worked_out_from_its_files(tmp_path):
    out = tmp_path / "cmp"
    res = runner.invoke(
        app, ["compare", QUICK, "--set", "run.until=60", "--no-live", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    line = next(l for l in res.stdout.splitlines() if l.startswith("verdict:"))
    listed = json.loads((out / "compare.json").read_text())
    curves = {e["label"]: _curve(out / e["folder"]) for e in listed}
    start = float(np.median([c[1][0] for c in curves.values()]))
    best = min(e["final_loss"] for e in listed)
    target = start - (start - best) / 2
    times = {k: next(t for t, l in zip(*c) if l <= target) for k, c in curves.items()}
    first = min(times, key=times.get)
    lowest = min(listed, key=lambda e: e["final_loss"])["label"]
    assert f"to loss {target:.4g}" in line
    assert f"{first} first at {times[first]:.4g} s" in line
    assert f"lowest final loss: {lowest} " in line
    rep = runner.invoke(app, ["report", str(out)])
    assert rep.exit_code == 0, rep.output
    assert line in rep.stdout
    text = (out / "report.md").read_text()
    assert "**Verdict**" in text
    assert "algorithms.backup" not in text  # quickstart has none; only the rules that ran
    given = runner.invoke(app, ["report", str(out), "--target", "0.6"])
    assert "to loss 0.6 (given)" in given.stdout


def test_report_keeps_only_the_rules_that_ran(tmp_path):
    out = tmp_path / "one"
    res = runner.invoke(
        app,
        ["compare", QUICK, "-a", "ssgd", "--set", "run.until=20", "--no-live", "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    runner.invoke(app, ["report", str(out)])
    text = (out / "report.md").read_text()
    assert "algorithms.ssgd.lr" in text
    assert "algorithms.asgd" not in text and "algorithms.gsgd" not in text


def test_sweep_prints_the_verdict_with_intervals(tmp_path):
    res = runner.invoke(
        app,
        [
            "sweep",
            QUICK,
            "--grid",
            "algorithms.gsgd.lr=0.1,0.3",
            "--seeds",
            "2",
            "--set",
            "run.until=30",
            "--no-live",
            "--jobs",
            "1",
            "--out",
            str(tmp_path / "sw"),
        ],
    )
    assert res.exit_code == 0, res.output
    line = res.stdout.strip().splitlines()[-1]
    assert line.startswith("verdict: to loss ") and "intervals" in line


@needs_mnist
@pytest.mark.skipif(
    not (SHARED_DATA / "mnist").is_dir(), reason="MNIST not found at ../shared/data/mnist"
)
def test_paper_cluster_compare_names_a_winner(tmp_path):
    res = runner.invoke(
        app,
        [
            "compare",
            PAPER,
            "-a",
            "ssgd,asgd,gsgd",
            "--data-dir",
            str(SHARED_DATA / "mnist"),
            "--set",
            "run.until=60",
            "--no-live",
            "--out",
            str(tmp_path / "p"),
        ],
    )
    assert res.exit_code == 0, res.output
    line = next(l for l in res.stdout.splitlines() if l.startswith("verdict:"))
    assert " first at " in line and "lowest final loss: " in line
    assert not math.isnan(float(line.split("to loss ")[1].split()[0]))
