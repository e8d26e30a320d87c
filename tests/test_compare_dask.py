"""A comparison on a Dask cluster (``netsim compare --scheduler``): the same runs, table and
files as the local comparison; each worker prepares the data once; bad schedulers refused."""

from __future__ import annotations

import json
import signal
import sys

import pytest
import signalkit
from daskkit import refused_scheduler
from typer.testing import CliRunner

import netsim
from netsim.cli import app
from netsim.errors import ScenarioError
from netsim.workflows import dask_compare

QUICK = ["run.until=60"]
RULES = "ssgd,asgd,gsgd"
GROUPINGS = "equal:2"
runner = CliRunner()


def _without_wall(value):
    if isinstance(value, dict):
        return {k: _without_wall(v) for k, v in value.items() if not k.endswith("wall_s")}
    if isinstance(value, list):
        return [_without_wall(v) for v in value]
    return value


def _preparations() -> int:
    return dask_compare.PREPARATIONS[0]


def _cached() -> int:
    return len(dask_compare._PREPARED)


def _same_folders(one, two) -> None:
    """Run folders *one* and *two* hold the same files: the same bytes, summary.json and
    compare.json without their wall times, meta.json with the same run described."""
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir())
    for f in one.iterdir():
        if f.name in ("summary.json", "compare.json"):
            assert _without_wall(json.loads(f.read_text())) == _without_wall(
                json.loads((two / f.name).read_text())
            ), f
        elif f.name == "meta.json":  # start time differs; what ran must not
            m1, m2 = (json.loads(p.read_text()) for p in (f, two / f.name))
            assert {k: v for k, v in m1.items() if k != "started_at"} == {
                k: v for k, v in m2.items() if k != "started_at"
            }
        elif f.is_file():
            assert f.read_bytes() == (two / f.name).read_bytes(), f


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes of one thread each (shared by this module's tests)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as made:
        yield made


def test_a_compare_on_two_dask_workers_equals_the_local_compare(tmp_path, cluster):
    import distributed

    kwargs = {"groupings": GROUPINGS, "overrides": QUICK, "progress": None}
    local = netsim.compare("quickstart", RULES, out=tmp_path / "local", **kwargs)
    finished: list[str] = []
    with distributed.Client(cluster.scheduler_address) as client:
        before = client.run(_preparations)
        dask = netsim.compare(
            "quickstart",
            RULES,
            out=tmp_path / "dask",
            scheduler=cluster.scheduler_address,
            on_run=lambda label, run: finished.append(label),
            **kwargs,
        )
        prepared = {w: n - before[w] for w, n in client.run(_preparations).items()}
        kept = client.run(_cached)
        again = netsim.compare("quickstart", RULES, scheduler=client, **kwargs)  # no files
        assert client.status == "running"  # a Client given is left open
    res = runner.invoke(
        app,
        ["compare", "quickstart", "-a", RULES, "--groupings", GROUPINGS, "--set", QUICK[0]]
        + ["--out", str(tmp_path / "cli"), "--no-live", "--json"]
        + ["--scheduler", cluster.scheduler_address],
    )
    assert res.exit_code == 0, res.output
    listed = json.loads((tmp_path / "local" / "compare.json").read_text())
    assert _without_wall(json.loads(res.stdout)["runs"]) == _without_wall(
        [{k: v for k, v in entry.items() if k != "folder"} for entry in listed]
    )
    done = [line for line in res.stderr.splitlines() if " runs done " in line]
    assert [line.split()[1] for line in done] == ["1/4", "2/4", "3/4", "4/4"], res.stderr
    labels = ["ssgd", "asgd", "gsgd", "gsgd[equal:2]"]
    assert list(local) == list(dask) == list(again) == labels  # the plan's order
    assert sorted(finished) == sorted(labels)
    assert list(prepared.values()) == [1, 1]  # each worker prepared the data once
    assert list(kept.values()) == [0, 0]  # and dropped it when the comparison ended
    assert all(r.summary["updates"] > 0 for r in local.values())
    assert _without_wall(local.summaries) == _without_wall(dask.summaries)
    assert _without_wall(local.summaries) == _without_wall(again.summaries)
    _same_folders(tmp_path / "local", tmp_path / "dask")
    for label in labels:
        folder = local[label].path.name
        _same_folders(tmp_path / "local" / folder, tmp_path / "dask" / folder)
        for name in ("updates.csv", "curve.csv"):
            assert (tmp_path / "local" / folder / name).read_bytes() == (
                tmp_path / "dask" / folder / name
            ).read_bytes()


def test_a_cluster_without_workers_is_refused_naming_scheduler(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster:
        with pytest.raises(ScenarioError, match="has no worker") as caught:
            netsim.compare(
                "quickstart", "ssgd,asgd", overrides=QUICK, scheduler=cluster.scheduler_address
            )
    assert caught.value.key == "--scheduler"


def test_without_distributed_the_option_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    out = tmp_path / "c"
    res = runner.invoke(
        app,
        ["compare", "quickstart", "-a", "ssgd,asgd", "--set", QUICK[0], "--out", str(out)]
        + ["--scheduler", "tcp://127.0.0.1:9"],
    )
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--scheduler" in lines[0] and "distributed" in lines[0], lines
    assert not out.exists()


def test_an_empty_scheduler_is_refused_in_one_line(tmp_path):
    res = runner.invoke(
        app, ["compare", "quickstart", "--set", QUICK[0], "--scheduler", " ", "--no-live"]
    )
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--scheduler" in lines[0], lines


def test_a_run_failed_on_the_cluster_is_one_line_and_bad_input_stays_bad_input():
    lost = dask_compare.as_failure(RuntimeError("worker tcp://w:1 died\n(3 times)"), "asgd")
    assert isinstance(lost, dask_compare.ClusterFailed)
    assert (
        str(lost)
        == "asgd: failed on the Dask cluster: RuntimeError: worker tcp://w:1 died\n(3 times)"
    )
    bad = ScenarioError("data.dir", "no such folder")
    assert dask_compare.as_failure(bad, "asgd") is bad


def test_a_snapshot_callback_cannot_follow_a_compare_on_a_scheduler():
    with pytest.raises(ValueError, match="on_run"):
        netsim.compare("quickstart", scheduler="tcp://127.0.0.1:9", progress=print)


def test_an_unreachable_scheduler_is_refused_in_one_line_with_status_2(tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "c"
    refused_scheduler("compare", "quickstart", "--set", QUICK[0], "--out", str(out), "--no-live")
    assert not out.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions and /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_an_interrupt_keeps_the_finished_runs_whole_and_the_others_absent(tmp_path, cluster, sig):
    inputs = {"scheduler": cluster.scheduler_address}
    trial = signalkit.trial("compare-dask", sig, "first", tmp_path, inputs)
    assert trial.outcome == "interrupted", f"{trial}\n{trial.stderr[-3000:]}"
    said = [line for line in trial.stderr.splitlines() if "interrupted" in line]
    (out,) = [p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("out-")]
    listed = [entry["folder"] for entry in json.loads((out / "compare.json").read_text())]
    present = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert sorted(listed) == present and 1 <= len(present) < 4, (listed, present)
    assert f"interrupted after {len(present)} of 4 runs" in said[0], said


def test_the_interrupt_line_counts_the_runs_compare_json_lists(tmp_path):
    from netsim.results.left import partial_compare_line

    assert partial_compare_line(tmp_path, 3) == (
        f"interrupted before any run finished: nothing was written in {tmp_path}"
    )
    (tmp_path / "compare.json").write_text('[{"folder": "asgd"}, {"folder": "gsgd"}]\n')
    assert partial_compare_line(tmp_path, 3) == (
        f"interrupted after 2 of 3 runs: they are in {tmp_path} (listed in compare.json); "
        "the other 1 were not written"
    )
    assert partial_compare_line(tmp_path, 2) == (
        f"interrupted after its 2 runs ended: they are in {tmp_path}"
    )
