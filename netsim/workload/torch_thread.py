"""The thread a run's torch passes run on, so that their temporaries live in an arena of their own.

glibc's allocator serves each thread from an arena. The main thread's heap also holds a
run's small long-lived allocations (records, events, Python objects); a forward and backward
pass makes per-layer temporaries of up to a model copy (a layer's gradient is as large as
its weights: most of an MLP's parameters) that glibc serves from the same heap once one
has been freed. Small allocations made while such a temporary's memory is free split it,
the next pass's temporary no longer fits and the heap grows: by up to three copies of a
5 M-parameter MLP beyond what was alive, depending on the order of small allocations
(``PYTHONHASHSEED``). Returning each temporary to the system instead (a fixed
``M_MMAP_THRESHOLD``) costs a page fault per 4 kB: 60 % more time per gradient there.

On a thread of their own, the passes are alone in their arena; each makes the same
temporaries in the same order, so the arena settles at one pass's worth and reuses it. The
caller waits for each pass (one pass at a time, as before); the results and their
arithmetic are the same. Calls from any thread but the main one run where they are
called (each such thread has an arena of its own already).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

__all__ = ["TorchThread", "shared_thread"]

T = TypeVar("T")


class _Job:
    __slots__ = ("fn", "args", "threads", "done", "result", "error")

    def __init__(self, fn: Callable[..., Any], args: tuple, threads: int) -> None:
        self.fn, self.args, self.threads = fn, args, threads
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None


class TorchThread:
    """One daemon thread running the calls the main thread hands it, one at a time.

    It starts at the first call (again in a forked child, where the parent's thread does
    not exist) and runs torch with the caller's number of intra-op threads."""

    def __init__(self) -> None:
        self._queue: SimpleQueue[_Job] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, on this thread when called from the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return fn(*args)
        self.start()
        import torch

        job = _Job(fn, args, torch.get_num_threads())
        self._queue.put(job)
        try:
            job.done.acquire()
        except BaseException:  # an interrupt: the pass ends before anything else touches the module
            job.done.acquire()
            raise
        if job.error is not None:
            error, job.error = job.error, None
            raise error
        return job.result

    def start(self) -> None:
        """Start the thread if this process has none running."""
        if self._pid == os.getpid() and self._thread is not None and self._thread.is_alive():
            return
        self._queue = SimpleQueue()
        self._pid = os.getpid()
        self._thread = threading.Thread(
            target=_serve, args=(self._queue,), name="netsim-torch", daemon=True
        )
        self._thread.start()


def _serve(queue: SimpleQueue[_Job]) -> None:
    while True:
        job = queue.get()
        import torch  # the caller's: imported by then

        try:
            if torch.get_num_threads() != job.threads:
                torch.set_num_threads(job.threads)
            job.result = job.fn(*job.args)
        except BaseException as exc:  # noqa: BLE001  handed to the caller, raised there
            job.error = exc
        job.fn = job.args = None  # type: ignore[assignment]
        job.done.release()
        del job


_SHARED = TorchThread()


def shared_thread() -> TorchThread:
    """The process's thread for torch passes (every run of the process uses it)."""
    return _SHARED
