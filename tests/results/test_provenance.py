"""Self-describing run folders: scenario.toml + meta.json, and `rerun` reproducing a run byte for byte."""

from __future__ import annotations

import json
import tomllib

import pytest
from conftest import base_raw

from netsim import api
from netsim.config.tomlwrite import dumps
from netsim.results.runfolder import FolderError, unique_folder


@pytest.fixture
def scenario_file(tmp_path):
    raw = base_raw()
    raw["run"]["eval_every"] = 2.0
    path = tmp_path / "small.toml"
    path.write_text(dumps(raw))
    return path


def test_run_folder_holds_resolved_scenario_and_meta(scenario_file, tmp_path):
    sc = api.load(scenario_file, {"run.until": 6.0}, seed=11, algorithm="gsgd")
    api.run(sc, out=tmp_path / "a")
    written = tomllib.loads((tmp_path / "a" / "scenario.toml").read_text())
    assert written["run"]["until"] == 6.0 and written["run"]["seed"] == 11
    assert written["run"]["algorithm"] == "gsgd" and written["name"] == "t"
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["overrides"] == ["run.until=6.0", "run.seed=11", 'run.algorithm="gsgd"']
    assert meta["dependencies"]["numpy"] and meta["netsim"]
    assert meta["data"] == {"source": "sklearn digits", "sha256": {}}
    # the written scenario is the same scenario: loading it gives back the same typed settings
    again = api.load(tmp_path / "a" / "scenario.toml")
    assert (again.run, again.data, again.model, again.workers) == (
        sc.run,
        sc.data,
        sc.model,
        sc.workers,
    )


def test_rerun_reproduces_byte_for_byte(scenario_file, tmp_path):
    api.compare(
        api.load(scenario_file, {"run.until": 7.0, "algorithms.gsgd.probe_rounds": 1}),
        ["ssgd"],
        groupings=["equal:2"],
        out=tmp_path / "cmp",
    )
    for folder in ("ssgd", "gsgd-equal-2"):
        original = tmp_path / "cmp" / folder
        again = api.rerun(original, out=tmp_path / f"again-{folder}")
        assert again.identical, again.differ
        for name in ("curve.csv", "updates.csv", "timeline.csv"):
            assert (original / name).read_bytes() == (
                tmp_path / f"again-{folder}" / name
            ).read_bytes()
        assert again.run.label == json.loads((original / "summary.json").read_text())["label"]


def test_rerun_reports_a_changed_file(scenario_file, tmp_path):
    api.run(api.load(scenario_file), out=tmp_path / "a")
    text = (tmp_path / "a" / "scenario.toml").read_text().replace("seed = 3", "seed = 4")
    (tmp_path / "a" / "scenario.toml").write_text(text)
    again = api.rerun(tmp_path / "a", out=tmp_path / "b")
    assert "curve.csv" in again.differ and "summary.json" in again.differ


def test_rerun_needs_a_run_folder(tmp_path):
    with pytest.raises(FolderError, match="no scenario.toml"):
        api.rerun(tmp_path)


def test_default_folders_are_numbered_not_overwritten(tmp_path):
    base = tmp_path / "runs" / "x-gsgd"
    assert unique_folder(base) == base
    base.mkdir(parents=True)
    assert unique_folder(base) == base  # empty: reused
    (base / "summary.json").write_text("{}")
    assert unique_folder(base) == base.with_name("x-gsgd-2")
    (base.with_name("x-gsgd-2")).mkdir()
    (base.with_name("x-gsgd-2") / "f").write_text("")
    assert unique_folder(base) == base.with_name("x-gsgd-3")


def test_wall_times_at_any_depth_do_not_count(tmp_path):
    """A grouping = "auto" run records its pilots' wall seconds; only those may differ."""
    from netsim.results.provenance import differences

    base = {
        "final_loss": 0.25,
        "wall_s": 1.0,
        "grouping": {
            "cost_wall_s": 2.0,
            "candidates": [{"name": "hand", "pilot_wall_s": 0.5, "loss": 0.3}],
        },
    }
    for name, wall, loss in (("a", 1.0, 0.3), ("b", 9.0, 0.3), ("c", 9.0, 0.31)):
        (tmp_path / name).mkdir()
        summary = json.loads(json.dumps(base))
        summary["wall_s"] = summary["grouping"]["cost_wall_s"] = summary["grouping"]["candidates"][
            0
        ]["pilot_wall_s"] = wall
        summary["grouping"]["candidates"][0]["loss"] = loss
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    assert differences(tmp_path / "a", tmp_path / "b") == []
    assert differences(tmp_path / "a", tmp_path / "c") == ["summary.json"]


