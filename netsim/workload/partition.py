"""Partitioning training rows among workers: IID, label skew, pathological shards, quantity skew.

Pure numpy. Every function takes the row indices to split (or the labels), the
number of workers and a numpy Generator, and returns one sorted int64 index
array per worker. The vocabulary follows the federated-learning literature:
Dirichlet label skew as a per-label split over workers (each label's rows cut by
proportions drawn from Dir(α), as in Yurochkin et al. 2019 and Flower's
DirichletPartitioner; not Hsu et al.'s per-client draw of label proportions), label
shards that give each worker exactly k labels (the k-classes-per-client setting of the
federated literature, not McMahan et al.'s sort-and-shard), and quantity skew (shard
sizes from a Dirichlet or a power law). Specified in ALGORITHMS.md §10.1.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "PartitionSpec",
    "ClassData",
    "PartitionError",
    "PARTITIONS",
    "QUANTITY_LAWS",
    "iid",
    "dirichlet",
    "shards",
    "quantity",
    "split_rows",
    "partition",
    "histograms",
]

PARTITIONS = ("iid", "dirichlet", "shards", "quantity")
"""Names accepted by :func:`split_rows`."""

QUANTITY_LAWS = ("dirichlet", "power")
"""Laws the ``quantity`` partition draws shard sizes from."""

REDRAWS = 100
"""Random partitions (Dirichlet draws) are redrawn up to this many times until no worker is empty."""


@dataclass(frozen=True)
class PartitionSpec:
    """How one pool of rows is split among its workers.

    ``method``: one of :data:`PARTITIONS`. ``alpha`` (> 0): Dirichlet concentration
    (``dirichlet``, and ``quantity`` with ``law = "dirichlet"``). ``classes_per_worker``
    (>= 1): labels each worker holds under ``shards``. ``law``: ``quantity`` sizes from
    ``"dirichlet"`` or ``"power"`` (size of the worker ranked r ∝ r^-exponent, ranks drawn
    at random). ``exponent`` (> 0): the power law's exponent.
    """

    method: str = "iid"
    alpha: float = 0.5
    classes_per_worker: int = 2
    law: str = "dirichlet"
    exponent: float = 1.0


@dataclass(frozen=True)
class ClassData:
    """One worker class as the partitioner sees it: *count* workers, an optional own
    :class:`PartitionSpec` and an optional tuple of the *labels* its workers hold."""

    count: int
    spec: PartitionSpec | None = None
    labels: tuple[int, ...] | None = None


class PartitionError(ValueError):
    """A partition left a worker without rows (``worker``: its id in the whole run, or None)."""

    def __init__(
        self, message: str, worker: int | None = None, worker_class: int | None = None
    ) -> None:
        super().__init__(message)
        self.worker = worker
        self.worker_class = worker_class


def _sorted(parts: Iterable[ArrayLike]) -> list[np.ndarray]:
    return [np.sort(np.asarray(p)).astype(np.int64) for p in parts]


def _check_nonempty(parts: list[np.ndarray], what: str, min_rows: int = 1) -> None:
    for i, p in enumerate(parts):
        if len(p) < min_rows:
            rows = "no rows" if len(p) == 0 else f"{len(p)} row{'s' if len(p) > 1 else ''}"
            need = "" if min_rows <= 1 else f" (data.min_rows = {min_rows})"
            raise PartitionError(f"{what} leaves worker {i} with {rows}{need}", worker=i)


def iid(rows: np.ndarray, n_workers: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Equal random shards; the ``len(rows) % n_workers`` left-over rows go one each to workers 0, 1, ...

    Shard i is ``rows[perm[i*s:(i+1)*s]]`` (s = len(rows) // n_workers) plus, for
    i < len(rows) % n_workers, ``rows[perm[n_workers*s + i]]``, with ``perm =
    rng.permutation(len(rows))`` (one draw).

    Parameters
    ----------
    rows : int ndarray (n,), the row indices to split.
    n_workers : int, 1 <= n_workers <= n.
    rng : numpy Generator.

    Returns
    -------
    list of *n_workers* sorted int64 ndarrays, of sizes s + 1 (first n % n_workers) and s.
    """
    n = len(rows)
    if n_workers < 1 or n < n_workers:
        raise PartitionError(f"cannot cut {n} rows into {n_workers} non-empty shards")
    size = n // n_workers
    perm = rng.permutation(n)
    body = perm[: size * n_workers].reshape(n_workers, size)
    rest = perm[size * n_workers :]
    parts = [
        rows[np.concatenate([body[i], rest[i : i + 1]])] if i < len(rest) else rows[body[i]]
        for i in range(n_workers)
    ]
    return _sorted(parts)


