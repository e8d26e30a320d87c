"""How fast a grouping moves the model, from measured iteration times (pure).

Under GSGD a group of workers updates the model once per round, a round lasting
as long as its slowest member; the other groups' updates that land during the
round are its staleness. From the probe phase's samples of per-worker iteration
times this gives, per group k, the mean round time R_k (s), the update rate
λ_k = 1 / R_k (updates/s), and the staleness τ_k = R_k · Σ_{j≠k} λ_j (updates).
See docs/GROUPING.md for how the recommender uses them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["GroupTiming", "group_timing", "alike", "prune_alike"]


@dataclass(frozen=True)
class GroupTiming:
    """Per-group round time ``round_s`` (K,) s, ``rate`` (K,) updates/s, ``size`` (K,)
    workers and ``staleness`` (K,) updates; totals over the groups."""

    round_s: np.ndarray
    rate: np.ndarray
    size: np.ndarray
    staleness: np.ndarray

    @property
    def updates_per_s(self) -> float:
        """Model updates per second, all groups."""
        return float(self.rate.sum())

    @property
    def gradients_per_s(self) -> float:
        """Gradients per second, all groups."""
        return float((self.rate * self.size).sum())

    @property
    def mean_staleness(self) -> float:
        """Staleness of the average update (weighted by the groups' update rates), updates."""
        return float((self.rate * self.staleness).sum() / self.rate.sum())

    @property
    def mean_size(self) -> float:
        """Gradients per update, averaged over updates."""
        return self.gradients_per_s / self.updates_per_s


def group_timing(times: np.ndarray, groups: Sequence[Sequence[int]]) -> GroupTiming:
    """Round times, rates and staleness of *groups* from measured iteration *times*.

    Parameters
    ----------
    times : ndarray of shape (n_workers, n_rounds), s per iteration (pull + compute + push).
    groups : sequence of worker-id sequences, a partition of the workers.

    The round time of a group is the mean over the probe rounds of its slowest
    member's time in that round (so spread within a group costs what it costs).

    >>> t = np.array([[1.0, 1.0], [1.0, 1.0], [3.0, 3.0]])
    >>> g = group_timing(t, [[0, 1], [2]])
    >>> g.rate.tolist(), g.staleness.tolist()
    ([1.0, 0.333...], [0.333..., 3.0])
    >>> g.updates_per_s, g.gradients_per_s
    (1.333..., 2.333...)
    """
    times = np.asarray(times, float)
    round_s = np.array([times[list(g)].max(axis=0).mean() for g in groups])
    rate = 1.0 / round_s
    size = np.array([len(g) for g in groups], float)
    staleness = round_s * (rate.sum() - rate)
    return GroupTiming(round_s, rate, size, staleness)


def alike(a: GroupTiming, b: GroupTiming, tol: float) -> bool:
    """Whether two groupings move the model alike: update rate (updates/s), 1 + mean
    staleness (updates) and gradients per update each within a factor ``e**tol``.

    >>> t = np.ones((4, 2))
    >>> alike(group_timing(t, [[0, 1], [2, 3]]), group_timing(t, [[0, 2], [1, 3]]), 0.1)
    True
    >>> alike(group_timing(t, [[0, 1], [2, 3]]), group_timing(t, [[0], [1], [2], [3]]), 0.1)
    False
    """
    pairs = (
        (a.updates_per_s, b.updates_per_s),
        (1 + a.mean_staleness, 1 + b.mean_staleness),
        (a.mean_size, b.mean_size),
    )
    return all(abs(math.log(x / y)) <= tol for x, y in pairs)


def prune_alike(timings: dict, tol: float) -> dict:
    """``{name: kept name}`` for each grouping alike (:func:`alike`) an earlier kept one.

    *timings* is ``{name: GroupTiming}`` in priority order; a grouping is kept unless it is
    alike one already kept, so the first of several alike ones stands for them all.
    ``tol <= 0`` prunes nothing.
    """
    if not tol > 0:
        return {}
    kept: list = []
    out: dict = {}
    for name, timing in timings.items():
        like = next((k for k in kept if alike(timing, timings[k], tol)), None)
        if like is None:
            kept.append(name)
        else:
            out[name] = like
    return out
