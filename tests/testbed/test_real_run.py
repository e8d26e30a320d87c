"""Real runs (netsim real) of tiny scenarios: folders, exact agreement with the replayed
emulation where the schedule is deterministic, bad input, and no process left behind."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed", reason="netsim real needs PyTorch (the [torch] extra)")

from netsim import api  # noqa: E402
from netsim.errors import ScenarioError  # noqa: E402
from netsim.testbed import preflight  # noqa: E402
from netsim.workload.replayed import GRADIENT_COLUMNS, GRADIENTS_FILE  # noqa: E402

# Constant compute times whose pushes never come within 0.23 units of another worker's
# (over 8.75 units, allowing 0.01 units of drift per iteration): at 0.15 s per unit the
# machine's jitter (~1 ms) cannot reorder them, so the schedule is deterministic. The last
# push inside the horizon (worker a's 8th, at 8 units) has 0.75 units (112 ms) to spare for
# the delays a loaded machine adds to each iteration; the first outside it, 0.25 units.
TINY = """
name = "tiny_real"
[run]
seed = 3
algorithm = "asgd"
until = 8.75
eval_every = 2.0
batch_size = 8
[data]
source = "synthetic"
n_samples = 400
n_features = 6
[model]
name = "logistic"
[[workers]]
name = "a"
count = 1
compute = 1.0
[[workers]]
name = "b"
count = 1
compute = 2.25
[[workers]]
name = "c"
count = 1
compute = 3.25
[[workers]]
name = "d"
count = 1
compute = 3.65
[algorithms.asgd]
lr = 0.05
[algorithms.ssgd]
lr = 0.1
[algorithms.gsgd]
lr = 0.1
groups = [["a", "b"], ["c", "d"]]
[algorithms.lgc]
lr = 0.1
k = 2
blocks = 2
"""
SCALE = 0.15


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("real") / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture(scope="module")
def real_runs(tiny) -> dict:
    """One real run per rule (a few seconds each)."""
    return {
        rule: api.real(tiny, rule, time_scale=SCALE, out=tiny.parent / f"real-{rule}")
        for rule in ("asgd", "ssgd", "gsgd")
    }


def _order(run) -> list[tuple[int, int, int]]:
    u = run.updates
    return list(zip(u["version"].tolist(), u["worker"].tolist(), u["staleness"].tolist()))


@pytest.mark.parametrize("rule", ["asgd", "ssgd", "gsgd"])
def test_real_run_writes_a_whole_folder(real_runs, rule):
    run = real_runs[rule]
    # a loaded machine may end a run failed by the pace check; the folder is whole either way
    paced = run.status == "failed" and "did not keep the time scale" in run.summary["message"]
    assert run.status == "ok" or paced, run.summary["message"]
    path = run.path
    for name in ("summary.json", "curve.csv", "updates.csv", "timeline.csv", "scenario.toml"):
        assert (path / name).is_file(), name
    header = (path / GRADIENTS_FILE).read_text().splitlines()[0].split(",")
    assert tuple(header) == GRADIENT_COLUMNS
    assert (path / "measured_updates.csv").read_text().startswith("version,time,service_s,queued")
    s = run.summary
    assert s["sim_time"] == 8.75 and s["real"]["time_scale"] == SCALE
    assert s["real"]["overrun_share"] == 0.0  # microseconds of gradient against 100 ms units
    assert len(run.curve["update"]) >= 5  # at 0, 2, 4, 6 and the end


@pytest.mark.parametrize("rule", ["asgd", "gsgd"])
def test_cpu_times_are_measured(real_runs, rule):
    """A thread's CPU time over a span cannot exceed the span's real time: every gradient's
    and every server row's CPU seconds lie in [0, real], up to the clocks' resolution."""
    path = real_runs[rule].path
    with open(path / GRADIENTS_FILE, newline="") as f:
        grads = [r for r in csv.DictReader(f) if r["compute_cpu_s"]]
    with open(path / "measured_server.csv", newline="") as f:
        server = list(csv.DictReader(f))
    assert grads and server
    slack = 2e-4  # s: thread_time and monotonic tick apart
    for r in grads:
        assert 0.0 <= float(r["compute_cpu_s"]) <= float(r["compute_real_s"]) + slack, r
    for r in server:
        assert 0.0 <= float(r["cpu_s"]) <= float(r["real_s"]) + slack, r
        if r["average_cpu_s"]:
            assert float(r["average_cpu_s"]) <= float(r["average_s"]) + slack, r
    real = real_runs[rule].summary["real"]
    assert 0.0 < real["server_cpu_share"] <= 1.05 and 0.0 < real["compute_cpu_share"] <= 1.05


def test_asgd_matches_the_closed_form_schedule(real_runs):
    """ASGD with constant times c_i: worker i pushes at about k·c_i (plus about a millisecond
    of messages per iteration), each push one update. Before 8.75 units: 8 + 3 + 2 + 2."""
    assert real_runs["asgd"].summary["updates"] == 8 + 3 + 2 + 2


def test_ssgd_rounds(real_runs):
    """SSGD rounds last the slowest worker's 3.65 units: 2 rounds in 8.75 units, 4 gradients
    each; GSGD's groups {a, b} and {c, d} close rounds every 2.25 and 3.65 units: 3 + 2."""
    s = real_runs["ssgd"].summary
    assert (s["updates"], s["gradients_applied"]) == (2, 8)
    s = real_runs["gsgd"].summary
    assert (s["updates"], s["gradients_applied"]) == (5, 10)


