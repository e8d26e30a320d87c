"""How the race scores a candidate's loss curves (pure).

A curve is a list of (time s, loss) pairs, time increasing. A candidate (:class:`Runs`)
has one curve per run: its pilot's and, at the last rung, its replicates'. The rungs rank
by :func:`rung_score`, the last rung by :func:`final_score` (or :func:`headed_score`);
times to the race's own targets are read off curves smoothed by a trailing median over
:data:`SMOOTH` of the horizon (:func:`time_to_loss`), as the grouping benchmark reads them;
the time to a target the user gives is read as ``netsim predict`` and the comparisons
with real runs read it: where the curve itself first crosses it, linear between
evaluations (:func:`crossing`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np

__all__ = [
    "SMOOTH",
    "UNSTABLE",
    "Curve",
    "Runs",
    "all_runs",
    "smoothed",
    "time_to_loss",
    "crossing",
    "reached_at",
    "runs_time_to_target",
    "time_to",
    "mean_curve",
    "mean_time_to_target",
    "rung_score",
    "final_score",
    "headed_score",
    "reaches",
    "runs_time_to_loss",
    "settled_time",
    "truncated",
    "unstable",
    "predicted_time",
]

Curve = list[tuple[float, float]]
"""A run's (time s, loss) pairs, time increasing."""

SMOOTH = 1 / 20
"""Trailing window of the smoothed loss curves, as a fraction of the horizon."""

UNSTABLE = 1.5
"""A pilot whose rung score is above this many times its loss at the start is unstable
(dimensionless; :func:`unstable`); early transients of stable steps stay well below."""


class Runs(Protocol):
    """A candidate's runs: ``status`` (``ok`` unless diverged), its pilot's ``curve`` and,
    at the last rung, the ``curves`` of all its runs (the pilot's first)."""

    @property
    def status(self) -> str: ...

    @property
    def curve(self) -> Curve: ...

    @property
    def curves(self) -> list[Curve]: ...


def all_runs(p: Runs) -> list[Curve]:
    """Every run of *p*: its ``curves`` (its pilot's ``curve`` when it has none), then the
    runs to a given target its pick is decided on (``timed``, when it has them)."""
    return [*(p.curves or [p.curve]), *getattr(p, "timed", ())]


def smoothed(curve: Curve, window: float) -> Curve:
    """Trailing median of the losses of a (time s, loss) *curve* over *window* seconds.

    The median ignores the loss spikes of large steps.

    >>> smoothed([(0, 4.0), (1, 2.0), (2, 0.0), (3, 9.0)], 2.0)
    [(0, 4.0), (1, 3.0), (2, 2.0), (3, 2.0)]
    """
    t = np.array([c[0] for c in curve], float)
    loss = np.array([c[1] for c in curve], float)
    start = np.searchsorted(t, t - window - 1e-12, side="right")
    start = np.where(t - window <= t[0], 0, start)
    width = np.arange(1, len(t) + 1) - start  # points in each window
    out = np.empty(len(t))
    for w in np.unique(width):  # one median call per window width (a few: the ramp, then the rest)
        at = np.flatnonzero(width == w)
        out[at] = np.median(np.lib.stride_tricks.sliding_window_view(loss, w)[at - (w - 1)], axis=1)
    return [(c[0], float(v)) for c, v in zip(curve, out)]


def time_to_loss(curve: Curve, target: float, horizon: float) -> float | None:
    """First time (s) the smoothed *curve* (window: 1/20 of *horizon*, s) is at or below *target*, or None."""
    return next((t for t, loss in smoothed(curve, SMOOTH * horizon) if loss <= target), None)