def test_rerun_of_the_current_folder(scenario_file, tmp_path, monkeypatch):
    """``netsim rerun .`` inside a run folder: the default output is the folder's sibling
    ``<name>-rerun`` (``.`` has no name of its own; a fuzzer found a traceback)."""
    api.run(api.load(scenario_file, {"run.until": 4.0}), out=tmp_path / "a")
    monkeypatch.chdir(tmp_path / "a")
    again = api.rerun(".")
    assert again.identical, again.differ
    assert (tmp_path / "a-rerun" / "summary.json").is_file()


def test_rerun_with_an_inline_graphml_topology(tmp_path):
    """An inline ``topology = {graphml = "g.graphml"}`` is read beside the scenario file;
    the run folder's scenario.toml records the file's absolute path, so a rerun from the
    run folder finds it."""
    import networkx as nx

    G = nx.Graph()
    G.add_node("ps", role="host")
    G.add_node("sw", role="switch")
    G.add_edge("ps", "sw", bandwidth=1e9, latency=1e-3)
    for h in ("h1", "h2"):
        G.add_node(h, role="host")
        G.add_edge(h, "sw", bandwidth=1e9, latency=1e-3)
    (tmp_path / "src").mkdir()
    nx.write_graphml(G, tmp_path / "src" / "g.graphml")
    raw = base_raw(
        run={"algorithm": "asgd", "until": 3.0}, workers=[{"name": "a", "count": 2, "compute": 1.0}]
    )
    raw["network"] = {"topology": {"graphml": "g.graphml"}, "ps_host": "ps"}
    (tmp_path / "src" / "s.toml").write_text(dumps(raw))
    api.run(api.load(tmp_path / "src" / "s.toml"), out=tmp_path / "run")
    written = tomllib.loads((tmp_path / "run" / "scenario.toml").read_text())
    assert written["network"]["topology"]["graphml"] == str(
        (tmp_path / "src" / "g.graphml").resolve()
    )
    assert api.rerun(tmp_path / "run", out=tmp_path / "again").identical


@pytest.mark.parametrize("source", ["npz", "libsvm"])
def test_a_run_of_data_read_from_relative_paths_reruns_from_elsewhere(
    source, tmp_path, monkeypatch
):
    """An npz file beside the scenario, or a LIBSVM file found in the working directory:
    the run folder's scenario.toml names them by absolute path, so a rerun started from
    another folder reads the same rows and gives the same bytes."""
    import numpy as np

    (tmp_path / "src").mkdir()
    (tmp_path / "elsewhere").mkdir()
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(120, 5)), rng.integers(0, 2, 120)
    raw = base_raw(
        run={"algorithm": "asgd", "until": 6.0}, workers=[{"name": "a", "count": 2, "compute": 1.0}]
    )
    if source == "npz":
        np.savez(
            tmp_path / "src" / "d.npz", X_train=X[:90], y_train=y[:90], X_test=X[90:], y_test=y[90:]
        )
        raw["data"] = {"source": "npz", "path": "d.npz", "labels": "binary"}
        name, where = "path", tmp_path / "src" / "d.npz"
    else:
        rows = [
            f"{2 * b - 1} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x))
            for x, b in zip(X, y)
        ]
        (tmp_path / "src" / "d.svm").write_text("\n".join(rows) + "\n")
        raw["data"] = {"source": "libsvm", "train_file": "d.svm", "labels": "binary"}
        raw["model"] = {"name": "logistic", "l2": 0.01}
        name, where = "train_file", tmp_path / "src" / "d.svm"
    (tmp_path / "src" / "s.toml").write_text(dumps(raw))
    monkeypatch.chdir(tmp_path / "src")  # the LIBSVM file is found in the working directory
    api.run(api.load("s.toml"), out=tmp_path / "run")
    written = tomllib.loads((tmp_path / "run" / "scenario.toml").read_text())
    assert written["data"][name] == str(where.resolve())
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert api.rerun(tmp_path / "run", out=tmp_path / "again").identical


def test_default_folder_names_stay_inside_runs():
    """A scenario name becomes one safe path component of ``runs/<name>-<kind>``: no
    separators, NUL, leading dots or over-long names (a fuzzer's names wrote outside
    runs/ or raised ValueError / OSError)."""
    from pathlib import Path

    from netsim.config.scenario import parse_scenario

    for name, folder in (
        ("/tmp/outside", "_tmp_outside"),
        ("../up", "_up"),
        ("a\x00b", "a_b"),
        ("x" * 300, "x" * 120),
        ("..", "scenario"),
    ):
        raw = base_raw()
        raw["name"] = name
        out = api.default_out(parse_scenario(raw, Path("s.toml")), "asgd")
        assert out == Path("runs") / f"{folder}-asgd"
