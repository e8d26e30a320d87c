"""Python's cyclic garbage collector while a run is built.

Building a run of thousands of workers allocates a few hundred thousand long-lived objects
(per worker its seed sequences, generators and process) and no garbage cycles. With the
collector on, its collections would walk them again and again while they are built: the
young generations' every few hundred allocations, and a full collection, over the whole
heap, each time the tracked objects have grown by a quarter.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["building"]


@contextmanager
def building() -> Iterator[None]:
    """No cyclic collection inside (reference counting still frees what is not in a cycle;
    collections go on as usual after it). Left as it was when the collector is off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
