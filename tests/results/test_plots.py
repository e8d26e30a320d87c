"""Figures and reports: PNG files that decode, at the expected size; bad input exits 2."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli import app
from netsim.results.plots import CURVE_FILES, DPI
from netsim.results.timeline import parse_window

QUICK = str(ROOT / "scenarios" / "quickstart.toml")
runner = CliRunner()
FIGURES = list(CURVE_FILES.values()) + ["timeline.png", "staleness.png", "update_rate.png"]
"""The figures of quickstart runs: IID data, so no bias.png or labels.png (test_figset.py)."""


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk; asserts the PNG signature."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def compare_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp")
    res = runner.invoke(
        app,
        [
            "compare",
            QUICK,
            "--algorithms",
            "ssgd,asgd,gsgd",
            "--no-live",
            "--plots",
            "--set",
            "run.until=30",
            "--set",
            "run.eval_every=5",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    return out


def test_compare_plots_writes_every_figure(compare_dir):
    from matplotlib.image import imread

    plots = compare_dir / "plots"
    assert sorted(p.name for p in plots.iterdir()) == sorted(FIGURES)
    for name in CURVE_FILES.values():
        assert png_size(plots / name) == (round(7.5 * DPI), round(4.6 * DPI))
    width, height = png_size(plots / "timeline.png")
    assert width == round(9 * DPI) and height > 400  # three panels of eight workers
    for name in FIGURES:
        image = imread(plots / name)
        assert image.ndim == 3 and image.shape[2] in (3, 4)
        assert image[..., :3].std() > 0.05  # not blank


def test_plot_command_with_window(compare_dir, tmp_path):
    res = runner.invoke(
        app, ["plot", str(compare_dir), "--window", "2,9.5", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    # a windowed timeline gets its own name, so the default timeline.png is never overwritten;
    # it is the only figure --window redraws
    assert [p.name for p in tmp_path.iterdir()] == ["timeline_2-9.5.png"]
    assert png_size(tmp_path / "timeline_2-9.5.png")[0] == round(9 * DPI)


def test_plot_formats_and_dpi(compare_dir, tmp_path):
    res = runner.invoke(
        app,
        [
            "plot",
            str(compare_dir),
            "--format",
            "pdf,svg,png",
            "--dpi",
            "80",
            "--out",
            str(tmp_path),
            "--xscale",
            "linear",
        ],
    )
    assert res.exit_code == 0, res.output
    for name in FIGURES:
        stem = name.removesuffix(".png")
        assert (tmp_path / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
        assert b"<svg" in (tmp_path / f"{stem}.svg").read_bytes()[:2000]
    assert png_size(tmp_path / "loss_vs_time.png") == (round(7.5 * 80), round(4.6 * 80))
    res = runner.invoke(app, ["plot", str(compare_dir), "--format", "gif", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "allowed: png, pdf, svg" in res.stderr


def test_plot_single_run_and_two_folders(compare_dir, tmp_path):
    res = runner.invoke(
        app, ["plot", str(compare_dir / "gsgd"), str(compare_dir / "asgd"), "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    assert len(list(tmp_path.glob("*.png"))) == len(FIGURES)


@pytest.mark.parametrize("text", ["5,2", "abc", "1", "-1,3", "0,inf", "1,2,3"])
def test_bad_window(text, compare_dir):
    with pytest.raises(ValueError, match="--window"):
        parse_window(text)
    res = runner.invoke(app, ["plot", str(compare_dir), "--window", text])
    assert res.exit_code == 2
    assert (
        len([line for line in res.stderr.splitlines() if line.strip()]) == 1
        and "--window" in res.stderr
    )


def test_missing_or_empty_folder_exit_2(tmp_path):
    for args in (["plot", str(tmp_path / "nope")], ["report", str(tmp_path)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and str(tmp_path) in lines[0]


def test_report_markdown_and_html(compare_dir):
    res = runner.invoke(app, ["report", str(compare_dir)])
    assert res.exit_code == 0, res.output
    text = (compare_dir / "report.md").read_text()
    assert "| ssgd |" in text and "| gsgd |" in text and "## Groups of gsgd" in text
    links = [line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")]
    assert sorted(Path(link).name for link in links) == sorted(FIGURES)
    assert all((compare_dir / link).is_file() for link in links)
    assert all(link.startswith("report_figures/") for link in links)  # plots/ is left alone
    assert "## Parameters" in text and "| run.until | 30 |" in text
    assert "| run.algorithm | ssgd \\| asgd \\| gsgd |" in text
    res = runner.invoke(app, ["report", str(compare_dir), "--format", "html"])
    assert res.exit_code == 0, res.output
    html = (compare_dir / "report.html").read_text()
    assert html.count("src='data:image/png;base64,") == len(FIGURES) and "<table>" in html


def test_sweep_folder_plots_and_report(tmp_path):
    out = tmp_path / "sw"
    res = runner.invoke(
        app,
        [
            "sweep",
            QUICK,
            "--grid",
            'algorithms.gsgd.groups=[["fast"],["medium"],["slow"]], [["fast","medium","slow"]]',
            "--seeds",
            "2",
            "--set",
            "run.until=12",
            "--workers",
            "1",
            "--no-live",
            "--out",
            str(out),
            "--plots",
        ],
    )
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(FIGURES)
    res = runner.invoke(app, ["report", str(out)])
    assert res.exit_code == 0, res.output
    text = (out / "report.md").read_text()
    assert (
        "Mean and 95 % confidence interval" in text
        and "groups=[[fast],[medium],[slow]] (seed 2)" in text
    )


def test_label_holders_from_the_histograms():
    from netsim.results.plots import label_holders

    summary = {
        "data": {"label_histogram": [[3, 0, 0], [0, 2, 0], [1, 0, 0]]},
        "workers": [{"worker_class": "fast"}, {"worker_class": "slow"}, {"worker_class": "slow"}],
    }
    assert label_holders(summary) == [["fast", "slow"], ["slow"], []]


def test_a_report_quotes_what_went_wrong_in_its_runs():
    """A run that did not end ok gives its status and message; one whose loss ended above
    its start, its warning; a healthy run, nothing; beyond MAX_NOTES the rest is counted."""
    from types import SimpleNamespace as Run

    from netsim.results.report import MAX_NOTES, run_notes

    runs = [
        Run(label="ssgd", summary={"status": "ok", "message": ""}),
        Run(label="asgd", summary={"status": "diverged", "message": "non-finite loss at update 7"}),
        Run(
            label="gsgd", summary={"status": "ok", "message": "", "warning": "the loss ended above"}
        ),
    ]
    assert run_notes(runs) == [
        "asgd: diverged: non-finite loss at update 7",
        "gsgd: the loss ended above",
    ]
    many = run_notes(runs[1:2] * (MAX_NOTES + 3))
    assert len(many) == MAX_NOTES + 1 and many[-1] == "... and 3 more runs with a note"
