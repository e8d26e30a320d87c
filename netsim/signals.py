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

import _thread
import atexit
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = [
    "install",
    "quiet",
    "finish",
    "held",
    "stoppable",
    "received",
    "signalled",
    "sigterm_interrupts",
    "STOP_SIGNALS",
]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stoppable(Protocol):
    """What a signal asks to stop: a run that checks at each tick."""

    def request_stop(self) -> None: ...


_state: dict[str, Any] = {
    "depth": 0,
    "pending": [],
    "sim": None,
    "installed": False,
    "said": False,
}
"""depth: held blocks open; pending: signals received inside them; sim: the simulation a
signal asks to stop (None between runs); installed: whether :func:`install` ran; said:
whether the command's last word says it was interrupted."""


def _interrupt(signum: int, frame: object) -> None:
    _state["signalled"] = True
    _state["last"] = signum
    raise KeyboardInterrupt


LATER = 0.02
"""Seconds after which an interrupt lost in a finalizer is raised again (by then the
finalizer has returned)."""


def _unraisable(info: Any) -> None:
    """``sys.unraisablehook`` after :func:`install`: an interrupt raised inside a finalizer
    (a ``__del__`` or a weakref callback, where Python prints it and goes on) is raised
    again :data:`LATER`, so that it lands in the command's own code; anything else is reported
    as Python would. (Raised again at once, it would land in this hook itself.)"""
    if isinstance(info.exc_value, KeyboardInterrupt) and _state["installed"]:
        again = threading.Timer(LATER, _thread.interrupt_main, (_state.get("last", signal.SIGINT),))
        again.daemon = True
        again.start()
        return
    sys.__unraisablehook__(info)


def signalled() -> bool:
    """Whether :func:`install`'s handler has raised an interrupt in this process (a C
    extension's import that it lands in reports ``ImportError``, not KeyboardInterrupt)."""
    return bool(_state.get("signalled"))


def install() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt from now on (main thread only), also when
    they land in a finalizer (:func:`_unraisable`)."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, _interrupt)
        sys.unraisablehook = _unraisable
        _state["installed"] = True


LATE_LINE = "error: interrupted after the command had ended (nothing was left to write)\n"
"""What a signal that arrives after a command's last word says (then exit status 130)."""


def _late(signum: int, frame: object) -> None:
    if _state["said"]:  # the command's last word already says it was interrupted
        os._exit(130)
    try:
        sys.stderr.write(LATE_LINE)
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: the status alone says it
        pass
    os._exit(130)


def quiet(interrupted: bool = False) -> None:
    """After :func:`install`: the command has written every file and said its last word
    (*interrupted*: that word says it was interrupted); a signal from now on exits with 130
    at once, saying so in one line (:data:`LATE_LINE`) unless the command already has."""
    _state["said"] = _state["said"] or interrupted
    if _state["installed"] and threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, _late)


def finish(status: object) -> None:
    """End the process with *status* (a ``SystemExit`` code: None, an int or a message) without
    the interpreter's shutdown, during which Python puts the default handlers back and a
    signal would kill the process silently: flush the streams, run the ``atexit`` functions
    (pools, temporary folders) under :func:`quiet`, then ``os._exit``."""
    quiet(status == 130)
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        try:
            sys.stderr.write(f"{status}\n")
        except (OSError, ValueError):
            pass
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def _hold(signum: int, frame: object) -> None:
    _state["last"] = signum
    sim = _state["sim"]
    if sim is not None:
        if sim.stop_requested:  # a second signal: the run stops at once
            _interrupt(signum, frame)
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
def stoppable(sim: Stoppable) -> Iterator[None]:
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


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does (main thread only): a sweep stopped
    by a job supervisor ends its pool and exits like one stopped from the terminal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    old = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