@pytest.mark.parametrize("rule", ["asgd", "ssgd", "gsgd"])
def test_replayed_emulation_gives_the_same_updates(real_runs, rule, tmp_path):
    """The emulation replaying the run's own measured cycles applies the same gradients, in
    the same order, with the same staleness."""
    pred = api.predict(
        real_runs[rule].path, out=tmp_path / "p", variants=["replayed"], plots=False, seeds=1
    )
    assert _order(pred.runs["replayed"][0]) == _order(real_runs[rule])
    rows = {r["metric"]: r for r in pred.rows}
    assert rows["updates"]["replayed_gap"] == 0.0
    assert rows["gradients_applied"]["replayed_gap"] == 0.0


def test_replay_from_a_real_folder_in_a_scenario(real_runs, tiny, tmp_path):
    """``compute = { dist = "replay", run = FOLDER }`` in a scenario file (relative to it)."""
    folder = real_runs["asgd"].path
    text = TINY.replace("compute = 1.0", f'compute = {{ dist = "replay", run = "{folder.name}" }}')
    path = tiny.parent / "replay.toml"
    path.write_text(text)
    sc = api.load(path)
    draws = sc.workers[0].compute.draws(None, 0)
    measured = [
        float(line.split(",")[GRADIENT_COLUMNS.index("cycle")])
        for line in (folder / GRADIENTS_FILE).read_text().splitlines()[1:]
        if line.startswith("0,a,") and line.split(",")[GRADIENT_COLUMNS.index("complete")] == "1"
    ]
    assert [next(draws) for _ in measured] == measured
    with pytest.raises(ScenarioError, match="no worker of class 'zz'"):
        api.load(path, ['workers.0.compute={dist="replay", run="%s", worker_class="zz"}' % folder])


def test_bad_input_is_refused_before_any_process(tiny, tmp_path):
    for kwargs, match in (
        (dict(algorithm="lgc", time_scale=0.1), "cannot run for real"),
        (dict(algorithm="asgd", time_scale=0.0), "time-scale"),
        (dict(algorithm="asgd", time_scale=-1.0), "time-scale"),
        (dict(algorithm="asgd", time_scale=float("nan")), "time-scale"),
    ):
        with pytest.raises(ScenarioError, match=match):
            api.real(tiny, out=tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ScenarioError, match=f"port {port} on 127.0.0.1 is in use"):
            api.real(tiny, "asgd", time_scale=0.1, out=tmp_path / "x", port=port)
    assert not (tmp_path / "x").exists()


