"""The pick among the last rung's finalists, the target loss, and how sure the race is (pure).

Without a target given, only the finalists that reach SSGD's level at most ``guard`` times
later than the fastest of them are considered (:func:`guarded`), and the target is the
highest loss any run of the lowest-scoring of those holds at the last rung's end
(:func:`race_target`); the pick is that finalist (with ``tie`` > 0, of those within that
fraction of its loss whose runs all reach the target, the one with the fewest groups:
:func:`tie_pick`). With a target given, the pick is the finalist whose runs all reach it
first, and when none does, the one with the lowest loss. Every pilot gets a predicted time
to the target with an interval (:func:`predict_all`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .evidence import Pilot
from .options import TIE, RaceOptions, Target
from .scoring import (
    all_runs,
    final_score,
    headed_score,
    last_quarter,
    predicted_time,
    reaches,
    rung_score,
    runs_time_to_loss,
    runs_time_to_target,
    settled_time,
    time_to,
)

__all__ = [
    "Choice",
    "aimed",
    "choose",
    "guarded",
    "predict_all",
    "race_target",
    "sureness",
    "tie_pick",
]


@dataclass(frozen=True)
class Choice:
    """The race's pick, why (one line), and the target its candidates were timed to."""

    pick: Pilot
    reason: str
    target: Target


def choose(
    finals: list[Pilot],
    pilots: list[Pilot],
    rungs: list[float],
    horizon: float,
    given: Target | None,
    options: RaceOptions,
    level: float | None = None,
) -> Choice:
    """The pick of a race to the rung horizons *rungs* (s) of a *horizon* (s). With a target
    *given*: the finalist that reaches it first (:func:`_pick`). Else with the race's
    *level* (the loss SSGD ends at, :func:`netsim.tuning.halving.set_aim`) that a finalist
    settles at: the finalist whose runs settle there first (:func:`aimed`). Else the
    finalists the guard keeps (:func:`guarded`), the target :func:`race_target` and the pick
    among those kept (:func:`_pick`). Every pilot gets a predicted time to the target
    (:func:`predict_all`)."""
    H, H_run = horizon, rungs[-1]
    if given is None and level is not None:
        chosen = aimed(finals, pilots, (H, H_run), level, options.slack)
        if chosen is not None:
            return chosen
    eligible, note = (finals, "") if given else guarded(finals, pilots, options.guard, H)
    ok = [p for p in eligible if p.status == "ok" and p.curve]
    score = headed_score if options.extrapolate else final_score
    scores = {id(p): score(p, H) for p in ok}  # Pilot is unhashable
    target = given or race_target(ok, scores, H_run)
    predict_all(pilots, finals, target.loss, H, raw=target.given)
    pick, reason = _pick(eligible, scores, target, (H, H_run), options, note)
    return Choice(pick, reason, target)


def aimed(
    finals: list[Pilot],
    pilots: list[Pilot],
    horizons: tuple[float, float],
    level: float,
    slack: float,
) -> Choice | None:
    """The pick among the last rung's *finals* when the race aims at *level* (the loss SSGD
    ends at): the one whose runs settle there first (:func:`settled_time`, within ``1 +
    slack``; mean over its runs), then by :func:`final_score`; None when none settles there.
    *horizons*: the scenario's and the last rung's (s)."""
    H, H_run = horizons
    times = {id(p): settled_time(p, level, H, slack) for p in finals}
    ok = [p for p in finals if math.isfinite(times[id(p)])]  # finished and settled
    if not ok:
        return None
    target = Target(level, "the loss SSGD ends at (its best one-group pilots run to the horizon)")
    predict_all(pilots, finals, level, H)
    scores = {id(p): final_score(p, H) for p in ok}
    pick = min(ok, key=lambda p: (times[id(p)], scores[id(p)], p.label))
    reason = (
        f"settles at SSGD's final loss {level:.5g} first ({times[id(pick)]:.4g} s) "
        f"{_among(len(finals))}"
    )
    return Choice(pick, reason, target)


def race_target(ok: list[Pilot], scores: dict[int, float], H_run: float) -> Target:
    """The target the race sets from the finalists *ok* (finished, scored by id in
    *scores*): the highest loss any run of the lowest-scoring one holds at the last rung's
    end *H_run* (s); inf when none finished."""
    if not ok:
        return Target(math.inf, "no candidate finished")
    best = min(ok, key=lambda p: (scores[id(p)], p.label))
    loss = max(last_quarter(c) for c in best.curves)
    return Target(loss, f"loss every run of {best.label} holds at {H_run:g} s")


def predict_all(
    pilots: list[Pilot], finals: list[Pilot], target: float, H: float, raw: bool = False
) -> None:
    """Every pilot's predicted time to *target* (:func:`predicted_time`); a finalist with
    several runs that all reach it (with *raw*, any pilot: those that reached a target the
    user gave ran their replicates to it): the mean of their times (interval: the earliest
    and latest). Times are read off the curves smoothed as over *H* (s), or with *raw* where
    the curves themselves first cross it (:func:`reached_at`)."""
    for p in pilots:
        p.predicted, p.low, p.high, p.how = predicted_time(p, target, H, raw)
    for p in pilots if raw else finals:
        if p.status != "ok" or not p.curve:
            continue
        each = [time_to(c, target, H, raw) for c in all_runs(p)]
        times = [t for t in each if t is not None]
        if len(each) > 1 and len(times) == len(each):
            p.predicted, p.low, p.high = float(np.mean(times)), min(times), max(times)
            p.how = f"emulated, {len(each)} runs"


