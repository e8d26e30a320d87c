"""Message buffers a real run keeps for its whole life, touched before the clock starts.

A model or gradient message is ``HEADER + d`` float64 values (8 MB for a million
parameters). Allocated afresh for every message, each one costs the process page faults
(the allocator hands large blocks back to the system and takes them again): measured 5 to
15 ms per 8 MB message on the 2-core test machine, where copying into memory already touched
takes under 1 ms. Nearly all of them fall at the start, when every worker sends its first
push at once, so they slow the first units of a run and nothing after. A real parameter
server registers its buffers once; so does this one: the receiving thread takes its buffers
from a :class:`Pool` and a message's buffer returns to the pool when the last view of it
(the gradient a rule holds, for instance) is gone; each worker's outgoing model has a
buffer of its own (:func:`touched`).
"""

from __future__ import annotations

import weakref
from collections import deque

import numpy as np

__all__ = ["Pool", "touched"]


def touched(n: int) -> np.ndarray:
    """A float64 vector (n,) whose pages are all written (no fault on first use)."""
    out = np.empty(n)
    out.fill(0.0)
    return out


class _Lease:
    """The owner of one pooled buffer while a message in it is in use: arrays made from it
    (and every view of them) keep it alive; when the last one is gone the buffer goes back
    to its pool."""

    def __init__(self, buffer: np.ndarray) -> None:
        self.buffer = buffer
        self.__array_interface__ = buffer.__array_interface__


class Pool:
    """Float64 buffers of *n* values, *count* of them touched at once, more made on demand
    (thread-safe: one thread takes, any thread returns)."""

    def __init__(self, n: int, count: int) -> None:
        self.n = n
        self.free: deque[np.ndarray] = deque(touched(n) for _ in range(count))
        self.made = count

    def take(self) -> np.ndarray:
        """A buffer to receive into, not handed out elsewhere until :meth:`lend` returns it."""
        try:
            return self.free.pop()
        except IndexError:
            self.made += 1
            return touched(self.n)

    def lend(self, buffer: np.ndarray) -> np.ndarray:
        """*buffer* as an array of its own: it returns to the pool when that array and every
        view of it are gone."""
        lease = _Lease(buffer)
        view = np.asarray(lease)
        weakref.finalize(lease, self.free.append, buffer)
        return view
