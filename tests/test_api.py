"""The notebook API: load → run/compare/sweep → DataFrames, and folders read back."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import ROOT

import netsim

QUICK = ROOT / "scenarios" / "quickstart.toml"
SMALL = {"run.until": 20, "run.eval_every": 5.0}


def test_exports():
    for name in (
        "load",
        "run",
        "compare",
        "sweep",
        "plot",
        "write_report",
        "open_run",
        "open_runs",
    ):
        assert name in netsim.__all__ and callable(getattr(netsim, name))


def test_load_overrides_dict_and_list():
    a = netsim.load(
        QUICK, {"run.until": 20, "algorithms.gsgd.groups": [["fast", "medium"], ["slow"]]}
    )
    b = netsim.load(QUICK, ["run.until=20", 'algorithms.gsgd.groups=[["fast","medium"],["slow"]]'])
    assert a.run.until == b.run.until == 20.0
    assert a.rule("gsgd").groups == b.rule("gsgd").groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(netsim.ScenarioError, match="run.speed"):
        netsim.load(QUICK, {"run.speed": 1})


def test_run_round_trip_through_folder(tmp_path):
    pd = pytest.importorskip("pandas")
    sc = netsim.load(QUICK, SMALL)
    run = netsim.run(sc, "gsgd", out=tmp_path)
    back = netsim.open_run(tmp_path)
    assert back.summary == run.summary
    curve = run.curve_frame()
    assert list(curve.columns) == ["update", "sim_time", "loss", "test_accuracy"]
    assert len(curve) == 5 and curve["sim_time"].tolist() == [0.0, 5.0, 10.0, 15.0, 20.0]
    pd.testing.assert_frame_equal(curve, back.curve_frame())
    updates = run.updates_frame()
    assert len(updates) == run.summary["gradients_applied"]
    pd.testing.assert_frame_equal(updates, back.updates_frame())
    timeline = back.timeline_frame()
    assert set(timeline["phase"]) <= {"idle", "comm", "compute"} and len(timeline) > 0
    pd.testing.assert_frame_equal(run.timeline_frame(), timeline)
    assert run.result is not None and back.result is None
    assert "gsgd" in repr(run)


def test_compare_and_frames(tmp_path):
    pytest.importorskip("pandas")
    cmp = netsim.compare(netsim.load(QUICK, SMALL), ["ssgd", "gsgd"], out=tmp_path, plots=True)
    assert list(cmp) == ["ssgd", "gsgd"] and (tmp_path / "compare.json").is_file()
    frame = cmp.to_pandas()
    assert frame["algorithm"].tolist() == ["ssgd", "gsgd"] and (frame["updates"] > 0).all()
    long = cmp.curves_frame()
    assert set(long["label"]) == {"ssgd", "gsgd"} and len(long) == 10
    # 4 curves, timeline, staleness, update rate; no bias/labels on IID data
    assert len(cmp.plots) == 7 and all(p.is_file() for p in cmp.plots)
    assert set(cmp.plots.skipped) == {"bias", "labels"}
    assert [r.summary["algorithm"] for r in netsim.open_runs(tmp_path)] == ["ssgd", "gsgd"]
    # the same rule run alone gives the same numbers as inside the comparison
    alone = netsim.run(netsim.load(QUICK, SMALL), "gsgd")
    assert np.array_equal(alone.curve["loss"], cmp["gsgd"].curve["loss"])


def test_sweep_api(tmp_path):
    pytest.importorskip("pandas")
    sw = netsim.sweep(
        QUICK, {"algorithm": ["asgd", "gsgd"]}, seeds=2, overrides=SMALL, out=tmp_path, workers=1
    )
    frame = sw.to_pandas()
    assert frame["run.algorithm"].tolist() == ["asgd", "asgd", "gsgd", "gsgd"]
    assert frame["run.seed"].tolist() == [1, 2, 1, 2]
    table = sw.summary_frame()
    assert table["runs"].tolist() == [2, 2] and "final_loss_ci95" in table
    assert len(sw.runs()) == 4 and sw.executed == 4
    paths = netsim.plot(tmp_path)
    assert all(p.parent == tmp_path / "plots" for p in paths)
    assert netsim.write_report(tmp_path, fmt="html").name == "report.html"


def test_frames_need_pandas(monkeypatch, tmp_path):
    run = netsim.run(netsim.load(QUICK, {"run.until": 5}), "asgd")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"netsim\[pandas\]"):
        run.curve_frame()
    assert len(run.curve["loss"]) == 2  # plain columns need no pandas


def test_api_mirrors_the_cli(tmp_path):
    """Same verbs and options: a preset by name, overrides, seed; collections convert with to_pandas()."""
    pytest.importorskip("pandas")
    run = netsim.run("quickstart", "asgd", overrides={"run.until": 8}, seed=3, out=tmp_path / "r")
    assert run.summary["seed"] == 3 and run.summary["sim_time"] == 8.0
    runs = netsim.open_runs(tmp_path / "r")
    assert runs.to_pandas()["algorithm"].tolist() == ["asgd"]
    assert len(run.to_pandas()) == len(run.curve["update"])
    from netsim import api

    figs = api.figures(run)
    from matplotlib.figure import Figure

    assert set(figs) >= {"loss_vs_time", "timeline", "staleness"} and isinstance(
        figs["loss_vs_time"], Figure
    )


def test_sweep_raises_when_every_run_fails(tmp_path, monkeypatch):
    from netsim.sweeps import runner
    from netsim.sweeps.runner import SweepFailed

    def boom(scenario):
        raise RuntimeError("no")

    monkeypatch.setattr(runner, "run_task", boom)
    with pytest.raises(SweepFailed, match="every run of the sweep failed"):
        netsim.sweep(
            "quickstart",
            {"algorithm": ["asgd", "gsgd"]},
            overrides={"run.until": 5},
            out=tmp_path,
            jobs=1,
        )


def test_one_name_for_a_dataframe_the_old_ones_warn():
    import warnings

    pytest.importorskip("pandas")
    cmp = netsim.compare("quickstart", ["ssgd"], overrides={"run.until": 10})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = cmp.to_pandas()
    with pytest.warns(DeprecationWarning, match=r"frame\(\) is now to_pandas\(\)"):
        old = cmp.frame()
    assert list(old.columns) == list(rows.columns) and len(old) == len(rows) == 1
