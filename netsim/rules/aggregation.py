"""Pure aggregation of pushed gradients."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .base import Push

__all__ = ["mean_by_worker", "weighted_mean_by_worker"]

_by_worker = attrgetter("worker")


def mean_by_worker(
    pushes: Sequence[Push], out: np.ndarray | None = None, reuse: bool = False
) -> np.ndarray:
    """Mean of the pushes' gradients, summed in increasing worker id order.

    Summing in a fixed order (not arrival order) makes the result independent of
    ties in arrival times, so equivalent rules give bit-identical models. Each
    ``push.grad`` is read once, so gradients held in compact form are expanded
    one at a time. Ties in worker id keep the given order (a stable sort).

    Parameters
    ----------
    pushes : list of objects with ``worker`` (int) and ``grad`` (ndarray of shape (d,)).
    out : ndarray (d,) of the gradients' dtype to write the mean into, or None (a new array).
    reuse : write the mean into the first gradient (in worker order) instead, when it is
        writeable, of the second's dtype and not a view of a larger array (a row of stacked
        gradients, which the mean would keep alive): the caller gives the gradients up (the
        same numbers, one model-sized array fewer).

    Returns
    -------
    ndarray of shape (d,): *out*, the first gradient or a new array, or the gradient itself
    when there is one.
    """
    if len(pushes) == 1:
        return pushes[0].grad
    ordered = sorted(pushes, key=_by_worker)
    first, second = ordered[0].grad, ordered[1].grad
    if (
        reuse
        and first.flags.writeable
        and first.dtype == second.dtype
        and not isinstance(first.base, np.ndarray)
    ):
        out = first
    total = np.add(first, second, out)  # the copy-then-add, in one call
    for p in ordered[2:]:
        total += p.grad
    total /= len(pushes)
    return total


def weighted_mean_by_worker(
    grads: list[np.ndarray], weights: list[float], workers: list[int]
) -> np.ndarray:
    """``Σ weights[i]·grads[i] / Σ weights``, summed in increasing worker id order.

    Used for sample-weighted means (weight = rows behind each gradient). Ties in
    worker id keep the given order (a stable sort).

    Parameters
    ----------
    grads : list of ndarray of shape (d,)
    weights : list of float > 0, same length (e.g. sample counts).
    workers : list of int, same length, the pushing workers' ids.

    Returns
    -------
    ndarray of shape (d,), a new array.
    """
    order = sorted(range(len(grads)), key=workers.__getitem__)
    total = weights[order[0]] * grads[order[0]]
    for i in order[1:]:
        total += weights[i] * grads[i]
    total /= float(sum(weights[i] for i in order))
    return total
