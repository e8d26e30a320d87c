"""Plain records of a run and the statistics computed from them afterwards."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "PHASES",
    "Recorder",
    "WorkerStats",
    "Result",
    "Snapshot",
    "GroupSnapshot",
    "staleness_stats",
    "update_staleness",
    "idle_pct",
    "time_to_target",
    "class_accuracy",
    "gradient_shares",
    "bias_summary",
    "class_data_accuracy",
    "class_rows",
    "bias_rows",
]


PHASES = ("idle", "comm", "compute", "down", "busy")
"""Worker phase names (and ``busy``, the server's row: worker -1, see
:mod:`netsim.sim.servicequeue`); a timeline span's phase is an index into this tuple."""


class Recorder:
    """Column lists, appended to by the PS; no statistics are computed here.

    Applied gradients: ``time`` (s), ``worker``, ``group``, ``staleness``,
    ``version`` (the update that applied it, 1-based), ``weight`` (its share of the
    step: the step's rate relative to the rule's base rate over the gradients in it). Dropped gradients:
    ``drop_time``, ``drop_worker``, ``drop_version``, ``drop_reason``.
    Curve rows: (update, sim_time, loss, test_accuracy); ``class_accuracy`` holds,
    for each curve row, the test accuracy of every label (None for a label absent
    from the test set). Events: dicts.
    Timeline ``spans``: (worker, phase, start, end) with phase 0 idle, 1 comm, 2 compute.
    """

    def __init__(self) -> None:
        self.time: list[float] = []
        self.worker: list[int] = []
        self.group: list[int] = []
        self.staleness: list[int] = []
        self.version: list[int] = []
        self.weight: list[float] = []
        self.drop_time: list[float] = []
        self.drop_worker: list[int] = []
        self.drop_version: list[int] = []
        self.drop_reason: list[str] = []
        self.curve: list[tuple[int, float, float, float]] = []
        self.class_accuracy: list[list[float | None]] = []
        self.consensus: list[float] = []
        """Per evaluation, under a rule where each worker holds its own model: the mean
        squared distance of the workers' models to their average (the curve's model)."""
        self.events: list[dict] = []
        self.spans: list[tuple[int, int, float, float]] = []
        self.server_wait: list[float] | None = None
        self.server_service: list[float] | None = None
        """With a server that takes time (``[server]``), per applied gradient: the queue wait
        of the job that made its update, and that job's service up to the end of the update's
        apply (time units); None otherwise."""

    def applied(
        self,
        now: float,
        workers: Sequence[int],
        group: int,
        staleness: list[int],
        version: int,
        weight: float = 1.0,
    ) -> None:
        n = len(staleness)
        if n == 1:
            self.time.append(now)
            self.worker.append(workers[0])
            self.group.append(group)
            self.staleness.append(staleness[0])
            self.version.append(version)
            self.weight.append(weight)
            return
        self.time.extend([now] * n)
        self.worker.extend(workers)
        self.group.extend([group] * n)
        self.staleness.extend(staleness)
        self.version.extend([version] * n)
        self.weight.extend([weight] * n)

    def applied_one(
        self, now: float, worker: int, group: int, staleness: int, version: int, weight: float = 1.0
    ) -> None:
        """:meth:`applied` for a single gradient."""
        self.time.append(now)
        self.worker.append(worker)
        self.group.append(group)
        self.staleness.append(staleness)
        self.version.append(version)
        self.weight.append(weight)

    def trim(self) -> None:
        """Cut the columns to their common length (after a run was interrupted mid-append)."""
        server = ("server_wait", "server_service") if self.server_wait is not None else ()
        for names in (
            ("time", "worker", "group", "staleness", "version", "weight", *server),
            ("drop_time", "drop_worker", "drop_version", "drop_reason"),
        ):
            n = min(len(getattr(self, name)) for name in names)
            for name in names:
                del getattr(self, name)[n:]

    def dropped(self, now: float, worker: int, version: int, reason: str) -> None:
        self.drop_time.append(now)
        self.drop_worker.append(worker)
        self.drop_version.append(version)
        self.drop_reason.append(reason)


