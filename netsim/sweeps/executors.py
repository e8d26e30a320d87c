"""Where sweep runs execute: this process, local worker processes, or a Dask cluster.

Each executor calls ``fn(item)`` for every item and yields ``(index, value,
error)`` as runs finish (in completion order): *value* is what ``fn`` returned,
*error* the exception it raised (then *value* is None). ``fn`` must be a
module-level function and the items picklable. The Dask one,
:func:`~netsim.tuning.dask_tasks.dask_results`, is shared with ``netsim compare``.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from ..tuning.dask_tasks import dask_results
from ..tuning.pool import usable_cpus

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["ExecutorError", "local_results", "dask_results", "connect", "default_workers"]

Outcome = tuple[int, Any, BaseException | None]


class ExecutorError(RuntimeError):
    """The executor cannot start (no ``distributed`` package, scheduler unreachable)."""


def default_workers() -> int:
    """Local worker processes by default: the CPUs this process may use."""
    return usable_cpus()


def _die_with_parent(parent: int) -> None:
    """Pool-process initializer: end this process as soon as *parent* is gone (even
    killed with SIGKILL, when nothing can clean up). On Linux the kernel sends SIGKILL
    (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread also polls the parent id."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(
                1, int(signal.SIGKILL), 0, 0, 0
            )  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="netsim-parent-watch", daemon=True).start()


def local_results(fn: Callable, items: list, workers: int) -> Iterator[Outcome]:
    """Run in this process (*workers* = 1) or in *workers* fresh ``spawn`` processes.

    At most *workers* runs are in flight; when the consumer stops early (an
    interrupt), runs not started yet are cancelled. Worker processes end with this
    process, however it ends (see :func:`_die_with_parent`).
    """
    if workers <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            try:
                yield i, fn(item), None
            except Exception as exc:  # reported per run; the sweep goes on
                yield i, None, exc
        return
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(items)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )
    finished = False
    try:
        pending = {pool.submit(fn, item): i for i, item in enumerate(items)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                i = pending.pop(future)
                error = future.exception()
                yield i, None if error else future.result(), error
        finished = True
    finally:
        if not finished:  # stopped early (Ctrl-C, SIGTERM): the runs in flight are abandoned now,
            _terminate(pool)  # not finished first (a run can take minutes; --resume redoes them)
        pool.shutdown(wait=True, cancel_futures=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """End *pool*'s worker processes at once (SIGTERM, then SIGKILL after 2 s).

    A worker ended while it sent its result leaves part of a message in the result pipe,
    and the pool's manager thread, reading it, would wait for the rest forever (so would
    ``pool.shutdown``). Once the workers are gone this process's own end of that pipe is
    closed too: the thread then reads end-of-file and winds the pool down as broken."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + 2.0
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()


def connect(scheduler: str | Client) -> tuple[Client, bool]:
    """A ``distributed.Client`` for *scheduler* (an address, or a Client returned as is)
    and whether the caller owns it (must close it).

    Raises
    ------
    ExecutorError
        When ``distributed`` is not installed or the scheduler cannot be reached.
    """
    from ..tuning.dask_pool import connect as dask_connect

    return dask_connect(scheduler, ExecutorError, "--scheduler")
