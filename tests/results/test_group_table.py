"""``netsim group`` fits the terminal: at 80, 120 and 160 columns no cell of the candidate
table is cut, the table takes at most 40 lines, the columns left out are named; groupings
are shown by plain names and shapes; ``--out`` writes what ``--json`` prints; the API's
``netsim.group()`` returns that same object."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT
from rich.console import Console
from typer.testing import CliRunner

from netsim import api
from netsim.cli import app
from netsim.results import render
from netsim.results.grouptable import (
    CANDIDATE_PRIORITY,
    candidate_rows,
    candidates_table,
    group_verdict,
    plain_name,
    shape_text,
)

QUICK = str(ROOT / "scenarios" / "quickstart.toml")
SHORT = ["run.until=40"]  # the race on quickstart's 8 workers in about a second


@pytest.fixture(scope="module")
def rec():
    return api.recommend(api.load("quickstart", SHORT), jobs=1)


CLASSES = ["fast"] * 2 + ["medium"] * 2 + ["slow"] * 4


def _no_wall(data):
    """*data* without its wall-clock seconds (the one thing two races do not share)."""
    if isinstance(data, dict):
        return {k: _no_wall(v) for k, v in data.items() if "wall" not in k}
    if isinstance(data, list):
        return [_no_wall(v) for v in data]
    return data


def _printed(renderable, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, emoji=False)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 120, 160])
def test_candidate_table_fits_without_cutting_a_cell(rec, width):
    header, rows = candidate_rows(rec, CLASSES)
    text = _printed(candidates_table(rec, CLASSES, width=width), width)
    lines = text.splitlines()
    assert "…" not in text
    assert max(len(line) for line in lines) <= width
    assert len(lines) <= 40
    keep = render.fit_columns(header, rows[:20], width, CANDIDATE_PRIORITY)
    assert [header[i] for i in keep][:5] == [
        "grouping",
        "groups",
        "η",
        "predicted (s)",
        "interval (s)",
    ]
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == min(20, len(rows))
    for line, row in zip(body, rows):
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells == [row[i] for i in keep]  # every shown cell whole, in its column
    hidden = [header[i] for i in range(len(header)) if i not in keep]
    flat = re.sub(r"\s+", " ", text)
    if hidden:
        assert f"{len(hidden)} more column" in flat and "--wide" in flat
    if len(rows) > 20:
        assert f"{len(rows) - 20} more candidates" in flat


def test_every_recommendation_part_fits_80_columns(rec):
    text = "".join(
        _printed(part, 80) for part in render.recommendation_tables(rec, "q", CLASSES, width=80)
    )
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert "verdict:" in text


def test_shapes_and_plain_names_worked_out_by_hand():
    paper = ["fast"] * 4 + ["medium"] * 4 + ["slow"] * 8
    classes = [[0, 1, 2, 3], [4, 5, 6, 7], list(range(8, 16))]
    assert shape_text(classes, paper) == "3 classes"
    assert shape_text([[2 * k, 2 * k + 1] for k in range(8)], paper) == "8 × 2"
    assert shape_text([list(range(16))], paper) == "1 × 16"
    assert shape_text([[w] for w in range(16)], paper) == "16 × 1"
    assert shape_text([[0, 1, 2, 3, 4, 5, 6, 7], list(range(8, 16))], paper) == "2 × 8"
    assert shape_text([[0, 1, 2, 3], list(range(4, 16))], paper) == "4+12"
    assert plain_name("one group") == "one group (SSGD)"
    assert plain_name("singletons") == "singletons (ASGD)"
    assert plain_name("equal:8") == "equal:8"


def test_verdict_names_the_pick_and_its_lead_over_hand_ssgd_asgd(rec):
    line = group_verdict(rec, CLASSES)
    pick = rec.pick
    assert line.startswith(f"verdict: {plain_name(rec.name)} (")
    for name in ("hand", "one group", "singletons"):
        if name == rec.name:
            continue
        other = next(p for p in rec.ranking() if p.name == name)
        if other.predicted < 100 * rec.horizon:
            ratio = other.predicted / pick.predicted
            assert f"{ratio:.2f}× " in line and plain_name(name) in line


def test_group_cli_out_writes_the_json_it_prints(tmp_path):
    runner = CliRunner()
    args = ["group", QUICK, "--jobs", "1", *sum((["--set", s] for s in SHORT), [])]
    res = runner.invoke(app, [*args, "--json", "--out", str(tmp_path / "rec")])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    written = json.loads((tmp_path / "rec" / "recommendation.json").read_text())
    assert printed == written
    assert written["candidates"][0]["plain_name"] == plain_name(written["recommended"])
    csv_lines = (tmp_path / "rec" / "candidates.csv").read_text().splitlines()
    assert csv_lines[0].split(",")[:3] == ["grouping", "groups", "η"]
    assert len(csv_lines) == 1 + len(written["candidates"])
    assert (tmp_path / "rec" / "predicted.png").stat().st_size > 1000
    # the API hands back the same object
    assert _no_wall(api.group("quickstart", overrides=SHORT, jobs=1)) == _no_wall(printed)
    # and the screen: the verdict closes it; --members lists every worker id
    shown = runner.invoke(app, [*args, "--members"])
    assert shown.exit_code == 0, shown.output
    assert "verdict:" in shown.stdout.splitlines()[-1] or "verdict:" in shown.stdout


def test_a_pipe_fits_columns_when_asked_and_gets_whole_tables_otherwise(tmp_path):
    """``COLUMNS=80 netsim group … | cat``: every line within 80 characters; without
    ``COLUMNS``, a pipe gets the whole candidate table (wider than 80)."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    argv = [sys.executable, "-m", "netsim.cli", "group", QUICK, "--set", SHORT[0]]

    def widths(env):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return [len(line) for line in done.stdout.splitlines()]

    assert max(widths({**base, "COLUMNS": "80"})) <= 80
    assert max(widths(base)) > 80
    argv[3:4] = ["compare"]  # its table and verdict too
    argv += ["--set", "run.until=20", "--no-live", "--out", "c"]
    assert max(widths({**base, "COLUMNS": "80"})) <= 80