@dataclass
class WorkerStats:
    """Per-worker totals (s): compute, communication, idle, down (crashed); gradient counts."""

    id: int
    worker_class: str
    group: int
    gradients_pushed: int = 0
    gradients_applied: int = 0
    gradients_dropped: int = 0
    compute_s: float = 0.0
    comm_s: float = 0.0
    idle_s: float = 0.0
    down_s: float = 0.0


@dataclass
class Result:
    """Everything a run produced; :func:`netsim.sim.summary.summarize` turns it into the summary dict.

    ``label`` names the run in tables, legends and folders: the rule's name, or
    ``gsgd[auto]`` for a rule run with a chosen grouping.
    """

    scenario: str
    algorithm: str
    seed: int
    sim_time: float
    updates: int
    groups: list[list[int]]
    workers: list[WorkerStats]
    records: Recorder
    status: str = "ok"
    message: str = ""
    wall_s: float = 0.0
    final_w: np.ndarray | None = None
    extra: dict = field(default_factory=dict)
    label: str = ""
    model_info: dict | None = field(default=None, repr=False)
    """What a run folder's model file needs beside ``final_w`` (plain values and arrays:
    ``Model.export_info``), or None."""

    @property
    def curve(self) -> list[tuple[int, float, float, float]]:
        return self.records.curve


@dataclass(frozen=True)
class GroupSnapshot:
    """One group's figures so far: ``updates``, ``mean_staleness`` (per applied
    gradient) and ``idle_pct`` (:func:`idle_pct` of its members)."""

    id: int
    members: int
    updates: int
    mean_staleness: float
    idle_pct: float


@dataclass(frozen=True)
class Snapshot:
    """The live state handed to a progress callback (immutable; no engine objects).

    ``loss``/``test_accuracy`` are those of the last evaluation, made at simulated
    time ``evaluated_at`` (s) after ``evaluated_update`` updates; None before the first.
    ``note``: what the run does before it starts training, when that takes a while
    (choosing the grouping by racing candidates), else empty. ``after``: the loss is
    evaluated only once the run is over (a real run, whose server keeps the models instead
    of stalling on evaluations), so ``loss`` stays None while it runs.
    """

    label: str
    algorithm: str
    sim_time: float
    until: float
    updates: int
    max_updates: int
    loss: float | None
    test_accuracy: float | None
    evaluated_at: float | None
    evaluated_update: int | None
    groups: tuple[GroupSnapshot, ...]
    note: str = ""
    after: bool = False

    @property
    def fraction(self) -> float:
        """Share of the run done, 0..1: of the horizon, or of ``max_updates`` when that is nearer."""
        done = self.sim_time / self.until if self.until > 0 else 1.0
        if self.max_updates:
            done = max(done, self.updates / self.max_updates)
        return min(1.0, done)


def idle_pct(idle_s: float, total_s: float) -> float:
    """Idle share (%): idle time over all time (compute + comm + idle + down), both s.

    The one definition used by every table, CSV, report and live view.

    >>> idle_pct(1.0, 4.0)
    25.0
    >>> idle_pct(0.0, 0.0)
    0.0
    """
    return 100.0 * idle_s / total_s if total_s > 0 else 0.0


def workers_idle_pct(workers: Sequence[Mapping[str, Any]]) -> float:
    """:func:`idle_pct` of summary ``workers`` dicts pooled (all phases in the denominator)."""
    total = sum(w["compute_s"] + w["comm_s"] + w["idle_s"] + w.get("down_s", 0.0) for w in workers)
    return idle_pct(sum(w["idle_s"] for w in workers), total)


def time_to_target(
    curve: Iterable[tuple[int, float, float, float]], target: float
) -> tuple[float | None, int | None]:
    """(simulated time s, updates) of the first evaluation with loss <= *target*, or (None, None)."""
    for update, t, loss, _ in curve:
        if loss <= target:
            return t, update
    return None, None


