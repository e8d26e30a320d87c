"""A signal harness: SIGINT or SIGTERM sent to a ``netsim`` command at a chosen moment, and
what it must leave (shared by tests/test_signal_harness.py and benchmarks/signal_harness.py).

Each trial starts the command in a session of its own, sends the signal to its process
only (as a job supervisor or ``kill`` does) and checks: exit status 130 and exactly one
stderr line saying it was interrupted (or, when the command had already ended, its
normal status and no such line), no traceback, no process of its session left, and
every run folder under its output whole: ``summary.json`` with status ``ok`` or
``interrupted``, every CSV a header and complete rows, no lock file left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NETSIM = [sys.executable, "-c", "from netsim.entry import main; main()"]
"""The console script's own code (netsim.entry.main), whatever the installed script's path."""

GRACE_S = 120.0
"""Longest wait for a signalled command to end: generous, so that a loaded machine (a
load of 2 per core) does not fail a trial; a hang still shows as a failure."""


def has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def command(name: str, out: Path, inputs: dict[str, Path]) -> list[str]:
    """The argv (after ``netsim``) of command *name* writing into *out* (short horizons);
    *inputs*: ``run`` (a run folder, for rerun) and ``real`` (a real run's, for predict)."""
    quick = ["--set", "run.until=600", "--no-live"]
    if name == "run":
        return ["run", "quickstart", "-a", "asgd", *quick, "--out", str(out)]
    if name == "compare":
        return ["compare", "quickstart", "-a", "asgd,ssgd", *quick, "--out", str(out)]
    if (
        name == "compare-dask"
    ):  # four runs of about a second each on the cluster of inputs["scheduler"]
        rules = ["-a", "ssgd,asgd,gsgd", "--groupings", "equal:2", "--no-live"]
        return ["compare", "quickstart", *rules, "--set", "run.until=8000", "--out", str(out)] + [
            "--scheduler",
            str(inputs["scheduler"]),
        ]
    if name == "sweep":
        grid = ["--grid", "run.seed=1,2", "--jobs", "2"]
        return ["sweep", "quickstart", *grid, *quick, "--out", str(out)]
    if name == "group":
        return ["group", "quickstart", "--jobs", "2", "--verify", "2", "--set", "run.until=1000"]
    if name == "real":
        # --unpaced: on a loaded machine the run goes on (its pace is not what is tested)
        return ["real", "quickstart", "-a", "asgd", "--set", "run.until=40", "--no-live"] + [
            "--unpaced",
            "--out",
            str(out),
        ]
    if name == "predict":
        return ["predict", str(inputs["real"]), "--no-live", "--out", str(out)]
    if name == "rerun":
        return ["rerun", str(inputs["run"]), "--no-live", "--out", str(out)]
    raise ValueError(name)


COMMANDS = ("run", "compare", "sweep", "group", "real", "predict", "rerun")


def make_inputs(where: Path, real: bool) -> dict[str, Path]:
    """A finished run folder (for rerun) and, with *real*, a real run's (for predict)."""
    inputs = {"run": where / "input-run"}
    if not inputs["run"].exists():
        done = subprocess.run(
            [*NETSIM, *command("run", inputs["run"], {})],
            capture_output=True,
            text=True,
            cwd=where,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    if real and not (where / "input-real").exists():
        inputs["real"] = where / "input-real"
        done = subprocess.run(  # --unpaced: a loaded machine still makes predict's input
            [*NETSIM, *command("real", inputs["real"], {})],
            capture_output=True,
            text=True,
            cwd=where,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    return inputs


def session_processes(sid: int) -> list[int]:
    """Live (not zombie) processes of session *sid* (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            found.append(int(entry.name))
    return found


CPYTHON_RACE = "ignored due to race condition"
"""What CPython writes when a signal lands while it installs its own handlers at startup
(before site, before any of netsim's code): it drops the signal and the command runs on."""

PACE_FAILED = "did not keep the time scale"
"""How a real run that a loaded machine could not keep at its time scale says so."""


def too_loaded(summary: dict) -> bool:
    """Whether a real run ended ``failed`` because the machine could not keep its pace (a
    correct end on a loaded machine: exit status 1, the folder whole, a scale named)."""
    return summary.get("status") == "failed" and PACE_FAILED in summary.get("message", "")


def folder_problems(out: Path) -> list[str]:
    """What is not whole under *out*: a run folder (one holding curve.csv or summary.json)
    without a summary of status ok or interrupted (or a real run failed by the pace check:
    :func:`too_loaded`), a CSV without header or with a partial row, a lock file left."""
    problems: list[str] = []
    if not out.exists():
        return problems
    for path in [out, *sorted(out.rglob("*"))]:
        rel = path.relative_to(out)
        if any(part.startswith(".") and part != ".netsim.lock" for part in rel.parts):
            continue  # a sweep point still being placed (hidden), a temporary file
        if path.name == ".netsim.lock":
            problems.append(f"{rel}: lock file left")
        elif path.suffix == ".csv":
            text = path.read_text()
            lines = text.split("\n")
            if not text.endswith("\n"):
                problems.append(f"{rel}: empty or a partial last row")
                continue
            width = len(lines[0].split(","))
            if any(len(line.split(",")) != width for line in lines[1:-1]):
                problems.append(f"{rel}: a row of another width than its header")
        elif path.is_dir() and ((path / "curve.csv").exists() or (path / "summary.json").exists()):
            try:
                summary = json.loads((path / "summary.json").read_text())
                status = summary["status"]
            except (OSError, ValueError, KeyError) as exc:
                problems.append(f"{rel}: no readable summary ({type(exc).__name__})")
                continue
            if status not in ("ok", "interrupted") and not too_loaded(summary):
                problems.append(f"{rel}: status {status}")
    return problems


@dataclass
class Trial:
    """One signal sent to one command: what came of it."""

    name: str
    sig: int
    moment: float
    outcome: str = ""
    """'interrupted' (130, one line), 'ended' (the command was exiting: its last word said,
    signals ignored; it wrote nothing after the signal), 'after the end' (it had ended: no
    signal sent), 'startup' (killed before Python reached netsim's entry: no handler can
    exist yet; interrupted in the ``.pth`` files of Python's site, a traceback there and none of
    netsim's code on it; or dropped by CPython's own startup race, which it reports on stderr), 'too loaded' (a real run that ended failed by the pace check, exit 1, its folder
    whole: the machine, not the signal), or 'FAIL' (a command that wrote on after the signal and
    exited 0 lost it)."""
    problems: list[str] = field(default_factory=list)
    stderr: str = ""

    def __str__(self) -> str:
        head = f"{self.name} {signal.Signals(self.sig).name} at {self.moment:.2f} s: {self.outcome}"
        return head + ("; " + "; ".join(self.problems) if self.problems else "")


def trial(
    name: str, sig: int, moment: float | str, where: Path, inputs: dict, again: float | None = None
) -> Trial:
    """Start command *name* in *where*, send *sig* at *moment* (seconds after the start;
    ``"late"``: as soon as its stderr shows its last run at 100 %; ``"race"``: as soon as a
    group's race has begun; ``"rows"``: as soon as it reports updates; ``"first"``: as soon
    as a compare on Dask has one of its four runs back), and with *again*
    once more that many seconds later; check what it leaves."""
    out = where / f"out-{name}-{signal.Signals(sig).name}-{time.monotonic_ns()}"
    argv = [*NETSIM, *command(name, out, inputs)]
    err_path = out.with_suffix(".err")
    with open(err_path, "w") as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=where,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=_default_sigint,
        )
        if isinstance(moment, str):
            deadline = start + GRACE_S
            while time.monotonic() < deadline and proc.poll() is None:
                if _reached(moment, name, err_path.read_text()):
                    break
                time.sleep(0.005)
        else:
            time.sleep(max(0.0, float(moment) - (time.monotonic() - start)))
        sent_at = time.monotonic() - start
        said_before = err_path.read_text()  # then whether it is still running, then the kill:
        ended_first = proc.poll() is not None or _exited(proc.pid)  # a last line written and
        if not ended_first:  # the process gone in between counts as its end, not a lost signal
            os.kill(proc.pid, sig)
            if again is not None:
                time.sleep(again)
                if proc.poll() is None:
                    os.kill(proc.pid, sig)
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            t = Trial(name, sig, sent_at, "FAIL", [f"still running {GRACE_S:g} s after the signal"])
            return t
    stderr = err_path.read_text()
    t = Trial(name, sig, sent_at, stderr=stderr)
    said = [line for line in stderr.splitlines() if "interrupted" in line]
    in_site = "<frozen site>" in stderr and "netsim" not in stderr  # the interpreter's startup
    if ("Traceback" in stderr or "Exception ignored" in stderr) and not in_site:
        t.problems.append("a traceback: " + stderr.strip().splitlines()[-1][:200])
    if proc.returncode == 130:
        t.outcome = "interrupted"
        if len(said) != 1:
            t.problems.append(f"{len(said)} lines say it was interrupted: {said}")
    elif proc.returncode == 0 and not said and (ended_first or stderr == said_before):
        t.outcome = "after the end" if ended_first else "ended"
    elif proc.returncode == 0 and not said:
        t.problems.append("the signal was lost: the command went on (stderr grew) and exited 0")
    elif proc.returncode in (-sig, 128 + sig) and not stderr.strip():
        t.outcome = "startup"
    elif in_site and proc.returncode != 0:
        t.outcome = "startup"  # interrupted in the .pth files Python's site runs, before netsim
    elif proc.returncode == 0 and CPYTHON_RACE in stderr:
        t.outcome = "startup"  # CPython's own, before any Python code runs
    elif proc.returncode == 1 and PACE_FAILED in stderr and not said:
        t.outcome = "too loaded"  # a real run the machine could not keep at its time scale
    else:
        t.problems.append(f"exit status {proc.returncode}: {stderr.strip()[-300:]}")
    deadline = time.monotonic() + 5.0
    left = session_processes(proc.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = session_processes(proc.pid)
    if left:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        t.problems.append(f"processes left: {left}")
    t.problems += folder_problems(out)
    if t.problems:
        t.outcome = "FAIL"
    return t


def _default_sigint() -> None:
    """In the command's process before it starts: SIGINT's default action, as in a terminal
    (a harness started in the background, ``cmd &``, ignores SIGINT, and its children
    would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _exited(pid: int) -> bool:
    """Whether process *pid* has exited and waits to be reaped (a zombie: a signal sent to it
    now reaches no handler)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def _reached(moment: str, name: str, stderr: str) -> bool:
    """Whether *stderr* shows the command has reached *moment* (see :func:`trial`)."""
    if moment == "race":
        return "racing rung" in stderr
    if moment == "rows":
        return re.search(r"updates=[1-9]", stderr) is not None
    if moment == "first":  # a compare on Dask: its first run has come back
        return "1/4 runs done" in stderr
    lines = [line for line in stderr.splitlines() if "100%" in line]
    if name == "compare":
        return any(line.startswith("[2/2]") for line in lines)
    if name == "predict":
        return any(line.startswith("[3/3]") for line in lines)
    if name == "sweep":
        return "2/2 runs done" in stderr
    if name == "group":
        return "verif" in stderr.lower()
    if name == "real":  # its progress stops short of 100 %: the server then stops the workers
        return re.search(r" 9\d% t=", stderr) is not None
    return bool(lines)
