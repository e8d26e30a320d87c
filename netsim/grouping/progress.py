"""How fast a grouping moves the model, from measured iteration times (pure).

Under GSGD a group of workers updates the model once per round, a round lasting
as long as its slowest member; the other groups' updates that land during the
round are its staleness. From the probe phase's samples of per-worker iteration
times this gives, per group k, the mean round time R_k (s), the update rate
λ_k = 1 / R_k (updates/s), and the staleness τ_k = R_k · Σ_{j≠k} λ_j (updates).
See docs/GROUPING.md for how the recommender uses them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GroupTiming", "group_timing"]


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


def group_timing(times: np.ndarray, groups) -> GroupTiming:
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
