"""Which figures are drawn: the per-label ones only on label-skewed data (skipped, with the
reason, on IID data), the timeline alone for ``plot --window``, the target loss as a line."""

from __future__ import annotations

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim import api
from netsim.cli import app
from netsim.results.figset import (
    check_only,
    label_skew,
    loss_targets,
    one_unit,
    skipped_text,
)

QUICK = str(ROOT / "scenarios" / "quickstart.toml")
SHORT = ["--set", "run.until=20", "--set", "run.eval_every=5", "--no-live"]
runner = CliRunner()


def _summary(hist):
    return {"data": {"label_histogram": hist}}


def test_label_skew_is_a_chi_square_test_per_worker():
    # pooled shares 0.49/0.51; expected 49/51 per worker of 100; statistic
    # 1/49 + 1/51 = 0.040 for both, far below chi2(1)'s 1e-6 quantile (23.9): no skew
    assert label_skew(_summary([[50, 50], [48, 52]])) is False
    # each worker holds one label: expected 50/50, statistic 2 · 50²/50 = 100 > 23.9
    assert label_skew(_summary([[100, 0], [0, 100]])) is True
    # unequal sizes, equal shares (a quantity partition): the labels are still IID
    assert label_skew(_summary([[10, 10, 0], [200, 200, 0]])) is False
    # shares ≈ 1/2 each: 30 of 40 rows on one label gives ≈ (10² + 10²)/20 = 10 < 23.9
    # (noise); 90 of 100 gives ≈ 2 · 40²/50 = 64 > 23.9 (skew)
    assert label_skew(_summary([[30, 10], [500, 500], [500, 500]])) is False
    assert label_skew(_summary([[90, 10], [500, 500], [500, 500]])) is True
    assert label_skew({"data": {}}) is None and label_skew(_summary([[5, 0], [7, 0]])) is False


def test_targets_units_and_names():
    class R:
        def __init__(self, target):
            self.summary = {"target_loss": target} if target else {}

    assert loss_targets([R(0.4), R(0.4), R(None)]) == [0.4]
    assert loss_targets([R(0.4)], given=0.3) == [0.3] and loss_targets([R(None)]) == []
    assert one_unit("time units") == "time unit" and one_unit("s") == "s"
    assert check_only("timeline") == ("timeline",) and check_only(None) is None
    with pytest.raises(ValueError, match="allowed: loss_vs_updates"):
        check_only(["timelines"])
    assert skipped_text({"bias": "why", "labels": "why", "timeline": "other"}) == [
        "skipped bias, labels: why",
        "skipped timeline: other",
    ]


@pytest.fixture(scope="module")
def iid_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("iid")
    res = runner.invoke(app, ["compare", QUICK, "-a", "ssgd,gsgd", *SHORT, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_iid_data_skips_the_per_label_figures_and_says_why(iid_dir, tmp_path):
    res = runner.invoke(app, ["plot", str(iid_dir), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "bias.png" not in names and "labels.png" not in names and "timeline.png" in names
    assert "skipped bias, labels: every worker holds the labels" in res.stderr
    assert "IID" in res.stderr


def test_window_redraws_the_timeline_only(iid_dir, tmp_path):
    res = runner.invoke(app, ["plot", str(iid_dir), "--window", "2,9", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert [p.name for p in tmp_path.iterdir()] == ["timeline_2-9.png"]
    assert "drew only timeline (--window)" in res.stderr


def test_the_target_loss_is_a_line_on_the_loss_curves_only(iid_dir):
    figs = api.figures(iid_dir, target=0.55)
    for name in ("loss_vs_time", "loss_vs_updates"):
        flat = [l for l in figs[name].axes[0].lines if list(l.get_ydata()) == [0.55, 0.55]]
        assert len(flat) == 1, name
    for name in ("accuracy_vs_time", "accuracy_vs_updates"):
        assert not [l for l in figs[name].axes[0].lines if list(l.get_ydata()) == [0.55, 0.55]]
    plain = api.figures(iid_dir)["loss_vs_time"]  # no target given or set: no line
    assert not [l for l in plain.axes[0].lines if len(set(l.get_ydata())) == 1]


def test_skewed_labels_get_the_per_label_figures(tmp_path):
    # shards of one label each: every worker holds odd or even digits only
    skew = ["--set", 'data.partition="shards"', "--set", "data.classes_per_worker=1"]
    res = runner.invoke(
        app, ["compare", QUICK, "-a", "asgd", *SHORT, *skew, "--plots", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    names = {p.name for p in (tmp_path / "plots").iterdir()}
    assert {"bias.png", "labels.png"} <= names and "skipped" not in res.stderr


def test_compare_and_plot_hand_their_target_to_the_figures(iid_dir, tmp_path, monkeypatch):
    seen = []
    real = api.plot

    def spy(*folders, **options):
        seen.append(options)
        return real(*folders, **options)

    monkeypatch.setattr(api, "plot", spy)
    out = tmp_path / "c"
    args = ["compare", QUICK, "-a", "asgd", *SHORT, "--plots", "--target", "0.5", "--out", out]
    assert runner.invoke(app, [str(a) for a in args]).exit_code == 0
    res = runner.invoke(app, ["plot", str(iid_dir), "--target", "0.45", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert [o["target"] for o in seen] == [0.5, 0.45] and seen[1]["only"] is None


def test_window_without_a_timeline_is_refused_in_one_line(tmp_path):
    run = tmp_path / "r"
    args = ["run", QUICK, "-a", "asgd", *SHORT, "--set", "run.timeline_until=0", "--out", run]
    assert runner.invoke(app, [str(a) for a in args]).exit_code == 0
    res = runner.invoke(app, ["plot", str(run), "--window", "0,5", "--out", str(tmp_path / "p")])
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "nothing to draw (timeline: no run recorded a timeline" in res.stderr
    res = runner.invoke(app, ["plot", str(run), "--out", str(tmp_path / "all")])
    assert res.exit_code == 0 and "skipped timeline: no run recorded a timeline" in res.stderr
