"""The live view shows its progress at any size: the share done and the ETA on the top line
of every frame, the groups beyond the terminal's height summarised in one row, and the
``--no-live`` lines within 80 columns. The pty test runs ``netsim run`` in a pseudo-terminal
of 80×24 with 34 workers (ASGD: 34 groups)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import sys
import termios

import pytest
from conftest import ROOT
from rich.console import Console

from netsim.results.liveview import live_view, plain_line
from netsim.sim.records import GroupSnapshot, Snapshot

QUICK = str(ROOT / "scenarios" / "quickstart.toml")


def _snap(groups: int = 34, label: str = "asgd", **kw) -> Snapshot:
    gs = tuple(GroupSnapshot(i, 1, 10 + i, 1.0 + i, 2.0) for i in range(groups))
    args = dict(
        label=label,
        algorithm="asgd",
        sim_time=50.0,
        until=200.0,
        updates=1234,
        max_updates=0,
        loss=0.41234,
        test_accuracy=0.88,
        evaluated_at=40.0,
        evaluated_update=1000,
        groups=gs,
    )
    args.update(kw)
    return Snapshot(**args)


def _lines(renderable, width: int, height: int) -> list[str]:
    console = Console(width=width, height=height, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue().splitlines()


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (60, 12)])
def test_the_view_fits_the_terminal_and_summarises_the_rest(size):
    width, height = size
    snap = _snap()
    lines = _lines(live_view(snap, eta=12.0, size=size, done=[_snap(3, "ssgd")]), width, height)
    assert len(lines) < height
    assert lines[0].startswith("25% done, eta 12 s · asgd")
    assert max(len(line) for line in lines) <= width
    shown = [l for l in lines if re.match(r"│\s+\d+ │", l)]
    more = next(l for l in lines if "more" in l and l.startswith("│"))
    hidden = 34 - len(shown)
    # the summary row: the hidden groups, their members and updates (groups k: 10 + k updates)
    assert f"+{hidden} more" in more
    assert f" {sum(10 + k for k in range(len(shown), 34))} " in more


def test_plain_lines_fit_80_columns():
    for label in ("asgd", "gsgd[kmeans:2]", "[12/12] gsgd[inverse_rate]"):
        line = plain_line(_snap(label=label), "[3/4]", eta=125.0)
        assert len(line) <= 80, line
        assert " 25% eta 2 min t=50/200 updates=1234" in line
    long_time = plain_line(_snap(sim_time=123.456789, until=1000.0, updates=123456), "[3/4]")
    assert len(long_time) <= 80 and "loss=0.41234" in long_time


def _run_in_pty(argv: list[str], cols: int, rows: int) -> str:
    """Everything *argv* writes to a pseudo-terminal of *cols* × *rows*."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal's size is set by the parent before rich asks
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = b""
    while select.select([fd], [], [], 120)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.waitpid(pid, 0)
    return out.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform != "linux", reason="pty test written for Linux")
def test_every_frame_at_80x24_with_34_workers_shows_share_and_eta(tmp_path):
    netsim = [sys.executable, "-m", "netsim"]
    raw = _run_in_pty(
        [
            *netsim,
            "run",
            QUICK,
            "-a",
            "asgd",
            "--set",
            "workers.2.count=30",  # 2 + 2 + 30 = 34 workers, 34 groups
            "--set",
            "run.until=400",
            "--out",
            str(tmp_path / "r"),
        ],
        80,
        24,
    )
    # rich's Live moves the cursor up over the previous frame before drawing the next
    frames = [
        f
        for f in re.split(r"\r(?:\x1b\[2K\x1b\[1A)+\x1b\[2K", raw.split("\x1b[?25h")[0])
        if "│" in f
    ]
    assert len(frames) >= 2
    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", f) for f in frames]
    for frame in plain:
        first = frame.lstrip("\r\n").splitlines()[0]
        assert re.match(r"\d+% done, eta (…|\d+ s|\d+ min) · asgd", first), first
        assert "more │" in frame  # 34 groups do not fit 24 lines: the rest summarised
        assert len(frame.strip("\r\n").splitlines()) < 24
