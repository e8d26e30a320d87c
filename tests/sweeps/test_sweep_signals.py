"""A sweep stops when told: SIGINT or SIGTERM sent to its process (not its terminal's whole
group) ends it with status 130 within seconds and leaves no process behind; --resume then
finishes it with the results an uninterrupted sweep gives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

ARGS = [
    "sweep",
    str(ROOT / "scenarios" / "quickstart.toml"),
    "--set",
    "run.until=400000",
    "--set",
    "run.eval_every=0",
    "--grid",
    "run.seed=1,2,3",
    "--no-live",
]


STOP_SLACK_S = 60
"""Longest wait for a signalled sweep to end: it takes about a second on an idle 2-core
machine; the slack keeps a machine at a load of 2 per core from failing the test, while a
sweep that ignores the signal (it runs for minutes) still fails it."""


def _children(pid: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
    ).stdout
    return [int(x) for x in out.split()]


def _descendants_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            stat = Path(f"/proc/{pid}/stat").read_text().split()[2]
            if stat != "Z":
                alive.append(pid)
        except (ProcessLookupError, FileNotFoundError):
            pass
    return alive


def _outlived(pids: list[int], slack_s: float = 10.0) -> list[int]:
    """*pids* still alive *slack_s* after the sweep ended (a child being reaped on a loaded
    machine may take a moment; one that ignores the end stays for good)."""
    deadline = time.monotonic() + slack_s
    while (alive := _descendants_alive(pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="signals to a session of its own (Linux)"
)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_signal_to_the_sweep_process_ends_it_and_its_workers(tmp_path, sig, jobs):
    out = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netsim.cli", *ARGS, "--jobs", str(jobs), "--out", str(out)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    seen: set[int] = set()
    while time.monotonic() < deadline:  # wait until the runs are under way
        seen.update(_children(proc.pid))
        if (jobs == 1 or len(seen) >= 2) and out.exists():
            break
        time.sleep(0.2)
    time.sleep(1.5)
    seen.update(_children(proc.pid))
    os.kill(proc.pid, sig)
    try:  # it ends within a second here; 60 s of slack for a loaded machine (not a timing test)
        _, err = proc.communicate(timeout=STOP_SLACK_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"the sweep was still running {STOP_SLACK_S} s after {sig.name}")
    assert proc.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    assert not _outlived(sorted(seen)), "worker processes outlived the sweep"


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="signals to a session of its own (Linux)"
)
@pytest.mark.parametrize("jobs", [1, 2])
def test_resume_after_a_signal_gives_the_uninterrupted_sweeps_results(tmp_path, jobs):
    args = [
        "sweep",
        str(ROOT / "scenarios" / "quickstart.toml"),
        "--set",
        "run.until=3000",
        "--grid",
        "run.seed=1,2,3,4",
        "--no-live",
        "--jobs",
        str(jobs),
    ]
    cut = tmp_path / "cut"
    proc = subprocess.Popen(
        [sys.executable, "-m", "netsim.cli", *args, "--out", str(cut)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(cut.glob("*/summary.json")):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    try:  # how fast it stops is the test above; here, what --resume makes of it
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode in (0, 130)  # 0 only if every point had finished before the signal
    resumed = subprocess.run(
        [sys.executable, "-m", "netsim.cli", *args, "--out", str(cut), "--resume"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    whole = tmp_path / "whole"
    done = subprocess.run(
        [sys.executable, "-m", "netsim.cli", *args, "--out", str(whole)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    def without_wall_time(path):
        rows = [line.split(",") for line in path.read_text().splitlines()]
        wall = rows[0].index("wall_s")
        return [r[:wall] + r[wall + 1 :] for r in rows]

    assert without_wall_time(cut / "sweep.csv") == without_wall_time(whole / "sweep.csv")
    for csv_file in sorted(whole.glob("*/*.csv")):
        assert (cut / csv_file.relative_to(whole)).read_bytes() == csv_file.read_bytes(), csv_file


_SENDING = """
import os, signal, sys, threading, time
from pathlib import Path
from netsim.sweeps.executors import local_results


def big(i):
    Path(os.environ["MARK"]).write_text("sending")
    return b"x" * (64 << 20)  # sent through the result pipe for a good part of a second


if __name__ == "__main__":
    mark = Path(os.environ["MARK"])

    def interrupt():
        while not mark.exists():
            time.sleep(0.001)
        time.sleep(float(os.environ["DELAY"]))
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        for _ in local_results(big, [1, 2], 2):
            pass
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals (Linux)")
@pytest.mark.parametrize("delay", [0.0, 0.2, 0.4])
def test_interrupted_while_a_worker_sends_its_result_the_pool_still_ends(tmp_path, delay):
    """Ending the pool's workers while one of them is writing its result into the pipe left
    a partial message that the pool's manager thread waited on forever (the sweep then hung
    in shutdown after SIGINT, about once in 25 interrupts of a 2-process sweep)."""
    script = tmp_path / "sending.py"
    script.write_text(_SENDING)
    env = {**os.environ, "MARK": str(tmp_path / "mark"), "DELAY": str(delay)}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("interrupted", "finished"), proc.stdout


def test_a_sweep_interrupted_before_its_folder_is_chosen_says_nothing_was_written(capsys):
    """Ctrl-C while the points are validated (no --out given, no folder yet): the line says
    nothing was written, not that runs are kept in a folder named ``None``."""
    import typer

    from netsim.cli.runs import _sweep_interrupted

    with pytest.raises(typer.Exit) as stop:
        _sweep_interrupted(None, None)
    assert stop.value.exit_code == 130
    said = capsys.readouterr().err
    assert "nothing was written" in said and "None" not in said
