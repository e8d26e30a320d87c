"""Batches of stateful tasks spread over this process and forked copies of it.

The recommender's pilots are paused simulations resumed rung after rung: a pilot's
state cannot move between processes, so each pilot stays where it first ran. A
:class:`StickyPool` runs ``work(task)`` for a batch of tasks in this process and
``jobs - 1`` forked children (fork: they start with this process's memory, the
prepared data included, at no copy cost), sends a task with a *key* to wherever the
first task with that key ran, and spreads the others by estimated cost (longest
first, to the least loaded). Outcomes come back in task order, so what the caller
computes from them does not depend on ``jobs``.

Forking is used only where it is safe and cheap: on Linux, in a process that runs no
other Python thread (a thread holding a lock at the fork would leave it held in the
child) and is not itself a daemonic pool worker. Native BLAS threads are fork-safe
(OpenBLAS resets its pool in the child); the GNU OpenMP runtime (scikit-learn's k-means,
e.g. in pilots that regroup) is not: a child would wait forever for the parent's OpenMP
threads. So a child runs with every native thread pool limited to one thread
(threadpoolctl), where OpenMP uses none. Elsewhere the pool runs everything here.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Hashable, Sequence
from multiprocessing.connection import Connection

from threadpoolctl import threadpool_limits

from ..signals import held

__all__ = ["StickyPool", "usable_cpus", "usable_jobs"]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def usable_jobs(jobs: int | None) -> int:
    """Processes a pool may use: *jobs* (None: :func:`usable_cpus`), cut to 1 where
    forking is not safe (see the module docstring)."""
    if jobs is None:
        jobs = usable_cpus()
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs!r}")
    if jobs > 1 and not (
        sys.platform.startswith("linux")
        and threading.active_count() == 1
        and not multiprocessing.current_process().daemon
    ):
        return 1
    return jobs


def _die_with_parent() -> None:
    """On Linux, have the kernel end this child when its parent ends, however (even SIGKILL)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it ended before prctl took effect
        os._exit(1)


def _serve(conn: Connection, work: Callable) -> None:
    """A child's loop: run each batch received, send back the outcomes (or the error)."""
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # Ctrl-C is the parent's to handle; it ends the children
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: SIGTERM ends a child
    _die_with_parent()
    threadpool_limits(1)  # no OpenMP team in a forked child (see the module docstring)
    try:
        while (batch := conn.recv()) is not None:
            try:
                conn.send(("ok", [work(task) for task in batch]))
            except BaseException:
                conn.send(("error", traceback.format_exc()))
    except (EOFError, OSError):
        pass  # the parent is gone
    finally:
        os._exit(0)


