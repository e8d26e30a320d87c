"""Progress on stderr: the live view or plain lines of a run, the bar of a sweep, the
race's time left."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rich.live import Live

from ..results import render
from .common import (
    err_console,
    note,
)

if TYPE_CHECKING:
    from rich.progress import Progress as Bar
    from rich.progress import TaskID

    from ..sim.records import Snapshot
    from ..sim.summary import Summary

__all__ = ["Progress", "with_progress", "SweepProgress", "sweep_bar", "RaceEta"]

T = TypeVar("T")


class Progress:
    """Progress callback: a rich Live display on stderr (≤ 10 refreshes per wall
    second) when stderr is a terminal, else a plain stderr line per tenth of each run.

    Rules already finished stay in the live display; each line says which rule of
    how many (*total*) runs, its share done and a wall-clock ETA.
    """

    def __init__(self, live: Live | None, total: int = 1) -> None:
        self.live = live
        self.total = total
        self.last = 0.0
        self.next_mark = 0.1
        self.done: list[Snapshot] = []
        self.current: Snapshot | None = None
        self.started = time.perf_counter()

    def position(self) -> str:
        return f"[{len(self.done) + 1}/{self.total}]" if self.total > 1 else ""

    def eta(self, snap: Snapshot) -> float | None:
        elapsed = time.perf_counter() - self.started
        return elapsed * (1 - snap.fraction) / snap.fraction if snap.fraction > 0.02 else None

    def __call__(self, snap: Snapshot) -> None:
        if self.current is not None and snap.label != self.current.label:
            self.done.append(self.current)
            self.next_mark = 0.1
            self.started = time.perf_counter()
        if self.current is not None and self.current.note and not snap.note:
            self.started = (
                time.perf_counter()
            )  # training starts after the grouping race: the ETA counts from here
        self.current = snap
        if self.live is not None:
            now = time.perf_counter()
            if now - self.last >= 0.1 or snap.fraction >= 1.0:
                self.last = now
                size = self.live.console.size
                self.live.update(
                    render.live_view(
                        snap,
                        done=self.done,
                        position=self.position(),
                        eta=self.eta(snap),
                        size=(size.width, size.height),
                    ),
                    refresh=True,
                )
        elif snap.note:  # before training: each step of the grouping race gets a line
            note(render.plain_line(snap, self.position()))
        elif snap.fraction >= self.next_mark - 1e-9:
            self.next_mark = (int(snap.fraction * 10 + 1e-9) + 1) / 10
            note(render.plain_line(snap, self.position(), self.eta(snap)))


def with_progress(live: bool, call: Callable[[Progress], T], total: int = 1) -> T:
    """Run ``call(progress)`` under a live display on a terminal (stderr), else with plain lines on stderr."""
    if live and err_console.is_terminal:
        with Live(console=err_console, auto_refresh=False, transient=True) as display:
            return call(Progress(display, total))
    return call(Progress(None, total))


class SweepProgress:
    """``on_done`` callback of a sweep (or of a compare on Dask, *what*): a rich progress bar
    (runs done / total, elapsed, ETA) on stderr when it is a terminal, else one plain
    stderr line per finished run.

    The clock starts when the plan is made and is never reset; the ETA counts only
    the runs executed now (not those skipped by ``--resume``). ``warned`` collects the
    (folder, warning) of the runs whose loss ended above its start.
    """

    def __init__(self, progress: Bar | None, total: int, what: str = "sweep") -> None:
        self.progress = progress
        self.total = total
        self.what = what
        self.done = 0
        self.warned: list[tuple[str, str]] = []
        self.start = time.perf_counter()
        self.first: int | None = None
        self.task: TaskID | None = (
            progress.add_task(what, total=total, eta="-") if progress is not None else None
        )

    def __call__(
        self,
        done: int,
        total: int,
        folder: str,
        summary: Summary | None,
        error: BaseException | None,
    ) -> None:
        """Run *done* of *total* finished in *folder*: its *summary*, or (*summary* None)
        the *error* it failed with."""
        self.done = done
        if self.first is None:
            self.first = done - 1  # runs already finished (resume): not counted in the ETA
        if summary is None:
            status = type(error).__name__
        else:
            status = summary["status"]
            if summary.get("warning"):
                self.warned.append((folder, summary["warning"]))
        elapsed = time.perf_counter() - self.start
        eta = elapsed / (done - self.first) * (total - done)
        if self.progress is not None and self.task is not None:
            self.progress.update(
                self.task,
                completed=done,
                description=f"{self.what} ({folder} {status})",
                eta=f"{eta:.0f} s",
            )
            return
        note(
            f"{self.what}: {done}/{total} runs done ({folder} {status}), elapsed {elapsed:.0f} s, eta {eta:.0f} s"
        )


def sweep_bar() -> Bar:
    """The live progress bar of a sweep (on stderr, gone when it ends)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    return Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta {task.fields[eta]}"),
        console=err_console,
        transient=True,
    )


class RaceEta:
    """The race's time left, from the share of its planned work done (``on_progress``:
    :func:`netsim.tuning.halving.done_share`) and the wall time since its first rung began."""

    def __init__(self) -> None:
        self.start: float | None = None  # when the first rung began (data and probes before)
        self.share = 0.0

    def update(self, share: float) -> None:
        if self.start is None:
            self.start = time.monotonic()
        self.share = share

    def text(self) -> str:
        """``, about 3 min left`` (empty before anything was spent)."""
        if self.start is None or not self.share > 0:
            return ""
        left = (time.monotonic() - self.start) * (1 - self.share) / self.share
        return f", about {_duration(left)} left"


def _duration(seconds: float) -> str:
    """*seconds* rounded for a person: ``40 s``, ``3 min``, ``1.5 h``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
