"""Model-sized arrays of one run, reused once nothing refers to them any more.

A run makes a new flat vector for every gradient (which, applied, becomes a model version)
and lets one go as often. Left to the C allocator, vectors of a few MB to 32 MB come from
its heap (glibc serves them there once one has been freed), where they alternate with the
model's own temporaries of other sizes (a layer's gradient inside a backward pass): the
holes they leave fit the next request only sometimes, and the heap grows by several model
copies beyond what is alive. Returning them to the system instead (``mmap`` for each) costs
a page fault for every 4 kB of every new vector, which doubled the time of an MLP's
gradients. :class:`Buffers` keeps the memory of the vectors a run let go and hands it out
again: as many buffers as were ever alive at once, no fragmentation, no page faults.
"""

from __future__ import annotations

import mmap
import weakref

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["Buffers"]


class Buffers:
    """Flat arrays of *size* entries of *dtype*, reused when their last reference goes.

    :meth:`take` returns an array whose memory belongs to a buffer of this object. Every
    view of that array, and every tensor sharing its memory, refers to the array itself (its
    ``base`` is not an array, so numpy never skips it), so the memory comes back to
    :meth:`take` only once all of them are gone. The free buffers go when this object
    goes, or at :meth:`release`; an array still alive keeps its own buffer.

    Attributes
    ----------
    made : int, buffers allocated so far (the most arrays alive at once, counting the
        free ones :meth:`release` let go).
    """

    __slots__ = ("size", "dtype", "free", "made", "__weakref__")

    def __init__(self, size: int, dtype: DTypeLike):
        self.size = int(size)
        self.dtype = np.dtype(dtype)
        self.free: list[mmap.mmap] = []
        self.made = 0

    def take(self) -> np.ndarray:
        """A writeable array (size,) of dtype, contents undefined."""
        if self.free:
            memory = self.free.pop()
        else:
            memory = mmap.mmap(-1, max(1, self.size * self.dtype.itemsize), mmap.MAP_PRIVATE)
            self.made += 1
        out = np.frombuffer(memory, self.dtype, self.size)
        weakref.finalize(out, _give_back, weakref.ref(self), memory)
        return out

    def release(self) -> None:
        """Let the free buffers go (the arrays still alive keep theirs)."""
        self.free.clear()


def _give_back(owner: weakref.ref, memory: mmap.mmap) -> None:
    """*memory*'s array is gone: its buffer is free again (if its :class:`Buffers` lives)."""
    buffers = owner()
    if buffers is not None:
        buffers.free.append(memory)
