"""netsim's predictions of a real run: the scenarios to emulate and the figures to compare.

Three emulations of a real run's scenario (same rule, seed and data):

- ``scenario``: the scenario as written, what a user who only has the file gets;
- ``calibrated``: the scenario's compute times plus, per worker class, the overheads the
  real run measured around them (model message + start, push message + queue + service:
  the medians of ``compute_start - sent`` and ``served - compute_end``) as fixed pull
  and push latencies;
- ``replayed``: every worker's measured iterations replayed one by one (``replay`` of the
  ``cycle`` measure, from the model's send to the push's service), no latencies.
"""

from __future__ import annotations

import copy
import csv
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..config.scenario import Scenario, parse_scenario
from ..sim.records import staleness_stats, update_staleness
from ..workload.replayed import GRADIENTS_FILE

__all__ = [
    "VARIANTS",
    "variant_scenario",
    "measured_overheads",
    "metrics",
    "crossing",
    "METRICS",
    "POINTS",
    "gap",
    "default_target",
]

VARIANTS = ("scenario", "calibrated", "replayed")
"""The emulations of a real run :func:`netsim.api.predict` makes (see the module's text)."""

METRICS = (
    ("updates", "updates"),
    ("gradients_applied", "gradients applied"),
    ("staleness_mean", "staleness per update, mean"),
    ("staleness_p95", "staleness per update, p95"),
    ("idle_pct", "idle %"),
    ("final_loss", "final loss"),
    ("time_to_target", "time to target"),
)
"""(key, label) of the figures compared, in table order."""


def measured_overheads(folder: str | Path) -> dict[str, tuple[float, float]]:
    """Per worker class, the median (before, after) overhead (units) a real run measured
    around each computation: ``compute_start - sent`` (the model's message and any
    injected pull latency) and ``served - compute_end`` (the push's message, any push
    latency and the wait and service at the server), over its served iterations."""
    with open(Path(folder) / GRADIENTS_FILE, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["complete"] == "1"]
    out: dict[str, tuple[list, list]] = {}
    for r in rows:
        before, after = out.setdefault(r["worker_class"], ([], []))
        before.append(float(r["compute_start"]) - float(r["sent"]))
        after.append(float(r["served"]) - float(r["compute_end"]))
    return {k: (float(np.median(b)), float(np.median(a))) for k, (b, a) in out.items()}


def variant_scenario(scenario: Scenario, folder: str | Path, variant: str) -> Scenario:
    """*scenario* (a real run's) as emulated for *variant* (:data:`VARIANTS`)."""
    if variant == "scenario":
        return scenario
    raw = copy.deepcopy(scenario.raw)
    overheads = measured_overheads(folder) if variant == "calibrated" else {}
    for wc in raw["workers"]:
        for key in ("latency", "pull_latency", "push_latency"):
            wc.pop(key, None)
        if variant == "replayed":
            wc["compute"] = {
                "dist": "replay",
                "run": str(Path(folder).resolve()),
                "measure": "cycle",
            }
        elif wc["name"] in overheads:
            wc["pull_latency"], wc["push_latency"] = overheads[wc["name"]]
    parsed = parse_scenario(raw, Path(scenario.path))
    return parsed.with_algorithm(scenario.run.algorithm)


def metrics(summary: Mapping, curve: dict, updates: dict, target: float) -> dict:
    """The compared figures of one run (its summary, curve and updates columns):
    :data:`METRICS`, the time to *target* by :func:`crossing`."""
    per_update = staleness_stats(update_staleness(updates["staleness"], updates["version"]))
    return {
        "updates": summary["updates"],
        "gradients_applied": summary["gradients_applied"],
        "staleness_mean": per_update["mean"],
        "staleness_p95": per_update["p95"],
        "idle_pct": summary["idle_pct"],
        "final_loss": summary["final_loss"],
        "time_to_target": crossing(curve["sim_time"], curve["loss"], target),
    }


def crossing(times: np.ndarray, losses: np.ndarray, target: float) -> float | None:
    """When the loss first reaches *target*, linear between the evaluation before and the
    first at or below it (the evaluations are every ``eval_every``; the crossing between
    them is the figure compared); None when it never does.

    >>> crossing(np.array([0.0, 10.0, 20.0]), np.array([1.0, 0.6, 0.2]), 0.4)
    15.0
    >>> crossing(np.array([0.0, 10.0]), np.array([1.0, 0.6]), 0.4) is None
    True
    """
    below = np.flatnonzero(losses <= target)
    if not below.size:
        return None
    i = int(below[0])
    if i == 0 or not np.isfinite(losses[i - 1]):
        return float(times[i])
    t0, t1, l0, l1 = times[i - 1], times[i], losses[i - 1], losses[i]
    return float(t0 + (t1 - t0) * (l0 - target) / (l0 - l1))


def default_target(curve: dict, until: float) -> float:
    """The loss a real run had at half its horizon *until*: that of its evaluation nearest to
    ``until / 2`` after the start (a real evaluation lands a little after the time it was
    due), the initial loss when it has no other.

    >>> default_target({"sim_time": np.array([0.0, 10.003, 20.0]), "loss": np.array([0.69, 0.58, 0.46])}, 20.0)
    0.58
    """
    times, losses = np.asarray(curve["sim_time"]), np.asarray(curve["loss"])
    later = np.flatnonzero(times > 0)
    if not later.size:
        return float(losses[0])
    return float(losses[later[np.argmin(np.abs(times[later] - until / 2))]])


POINTS = ("idle_pct",)
"""Figures compared by their difference (percentage points), not relative error: near 0,
a relative error says nothing."""


def gap(predicted, real, metric: str = "") -> float | None:
    """Error of *predicted* against *real*: relative, or the difference for a figure of
    :data:`POINTS`; None when either is missing or a relative error's *real* is 0.

    >>> gap(102, 100), gap(None, 1.0), gap(1.0, 0), gap(0.5, 0.25, "idle_pct")
    (0.02, None, None, 0.25)
    """
    if predicted is None or real is None:
        return None
    if metric in POINTS:
        return predicted - real
    return None if real == 0 else (predicted - real) / abs(real)
