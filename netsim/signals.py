"""Ctrl-C (SIGINT) and SIGTERM: one handling from a command's first moment to its last file.

:func:`install` (the console entry's first act) makes SIGTERM raise KeyboardInterrupt as
Ctrl-C does, so that a command stopped by a job supervisor ends its pools and says so
like one stopped from the terminal. While files are being completed, :func:`held` holds
both signals back: they take effect when the outermost held block ends (re-sent to this
process, so whatever handler was there before acts on them), and a folder is never left
half written. Inside a held block, :func:`stoppable` lets a running simulation stop at
its next tick on the first signal (its rows complete, status ``interrupted``) and at once
on the second. Handlers are changed in the main thread only; elsewhere these do nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["install", "quiet", "held", "stoppable", "received", "STOP_SIGNALS"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_state: dict[str, Any] = {"depth": 0, "pending": [], "sim": None, "installed": False}
"""depth: held blocks open; pending: signals received inside them; sim: the simulation a
signal asks to stop (None between runs); installed: whether :func:`install` ran."""


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def install() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt from now on (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, _interrupt)
        _state["installed"] = True


def quiet() -> None:
    """After :func:`install`: ignore SIGINT and SIGTERM from now on (the command has written
    every file and said its last word; it only exits)."""
    if _state["installed"] and threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def _hold(signum: int, frame: object) -> None:
    sim = _state["sim"]
    if sim is not None:
        if sim.stop_requested:  # a second signal: the run stops at once
            raise KeyboardInterrupt
        sim.request_stop()
    _state["pending"].append(signum)


def received() -> bool:
    """Whether a signal arrived inside the held blocks open now."""
    return bool(_state["pending"])


@contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back inside the block (nested blocks: until the outermost one
    ends); then the first one received is sent again to this process, unless the block ends
    by an exception (that one is then what the caller sees)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _state["depth"] == 0
    old = {}
    if outer:
        _state["pending"] = []
        old = {sig: signal.signal(sig, _hold) for sig in STOP_SIGNALS}
    _state["depth"] += 1
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        _state["depth"] -= 1
        if outer:
            for sig, handler in old.items():
                signal.signal(sig, handler)
            pending, _state["pending"] = _state["pending"], []
            if pending and not failed:
                signal.raise_signal(pending[0])


@contextmanager
def stoppable(sim) -> Iterator[None]:
    """Inside :func:`held`: a signal asks *sim* (``request_stop``, ``stop_requested``) to stop at
    its next tick, a second one raises KeyboardInterrupt at once; a signal already held
    stops it at its first tick."""
    if _state["depth"] == 0:
        yield
        return
    previous, _state["sim"] = _state["sim"], sim
    if _state["pending"]:
        sim.request_stop()
    try:
        yield
    finally:
        _state["sim"] = previous