def staleness_stats(staleness: Sequence[float] | np.ndarray) -> dict:
    """Mean, median, 95th percentile and max of a staleness sample (updates)."""
    if len(staleness) == 0:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "max": 0}
    s = np.asarray(staleness)
    top = s.max()
    return {
        "mean": float(s.mean()),
        "p50": float(np.percentile(s, 50)),
        "p95": float(np.percentile(s, 95)),
        "max": int(top) if float(top).is_integer() else float(top),
    }


def update_staleness(staleness: ArrayLike, version: ArrayLike) -> np.ndarray:
    """Staleness per update: the mean staleness of the gradients each update applied.

    *staleness* and *version* are per applied gradient (same length); the result
    has one value per distinct version, in version order.

    >>> update_staleness([0, 2, 4, 1], [1, 2, 2, 3]).tolist()
    [0.0, 3.0, 1.0]
    """
    s = np.asarray(staleness, dtype=float)
    v = np.asarray(version)
    if s.size == 0:
        return s
    versions, index = np.unique(v, return_inverse=True)
    return np.bincount(index, weights=s) / np.bincount(index)


def class_accuracy(pred: np.ndarray, y: np.ndarray, n_classes: int) -> list[float | None]:
    """Accuracy on the rows of each label c: ``mean(pred[y == c] == c)``; None where no row has label c."""
    total = np.bincount(y, minlength=n_classes)
    right = np.bincount(y[pred == y], minlength=n_classes)
    return [float(r / t) if t else None for r, t in zip(right, total)]


