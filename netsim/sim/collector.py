"""Python's cyclic garbage collector around a run: paused while the run is built, and the
objects alive when it starts set aside while it runs.

A full collection walks every object the collector tracks in the process, and it comes
each time the tracked objects have grown by a quarter. Building a run of thousands of
workers allocates a few hundred thousand long-lived objects (per worker its seed
sequences, generators and process) and no garbage cycles, so a collector left on repeats
full walks of a growing heap for nothing; and during the run each full collection would
walk again the objects built before it. Reference counting still frees everything
that is not in a cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused", "set_aside"]


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside (left as it was when the collector is already off)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextmanager
def set_aside() -> Iterator[None]:
    """The collector skips the objects alive on entry (``gc.freeze``) until the exit gives
    them back to it; nothing is done when objects are frozen already (by the caller, or an
    enclosing ``set_aside``), so theirs stay as they are."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