def crossing(times: np.ndarray, losses: np.ndarray, target: float) -> float | None:
    """When the loss first reaches *target*, linear between the evaluation before and the
    first at or below it (the crossing between evaluations is the figure compared); None
    when it never does. *times* (s), *losses*: shape (n,).

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


def reached_at(curve: Curve, target: float) -> float | None:
    """:func:`crossing` of a (time s, loss) *curve*: when it first reaches *target* (s), or None.

    >>> round(reached_at([(0.0, 1.0), (1.0, 0.4), (2.0, 0.9), (3.0, 0.3)], 0.5), 4)
    0.8333
    """
    if not curve:
        return None
    arr = np.asarray(curve, float)
    return crossing(arr[:, 0], arr[:, 1], target)


def runs_time_to_target(p: Runs, target: float) -> float:
    """The mean over *p*'s runs of when each first reaches the *target* a user gave
    (:func:`reached_at`, s); inf unless every run reaches it (or diverged)."""
    return _mean_time(p, lambda c: reached_at(c, target))


def time_to(curve: Curve, target: float, horizon: float, raw: bool = False) -> float | None:
    """When *curve* first reaches *target* (s), or None: with *raw* (a target the user gave)
    where the curve itself crosses it (:func:`reached_at`), else where it does smoothed as
    over *horizon* (s; :func:`time_to_loss`)."""
    return reached_at(curve, target) if raw else time_to_loss(curve, target, horizon)


def _mean_time(p: Runs, read: Callable[[Curve], float | None]) -> float:
    """The mean over *p*'s runs of the time *read* off each curve (s); inf unless every
    run has one (or *p* diverged)."""
    if p.status != "ok" or not p.curve:
        return math.inf
    times = [read(c) for c in all_runs(p)]
    hit = [t for t in times if t is not None]
    return float(np.mean(hit)) if len(hit) == len(times) else math.inf


def mean_curve(
    curves: list[Curve], horizon: float, points: int = 101
) -> tuple[np.ndarray, np.ndarray]:
    """The mean over *curves* of their smoothed losses on a common grid of *points*
    times in [0, *horizon*] s (each curve held at its last value past its end;
    a curve that diverged counts as inf from then on). Returns (times, losses)."""
    grid = np.linspace(0.0, horizon, points)
    rows = []
    for c in curves:
        sm = smoothed(c, SMOOTH * horizon)
        t = np.array([x for x, _ in sm])
        v = np.array([y for _, y in sm])
        idx = np.clip(np.searchsorted(t, grid + 1e-9, side="right") - 1, 0, len(t) - 1)
        rows.append(v[idx])
    return grid, np.mean(rows, axis=0)


def mean_time_to_target(
    curves: list[Curve], target: float, horizon: float
) -> tuple[float, float, bool]:
    """(first time, s, the mean smoothed curve of *curves* is at or below *target* — 2 ×
    *horizon* when never; its final value; whether it reached the target)."""
    grid, mean = mean_curve(curves, horizon)
    hit = np.flatnonzero(mean <= target)
    final = float(mean[-1])
    return (float(grid[hit[0]]), final, True) if hit.size else (2 * horizon, final, False)


def last_quarter(curve: Curve) -> float:
    """The median loss of the last quarter of *curve* (by time)."""
    end = curve[-1][0]
    return float(np.median([loss for t, loss in curve if t >= 0.75 * end]))


def rung_score(p: Runs) -> float:
    """Rung ranking: the median loss of the last quarter of the pilot's run so far (the
    mean over its replicate runs when it has them; inf when diverged)."""
    if p.status != "ok" or not p.curve:
        return math.inf
    return float(np.mean([last_quarter(c) for c in (p.curves or [p.curve])]))


def final_score(p: Runs, horizon: float) -> float:
    """Last-rung ranking: the mean over the candidate's runs of its loss curve smoothed as the
    time-to-target criterion smooths it (trailing median over :data:`SMOOTH` × *horizon*, s;
    at most a quarter of the run, which only rungs shrunk by a budget reach), averaged over
    the last quarter of the run; inf when diverged.

    Unlike :func:`rung_score`'s median of the raw last quarter, which ignores loss excursions
    up to an eighth of the run long, this counts those longer than half its window, as the
    time-to-target criterion does."""
    if p.status != "ok" or not p.curve:
        return math.inf
    out = []
    for c in p.curves or [p.curve]:
        end = c[-1][0]
        window = min(SMOOTH * horizon, end / 4)  # rungs shrunk by a budget: the last quarter
        out.append(float(np.mean([loss for t, loss in smoothed(c, window) if t >= 0.75 * end])))
    return float(np.mean(out))


def headed_score(p: Runs, horizon: float) -> float:
    """:func:`final_score` carried on to *horizon* (s): for each run, a line in (log t, loss)
    fitted to its smoothed curve over the last half of the run, and the fall it predicts from
    the middle of the run's last quarter to *horizon* added (a rise counts as none); the mean
    over the runs. A candidate still falling at the end of the last rung is credited for the
    rest of the horizon the race did not see; one that has levelled off, not.

    >>> from types import SimpleNamespace
    >>> run = [(t, 2.0 - 0.5 * math.log(t)) for t in np.arange(1.0, 17.0)]
    >>> p = SimpleNamespace(status="ok", curve=run, curves=[run])
    >>> round(headed_score(p, 19.0) - final_score(p, 19.0) + 0.5 * math.log(19 / 14), 9)
    0.0
    """
    base = final_score(p, horizon)
    if not math.isfinite(base):
        return base
    falls = []
    for c in p.curves or [p.curve]:
        end = c[-1][0]
        sm = [(t, v) for t, v in smoothed(c, min(SMOOTH * horizon, end / 4)) if t >= end / 2]
        if len(sm) < 3 or sm[0][0] <= 0:
            falls.append(0.0)
            continue
        slope = float(np.polyfit(np.log([t for t, _ in sm]), [v for _, v in sm], 1)[0])
        falls.append(min(slope, 0.0) * math.log(max(horizon, end) / (0.875 * end)))
    return base + float(np.mean(falls))


def runs_time_to_loss(p: Runs, target: float, horizon: float) -> float:
    """The mean over *p*'s runs of their times (s) to *target* (:func:`time_to_loss`,
    smoothed as over *horizon*, s); inf unless every run reaches it (or diverged)."""
    return _mean_time(p, lambda c: time_to_loss(c, target, horizon))


def settled_time(p: Runs, level: float, horizon: float, slack: float) -> float:
    """The mean over *p*'s runs of their times (s) to *level*, counting a run only when its
    smoothed curve (over *horizon*, s: :func:`smoothed`) ends within ``1 + slack`` times the
    level; inf unless every run does (or diverged).

    A step at the edge of stability can dip below the level for a moment and rise far above
    it again; such a run has not reached it.

    >>> from types import SimpleNamespace
    >>> dip = [(0.0, 1.0), (1.0, 0.4), (2.0, 3.0), (3.0, 3.0)]
    >>> calm = [(0.0, 1.0), (1.0, 0.9), (2.0, 0.5), (3.0, 0.45)]
    >>> run = lambda c: SimpleNamespace(status="ok", curve=c, curves=[])
    >>> [settled_time(run(c), 0.5, 10.0, 0.2) for c in (dip, calm)]  # smoothed over 0.5 s: as is
    [inf, 2.0]
    """
    if p.status != "ok" or not p.curve:
        return math.inf
    times = []
    for c in p.curves or [p.curve]:
        sm = smoothed(c, SMOOTH * horizon)
        if not sm[-1][1] <= level * (1 + slack):
            return math.inf
        hit = next((t for t, loss in sm if loss <= level), None)
        if hit is None:
            return math.inf
        times.append(hit)
    return float(np.mean(times))


def truncated(curve: Curve, until: float) -> Curve:
    """The points of *curve* at times up to *until* (s).

    >>> truncated([(0.0, 1.0), (1.0, 0.5), (2.0, 0.4)], 1.0)
    [(0.0, 1.0), (1.0, 0.5)]
    """
    return [c for c in curve if c[0] <= until * (1 + 1e-12)]


def reaches(p: Runs, target: float, horizon: float) -> bool:
    """Whether every run of *p* reaches *target* (smoothed as over *horizon*, s)."""
    return all(time_to_loss(c, target, horizon) is not None for c in p.curves or [p.curve])


def unstable(p: Runs) -> bool:
    """Diverged, or its rung score risen above :data:`UNSTABLE` times its loss at the start."""
    score = rung_score(p)
    return not math.isfinite(score) or score > UNSTABLE * p.curve[0][1]


def predicted_time(
    p: Runs, target: float, horizon: float, raw: bool = False
) -> tuple[float, float, float, str]:
    """(predicted time to *target*, s; the interval's low and high ends, s; how) from *p*'s
    pilot curve: where its smoothed curve (over *horizon*, s; with *raw*, the curve itself,
    linear between evaluations: :func:`crossing`) first crosses the target (interval: the
    crossings of the target ± the curve's own noise), else a line in (log t, loss) over
    its last half extrapolated (interval: ± 2 standard errors of the slope). inf when the
    pilot diverged, is too short or is not expected to get there."""
    if p.status != "ok" or len(p.curve) < 2 or not math.isfinite(target):
        return math.inf, math.inf, math.inf, "diverged" if p.status != "ok" else "too short"
    t = np.array([c[0] for c in p.curve])
    curve = p.curve if raw else smoothed(p.curve, SMOOTH * horizon)
    loss = np.array([c[1] for c in curve])
    noise = float(np.median(np.abs(np.diff(loss)))) if len(loss) > 2 else 0.0
    if raw and (at := crossing(t, loss, target)) is not None:
        first, last = crossing(t, loss, target + noise), crossing(t, loss, target - noise)
        return at, at if first is None else first, horizon if last is None else last, "emulated"
    hit = np.flatnonzero(loss <= target)
    if hit.size:
        early = np.flatnonzero(loss <= target + noise)
        late = np.flatnonzero(loss <= target - noise)
        high = float(t[late[0]]) if late.size else horizon
        return float(t[hit[0]]), float(t[early[0]]), high, "emulated"
    half = t >= t[-1] / 2
    x, y = np.log(np.maximum(t[half], 1e-12)), loss[half]
    if len(x) < 3 or np.ptp(x) == 0:
        return math.inf, math.inf, math.inf, "extrapolated"
    slope, icpt = np.polyfit(x, y, 1)
    resid = y - (slope * x + icpt)
    se = float(np.sqrt(resid.var() * len(x) / max(len(x) - 2, 1) / ((x - x.mean()) ** 2).sum()))

    def cross(s: float) -> float:
        if s >= 0:
            return math.inf
        z = (target - (y.mean() - s * x.mean())) / s
        return float(math.exp(z)) if z < 700 else math.inf

    end = float(t[-1])
    return (
        max(cross(slope), end),
        max(cross(slope - 2 * se), end),
        max(cross(slope + 2 * se), end),
        "extrapolated",
    )
