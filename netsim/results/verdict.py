"""The one-line verdict that closes ``compare``, ``sweep`` and ``report``: which run
reached the target loss first and which ended lowest, by how much, and (with seeds)
whether the 95 % intervals separate. Pure: runs in, text out.

Target loss: the one given (``--target``), else the runs' ``run.target_loss``, else
:func:`default_target` -- half way from the initial loss to the best final loss, a level
every run that learns at all reaches early enough for the times to differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .runfolder import RunData

__all__ = ["default_target", "first_time", "Entry", "entries", "verdict_line", "verdict"]


def default_target(initial_loss: float, best_final_loss: float) -> float:
    """The target loss when none is set: half way from the initial loss to the best
    final loss of the runs compared, ``initial − (initial − best) / 2``.

    >>> default_target(0.7, 0.3)
    0.5
    """
    return initial_loss - 0.5 * (initial_loss - best_final_loss)


def first_time(times: np.ndarray, losses: np.ndarray, target: float) -> float | None:
    """The first evaluation time (s) at which *losses* is at or below *target*, None
    when never. *times*, *losses*: arrays of shape (n_evaluations,).

    >>> first_time([0, 10, 20], [0.7, 0.45, 0.3], 0.5)
    10.0
    """
    losses = np.asarray(losses, dtype=float)
    hit = np.flatnonzero(losses <= target)
    return float(np.asarray(times, dtype=float)[hit[0]]) if hit.size else None


@dataclass
class Entry:
    """One compared item (a rule, a grid point): its label and, per run (seed), the time to
    target (s; None: not reached) and the final loss (NaN: the run failed)."""

    label: str
    times: list
    finals: list


def entries(runs: Sequence[RunData], target: float | None = None) -> tuple[list[Entry], float, str]:
    """Group *runs* (:class:`~netsim.results.runfolder.RunData`; runs sharing ``group``
    are seeds of one item) and time each to the target. Returns (entries, target, how
    the target was set: ``given``, ``scenario`` or ``default``)."""
    finals = [_final(r) for r in runs]
    source = "given"
    if target is None:
        set_ = [t for t in (r.summary.get("target_loss") for r in runs) if t]
        if set_:
            target, source = float(set_[0]), "scenario"
        else:
            ok = [f for f in finals if math.isfinite(f)]
            starts = [float(r.curve["loss"][0]) for r in runs if len(r.curve["loss"])]
            if not ok or not starts:
                return [], math.nan, "default"
            target, source = default_target(float(np.median(starts)), min(ok)), "default"
    out: dict[str, Entry] = {}
    for r, final in zip(runs, finals):
        key = r.group or r.label
        e = out.setdefault(key, Entry(key, [], []))
        t = (
            first_time(r.curve["sim_time"], r.curve["loss"], target)
            if r.summary["status"] == "ok"
            else None
        )
        e.times.append(t)
        e.finals.append(final)
    return list(out.values()), float(target), source


def _final(r: RunData) -> float:
    f = r.summary.get("final_loss")
    return float(f) if r.summary["status"] == "ok" and f is not None else math.nan


def _mean_ci(x: list[float]) -> tuple[float, float]:
    """Mean and Student-t 95 % half-width (NaN with one value)."""
    from scipy import stats

    a = np.asarray(x, dtype=float)
    if len(a) < 2:
        return float(a.mean()), math.nan
    return float(a.mean()), float(
        stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a))
    )


def _separate(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two (mean, half-width) intervals do not meet."""
    return abs(a[0] - b[0]) > a[1] + b[1]


def _intervals(best: tuple[float, float], second: tuple[float, float]) -> str:
    if math.isnan(best[1]) or math.isnan(second[1]):
        return ""
    return (
        "; 95 % intervals separate"
        if _separate(best, second)
        else "; 95 % intervals overlap: no clear winner"
    )


def verdict_line(items: list[Entry], target: float, source: str, unit: str = "s") -> str:
    """``verdict: to loss 0.35 (default: half way ...): gsgd first at 45 s, 12 s (21 %)
    ahead of asgd; lowest final loss: ssgd 0.284, 0.003 below gsgd`` (one line)."""
    if not items:
        return "verdict: no run finished"
    how = {
        "given": "given",
        "scenario": "run.target_loss",
        "default": "half way from the initial loss to the best final; --target sets another",
    }[source]
    seeds = max(len(e.times) for e in items) > 1
    head = f"verdict: to loss {target:.4g} ({how})"
    # time to target: only items whose every run reached it
    timed = [
        (e, _mean_ci([t for t in e.times])) for e in items if all(t is not None for t in e.times)
    ]
    timed.sort(key=lambda x: x[1][0])
    if not timed:
        time_text = "no run reached it"
    else:
        best, ci = timed[0]
        time_text = f"{best.label} first at {ci[0]:.4g} {unit}" + (" (mean)" if seeds else "")
        if len(timed) > 1:
            other, ci2 = timed[1]
            gap = ci2[0] - ci[0]
            if gap > 0:
                time_text += (
                    f", {gap:.3g} {unit} ({gap / ci2[0]:.0%}) ahead of {other.label}"
                    + _intervals(ci, ci2)
                )
            else:  # the same time (both at the start when the target is the initial loss)
                time_text += f", with {other.label}"
        elif len(items) > 1:
            time_text += ", the only one to reach it"
    ended = [(e, _mean_ci(e.finals)) for e in items if all(math.isfinite(f) for f in e.finals)]
    ended.sort(key=lambda x: x[1][0])
    if not ended:
        return f"{head}: {time_text}"
    low, lci = ended[0]
    loss_text = f"lowest final loss: {low.label} {lci[0]:.4g}"
    if len(ended) > 1:
        other, oci = ended[1]
        loss_text += f", {oci[0] - lci[0]:.3g} below {other.label}" + _intervals(lci, oci)
    return f"{head}: {time_text}; {loss_text}"


def verdict(runs: Sequence[RunData], target: float | None = None) -> str:
    """The verdict line of *runs* (:class:`~netsim.results.runfolder.RunData`) against
    *target* (None: the scenario's, else :func:`default_target`)."""
    items, level, source = entries(runs, target)
    unit = runs[0].summary.get("time_unit", "s") if runs else "s"
    return verdict_line(items, level, source, unit)
