"""Messages that misled (issue: reliability, step three): each now says what happened."""

from __future__ import annotations

import json

import pytest
from conftest import base_raw, make_scenario

from netsim.cli import app
from netsim.errors import ScenarioError
from netsim.sim.engine import simulate
from netsim.sim.summary import summarize
from netsim.testbed.preflight import REAL_RULES, check_scenario


def _netsim(capsys, *argv: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as stop:
        app(list(argv), prog_name="netsim")
    return stop.value.code, capsys.readouterr().err


def test_real_runs_list_no_rule_that_pre_empts():
    """docs/VALIDATION.md: ksync, kbatch_sync, abs and lgc pre-empt or read computations in
    progress, and the peer rules have no server: none runs for real."""
    assert not {"ksync", "kbatch_sync", "abs", "lgc", "allreduce", "adpsgd"} & set(REAL_RULES)


def test_a_peer_rule_is_refused_for_having_no_server():
    raw = base_raw(algorithms={"allreduce": {"lr": 0.1}}, run={"algorithm": "allreduce"})
    with pytest.raises(ScenarioError) as err:
        check_scenario(make_scenario(raw), "allreduce")
    assert "has none (its workers talk to peers)" in str(err.value)
    assert "pre-empts" not in str(err.value)


def test_a_worker_that_never_delivers_is_named_though_the_run_ends_ok(tmp_path, capsys):
    """ASGD with a worker whose latency (1e9 s) is beyond the 40 s horizon: the run carries on
    with the two others and ends ok; its summary and stderr say worker 2 sent nothing."""
    raw = base_raw(
        run={"seed": 3, "algorithm": "asgd", "until": 40.0, "batch_size": 8},
        workers=[
            {"name": "fast", "count": 2, "compute": 1.0},
            {"name": "cut", "count": 1, "compute": 1.0, "latency": 1e9},
        ],
    )
    summary = summarize(simulate(make_scenario(raw)))
    assert summary["status"] == "ok"
    assert summary["warning"].startswith("worker 2 (cut) sent no gradient: the run went on")
    path = tmp_path / "s.toml"
    from netsim.config.tomlwrite import dumps

    path.write_text(dumps(raw))
    status, err = _netsim(capsys, "run", str(path), "--no-live", "--out", str(tmp_path / "o"))
    assert status == 0 and "worker 2 (cut) sent no gradient" in err
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert saved["warning"] == summary["warning"]


def test_report_on_a_garbage_scenario_names_the_file(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        _netsim(
            capsys, "run", "quickstart", "--set", "run.until=100", "--no-live", "--out", str(out)
        )[0]
        == 0
    )
    (out / "scenario.toml").write_text("this is [[ garbage\n")
    status, err = _netsim(capsys, "report", str(out))
    assert status == 2 and f"{out / 'scenario.toml'}: not a readable scenario" in err


def test_a_dangling_symlink_as_out_is_named_as_such(tmp_path, capsys):
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    status, err = _netsim(capsys, "run", "quickstart", "--no-live", "--out", str(link))
    assert status == 2 and "is a symbolic link to" in err and "File exists" not in err


def test_predict_on_a_folder_that_is_not_a_real_runs_is_one_line(tmp_path, capsys):
    """predict's handler named api.FolderError, which does not exist: the refusal became an
    AttributeError traceback."""
    out = tmp_path / "run"
    argv = ("run", "quickstart", "--set", "run.until=100", "--no-live", "--out", str(out))
    assert _netsim(capsys, *argv)[0] == 0
    status, err = _netsim(capsys, "predict", str(out), "--no-live")
    assert status == 2 and "not a real run's folder" in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("command", ["rerun", "predict"])
def test_rerun_and_predict_on_a_full_disk_are_one_line_and_status_1(
    command, tmp_path, capsys, monkeypatch
):
    """Their runs' OutputError (a full or read-only disk) was an 84-line traceback."""
    import netsim.workflows.runs as runs
    from netsim.results.runfolder import OutputError

    out = tmp_path / "run"
    argv = ("run", "quickstart", "--set", "run.until=100", "--no-live", "--out", str(out))
    assert _netsim(capsys, *argv)[0] == 0
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps({**summary, "real": {"time_scale": 0.05}}))

    def full(*args, **kwargs):
        raise OutputError(f"{tmp_path}/new: cannot write: No space left on device", 1)

    monkeypatch.setattr(runs, "run_into", full)
    status, err = _netsim(capsys, command, str(out), "--no-live", "--out", str(tmp_path / "new"))
    assert status == 1 and "No space left on device" in err
    assert len(err.strip().splitlines()) == 1, err
