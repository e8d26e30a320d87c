"""Successive halving of the pilots: the rungs, who goes on, and the η steps beyond the grid.

All pilots run to the first rung; the better 1/``factor`` (by :func:`rung_score`, or with a
target loss by :func:`rung_key`), at least ``finalists``, are resumed to the next rung,
``factor`` times as long, up to the last rung, where the best ``finalists`` run
``replicates − 1`` more times. With a target loss the user gave, a pilot that reaches it
gets those runs at once, each run until it reaches the target (``early``), so that every
rung from then on times it on all its runs; and the finalists whose runs all reach it run
again, each to the target, until each has ``decide`` runs, the pick's evidence. After the
first rung, a grouping whose best η is at the top of its values, or whose every η is
unstable, gets a pilot one grid step beyond (:func:`edge_steps`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..sim.measurement import Measurement
from .evidence import Pilot
from .options import RaceOptions, RecommendError
from .pilots import PilotRunner
from .pool import StickyPool, usable_cpus
from .scoring import (
    SMOOTH,
    reached_at,
    rung_score,
    runs_time_to_target,
    settled_time,
    smoothed,
    truncated,
    unstable,
)

__all__ = [
    "done_share",
    "edge_steps",
    "fit_budget",
    "plan_rungs",
    "run_halving",
    "rung_fractions",
    "rung_key",
    "set_aim",
]


def rung_fractions(factor: float = 3.0, first: float = 1 / 27, last: float = 1.0) -> list[float]:
    """Rung horizons as fractions of the full horizon: *first*, ×*factor*, ..., *last*.

    >>> rung_fractions()
    [0.037..., 0.111..., 0.333..., 1.0]
    >>> rung_fractions(last=1 / 3)
    [0.037..., 0.111..., 0.333...]
    """
    out = [first]
    while out[-1] * factor < last - 1e-9:
        out.append(out[-1] * factor)
    if out[-1] < last - 1e-9:
        out.append(last)
    return out


def fit_budget(
    horizons: list[float], n: int, options: RaceOptions, min_pilot: float
) -> list[float]:
    """Rung horizons (s), scaled down when their planned cost — *n* pilots through the
    rungs, then ``replicates − 1`` more runs of each last-rung candidate — exceeds
    ``options.budget_s`` (simulated s).

    Raises RecommendError when the scaled first rung would be shorter than *min_pilot* (s).

    >>> o = RaceOptions(factor=3.0, finalists=2, budget_s=24.0, replicates=2)
    >>> fit_budget([1.0, 3.0, 9.0], 10, o, 0.1)   # plan: 10 + 4·2 + 2·6 + 2·9 = 48
    [0.5, 1.5, 4.5]
    """
    budget_s = options.budget_s
    if budget_s is None:
        return horizons
    alive, cost, prev = n, 0.0, 0.0
    for r, h in enumerate(horizons):
        if r:
            alive = min(alive, max(options.finalists, math.ceil(alive / options.factor)))
        cost += alive * (h - prev)
        prev = h
    cost += min(alive, options.finalists) * (options.replicates - 1) * horizons[-1]
    if cost <= budget_s:
        return horizons
    scale = budget_s / cost
    # (1 - 1e-12): rounding, so that the budget named below runs
    if not budget_s > 0 or horizons[0] * scale < min_pilot * (1 - 1e-12):
        # the plan scaled to a first rung of min_pilot
        need = math.ceil(cost * min_pilot / horizons[0] * (1 - 1e-12))
        raise RecommendError(
            f"pilot budget {budget_s:g} s is too small: {n} candidates through "
            f"{len(horizons)} rungs need at least {need:d} s (a first rung of "
            f"{min_pilot:.4g} s each)"
        )
    return [h * scale for h in horizons]


def plan_rungs(
    horizon: float, measurement: Measurement | None, n: int, options: RaceOptions
) -> list[float]:
    """Rung horizons (s) for *n* pilots over *horizon* (s): from ``first`` to ``last`` of it
    by ``factor``, shrunk to fit ``budget_s`` (:func:`fit_budget`, a first rung of at least
    two of the slowest worker's measured iterations)."""
    slowest = (
        float(measurement.iteration.mean(axis=1).max())
        if measurement is not None
        else horizon / 1000
    )
    fractions = rung_fractions(options.factor, options.first, options.last)
    return fit_budget([f * horizon for f in fractions], n, options, 2 * slowest)


def run_halving(
    runner: PilotRunner,
    options: RaceOptions,
    on_rung: Callable[[int, int, int], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    aim: tuple[float, float] | None = None,
) -> list[Pilot]:
    """Run the successive halving over *runner*'s pilots (new ones appended to its list
    when the grid is widened) and return the last rung's candidates. *on_rung(rung, rungs,
    candidates)* is called before each rung, *on_progress(share)* too
    (:func:`done_share`), and with 1.0 at the end. *aim*: (the target loss a user set, the
    full horizon s), when set the rungs rank by :func:`rung_key`."""
    pilots, horizons = runner.pilots, runner.horizons
    alive = list(range(len(pilots)))
    jobs = options.jobs
    if jobs is None:  # a process per CPU, but a few first-rung pilots each (a fork is not free)
        jobs = max(1, min(usable_cpus(), len(pilots) // 4))
    if options.scheduler is not None:
        from .dask_pool import DaskStickyPool

        made: StickyPool = DaskStickyPool(runner.work, options.scheduler)
    else:
        made = StickyPool(runner.work, jobs)
    free = options.budget_s is None  # a budget: the plan is kept to
    H = runner.setup.scenario.run.until
    factor = options.factor
    look_at = -1  # the rung inserted as a look on the plateau (options.look), if any
    with made as pool:  # one thread per native pool, in every process
        r = -1
        while r < len(horizons) - 1:  # a look on the plateau inserts a rung
            r += 1
            if on_progress is not None:
                on_progress(done_share(pilots, horizons, alive, r, options))
            if on_rung is not None:
                on_rung(r, len(horizons), len(alive))
            last = r == len(horizons) - 1
            runner.batch(pool, r, alive, last and len(alive) <= options.finalists)
            keep = max(options.finalists, math.ceil(len(alive) / factor))
            flat = False
            if r == 0 and not last:  # pilots added here compete for the *keep* places
                flat = options.look > 0 and free and _flat(pilots, alive, keep, options.plateau)
                alive += _widen(runner, pool, alive, options, options.plateau if flat else 0.0)
                flat = flat or free and _flat(pilots, alive, keep, options.plateau)
                wanted = options.aim == "one_group" or (options.aim == "auto" and flat)
                if aim is None and wanted and free:
                    set_aim(runner, pool, options.references, options.plateau)
            elif r == 1 and options.look > 0 and free and not last and aim is None:
                flat = _insert_look(pilots, alive, keep, horizons, options)
                look_at = r + 1 if flat else look_at
            if aim is not None and free and options.early:
                runner.to_target(pool, _reached_once(pilots, alive, aim[0]), aim[0])
            if last:
                break
            key = _rung_key(aim, runner.level, (horizons[r], H), options.slack)
            ranked = sorted(alive, key=lambda i: key(pilots[i]))
            alive = _cut(pilots, ranked, keep, horizons[r], flat, r == look_at, options.plateau)
            if flat:  # the next rung keeps a quarter
                factor = max(factor, 4.0)
        if len(alive) > options.finalists:  # more reached the last rung: replicate its best
            key = _rung_key(aim, runner.level, (horizons[-1], H), options.slack)
            alive = sorted(alive, key=lambda i: key(pilots[i]))[: options.finalists]
            runner.batch(pool, len(horizons) - 1, alive, True, advance=False)
        if aim is not None and free and options.decide > options.replicates:
            reached = [i for i in alive if math.isfinite(runs_time_to_target(pilots[i], aim[0]))]
            runner.to_target(pool, reached, aim[0], options.decide)
    if on_progress is not None:
        on_progress(1.0)
    runner.sims.clear()  # free the SimPy state of every pilot
    for p in pilots:
        if p.rung < len(horizons) - 1:
            p.curves = []
    return [pilots[i] for i in alive]


def _cut(
    pilots: list[Pilot],
    ranked: list[int],
    keep: int,
    h: float,
    flat: bool,
    looking: bool,
    plateau: float,
) -> list[int]:
    """The pilots of *ranked* (best first) that go on from the rung ending at *h* (s): on
    the plateau (*flat*) every stable one; at a look (*looking*) the better half of the
    stable ones while the cut line of *keep* is still on its plateau; else the best *keep*."""
    if flat:  # no stable pilot is cut on the plateau
        seen = [at_rung(pilots[i], h) for i in ranked]
        return [i for i, v in zip(ranked, seen) if not unstable(v)] or ranked[:keep]
    if looking and _flat(pilots, ranked, keep, plateau):
        stable = [i for i in ranked if not unstable(pilots[i])] or ranked
        return stable[: max(keep, math.ceil(len(stable) / 2))]
    return ranked[:keep]


def _insert_look(
    pilots: list[Pilot], alive: list[int], keep: int, horizons: list[float], options: RaceOptions
) -> bool:
    """Whether the pilots *alive* still sit on their plateau at the second rung (the cut
    line of *keep*, :func:`on_plateau`); if so a rung is inserted into *horizons* (s)
    ``options.look`` of the way to the next one: a look before any stable pilot is cut."""
    if not _flat(pilots, alive, keep, options.plateau):
        return False
    h = horizons[1]
    horizons.insert(2, h + options.look * (horizons[2] - h))
    return True


def _flat(pilots: list[Pilot], ids: list[int], keep: int, plateau: float) -> bool:
    """Whether the pilots *ids*, ranked by their loss, sit on their plateau at the cut line
    of *keep* places (:func:`on_plateau`)."""
    ranked = sorted((pilots[i] for i in ids), key=lambda p: (rung_score(p), p.label))
    return on_plateau(ranked, keep, plateau)


def _reached_once(pilots: list[Pilot], ids: list[int], target: float) -> list[int]:
    """The pilots of *ids* whose own run has reached *target* and that have no other runs
    yet (none diverged)."""
    return [
        i
        for i in ids
        if pilots[i].status == "ok"
        and len(pilots[i].curves) <= 1
        and reached_at(pilots[i].curve, target) is not None
    ]


def done_share(
    pilots: list[Pilot], horizons: list[float], alive: list[int], r: int, options: RaceOptions
) -> float:
    """Share (0..1) of the race's work done before rung *r* (of *horizons*, s), which the
    *pilots* of indices *alive* start: the wall seconds the pilots have spent, over those
    plus what the rungs from *r* on are planned to cost (the candidates each keeps, then
    the last rung's replicate runs, in simulated seconds) at the mean wall cost per
    simulated second of the pilots *alive* (:attr:`Pilot.per_s`: the candidates that stay
    are the ones updating most, dearer to emulate than the ones that left).

    >>> pilots = [Pilot("g", ((0,),), 1.0, sim_s=4.0, wall_s=4.0) for _ in range(8)]
    >>> done_share(pilots, [1.0, 2.0, 4.0], list(range(8)), 1, RaceOptions(finalists=2))
    0.5

    (left: 8·1 + 4·2 + 2·2·4 = 32 s, at 1 wall s each; spent: 32 s.)
    """
    spent = sum(p.wall_s for p in pilots)
    rate = float(np.mean([pilots[i].per_s for i in alive])) if alive else 0.0
    left, k = 0.0, len(alive)
    for j in range(r, len(horizons)):
        left += k * (horizons[j] - (horizons[j - 1] if j else 0.0))
        if j < len(horizons) - 1:
            k = max(options.finalists, math.ceil(k / options.factor))
    left += min(k, options.finalists) * (options.replicates - 1) * horizons[-1]
    return spent / (spent + left * rate) if spent + left * rate > 0 else 1.0


def _rung_key(
    aim: tuple[float, float] | None,
    level: float | None,
    at: tuple[float, float],
    slack: float,
) -> Callable[[Pilot], tuple]:
    """A rung's ranking of a pilot (lowest first), its curve cut at the rung's end *at[0]*
    (s; *at[1]*: the full horizon, s): with an *aim* (a target the user set, horizon s)
    :func:`rung_key`; else with the race's *level* (:func:`set_aim`) the time it settles
    there (:func:`settled_time`, within ``1 + slack``), then its :func:`rung_score`; else
    its rung score."""
    h, H = at

    def key(p: Pilot) -> tuple:
        v = at_rung(p, h)
        if aim is not None:
            return (*rung_key(v, aim[0]), p.label)
        if level is not None:
            return settled_time(v, level, H, slack), rung_score(v), p.label
        return rung_score(v), p.label

    return key


def at_rung(p: Pilot, h: float) -> Pilot:
    """*p* as it stood at a rung ending at *h* (s): a reference pilot, run on ahead of the
    others (:func:`set_aim`), cut back to *h*; any other pilot itself."""
    if not p.curve or p.curve[-1][0] <= h * (1 + 1e-12):
        return p
    return replace(p, curve=truncated(p.curve, h), curves=[])


def on_plateau(ranked: list[Pilot], keep: int, plateau: float) -> bool:
    """Whether the pilot on the cut line (the *keep*-th of the *ranked* pilots that did not
    diverge) has lowered its loss by less than the fraction *plateau* of its initial loss:
    the pilots still sit on their initial plateau, where their order is noise.

    >>> flat = [Pilot("g", ((0,),), lr, curve=[(0.0, 2.3), (1.0, loss)]) for lr, loss in ((1.0, 2.0), (2.0, 2.25), (3.0, 2.1))]
    >>> on_plateau(flat, 2, 0.05), on_plateau(flat, 1, 0.05)  # 2.25 > 0.95 · 2.3 > 2.0
    (True, False)
    """
    if not plateau > 0:
        return False
    ok = [p for p in ranked if math.isfinite(rung_score(p))]
    if len(ok) <= keep:
        return False
    line = ok[keep - 1]
    return rung_score(line) >= (1 - plateau) * line.curve[0][1]


def set_aim(runner: PilotRunner, pool: StickyPool, references: int, plateau: float) -> None:
    """The race's aim, the loss SSGD ends at, in ``runner.level``: the one-group pilots that
    have not diverged are run on to the last rung, the *references* best there (by
    :func:`rung_score`) on to the full horizon, and the aim is the lowest loss their curves
    end at (smoothed as the time to a target is: :func:`smoothed`). Left None when no
    one-group pilot gets there or SSGD ends within the fraction *plateau* of its initial
    loss: every candidate would be there at once."""
    pilots, horizons = runner.pilots, runner.horizons
    H = runner.setup.scenario.run.until
    one = [i for i, p in enumerate(pilots) if len(p.groups) == 1 and p.status == "ok" and p.curve]
    for r in range(1, len(horizons)):
        runner.batch(pool, r, [i for i in one if pilots[i].status == "ok"], False)
    ok = sorted(
        (i for i in one if pilots[i].status == "ok"),
        key=lambda i: (rung_score(pilots[i]), pilots[i].label),
    )[:references]
    if not ok:
        return
    runner.extend(pool, ok, H)
    ends = [smoothed(pilots[i].reference, SMOOTH * H)[-1][1] for i in ok]
    finite = [e for e in ends if math.isfinite(e)]
    start = pilots[ok[0]].curve[0][1]
    if finite and min(finite) < (1 - plateau) * start:  # SSGD left its initial plateau
        runner.level = min(finite)


def rung_key(p: Pilot, target: float) -> tuple[float, float]:
    """A rung's ranking of pilot *p* when the user set a *target* loss: first those whose
    every run has reached it, by their mean time to it (s, read as a run reads it:
    :func:`runs_time_to_target`), then the others by :func:`rung_score`. Returns (mean time,
    or inf; rung score). A target crossed early is what the user asked for, and the loss
    at the rung's end would rank by another goal.

    >>> from types import SimpleNamespace
    >>> fast = [(0.0, 1.0), (1.0, 0.4), (2.0, 0.35), (3.0, 0.34)]
    >>> p = SimpleNamespace(status="ok", curve=fast, curves=[])
    >>> rung_key(p, 0.5)  # crossed between 0 s (1.0) and 1 s (0.4)
    (0.8333333333333334, 0.34)
    """
    return runs_time_to_target(p, target), rung_score(p)


def _widen(
    runner: PilotRunner,
    pool: StickyPool,
    alive: list[int],
    options: RaceOptions,
    plateau: float = 0.0,
) -> list[int]:
    """Pilots beyond the η grid (:func:`edge_steps` with *plateau*, up to ``options.widen``
    rounds), run to the first rung: their indices (appended to ``runner.pilots``)."""
    pilots = runner.pilots
    added: list[int] = []
    for _ in range(options.widen):
        steps = edge_steps([pilots[i] for i in alive + added], options.ratio, plateau)
        if not steps:
            break
        new = list(range(len(pilots), len(pilots) + len(steps)))
        pilots += [Pilot(p.name, p.groups, lr, timing=p.timing) for p, lr in steps]
        runner.batch(pool, 0, new, False)
        added += new
    return added


def edge_steps(
    pilots: list[Pilot], ratio: float, plateau: float = 0.0
) -> list[tuple[Pilot, float]]:
    """The η steps beyond the grid the first rung calls for: ``[(pilot, η)]``, one per
    grouping (in the order of *pilots*):

    * its best pilot so far (lowest :func:`rung_score`) is at the top of its η values and
      stable: η × *ratio*; with *plateau* > 0 (the pilots on their initial plateau, where a
      best at the top may be noise) only along a trend: every larger η of its stable pilots
      ends lower, and the best has lowered its loss by at least the fraction *plateau*;
    * all its pilots are unstable (:func:`unstable`: the whole grid lies beyond the edge of
      stability): the smallest η / *ratio*.

    Nothing else: a best η at the bottom among stable larger ones is not extended (on a
    short first rung, small steps look better than they end).

    >>> a = [Pilot("g", ((0,),), lr, curve=[(0.0, 0.7), (1.0, loss)]) for lr, loss in ((1.0, 0.5), (3.0, 0.4))]
    >>> [(p.lr, lr) for p, lr in edge_steps(a, 3.0)]
    [(3.0, 9.0)]
    >>> a.append(Pilot("g", ((0,),), 9.0, curve=[(0.0, 0.7), (1.0, 0.45)]))
    >>> edge_steps(a, 3.0)
    []
    >>> b = [Pilot("g", ((0,),), 3.0, status="diverged"), Pilot("g", ((0,),), 1.0, curve=[(0.0, 0.7), (1.0, 2.0)])]
    >>> [(p.lr, lr) for p, lr in edge_steps(b, 3.0)]
    [(1.0, 0.333...)]
    >>> c = [Pilot("g", ((0,),), lr, curve=[(0.0, 0.7), (1.0, loss)]) for lr, loss in ((1.0, 0.6), (3.0, 0.65), (9.0, 0.5))]
    >>> [(p.lr, lr) for p, lr in edge_steps(c, 3.0)], edge_steps(c, 3.0, 0.05)
    ([(9.0, 27.0)], [])
    >>> c[1].curve = [(0.0, 0.7), (1.0, 0.55)]  # falling along η: a trend
    >>> [(p.lr, lr) for p, lr in edge_steps(c, 3.0, 0.05)]
    [(9.0, 27.0)]
    >>> c[2].curve = [(0.0, 0.7), (1.0, 0.68)]  # falling, but the best within 5 % of its start
    >>> edge_steps(c, 3.0, 0.05)
    []
    """
    by_name: dict[str, list[Pilot]] = {}
    for p in pilots:
        by_name.setdefault(p.name, []).append(p)
    out = []
    for group in by_name.values():
        same = sorted(group, key=lambda p: p.lr)
        best = min(same, key=lambda p: (rung_score(p), p.lr))
        if all(unstable(p) for p in same):
            out.append((same[0], same[0].lr / ratio))
        elif best is same[-1] and (not plateau or _falling(same, plateau)):
            out.append((best, best.lr * ratio))
    return out


def _falling(same: list[Pilot], plateau: float) -> bool:
    """Whether the stable pilots of one grouping, at least three, in increasing η, end each
    lower than the one before (:func:`rung_score`), the last below ``1 − plateau`` times its
    start."""
    ok = [p for p in same if not unstable(p)]
    scores = [rung_score(p) for p in ok]
    return (
        len(scores) >= 3
        and all(b < a for a, b in zip(scores, scores[1:]))
        and scores[-1] < (1 - plateau) * ok[-1].curve[0][1]
    )
