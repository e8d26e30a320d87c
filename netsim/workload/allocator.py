"""Large temporaries in memory maps of their own, so that freeing them gives the memory back.

A network's backward pass makes per-layer gradients as large as its biggest layer (20 MB for
a 784×6300 dense layer in float32) and frees them once they are copied out. glibc serves
such blocks from its heap after the first of them has been freed (its threshold for a
memory map of their own grows to the largest block freed, up to 32 MB), and there they
alternate with the small, long-lived allocations of the rest of the process: the holes
they leave fit the next request only sometimes, and the heap grows by a few model copies
that depend on the order of earlier allocations (``PYTHONHASHSEED`` changes it). A fixed
threshold keeps every block of at least that size in a memory map of its own, returned on
free. Each new one then costs a page fault per page: per 4 kB that added 40 % to the
gradients of a 5 M-parameter MLP, so torch is also asked to back its blocks of 2 MB or more
with transparent huge pages (``THP_MEM_ALLOC_ENABLE``; a fault per 2 MB). The run's
model-sized vectors are not concerned: :class:`~netsim.workload.buffers.Buffers` reuses them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

__all__ = ["DEFAULT_THRESHOLD", "MAX_THRESHOLD", "huge_pages_for_torch", "map_large_blocks"]

DEFAULT_THRESHOLD = 4 * 1024 * 1024
"""Bytes: blocks of at least this size get a memory map of their own (torch models)."""

MAX_THRESHOLD = 32 * 1024 * 1024
"""Bytes: the largest threshold glibc accepts on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``)."""

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_applied: list[int] = []


def map_large_blocks(threshold: int) -> bool:
    """Serve allocations of at least *threshold* bytes (1 ... :data:`MAX_THRESHOLD`) from
    memory maps of their own for the rest of this process (glibc's ``mallopt``).

    Returns whether the setting is in effect: False on other C libraries, where nothing
    changes. Calling it again with the same value does nothing.
    """
    if not 1 <= threshold <= MAX_THRESHOLD:
        raise ValueError(f"threshold {threshold} bytes is not in 1..{MAX_THRESHOLD}")
    if _applied and _applied[-1] == threshold:
        return True
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        done = bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold)))
    except (OSError, AttributeError):
        return False
    if done:
        _applied.append(threshold)
    return done


def huge_pages_for_torch() -> None:
    """Ask torch to back its CPU blocks of 2 MB or more with transparent huge pages (and
    page-align its blocks), unless ``THP_MEM_ALLOC_ENABLE`` is set already. torch reads the
    variable at its first CPU allocation in the process: later calls change nothing. The
    arithmetic does not depend on it (a run's bits are the same either way)."""
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