def _cut(idx: np.ndarray, proportions: np.ndarray) -> list[np.ndarray]:
    """Split *idx* into consecutive pieces of sizes ``floor(cumsum(p)·n)`` differences."""
    cuts = (np.cumsum(proportions) * len(idx)).astype(np.int64)[:-1]
    return np.split(idx, cuts)


def dirichlet(
    rows: np.ndarray,
    y: np.ndarray,
    n_workers: int,
    alpha: float,
    rng: np.random.Generator,
    min_rows: int = 1,
) -> list[np.ndarray]:
    """Label skew: the rows of each label are split by proportions drawn from Dirichlet(α·1).

    For each label c present (ascending), its rows are shuffled and cut into
    consecutive pieces of ``floor(cumsum(p)·n_c)`` with ``p ~ Dir(α, ..., α)``
    (P entries). Small α gives each worker few labels, large α approaches IID.
    The whole draw is repeated (up to :data:`REDRAWS` times) while some worker has fewer
    than *min_rows* rows.

    Parameters
    ----------
    rows : int ndarray (n,), row indices to split; y : int ndarray, labels of all rows (indexed by *rows*).
    n_workers : int; alpha : float > 0; rng : numpy Generator.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    labels = y[rows]
    classes = np.unique(labels)
    for _ in range(REDRAWS):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_workers)]
        for c in classes:
            idx = rows[labels == c]
            idx = idx[rng.permutation(len(idx))]
            for i, piece in enumerate(_cut(idx, rng.dirichlet(np.full(n_workers, alpha)))):
                parts[i].append(piece)
        out = _sorted(np.concatenate(p) for p in parts)
        if all(len(p) >= min_rows for p in out):
            return out
    _check_nonempty(out, f"dirichlet label skew with alpha={alpha:g} ({REDRAWS} draws)", min_rows)
    return out


def shards(
    rows: np.ndarray, y: np.ndarray, n_workers: int, k: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Pathological label skew: every worker holds exactly *k* distinct labels.

    With the L labels present in a random order ``perm``, worker i holds labels
    ``perm[(i·k + j) mod L]`` for j < k, so labels are spread as evenly as the
    counts allow. Each label's rows are shuffled and split into equal parts
    (``np.array_split``) among its holders in worker order; a label held by no
    worker (when P·k < L) leaves its rows unused.

    Parameters
    ----------
    rows, y : as in :func:`dirichlet`; n_workers : int; k : int, 1 <= k <= L; rng : numpy Generator.
    """
    labels = y[rows]
    classes = np.unique(labels)
    if not 1 <= k <= len(classes):
        raise ValueError(f"classes_per_worker={k!r} but the rows hold {len(classes)} labels")
    order = classes[rng.permutation(len(classes))]
    held = [[order[(i * k + j) % len(classes)] for j in range(k)] for i in range(n_workers)]
    parts: list[list[np.ndarray]] = [[] for _ in range(n_workers)]
    for c in classes:
        holders = [i for i in range(n_workers) if c in held[i]]
        if not holders:
            continue
        idx = rows[labels == c]
        idx = idx[rng.permutation(len(idx))]
        for i, piece in zip(holders, np.array_split(idx, len(holders))):
            parts[i].append(piece)
    out = _sorted(np.concatenate(p) if p else np.zeros(0, np.int64) for p in parts)
    _check_nonempty(out, f"shards with {k} labels per worker")
    return out


def quantity_proportions(
    n_workers: int, law: str, alpha: float, exponent: float, rng: np.random.Generator
) -> np.ndarray:
    """Shard-size proportions (P,) summing to 1: ``Dir(α·1)``, or ``r^-exponent`` normalised
    with the ranks r = 1..P assigned to workers by a random permutation."""
    if law == "dirichlet":
        return rng.dirichlet(np.full(n_workers, alpha))
    ranks = rng.permutation(n_workers) + 1.0
    p = ranks**-exponent
    return p / p.sum()


