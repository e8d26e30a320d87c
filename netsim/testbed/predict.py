"""netsim's predictions of a real run: the scenarios to emulate and the figures to compare.

Three emulations of a real run's scenario (same rule and data; each emulated with several
seeds, whose compute and minibatch streams are not the real run's):

- ``scenario``: the scenario as written, what a user who only has the file gets;
- ``calibrated``: the scenario's compute times with the ``[server]`` keys and per-class
  overheads :mod:`.calibrate` fits to a real run (this one, or others: held out);
- ``replayed``: every worker's measured iterations replayed one by one (``replay`` of the
  ``cycle`` measure, from the model's send to the push's service), no latencies.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..config.scenario import Scenario, parse_scenario
from ..sim.records import staleness_stats, update_staleness
from ..sim.summary import Summary
from ..tuning.scoring import crossing
from .calibrate import Calibration

__all__ = [
    "VARIANTS",
    "variant_scenario",
    "metrics",
    "crossing",
    "METRICS",
    "POINTS",
    "gap",
    "default_target",
    "update_time",
    "half_updates",
    "mean_ci",
    "compare_rows",
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
    ("update_n_time", "time of update N"),
)
"""(key, label) of the figures compared, in table order."""


def variant_scenario(
    scenario: Scenario,
    folder: str | Path,
    variant: str,
    calibration: Calibration | None = None,
    scale: float = 1.0,
) -> Scenario:
    """*scenario* (a real run's, at *scale* s per unit) as emulated for *variant*
    (:data:`VARIANTS`); ``calibrated`` takes the ``[server]`` keys and latencies of
    *calibration* at that scale (its latencies stay the scenario's own)."""
    if variant == "scenario":
        return scenario
    raw = copy.deepcopy(scenario.raw)
    own = {wc.name: wc.overhead for wc in scenario.workers}
    fitted = calibration.overhead(scale, own) if calibration is not None else {}
    if variant == "calibrated" and calibration is not None:
        raw["server"] = calibration.server_table(scale)
    elif variant == "replayed":
        raw.pop("server", None)
    for wc, spec in zip(raw["workers"], scenario.workers):
        if variant == "replayed":
            for key in ("latency", "pull_latency", "push_latency", "overhead"):
                wc.pop(key, None)
            wc["compute"] = {
                "dist": "replay",
                "run": str(Path(folder).resolve()),
                "measure": "cycle",
            }
        elif spec.name in fitted:
            wc["overhead"] = fitted[spec.name]
    parsed = parse_scenario(raw, Path(scenario.path))
    return parsed.with_algorithm(scenario.run.algorithm)


def metrics(summary: Summary, curve: dict, updates: dict, target: float, n: int) -> dict:
    """The compared figures of one run (its summary, curve and updates columns):
    :data:`METRICS`, the time to *target* by :func:`crossing`, that of update *n* by
    :func:`update_time`."""
    per_update = staleness_stats(update_staleness(updates["staleness"], updates["version"]))
    return {
        "updates": summary["updates"],
        "gradients_applied": summary["gradients_applied"],
        "staleness_mean": per_update["mean"],
        "staleness_p95": per_update["p95"],
        "idle_pct": summary["idle_pct"],
        "final_loss": summary["final_loss"],
        "time_to_target": crossing(curve["sim_time"], curve["loss"], target),
        "update_n_time": update_time(updates["version"], updates["sim_time"], n),
    }


def default_target(curves: Iterable[Mapping[str, ArrayLike]], fraction: float = 0.5) -> float:
    """A loss where the curve is steep: *fraction* of the way (default half way) from the
    initial to the final loss of the real run (the mean of each over *curves*, one real
    run's or several).

    >>> curves = [{"loss": np.array([0.7, 0.5, 0.3])}, {"loss": np.array([0.7, 0.4, 0.1])}]
    >>> default_target(curves), default_target(curves, 0.75)
    (0.45, 0.325)
    """
    first = float(np.mean([np.asarray(c["loss"])[0] for c in curves]))
    last = float(np.mean([np.asarray(c["loss"])[-1] for c in curves]))
    return round(first + fraction * (last - first), 12)


def half_updates(summaries: Iterable[Mapping[str, Any]]) -> int:
    """N of the "time of update N" row: half the real run's updates (their mean over
    *summaries*), at least 1.

    >>> half_updates([{"updates": 101}, {"updates": 99}])
    50
    """
    return max(1, int(np.mean([s["updates"] for s in summaries])) // 2)


def update_time(versions: ArrayLike, times: ArrayLike, n: int) -> float | None:
    """When update *n* was made (the time of its gradients' rows), None when it never was.

    >>> update_time(np.array([1, 2, 2, 3]), np.array([0.5, 1.5, 1.5, 2.0]), 2)
    1.5
    >>> update_time(np.array([1]), np.array([0.5]), 2) is None
    True
    """
    at = np.flatnonzero(np.asarray(versions) == n)
    return float(np.asarray(times)[at[0]]) if at.size else None


T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)
"""Student's t, two-sided 95 %, for 1..9 degrees of freedom (1.96 beyond)."""


def mean_ci(values: Iterable[float | None]) -> tuple[float | None, float | None]:
    """(mean, half-width of its 95 % interval by Student's t) of *values* (None left out);
    (None, None) for no value, half-width None for one.

    >>> [round(x, 3) for x in mean_ci([1.0, 2.0, 3.0])]  # 2 ± 4.303 × 1 / √3
    [2.0, 2.484]
    """
    v = np.asarray([x for x in values if x is not None], float)
    if not v.size:
        return None, None
    if v.size == 1:
        return float(v[0]), None
    t = T975[v.size - 2] if v.size - 2 < len(T975) else 1.96
    return float(v.mean()), round(float(t * v.std(ddof=1) / np.sqrt(v.size)), 12)


def compare_rows(real: list[dict], emulated: dict[str, list[dict]]) -> list[dict]:
    """Rows of a prediction: per figure of :data:`METRICS`, ``real`` (the mean over the real
    runs' figures *real*) and ``real_ci``, then per variant of *emulated* (variant → its
    runs' figures) its mean, ``<variant>_ci`` and ``<variant>_gap`` (:func:`gap` of the
    means)."""
    rows = []
    for key, label in METRICS:
        mean, ci = mean_ci([f[key] for f in real])
        row: dict[str, Any] = {"metric": key, "label": label, "real": mean, "real_ci": ci}
        for v, figures in emulated.items():
            row[v], row[f"{v}_ci"] = mean_ci([f[key] for f in figures])
            row[f"{v}_gap"] = gap(row[v], mean, key)
        rows.append(row)
    return rows


POINTS = ("idle_pct",)
"""Figures compared by their difference (percentage points), not relative error: near 0,
a relative error says nothing."""


def gap(predicted: float | None, real: float | None, metric: str = "") -> float | None:
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