def gradient_shares(
    codes: ArrayLike,
    n_keys: int,
    version: ArrayLike,
    upto: Sequence[int] | None = None,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Cumulative share of applied gradients by key.

    Parameters
    ----------
    codes : int array (n_applied,), the key (0 .. n_keys-1) of each applied gradient
        (e.g. its worker's class index, or the group that applied it).
    n_keys : int
    version : int array (n_applied,), non-decreasing, the update that applied each gradient.
    upto : list of int, optional; default: one row over all gradients.
    weights : float array (n_applied,), optional: share each gradient's weight instead of counting it.

    Returns
    -------
    ndarray (len(upto), n_keys): row j holds the shares among the gradients applied by
    update ``upto[j]``; zeros while none was.
    """
    codes = np.asarray(codes, dtype=np.int64)
    ends = (
        [len(codes)]
        if upto is None
        else np.searchsorted(np.asarray(version, dtype=np.int64), upto, side="right")
    )
    out = np.zeros((len(ends), n_keys))
    wts = None if weights is None else np.asarray(weights, dtype=float)
    for j, end in enumerate(ends):
        if end:
            counts = np.bincount(
                codes[:end], minlength=n_keys, weights=None if wts is None else wts[:end]
            )[:n_keys]
            total = counts.sum()
            out[j] = counts / total if total > 0 else 0.0
    return out


def _share_codes(result: Result) -> tuple[list[str], np.ndarray, int, np.ndarray]:
    """Worker class names, class index per applied gradient, number of groups, group per applied gradient."""
    rec = result.records
    names = list(dict.fromkeys(w.worker_class for w in result.workers))
    of_worker = np.array([names.index(w.worker_class) for w in result.workers], dtype=np.int64)
    by_class = (
        of_worker[np.asarray(rec.worker, dtype=np.int64)] if rec.worker else np.zeros(0, np.int64)
    )
    groups = np.asarray(rec.group, dtype=np.int64)
    n_groups = max(len(result.groups), int(groups.max()) + 1 if len(groups) else 0)
    return names, by_class, n_groups, groups


def bias_summary(result: Result) -> dict:
    """Per-label test accuracy at the end, the worst label, and the shares of applied
    gradients by worker class and by the group that applied them: ``gradient_share_*``
    counts gradients; ``step_share_*`` weighs each by its share of the model step
    (Recorder ``weight``), i.e. how much of the model's movement came from each."""
    rec = result.records
    final = rec.class_accuracy[-1]
    known = [(a, c) for c, a in enumerate(final) if a is not None]
    worst = min(known) if known else (None, None)
    names, by_class, n_groups, groups = _share_codes(result)
    step = gradient_shares(by_class, len(names), rec.version, weights=rec.weight)[0]
    return {
        "class_accuracy": final,
        "worst_class_accuracy": worst[0],
        "worst_class": worst[1],
        "gradient_share_by_class": dict(
            zip(names, gradient_shares(by_class, len(names), rec.version)[0].tolist())
        ),
        "gradient_share_by_group": gradient_shares(groups, n_groups, rec.version)[0].tolist(),
        "step_share_by_class": dict(zip(names, step.tolist())),
        "step_share_by_group": gradient_shares(groups, n_groups, rec.version, weights=rec.weight)[
            0
        ].tolist(),
    }


def class_rows(histograms: list[list[int]], classes: list[str]) -> dict[str, np.ndarray]:
    """Training rows per label of each worker class, in class order: the sum of its
    workers' *histograms* (n_workers, n_labels); *classes* (n_workers,) each worker's class.

    >>> class_rows([[1, 3], [0, 5], [2, 0]], ["a", "b", "a"])
    {'a': array([3., 3.]), 'b': array([0., 5.])}
    """
    rows: dict[str, np.ndarray] = {}
    for name, hist in zip(classes, histograms, strict=True):
        rows[name] = rows.get(name, np.zeros(len(hist))) + np.asarray(hist, dtype=float)
    return rows


def class_data_accuracy(
    label_accuracy: list, histograms: list[list[int]], classes: list[str]
) -> dict[str, float | None]:
    """Test accuracy on each worker class's own data: per class, the per-label test
    accuracies weighted by the class's training rows of each label.

    *label_accuracy* (n_labels,): accuracy per label (None: no test row); *histograms*
    (n_workers, n_labels): training rows per worker and label; *classes* (n_workers,):
    each worker's class. None for a class without rows of a tested label.

    >>> class_data_accuracy([0.5, 1.0, None], [[1, 3, 0], [0, 0, 5], [2, 0, 0]], ["a", "b", "a"])
    {'a': 0.75, 'b': None}
    """
    rows = class_rows(histograms, classes)
    known = np.array([a is not None for a in label_accuracy])
    acc = np.array([0.0 if a is None else a for a in label_accuracy])
    out: dict[str, float | None] = {}
    for name, n in rows.items():
        total = n[known].sum()
        out[name] = float((acc * n)[known].sum() / total) if total > 0 else None
    return out


def bias_rows(result: Result) -> tuple[list[str], list[list]]:
    """(header, rows) of bias.csv: per evaluation, update, sim_time, worst-label accuracy,
    each label's accuracy, the cumulative shares of applied gradients of each worker
    class and each group, and each class's cumulative share of the model steps."""
    rec = result.records
    n = len(rec.class_accuracy)
    curve = rec.curve[:n]
    upto = [row[0] for row in curve]
    names, by_class, n_groups, groups = _share_codes(result)
    cls = gradient_shares(by_class, len(names), rec.version, upto)
    grp = gradient_shares(groups, n_groups, rec.version, upto)
    stp = gradient_shares(by_class, len(names), rec.version, upto, weights=rec.weight)
    n_labels = len(rec.class_accuracy[0]) if n else 0
    header = (
        ["update", "sim_time", "worst_class_accuracy"]
        + [f"accuracy_{c}" for c in range(n_labels)]
        + [f"share_{name}" for name in names]
        + [f"share_group{g}" for g in range(n_groups)]
        + [f"step_share_{name}" for name in names]
    )
    rows = []
    for j, (row, accs) in enumerate(zip(curve, rec.class_accuracy)):
        known = [a for a in accs if a is not None]
        rows.append(
            [
                row[0],
                row[1],
                min(known) if known else None,
                *accs,
                *cls[j].tolist(),
                *grp[j].tolist(),
                *stp[j].tolist(),
            ]
        )
    return header, rows
