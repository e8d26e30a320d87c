"""Results tables fit the terminal: at 80, 120 and 160 columns no cell is cut (no ellipsis,
every number whole), the columns left out are named, and a pipe gets every column."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from netsim import api
from netsim.results import render
from netsim.results.tables import mean_ci_rows, run_rows


@pytest.fixture(scope="module")
def summaries():
    return api.compare("quickstart", overrides={"run.until": 30}).summaries


def _printed(table, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, emoji=False)
    console.print(table)
    return console.export_text()


def _cells_whole(text: str, header, rows, width: int) -> None:
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    keep = render.fit_columns(header, rows, width, render.RUN_PRIORITY)
    for row in rows:
        line = next(l for l in text.splitlines() if l.startswith(f"│ {row[0]} "))
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells == [row[i] for i in keep]  # each shown cell whole, in its column
    hidden = [header[i] for i in range(len(header)) if i not in keep]
    if hidden:
        assert f"{len(hidden)} more column" in re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("width", [80, 120, 160])
def test_compare_tables_fit_without_cutting_a_number(summaries, width):
    header, rows = run_rows(summaries)
    text = _printed(render.compare_table(summaries, "t", width=width), width)
    _cells_whole(text, header, rows, width)
    assert [header[i] for i in render.fit_columns(header, rows, width, render.RUN_PRIORITY)][
        :4
    ] == ["run", "groups", "updates", "sim time"][: 4 if width >= 120 else 3] or width == 80


@pytest.mark.parametrize("width", [80, 120, 160])
def test_a_single_run_table_fits(summaries, width):
    header, rows = run_rows(summaries[:1])
    _cells_whole(
        _printed(render.compare_table(summaries[:1], "t", width=width), width), header, rows, width
    )


@pytest.mark.parametrize("width", [80, 120, 160])
def test_sweep_tables_fit_without_cutting_a_number(width):
    table = [
        {
            "algorithms.gsgd.lr": lr,
            "runs": 2,
            "failed": 0,
            **{f"{m}_mean": 0.123456789 * (k + 1) for k, m in enumerate(render_metrics())},
            **{f"{m}_ci95": 0.0123456 for m in render_metrics()},
        }
        for lr in (0.1, 0.2)
    ]
    header, rows = mean_ci_rows(table, ["algorithms.gsgd.lr"])
    text = _printed(render.sweep_table(table, ["algorithms.gsgd.lr"], "t", width=width), width)
    assert "…" not in text and max(len(l) for l in text.splitlines()) <= width
    lines = [l for l in text.splitlines() if l.startswith("│ ")]
    assert len(lines) == len(rows)
    for line, row in zip(lines, rows):
        cells = [c.strip() for c in line.strip("│").split("│")]
        it = iter(row)
        assert all(
            any(c == r for r in it) for c in cells
        )  # whole cells, in the table's column order
        assert cells[:3] == row[:3]  # the grid's value, the runs and the final loss stay


def render_metrics():
    from netsim.results.tables import METRICS

    return METRICS


def test_without_a_width_every_column_is_shown(summaries):
    header, rows = run_rows(summaries)
    text = _printed(render.compare_table(summaries, "t", width=None), 1000)
    for row in rows:
        for cell in row:
            assert cell in text


def test_wide_on_a_narrow_terminal_prints_every_cell_whole(summaries, monkeypatch):
    """``--wide`` on an 80-column terminal: every column, each cell whole on one line, the
    lines longer than the terminal (rich would otherwise squeeze the columns to 80, folding
    the run labels away)."""
    import io

    from netsim.cli import common as cli

    buf = io.StringIO()
    terminal = Console(file=buf, force_terminal=True, width=80, color_system=None, emoji=False)
    monkeypatch.setattr(cli, "out_console", terminal)
    cli.print_table(render.compare_table(summaries, "t", width=cli.table_width(True)), True)
    header, rows = run_rows(summaries)
    for row in rows:
        line = next(l for l in buf.getvalue().splitlines() if l.startswith(f"│ {row[0]} "))
        assert [c.strip() for c in line.strip("│").split("│")] == row
        assert len(line) > 80
