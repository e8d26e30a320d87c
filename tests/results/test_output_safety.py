"""Run folders survive interruptions, kills, full disks and re-use; JSON is strict; exit statuses."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, base_raw, make_scenario
from typer.testing import CliRunner

from netsim import api
from netsim.cli import app
from netsim.results import runfolder, runwriter
from netsim.results.runfolder import OutputError, claim, read_run

runner = CliRunner()
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
LONG = """
name = "long"
[run]
seed = 1
algorithm = "asgd"
until = 1e5
batch_size = 8
eval_every = 1000.0
[data]
source = "digits"
labels = "odd_even"
[model]
name = "logistic"
[[workers]]
name = "w"
count = 3
compute = 1.0
[algorithms.asgd]
lr = 0.05
"""


def messages(stderr: str) -> list[str]:
    """The lines of stderr other than progress lines (``label: 40% eta 3 s t=...``), which go
    there too."""
    return [
        l
        for l in stderr.strip().splitlines()
        if not re.match(r"^(\[\d+/\d+\] )?\S+: \d+% (eta .*? )?t=", l)
    ]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def strict_load(text: str):
    """json.loads that refuses NaN / Infinity tokens."""

    def refuse(token):
        raise ValueError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def complete_rows(path: Path, fields: int) -> list[list[str]]:
    lines = path.read_text().split("\n")
    assert lines[-1] == "" or "," in lines[-1]  # at most one unfinished line, at the end
    return [line.split(",") for line in lines[1:-1]]


def start_long_run(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "netsim.cli", "run", str(scenario), "--no-live", "--out", str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    updates = out / "updates.csv"
    while time.monotonic() < deadline:  # wait until rows have been streamed out
        if updates.is_file() and updates.read_text().count("\n") > 100:
            return proc, out
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the run wrote no rows")


def test_sigint_leaves_a_readable_partial_run_and_exits_130(tmp_path):
    proc, out = start_long_run(tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted at simulated time" in err and len(err.strip().splitlines()) == 1
    summary = strict_load((out / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    run = read_run(out)
    assert run.summary["updates"] == len(set(run.updates["version"])) > 100
    assert summary["gradients_applied"] == len(run.updates["version"])
    assert not list(out.glob(".*.tmp"))


def test_kill_9_leaves_complete_rows_and_no_json(tmp_path):
    proc, out = start_long_run(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert not (out / "summary.json").exists() and not list(out.glob(".*.tmp"))
    rows = complete_rows(out / "updates.csv", 5)
    assert len(rows) > 100 and all(len(r) == 5 for r in rows)
    versions = [int(r[0]) for r in rows]
    assert versions == sorted(versions)
    held = claim(out, overwrite=True)  # the lock died with the process; the old rows are cleared
    held.release()
    assert not (out / "updates.csv").exists()


def test_sigterm_inside_a_run_writes_an_interrupted_summary(tmp_path):
    sc = make_scenario(
        {**base_raw(), "run": {"seed": 3, "algorithm": "asgd", "until": 40.0, "batch_size": 8}}
    )
    out = tmp_path / "run"

    def terminate_at_half(snap):
        if snap.sim_time >= 20.0:
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(api.RunInterrupted) as stop:
        api.run(sc, out=out, progress=terminate_at_half, progress_every=1.0)
    assert signal.getsignal(signal.SIGTERM) == before
    summary = strict_load((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary == stop.value.summary
    assert summary["sim_time"] == 20.0
    # ASGD, workers of 1, 1, 2.4 s: pushes at 1..20 (two each) and 2.4·k ≤ 20 (8) → 48 updates
    assert summary["updates"] == 48
    assert len(read_run(out).updates["version"]) == 48


def test_diverged_run_is_strict_json_with_the_last_finite_loss(tmp_path):
    res = invoke(
        "run",
        QUICK,
        "--no-live",
        "-a",
        "asgd",
        "--set",
        "algorithms.asgd.lr=1e300",
        "--set",
        "run.until=50",
        "--out",
        tmp_path,
    )
    assert res.exit_code == 1
    summary = strict_load((tmp_path / "summary.json").read_text())
    assert summary["status"] == "diverged"
    at = summary["diverged_at"]
    assert f"update {at['update']}" in summary["message"]
    run = read_run(tmp_path)
    assert (
        summary["final_loss"] is None and summary["final_test_accuracy"] is None
    )  # not the t = 0 loss
    last = summary["last_finite"]
    assert last["update"] < at["update"]
    assert [last["update"], last["sim_time"], last["loss"]] == [
        run.curve["update"][-1],
        run.curve["sim_time"][-1],
        run.curve["loss"][-1],
    ]


def test_strict_json_everywhere():
    assert (
        runfolder.strict_json([float("nan"), float("-inf"), {"a": float("inf")}])
        == '[null, null, {"a": null}]'
    )


def test_compare_exits_1_when_a_rule_diverges(tmp_path):
    res = invoke(
        "compare",
        QUICK,
        "--no-live",
        "--algorithms",
        "ssgd,asgd",
        "--set",
        "algorithms.asgd.lr=1e300",
        "--set",
        "run.until=20",
        "--out",
        tmp_path,
    )
    assert res.exit_code == 1
    statuses = [s["status"] for s in strict_load((tmp_path / "compare.json").read_text())]
    assert statuses == ["ok", "diverged"]


def test_a_stalled_run_exits_1(tmp_path):
    res = invoke(
        "run",
        QUICK,
        "--no-live",
        "-a",
        "ssgd",
        "--set",
        "run.until=50",
        "--set",
        'events=[{time = 5.0, kind = "crash", worker = 0}]',
        "--out",
        tmp_path,
    )
    assert res.exit_code == 1
    summary = strict_load((tmp_path / "summary.json").read_text())
    assert summary["status"] == "stalled" and summary["stalled_at"] == {
        "sim_time": 5.0,
        "waiting_for": [0],
    }
    assert "stalled at simulated time 5 s" in res.stderr


def test_out_holding_another_run_is_refused_then_overwritten(tmp_path):
    out = tmp_path / "out"
    assert (
        invoke(
            "run",
            QUICK,
            "--no-live",
            "-a",
            "backup",
            "--set",
            "run.until=20",
            "--set",
            "algorithms.backup={lr = 0.1, backups = 2}",
            "--out",
            out,
        ).exit_code
        == 0
    )
    assert (out / "dropped.csv").exists() and (out / "timeline.csv").exists()
    (out / "plots").mkdir()
    (out / "plots" / "old.png").write_text("x")
    (out / "notes.txt").write_text("mine")
    res = invoke("run", QUICK, "--no-live", "-a", "asgd", "--set", "run.until=20", "--out", out)
    assert res.exit_code == 2
    assert "holds the results of another run" in res.stderr and "--overwrite" in res.stderr
    assert len(messages(res.stderr)) == 1
    assert strict_load((out / "summary.json").read_text())["algorithm"] == "backup"  # untouched
    res = invoke(
        "run",
        QUICK,
        "--no-live",
        "-a",
        "asgd",
        "--set",
        "run.until=20",
        "--set",
        "run.timeline_until=0",
        "--out",
        out,
        "--overwrite",
    )
    assert res.exit_code == 0
    assert strict_load((out / "summary.json").read_text())["algorithm"] == "asgd"
    assert not (out / "dropped.csv").exists() and not (out / "timeline.csv").exists()
    assert not (out / "plots").exists() and (out / "notes.txt").read_text() == "mine"


def test_two_runs_into_one_folder_the_second_is_refused(tmp_path):
    held = claim(tmp_path)  # the first run holds the folder
    try:
        res = invoke(
            "run", QUICK, "--no-live", "--set", "run.until=20", "--out", tmp_path, "--overwrite"
        )
        assert res.exit_code == 2
        assert "another netsim process is writing there" in res.stderr
        with pytest.raises(OutputError):
            api.compare(QUICK, ["asgd"], out=tmp_path)
    finally:
        held.release()
    assert (
        invoke("run", QUICK, "--no-live", "--set", "run.until=20", "--out", tmp_path).exit_code == 0
    )


def test_full_disk_gives_one_line_and_keeps_complete_rows(tmp_path, monkeypatch):
    writes = []
    real = runwriter._Table.write

    def fill_up(self, rows):
        if rows and len(writes) >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        writes.append(len(rows))
        real(self, rows)

    monkeypatch.setattr(runwriter._Table, "write", fill_up)
    res = invoke("run", QUICK, "--no-live", "--set", "run.until=20", "--out", tmp_path)
    assert res.exit_code == 1
    assert "No space left on device" in res.stderr and len(messages(res.stderr)) == 1
    assert not (tmp_path / "summary.json").exists()
    lines = (tmp_path / "curve.csv").read_text().splitlines()
    assert len(lines) == 1 + writes[0] and all(len(line.split(",")) == 4 for line in lines)


def test_reader_ignores_an_unfinished_last_line(tmp_path):
    assert (
        invoke("run", QUICK, "--no-live", "--set", "run.until=20", "--out", tmp_path).exit_code == 0
    )
    full = read_run(tmp_path).updates["version"]
    with open(tmp_path / "updates.csv", "a") as fh:
        fh.write("99999,1.")
    assert list(read_run(tmp_path).updates["version"]) == list(full)


def test_sweep_where_every_run_fails(tmp_path, monkeypatch):
    from netsim.sweeps import runner as sweep_runner

    def broken(scenario):
        raise RuntimeError("boom")

    monkeypatch.setattr(sweep_runner, "simulate", broken)
    res = invoke(
        "sweep",
        QUICK,
        "--grid",
        "run.seed=1,2",
        "--set",
        "run.until=5",
        "--workers",
        "1",
        "--no-live",
        "--out",
        tmp_path / "s1",
    )
    assert res.exit_code == 1
    with pytest.raises(api.SweepError, match="every run of the sweep failed"):
        api.sweep(
            QUICK, ["run.seed=1,2"], overrides=["run.until=5"], workers=1, out=tmp_path / "s2"
        )


def test_sweep_into_a_folder_of_another_sweep_is_refused(tmp_path):
    args = [
        "sweep",
        QUICK,
        "--set",
        "run.until=5",
        "--workers",
        "1",
        "--no-live",
        "--out",
        tmp_path,
    ]
    assert invoke(*args, "--grid", "run.seed=1,2").exit_code == 0
    res = invoke(*args, "--grid", "run.seed=3")
    assert res.exit_code == 2 and "--overwrite" in res.stderr
    assert invoke(*args, "--grid", "run.seed=3", "--overwrite").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["p000"]


def children(pid: int) -> dict[int, int]:
    """Live child processes of *pid*: {child pid: CPU ticks used}."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry.name)] = int(fields[11]) + int(fields[12])
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_kill_9_of_a_sweep_takes_its_pool_processes_along(tmp_path):
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "netsim.cli",
            "sweep",
            str(scenario),
            "--grid",
            "run.seed=1,2",
            "--workers",
            "2",
            "--no-live",
            "--out",
            str(tmp_path / "sweep"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    pool = {}
    while time.monotonic() < deadline:  # until two pool processes are busy running points
        pool = {pid: ticks for pid, ticks in children(proc.pid).items() if ticks > 300}
        if len(pool) >= 2:
            break
        assert proc.poll() is None
        time.sleep(0.2)
    assert len(pool) >= 2, "the sweep's pool processes never got busy"
    spawned = set(children(proc.pid))
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(alive(pid) for pid in spawned):
        time.sleep(0.2)
    assert not [pid for pid in spawned if alive(pid)]


@pytest.mark.parametrize(
    "err, status", [(errno.EACCES, 2), (errno.EPERM, 2), (errno.ENOSPC, 1), (errno.EROFS, 1)]
)
def test_an_output_folder_that_cannot_be_created(tmp_path, monkeypatch, err, status):
    """No permission for the --out path is bad input (exit 2); a full or read-only disk is the
    disk's state (exit 1); one line either way (a fuzzer's ``-o /sys/kernel/x`` exited 1)."""
    real = Path.mkdir

    def refuse(self, *args, **kwargs):
        if self == tmp_path / "out":
            raise OSError(err, os.strerror(err))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    res = invoke("run", QUICK, "--no-live", "--set", "run.until=5", "--out", tmp_path / "out")
    assert res.exit_code == status, res.output
    assert len(messages(res.stderr)) == 1 and "cannot create the output folder" in res.stderr


def test_a_full_disk_leaves_only_complete_rows(tmp_path):
    """The disk fills in the middle of a row: the file is cut back to the last whole row."""
    import errno

    from netsim.results.runwriter import _Table

    class FillsUp:
        def __init__(self, fh, room):
            self.fh, self.room = fh, room

        def write(self, data):
            if self.room <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            n = min(len(data), self.room)
            self.room -= n
            return self.fh.write(data[:n])

        def fileno(self):
            return self.fh.fileno()

        def seek(self, pos):
            return self.fh.seek(pos)

        def close(self):
            self.fh.close()

    table = _Table(tmp_path / "updates.csv", ["version", "time", "worker", "group"], eager=True)
    table.write([[1, "0.5", 3, 0], [2, "1.0", 4, 1]])
    table.fh = FillsUp(table.fh, room=13)  # room for one row and half of the next
    with pytest.raises(OSError):
        table.write([[3, "273.0", 12, 2], [499, "273.0", 12, 2]])
    table.close()
    text = (tmp_path / "updates.csv").read_text()
    assert text == "version,time,worker,group\n1,0.5,3,0\n2,1.0,4,1\n"


@pytest.mark.parametrize("damage", ["truncate_updates", "empty_curve"])
@pytest.mark.parametrize("command", ["report", "plot", "export"])
def test_readers_refuse_a_folder_whose_files_disagree_with_its_summary(tmp_path, damage, command):
    from typer.testing import CliRunner

    from netsim.cli import app

    runner = CliRunner()
    run = tmp_path / "run"
    assert (
        runner.invoke(
            app, ["run", "quickstart", "--set", "run.until=20", "--no-live", "--out", str(run)]
        ).exit_code
        == 0
    )
    if damage == "truncate_updates":
        lines = (run / "updates.csv").read_text().splitlines(keepends=True)
        (run / "updates.csv").write_text("".join(lines[:-3]))
    else:
        (run / "curve.csv").write_text("update,sim_time,loss,test_accuracy\n")
    args = {
        "report": ["report", str(run)],
        "plot": ["plot", str(run), "--out", str(tmp_path / "p")],
        "export": ["export", str(run), "--out", str(tmp_path / "t.json")],
    }[command]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert ("updates.csv" if damage == "truncate_updates" else "curve.csv") in res.output


@pytest.mark.parametrize("how", ["interrupted", "killed"])
def test_rerun_of_a_run_that_did_not_end_reruns_without_a_false_difference(tmp_path, how):
    import json

    from typer.testing import CliRunner

    from netsim.cli import app

    runner = CliRunner()
    run = tmp_path / "run"
    assert (
        runner.invoke(
            app, ["run", "quickstart", "--set", "run.until=20", "--no-live", "--out", str(run)]
        ).exit_code
        == 0
    )
    if how == "interrupted":  # what an interrupted run's summary says
        summary = json.loads((run / "summary.json").read_text())
        summary.update(status="interrupted", sim_time=7.5)
        (run / "summary.json").write_text(json.dumps(summary))
    else:  # SIGKILL: scenario.toml and meta.json, no summary.json
        (run / "summary.json").unlink()
    res = runner.invoke(app, ["rerun", str(run), "--no-live", "--out", str(tmp_path / "again")])
    assert res.exit_code == 0, res.output
    assert "not compared" in res.output and "differs" not in res.output
    assert (tmp_path / "again" / "summary.json").is_file()