class StickyPool:
    """``work(task)`` over batches of tasks in this process and ``jobs - 1`` forked children.

    Parameters
    ----------
    work : callable(task) -> outcome; it may keep state between calls (a child's copy is
        its own). Tasks and outcomes must be picklable.
    jobs : processes including this one (None: :func:`usable_jobs`); 1 runs all here.

    Used as a context manager, the pool also runs this process with every native thread
    pool (BLAS, OpenMP) limited to one thread until it closes, as the children are: the
    arithmetic, and so the outcomes, are then the same for any *jobs*.
    """

    def __init__(self, work: Callable, jobs: int | None = None) -> None:
        self.work = work
        self.jobs = usable_jobs(jobs)
        self.owner: dict[Hashable, int] = {}
        self._conns: list = []
        self._procs: list = []
        self._limits: threadpool_limits | None = None

    def __enter__(self) -> StickyPool:
        self._limits = threadpool_limits(1)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            self.close(kill=exc_type is not None)
        finally:
            if self._limits is not None:
                self._limits.restore_original_limits()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        # held: an interrupt raised inside an at-fork hook (logging's) would be ignored and lost
        with (
            held(),
            warnings.catch_warnings(),
        ):  # Python >= 3.12 warns of native (BLAS) threads at fork; see module doc
            warnings.simplefilter("ignore", DeprecationWarning)
            for _ in range(self.jobs - 1):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(child, self.work), daemon=True)
                proc.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(proc)

    def assign(
        self,
        keys: Sequence[Hashable | None],
        costs: Sequence[float],
        moved: Sequence[float] | None = None,
    ) -> list[int]:
        """The process (0 = this one) each task runs in.

        A task whose key has an owner goes there; the others go longest first to the least
        loaded process (ties: the lowest index) and a new key becomes owned by it. Then,
        with *moved* (per task, its cost when run away from its owner, e.g. a paused run
        replayed from the start), owned tasks move from the most to the least loaded
        process while that lowers the most loaded's load; their keys change owner.
        """
        loads = [0.0] * self.jobs
        where: list[int] = [-1] * len(keys)
        fixed = [False] * len(keys)
        for j, key in enumerate(keys):
            if key is not None and key in self.owner:
                where[j], fixed[j] = self.owner[key], True
                loads[where[j]] += costs[j]
        for j in sorted(
            (j for j in range(len(keys)) if where[j] < 0), key=lambda j: (-costs[j], j)
        ):
            key = keys[j]
            if key is not None and key in self.owner:  # a second task of a key placed in this batch
                where[j] = self.owner[key]
            else:
                where[j] = min(range(self.jobs), key=lambda p: (loads[p], p))
                if key is not None:
                    self.owner[key] = where[j]
            loads[where[j]] += costs[j]
        while moved is not None and self.jobs > 1:
            hi = max(range(self.jobs), key=lambda p: (loads[p], -p))
            lo = min(range(self.jobs), key=lambda p: (loads[p], p))
            best, best_peak = None, loads[hi]
            for j in range(len(keys)):
                if fixed[j] and where[j] == hi:
                    peak = max(loads[hi] - costs[j], loads[lo] + moved[j])
                    if peak < best_peak:
                        best, best_peak = j, peak
            if best is None:
                break
            loads[hi] -= costs[best]
            loads[lo] += moved[best]
            where[best] = self.owner[keys[best]] = lo
            fixed[best] = False  # moved once per batch
        return where

    def run(
        self,
        tasks: Sequence,
        keys: Sequence[Hashable | None],
        costs: Sequence[float],
        moved: Sequence[float] | None = None,
    ) -> list:
        """Outcomes of ``work(task)`` for every task, in task order.

        *keys*: per task, the key of the state it needs (None: any process); *costs*: per
        task, an estimate of its run time (any unit) for the spreading; *moved*: per task,
        its cost away from its key's owner (None: tasks never move; else ``work`` must
        cope with a task whose state is missing or stale where it runs). Tasks of one
        process run in their order in *tasks*.

        Raises RuntimeError when a child fails or dies (with the child's traceback).
        """
        where = self.assign(keys, costs, moved)
        if self.jobs > 1 and not self._procs:
            self._start()
        mine = [j for j in range(len(tasks)) if where[j] == 0]
        theirs = {p: [j for j in range(len(tasks)) if where[j] == p] for p in range(1, self.jobs)}
        for p, js in theirs.items():
            self._conns[p - 1].send([tasks[j] for j in js])
        out: list = [None] * len(tasks)
        for j in mine:
            out[j] = self.work(tasks[j])
        for p, js in theirs.items():
            try:
                status, values = self._conns[p - 1].recv()
            except (EOFError, OSError):
                code = self._procs[p - 1].exitcode
                self.close(kill=True)
                raise RuntimeError(f"pilot process {p} died (exit code {code})") from None
            if status != "ok":
                self.close(kill=True)
                raise RuntimeError(f"pilot process {p} failed:\n{values}")
            for j, value in zip(js, values):
                out[j] = value
        return out

    def close(self, kill: bool = False) -> None:
        """End the children (their state is dropped): asked to exit, or at once with *kill*
        (after an error or an interrupt, when a child may still be busy)."""
        for conn in self._conns:
            if not kill:
                try:
                    conn.send(None)
                except OSError:
                    pass
            conn.close()
        for proc in self._procs:
            if kill:
                proc.kill()
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._conns, self._procs = [], []