def quantity(
    rows: np.ndarray,
    n_workers: int,
    law: str,
    alpha: float,
    exponent: float,
    rng: np.random.Generator,
    min_rows: int = 1,
) -> list[np.ndarray]:
    """Quantity skew: IID rows, unequal shard sizes ``floor(cumsum(p)·n)`` differences,
    p from :func:`quantity_proportions`; Dirichlet draws are repeated while a worker has
    fewer than *min_rows* rows."""
    for _ in range(REDRAWS if law == "dirichlet" else 1):
        p = quantity_proportions(n_workers, law, alpha, exponent, rng)
        idx = rows[rng.permutation(len(rows))]
        out = _sorted(_cut(idx, p))
        if all(len(q) >= min_rows for q in out):
            return out
    _check_nonempty(out, f"quantity skew ({law})", min_rows)
    return out


def split_rows(
    rows: np.ndarray,
    y: np.ndarray,
    n_workers: int,
    spec: PartitionSpec,
    rng: np.random.Generator,
    min_rows: int = 1,
) -> list[np.ndarray]:
    """Split *rows* among *n_workers* as *spec* says (one of the four partitioners); every
    worker gets at least *min_rows* rows (random partitions are redrawn for it, the others
    raise PartitionError)."""
    if spec.method == "iid":
        out = iid(rows, n_workers, rng)
    elif spec.method == "dirichlet":
        out = dirichlet(rows, y, n_workers, spec.alpha, rng, min_rows)
    elif spec.method == "shards":
        out = shards(rows, y, n_workers, spec.classes_per_worker, rng)
    elif spec.method == "quantity":
        out = quantity(rows, n_workers, spec.law, spec.alpha, spec.exponent, rng, min_rows)
    else:
        raise ValueError(f"unknown partition {spec.method!r}; allowed: {', '.join(PARTITIONS)}")
    _check_nonempty(out, f"partition {spec.method!r}", min_rows)
    return out


def partition(
    y: np.ndarray,
    classes: list[ClassData],
    default: PartitionSpec,
    rng: np.random.Generator,
    min_rows: int = 1,
) -> tuple[list[np.ndarray], int]:
    """Shards for every worker of the run (ids in class order) and the number of unused rows.

    When no class has its own spec or labels, all rows are split among all workers
    with *default* (for ``iid``: exactly :func:`iid` over ``arange(n)``). Otherwise in
    two steps: (1) each label's rows go to the classes that may hold it (the classes
    naming it in ``labels``; a label no class names goes to the classes without
    ``labels``), shuffled and cut in proportion to those classes' worker counts; a
    label no class may hold is unused. (2) Each class splits its rows among its
    workers with its own spec (else *default*). Unused rows: labels no class may
    hold, and labels no worker holds under ``shards``. Every worker gets at least
    *min_rows* rows.

    Raises
    ------
    PartitionError
        If a worker would get fewer than *min_rows* rows; ``worker`` is its id, ``worker_class`` its class index.
    """
    n = len(y)
    total = sum(c.count for c in classes)
    if all(c.spec is None and c.labels is None for c in classes):
        split = split_rows(np.arange(n, dtype=np.int64), y, total, default, rng, min_rows)
        return split, n - sum(len(s) for s in split)
    pools: list[list[np.ndarray]] = [[] for _ in classes]
    for label in np.unique(y):
        eligible = [j for j, c in enumerate(classes) if c.labels is not None and label in c.labels]
        if not eligible:
            eligible = [j for j, c in enumerate(classes) if c.labels is None]
        idx = np.flatnonzero(y == label)
        if not eligible:
            continue
        idx = idx[rng.permutation(len(idx))]
        counts = np.array([classes[j].count for j in eligible], dtype=float)
        for j, piece in zip(eligible, _cut(idx, counts / counts.sum())):
            pools[j].append(piece)
    out: list[np.ndarray] = []
    first = 0
    for j, c in enumerate(classes):
        rows = np.sort(np.concatenate(pools[j])) if pools[j] else np.zeros(0, np.int64)
        try:
            if len(rows) < c.count * min_rows:
                raise PartitionError(f"{len(rows)} rows for {c.count} workers", worker=0)
            out += split_rows(rows, y, c.count, c.spec or default, rng, min_rows)
        except PartitionError as exc:
            raise PartitionError(
                f"worker class {j}: {exc}",
                worker=None if exc.worker is None else first + exc.worker,
                worker_class=j,
            ) from None
        first += c.count
    return out, n - sum(len(s) for s in out)


def histograms(shards_: list[np.ndarray], y: np.ndarray, n_classes: int) -> list[list[int]]:
    """Label histogram of each shard: list (P) of lists (n_classes) of row counts."""
    return [np.bincount(y[s], minlength=n_classes).astype(int).tolist() for s in shards_]