def _pick(
    finals: list[Pilot],
    scores: dict[int, float],
    target: Target,
    horizons: tuple[float, float],
    options: RaceOptions,
    guarded: str = "",
) -> tuple[Pilot, str]:
    """(pick, reason) among the last rung's *finals* (those :func:`guarded` kept; *scores*:
    their scores by id); *horizons*: the scenario's horizon and the last rung's (s);
    *guarded*: what the guard left out, for the reason."""
    H, H_run = horizons
    ok = [p for p in finals if id(p) in scores]
    if target.given:
        reached = [p for p in ok if math.isfinite(runs_time_to_target(p, target.loss))]
    else:
        reached = [p for p in ok if reaches(p, target.loss, H)]
    if reached and target.given:
        pick = min(reached, key=lambda p: (p.predicted, scores[id(p)], p.label))
        return pick, (
            f"reaches the target loss {target.loss:.5g} first ({pick.predicted:.4g} s) "
            f"{_among(len(finals))}"
        )
    if ok and target.given:
        pick = min(ok, key=lambda p: (scores[id(p)], p.label))
        return pick, (
            f"no finalist reaches the target loss {target.loss:.5g} within {H_run:g} s: "
            f"fell back to the lowest loss ({scores[id(pick)]:.5g})"
        )
    if not ok:
        pick = min(finals, key=lambda p: p.label)
        return (
            pick,
            "every finalist diverged: fell back to the first finalist; try a smaller η grid",
        )
    best, pick = tie_pick(ok, reached, lambda p: scores[id(p)], options.safer, options.tie)
    if pick is best:
        loss, among = f"({scores[id(pick)]:.5g})", _among(len(finals))
        lowest = f"{loss} {among}{guarded}" if guarded else f"{among} {loss}"
        return pick, f"lowest loss at {H_run:g} s {lowest}, reached first ({pick.predicted:.4g} s)"
    return pick, (
        f"fewest groups ({len(pick.groups)}) among the finalists within {options.tie:.0%} of the "
        f"lowest loss at {H_run:g} s ({scores[id(pick)]:.5g} against {scores[id(best)]:.5g} for "
        f"{best.label}, a tie at the race's resolution); reaches the target at "
        f"{pick.predicted:.4g} s"
    )


def _among(n: int) -> str:
    """``among N finalists``, or ``as the only finalist``."""
    return "as the only finalist" if n == 1 else f"among {n} finalists"


def tie_pick(
    ok: list[Pilot],
    reached: list[Pilot],
    score: Callable[[Pilot], float],
    safer: bool = False,
    tie: float = TIE,
) -> tuple[Pilot, Pilot]:
    """(lowest-loss finalist, pick) among the finalists *ok* by *score* (a pilot's loss): the
    pick is, of those in *reached* (every run reaches the target) within the fraction *tie*
    of the lowest loss, the one with the fewest groups (then, with *safer*, the smallest η;
    then the lowest loss, then the label); the best itself when none."""
    best = min(ok, key=lambda p: (score(p), p.label))
    lowest = score(best)
    tied = [p for p in reached if score(p) - lowest <= tie * abs(lowest)] or [best]
    return best, min(tied, key=lambda p: (len(p.groups), p.lr if safer else 0.0, score(p), p.label))


def guarded(
    finals: list[Pilot], pilots: list[Pilot], guard: float, H: float
) -> tuple[list[Pilot], str]:
    """(the finalists the target and the pick come from, a note for the reason): of the
    *finals* that finished, those that reach SSGD's level, the lowest loss any one-group
    pilot of *pilots* holds at the end of its pilot (:func:`rung_score`), at most *guard*
    times later than the fastest of them (mean over each one's runs; smoothed as over a
    horizon *H*, s). All *finals* and no note when no one-group pilot finished, no finalist
    reaches that level, or none is left out.

    The benchmark scores a pick by its time to the loss SSGD ends at, which the best
    groupings reach early; the last rung ranks by the loss level at its end. A finalist
    lowest there but much slower to SSGD's level (a larger η of the same grouping, often)
    is left out."""
    one = [p for p in pilots if len(p.groups) == 1 and p.status == "ok" and p.curve]
    ok = [p for p in finals if p.status == "ok" and p.curve]
    if not one or len(ok) < 2 or not guard < math.inf:
        return finals, ""
    level = min(rung_score(p) for p in one)
    times = {id(p): runs_time_to_loss(p, level, H) for p in ok}
    fastest = min(times.values())
    if fastest == math.inf:
        return finals, ""
    kept = [p for p in ok if times[id(p)] <= guard * fastest]
    if len(kept) == len(ok):
        return finals, ""
    return kept, (
        f" that {'reaches' if len(kept) == 1 else 'reach'} SSGD's level {level:.5g} within "
        f"{guard:g}x the fastest's time "
        f"({fastest:.4g} s; {len(ok) - len(kept)} left out)"
    )


def sureness(pick: Pilot, close: list[Pilot]) -> str:
    """How sure the race is of *pick*: its predicted time to target with the interval, and,
    when the finalists *close* to it are not separated from it, what to do about it."""
    text = (
        f"predicted time to target {_num_text(pick.predicted)} s "
        f"(interval {_num_text(pick.low)}–{_num_text(pick.high)} s)"
    )
    if not close:
        return text + ", apart from the other finalists'"
    return text + (
        f"; not separated from {', '.join(p.label for p in close)} (their intervals overlap): "
        f"check with --verify {len(close) + 1} or a larger --budget"
    )


def _num_text(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "∞"
