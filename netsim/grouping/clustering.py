"""Forming worker groups from measured per-iteration times (pure; scikit-learn k-means)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Grouping",
    "features",
    "kmeans_groups",
    "equal_groups",
    "auto_groups",
    "choose_grouping",
    "parse_method",
    "METHODS",
]

METHODS = ("auto", "race", "silhouette", "kmeans:K", "equal:K", "hand")


@dataclass(frozen=True)
class Grouping:
    """A partition of the workers and how it was chosen.

    ``groups`` lists member ids per group, fastest group first; ``criterion`` maps
    each K that was considered to its silhouette score (``auto``), ``reason`` says
    why K was chosen.
    """

    method: str
    k: int
    groups: tuple
    criterion: dict = field(default_factory=dict)
    reason: str = ""

    def as_dict(self) -> dict:
        return {
            "method": self.method,
            "k": self.k,
            "members": [list(g) for g in self.groups],
            "criterion": {str(k): v for k, v in self.criterion.items()},
            "reason": self.reason,
        }


def features(times: np.ndarray, jitter: bool = False) -> np.ndarray:
    """Clustering features of measured iteration times.

    Parameters
    ----------
    times : ndarray of shape (n_workers, n_rounds), seconds per iteration.
    jitter : also use the spread (std of log time) as a second feature.

    Returns
    -------
    ndarray of shape (n_workers, 1) — log of the mean time — or (n_workers, 2).
    """
    logs = np.log(times)
    cols = [np.log(times.mean(axis=1))]
    if jitter:
        cols.append(logs.std(axis=1))
    return np.column_stack(cols)


def _ordered(labels: np.ndarray, speed: np.ndarray) -> tuple:
    """Groups as sorted id tuples, ordered by the mean speed of their members (fastest first)."""
    groups = [np.flatnonzero(labels == lab) for lab in np.unique(labels)]
    groups.sort(key=lambda g: (float(speed[g].mean()), int(g[0])))
    return tuple(tuple(int(i) for i in g) for g in groups)


def kmeans_groups(X: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """K-means labels (n_workers,) of feature rows *X*, seeded, ten k-means++ starts; at most
    as many clusters as distinct rows (``kmeans:3`` on workers of two speeds forms the 2
    groups that exist, without scikit-learn's convergence warning).

    *seed* is any integer >= 0 (a scenario's ``run.seed`` has no upper bound); scikit-learn
    takes seeds below 2**32, so it gets ``seed mod 2**32`` (the seed itself below that).

    The fit runs on one OpenMP thread. With more, scikit-learn adds the per-thread partial
    sums of the centres in whatever order the threads finish (beyond 256 rows), so the
    labels could depend on the machine and the moment; and on a busy machine each of the
    70 Lloyd passes of a candidate set waited ~20 ms for the thread team (16 rows: 1.4 s,
    now about 0.05 s)."""
    k = min(
        k, len(np.unique(X.round(12), axis=0))
    )  # k groups of fewer distinct workers: the ones that exist
    if k == 1:
        return np.zeros(len(X), dtype=int)
    if k >= len(X):
        return np.arange(len(X))
    from sklearn.cluster import KMeans  # imported here: scikit-learn costs ~2 s at start-up

    with _one_thread():
        return KMeans(n_clusters=k, n_init=10, random_state=int(seed) % 2**32).fit(X).labels_


def _one_thread() -> Any:
    """A context limiting OpenMP to one thread (threadpoolctl)."""
    return _controller().limit(limits=1, user_api="openmp")


@functools.cache
def _controller() -> Any:
    """The native thread pools, looked up once per process (after scikit-learn's k-means has
    loaded its OpenMP runtime; a lookup costs ~40 ms, a limit from it ~70 µs)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def equal_groups(mean_times: np.ndarray, k: int) -> tuple:
    """K groups of (nearly) equal size of workers sorted by speed (Basu et al. 2018)."""
    order = np.argsort(mean_times, kind="stable")
    return tuple(tuple(sorted(int(i) for i in chunk)) for chunk in np.array_split(order, k))


def auto_groups(
    times: np.ndarray,
    k_max: int,
    *,
    jitter: bool = False,
    seed: int = 0,
    homogeneous_ratio: float = 1.25,
    min_silhouette: float = 0.6,
) -> Grouping:
    """Pick K by silhouette over 2..k_max, also weighing K=1 (SSGD) and K=P (ASGD).

    K = 1 when the slowest worker's mean time is within *homogeneous_ratio* of the
    fastest's (nothing to separate: no straggler to hide). K = P when the best
    silhouette is below *min_silhouette* (speeds spread with no cluster structure).
    Otherwise the K of the best silhouette.
    """
    n = len(times)
    mean = times.mean(axis=1)
    X = features(times, jitter)
    scores: dict[int, float] = {}
    if mean.max() <= homogeneous_ratio * mean.min():
        return Grouping(
            "auto",
            1,
            (tuple(range(n)),),
            scores,
            f"max/min mean time {mean.max() / mean.min():.3f} <= {homogeneous_ratio}: one group",
        )
    from sklearn.metrics import silhouette_score

    labels = {}
    distinct = len(np.unique(X.round(12), axis=0))
    for k in range(2, min(k_max, n - 1, distinct) + 1):
        labels[k] = kmeans_groups(X, k, seed)
        if len(np.unique(labels[k])) < 2:
            continue
        scores[k] = float(silhouette_score(X, labels[k]))
    if not scores or max(scores.values()) < min_silhouette:
        best = max(scores.values()) if scores else float("nan")
        return Grouping(
            "auto",
            n,
            tuple((int(i),) for i in np.argsort(mean, kind="stable")),
            scores,
            f"best silhouette {best:.3f} < {min_silhouette}: no cluster structure, one worker per group",
        )
    k = max(scores, key=lambda key: (scores[key], -key))
    return Grouping(
        "auto", k, _ordered(labels[k], mean), scores, f"best silhouette {scores[k]:.3f} at K={k}"
    )


def parse_method(text: str, n_workers: int) -> tuple[str, int]:
    """``"auto"``, ``"silhouette"``, ``"hand"``, ``"kmeans:K"``, ``"equal:K"`` → (method, K);
    ValueError names what is allowed."""
    name, _, arg = text.partition(":")
    if name in ("auto", "race", "silhouette", "hand") and not arg:
        return name, 0
    if name in ("kmeans", "equal") and arg.isdigit() and 1 <= int(arg) <= n_workers:
        return name, int(arg)
    raise ValueError(
        f"{text!r} is not a grouping (allowed: auto, race, silhouette, hand, kmeans:K, equal:K with 1 <= K <= {n_workers})"
    )


def choose_grouping(
    method: str,
    times: np.ndarray,
    *,
    k_max: int = 8,
    hand: Sequence[Sequence[int]] | None = None,
    jitter: bool = False,
    seed: int = 0,
    min_silhouette: float = 0.6,
    homogeneous_ratio: float = 1.25,
) -> Grouping:
    """The grouping *method* makes from measured *times* (n_workers, n_rounds), seconds.

    ``silhouette`` picks K by silhouette (:func:`auto_groups`); so do ``auto`` and
    ``race`` here, where no pilot emulation is possible (in runs, both are the
    pilot-emulation recommender of :mod:`netsim.tuning.race`).
    """
    n = len(times)
    name, k = parse_method(method, n)
    mean = times.mean(axis=1)
    if name == "hand":
        if hand is None:
            raise ValueError("grouping 'hand' needs the hand groups")
        return Grouping(
            "hand", len(hand), tuple(tuple(g) for g in hand), {}, "given in the scenario"
        )
    if name == "equal":
        return Grouping(method, k, equal_groups(mean, k), {}, "equal-size groups of sorted speed")
    if name == "kmeans":
        labels = kmeans_groups(features(times, jitter), k, seed)
        return Grouping(method, k, _ordered(labels, mean), {}, "k-means with fixed K")
    return auto_groups(
        times,
        min(k_max, n),
        jitter=jitter,
        seed=seed,
        min_silhouette=min_silhouette,
        homogeneous_ratio=homogeneous_ratio,
    )
