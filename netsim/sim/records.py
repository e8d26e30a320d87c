"""Plain records of a run and the statistics computed from them afterwards."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PHASES", "Recorder", "WorkerStats", "Result", "Snapshot", "GroupSnapshot", "summarize", "staleness_stats",
           "update_staleness", "idle_pct", "time_to_target"]


PHASES = ("idle", "comm", "compute", "down")
"""Worker phase names; a timeline span's phase is an index into this tuple."""


class Recorder:
    """Column lists, appended to by the PS; no statistics are computed here.

    Applied gradients: ``time`` (s), ``worker``, ``group``, ``staleness``,
    ``version`` (the update that applied it, 1-based). Dropped gradients:
    ``drop_time``, ``drop_worker``, ``drop_version``, ``drop_reason``.
    Curve rows: (update, sim_time, loss, test_accuracy). Events: dicts.
    Timeline ``spans``: (worker, phase, start, end) with phase 0 idle, 1 comm, 2 compute.
    """

    def __init__(self):
        self.time: list[float] = []
        self.worker: list[int] = []
        self.group: list[int] = []
        self.staleness: list[int] = []
        self.version: list[int] = []
        self.drop_time: list[float] = []
        self.drop_worker: list[int] = []
        self.drop_version: list[int] = []
        self.drop_reason: list[str] = []
        self.curve: list[tuple[int, float, float, float]] = []
        self.events: list[dict] = []
        self.spans: list[tuple[int, int, float, float]] = []

    def applied(self, now: float, workers, group: int, staleness: list[int], version: int) -> None:
        n = len(staleness)
        if n == 1:
            self.time.append(now)
            self.worker.append(workers[0])
            self.group.append(group)
            self.staleness.append(staleness[0])
            self.version.append(version)
            return
        self.time.extend([now] * n)
        self.worker.extend(workers)
        self.group.extend([group] * n)
        self.staleness.extend(staleness)
        self.version.extend([version] * n)

    def trim(self) -> None:
        """Cut the columns to their common length (after a run was interrupted mid-append)."""
        for names in (("time", "worker", "group", "staleness", "version"),
                      ("drop_time", "drop_worker", "drop_version", "drop_reason")):
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
    """Everything a run produced; ``summarize`` turns it into the summary dict.

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

    @property
    def curve(self):
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


def workers_idle_pct(workers) -> float:
    """:func:`idle_pct` of summary ``workers`` dicts pooled (all phases in the denominator)."""
    total = sum(w["compute_s"] + w["comm_s"] + w["idle_s"] + w.get("down_s", 0.0) for w in workers)
    return idle_pct(sum(w["idle_s"] for w in workers), total)


def time_to_target(curve, target: float) -> tuple[float | None, int | None]:
    """(simulated time s, updates) of the first evaluation with loss <= *target*, or (None, None)."""
    for update, t, loss, _ in curve:
        if loss <= target:
            return t, update
    return None, None


def staleness_stats(staleness) -> dict:
    """Mean, median, 95th percentile and max of a staleness sample (updates)."""
    if len(staleness) == 0:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "max": 0}
    s = np.asarray(staleness)
    top = s.max()
    return {"mean": float(s.mean()), "p50": float(np.percentile(s, 50)),
            "p95": float(np.percentile(s, 95)), "max": int(top) if float(top).is_integer() else float(top)}


def update_staleness(staleness, version) -> np.ndarray:
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


def summarize(result: Result) -> dict:
    """The summary.json contract (a dict of plain JSON values)."""
    rec = result.records
    last = _last_finite(rec.curve)
    final = None if result.status == "diverged" else last  # a diverged model has no loss to report
    regroups = [e["update"] for e in rec.events if e["kind"] == "regroup"]
    group_stale = _per_group(rec, len(result.groups), regroups[-1] if regroups else None)
    return {
        "scenario": result.scenario,
        "algorithm": result.algorithm,
        "label": result.label or result.algorithm,
        "seed": result.seed,
        "status": result.status,
        "message": result.message,
        "sim_time": result.sim_time,
        "updates": result.updates,
        "gradients_applied": len(rec.staleness),
        "gradients_dropped": len(rec.drop_time),
        "final_loss": final[2] if final else None,
        "final_test_accuracy": final[3] if final else None,
        "staleness_per_gradient": staleness_stats(rec.staleness),
        "staleness_per_update": staleness_stats(update_staleness(rec.staleness, rec.version)),
        "idle_pct": workers_idle_pct([vars(w) for w in result.workers]),
        "workers": [vars(w).copy() for w in result.workers],
        "groups": [{"id": k, "members": list(m), "updates": group_stale[k][0],
                    "mean_staleness": group_stale[k][1]} for k, m in enumerate(result.groups)],
        "events": list(rec.events),
        **_target(result),
        **({"last_finite": dict(zip(("update", "sim_time", "loss", "test_accuracy"), last))}
           if result.status == "diverged" and last else {}),
        **result.extra,
        "wall_s": result.wall_s,
    }


def _last_finite(curve):
    """The last evaluation with a finite loss, or None (a diverged run reports it as
    ``last_finite`` and no final loss).

    >>> _last_finite([(0, 0.0, 0.7, 0.5), (5, 1.0, 0.4, 0.8), (6, 1.2, float("nan"), 0.1)])
    (5, 1.0, 0.4, 0.8)
    """
    for row in reversed(curve):
        if np.isfinite(row[2]):
            return row
    return None


def _per_group(rec: Recorder, n_groups: int, after: int | None) -> list[tuple[int, float]]:
    """(updates, mean staleness) per group; an update is counted once per version.

    With online regrouping, only updates after the last regroup (which happened
    when the model had version *after*) count, so the figures belong to the final
    groups; group ids outside the final groups are never counted.

    >>> rec = Recorder()
    >>> rec.applied(1.0, [0, 1], 0, [0, 0], 1); rec.applied(2.0, [2], 2, [1], 2); rec.applied(3.0, [2], 1, [3], 3)
    >>> _per_group(rec, 2, None), _per_group(rec, 2, 2)
    ([(1, 0.0), (1, 3.0)], [(0, 0.0), (1, 3.0)])
    """
    versions = [set() for _ in range(n_groups)]
    sums = [0] * n_groups
    counts = [0] * n_groups
    for g, s, v in zip(rec.group, rec.staleness, rec.version):
        if (after is not None and v <= after) or g >= n_groups:
            continue
        versions[g].add(v)
        sums[g] += s
        counts[g] += 1
    return [(len(versions[k]), sums[k] / counts[k] if counts[k] else 0.0) for k in range(n_groups)]


def _target(result: Result) -> dict:
    target = result.extra.get("target_loss")
    if not target:
        return {}
    t, u = time_to_target(result.records.curve, target)
    return {"target_loss": target, "time_to_target_s": t, "updates_to_target": u}
