"""Pure arithmetic of a minibatch processed as equal-time blocks (LGC-style rules)."""

from __future__ import annotations

import math

__all__ = ["completed_blocks", "block_rows"]

TIME_TOL = 1e-9
"""Relative slack (of one block's time) so that float round-off at an exact block
boundary counts the block as done: ``(now - start) * blocks / duration`` of
``2 * 3 / 3`` may come out as ``1.9999999999999998``."""


def completed_blocks(elapsed: float, duration: float, blocks: int) -> int:
    """How many of *blocks* equal-time blocks are done after *elapsed* seconds.

    A computation of *duration* seconds processes block ``i`` (0-based) during
    ``[i, i + 1) * duration / blocks``; the result is in ``0 .. blocks``.

    Parameters
    ----------
    elapsed : float, time (s) since the computation began, >= 0.
    duration : float, its total length (s), > 0.
    blocks : int, >= 1.

    Examples
    --------
    >>> completed_blocks(2.0, 3.0, 3), completed_blocks(1.99, 3.0, 3), completed_blocks(5.0, 3.0, 3)
    (2, 1, 3)
    """
    if duration <= 0:
        return blocks
    done = math.floor(elapsed * blocks / duration + TIME_TOL)
    return min(max(done, 0), blocks)


def block_rows(n_rows: int, blocks: int, k: int) -> int:
    """Rows covered by the first *k* of *blocks* blocks of an *n_rows* minibatch.

    Blocks are contiguous and as equal as possible, the first ``n_rows % blocks``
    one row longer (as :func:`numpy.array_split`); a block is empty when
    ``blocks > n_rows``.

    Examples
    --------
    >>> [block_rows(8, 3, k) for k in range(4)]
    [0, 3, 6, 8]
    """
    base, extra = divmod(n_rows, blocks)
    return k * base + min(k, extra)