def test_too_many_workers_and_too_small_a_scale(tiny, monkeypatch):
    sc = api.load(tiny)
    monkeypatch.setattr(preflight, "MAX_PROCESSES", 4)
    with pytest.raises(ScenarioError, match="4 workers need 5 processes"):
        preflight.check_workers(sc.n_workers)
    # 4 workers of typical times 1, 2.25, 3.25, 3.65 units at 0.001 s per unit, 1 ms per
    # gradient: 1/1 + 1/2.25 + 1/3.25 + 1/3.65 = 2.026 cores busy on a 2-core machine
    with pytest.raises(ScenarioError, match="keep 2.0 cores busy"):
        preflight.check_pace(sc, 0.001, 0.001, 2)
    assert preflight.check_pace(sc, 0.001, 0.001, 4) == pytest.approx(2.0261, abs=1e-4)


def test_the_command_line(tiny, tmp_path):
    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "netsim.cli", "real", str(tiny), "-a", "gsgd", "-S", "0.2"]
    done = subprocess.run(
        cmd + ["--no-live", "--json", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "ok"
    done = subprocess.run(cmd[:-2] + ["-S", "0", "--no-live"], capture_output=True, text=True)
    assert done.returncode == 2 and "--time-scale" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "netsim.cli", "predict", str(out), "--out", str(tmp_path / "p")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "replayed" in done.stdout and (tmp_path / "p" / "plots" / "loss_vs_time.png").is_file()


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _long_run(tiny, out: Path):
    """A real run of 40 s started as a command; returns it once it has applied updates."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "netsim.cli", "real", str(tiny), "-a", "asgd", "-S", "0.1"]
        + ["--set", "run.until=400", "--no-live", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = _children(proc.pid)
        updates = out / "updates.csv"
        if len(kids) == 5 and updates.is_file() and len(updates.read_text().splitlines()) > 3:
            return proc, kids
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the real run did not start within a minute")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "worker killed"])
def test_no_process_is_left_behind(tiny, tmp_path, how):
    out = tmp_path / "long"
    proc, kids = _long_run(tiny, out)
    if how == "worker killed":
        os.kill(max(kids), signal.SIGKILL)  # the last forked: a worker
    else:
        proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=60)
    summary = json.loads((out / "summary.json").read_text())
    if how == "worker killed":
        assert proc.returncode == 1
        assert summary["status"] == "failed"
        assert "died: killed by SIGKILL" in summary["message"] and "worker 3" in summary["message"]
    else:
        assert proc.returncode == 130, err
        assert summary["status"] == "interrupted"
    assert summary["updates"] > 0 and len((out / "updates.csv").read_text().splitlines()) > 1
    time.sleep(0.2)
    assert [k for k in kids if _alive(k)] == []
    assert "Traceback" not in err


def test_netsim_real_stays_the_function_once_the_testbed_is_imported():
    """The API's ``netsim.real`` is not shadowed by a subpackage of the same name: a second
    ``netsim.real(...)`` in a notebook still calls the function."""
    import netsim

    first = netsim.real
    import netsim.testbed.launch  # noqa: F401  (what netsim.real() imports)

    assert callable(netsim.real) and netsim.real is first


def test_an_unpaced_run_goes_on_and_says_how_far_it_fell_behind(tiny, tmp_path):
    """At 2 ms per unit each iteration's messages (about a millisecond, more on a loaded
    machine) cost far more than 5 % of the updates: refused as it is, run with paced=False,
    ending ok with the shortfall and a scale that keeps pace in ``real.unpaced``."""
    scale, more = 0.002, ["run.until=400", "run.eval_every=100"]
    with pytest.raises(ScenarioError, match="time-scale"):
        api.real(tiny, "asgd", time_scale=scale, out=tmp_path / "refused", overrides=more)
    assert not (tmp_path / "refused").exists()
    run = api.real(
        tiny, "asgd", time_scale=scale, out=tmp_path / "unpaced", overrides=more, paced=False
    )
    assert run.status == "ok", run.summary.get("message")
    why = run.summary["real"]["unpaced"]
    named = float(why.split("--time-scale ")[1].split()[0])
    assert named > scale and "of the updates" in why
    # the emulation of the scenario makes 1/1 + 1/2.25 + 1/3.25 + 1/3.65 = 2.027 updates per
    # unit; behind pace, the real run makes at least 5 % fewer
    assert run.summary["updates"] < 0.95 * 2.027 * 400
