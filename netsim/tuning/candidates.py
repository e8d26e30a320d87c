"""Candidate groupings formed from measured iteration times (pure).

The recommender and the grouping-regret benchmark both choose among these:
one group (SSGD), singletons (ASGD), the scenario's hand groups, ``kmeans:K`` and
``equal:K`` for K = 2 .. min(k_max, P − 1). Identical partitions are kept once,
under the first name in that order. The race pairs each with an η from a log grid
(:func:`lr_grid`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..grouping import ONE_GROUP, SINGLETONS  # the names the renderers show too
from ..grouping.clustering import _ordered, equal_groups, features, kmeans_groups

__all__ = ["ONE_GROUP", "SINGLETONS", "candidate_groupings", "canonical", "lr_grid"]


Groups = tuple[tuple[int, ...], ...]
"""A partition of the workers: groups of worker ids."""


def canonical(groups: Iterable[Iterable[int]]) -> Groups:
    """A partition as a sorted tuple of sorted id tuples (for comparing partitions)."""
    return tuple(sorted(tuple(sorted(int(i) for i in g)) for g in groups))


def candidate_groupings(
    times: np.ndarray,
    *,
    hand: Sequence[Sequence[int]] | None = None,
    k_max: int = 8,
    seed: int = 0,
) -> dict[str, Groups]:
    """``{name: groups}`` of the candidate partitions of the workers, fastest group first.

    Parameters
    ----------
    times : ndarray of shape (n_workers, n_rounds), measured seconds per iteration.
    hand : the scenario's groups (lists of worker ids), or None.
    k_max : largest K tried for ``kmeans:K`` and ``equal:K``.
    seed : k-means seed.

    >>> times = np.array([[1.0, 1.0], [1.1, 1.0], [3.0, 3.1], [3.0, 2.9]])
    >>> c = candidate_groupings(times, k_max=3)
    >>> list(c)
    ['one group', 'singletons', 'kmeans:2', 'kmeans:3', 'equal:3']
    >>> c["kmeans:2"]
    ((0, 1), (2, 3))
    """
    n = len(times)
    mean = times.mean(axis=1)
    order = tuple((int(i),) for i in np.argsort(mean, kind="stable"))
    named: list[tuple[str, Groups]] = [(ONE_GROUP, (tuple(range(n)),)), (SINGLETONS, order)]
    if hand:
        named.append(("hand", _ordered(_labels(hand, n), mean)))
    X = features(times)
    distinct = len(np.unique(X.round(12), axis=0))
    top = min(k_max, n - 1)
    for k in range(2, min(top, distinct) + 1):
        named.append((f"kmeans:{k}", _ordered(kmeans_groups(X, k, seed), mean)))
    for k in range(2, top + 1):
        named.append((f"equal:{k}", _ordered(_labels(equal_groups(mean, k), n), mean)))
    out: dict[str, Groups] = {}
    seen: set[Groups] = set()
    for name, groups in named:
        key = canonical(groups)
        if key not in seen:
            seen.add(key)
            out[name] = groups
    return out


def _labels(groups: Iterable[Iterable[int]], n: int) -> np.ndarray:
    labels = np.zeros(n, dtype=int)
    for k, g in enumerate(groups):
        labels[list(g)] = k
    return labels


def lr_grid(base: float, points: int = 5, ratio: float = 3.0) -> tuple[float, ...]:
    """*points* learning rates spaced by *ratio*, centred (geometrically) on *base*.

    >>> lr_grid(0.1, 3)
    (0.0333..., 0.1, 0.3...)
    """
    half = (points - 1) / 2
    return tuple(float(base * ratio ** (i - half)) for i in range(points))
