"""The race's settings as one value, and the target loss its candidates are timed to (pure).

:class:`RaceOptions` holds every setting of :func:`netsim.tuning.race.recommend` (checked
when made: :exc:`RecommendError`, one line); :class:`Target` is the loss the candidates
are timed to, given by the user or set by the race.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AIMS",
    "DECIDE",
    "GUARD",
    "TIE",
    "RaceOptions",
    "RecommendError",
    "Target",
    "check_jobs",
]

AIMS = ("level", "one_group", "auto")
"""What the race ranks by without a target given (:attr:`RaceOptions.aim`)."""

GUARD = 1.5
"""Default of :attr:`RaceOptions.guard`: the slowest a finalist may be to SSGD's level, as a
multiple of the fastest finalist's time (dimensionless, >= 1; inf: off)."""

TIE = 0.0
"""Default of :attr:`RaceOptions.tie`: finalists within this fraction of the lowest
last-rung loss count as tied (dimensionless; 0: off)."""


DECIDE = 8
"""Default of :attr:`RaceOptions.decide`: the runs a finalist is timed on to a target the
user gave before the pick is made."""


class RecommendError(ValueError):
    """Bad recommender input (empty candidates, bad η grid, too small a budget): one line."""


def check_jobs(jobs: int | None) -> None:
    """A *jobs* setting: None or >= 1 (else RecommendError)."""
    if jobs is not None and not jobs >= 1:
        raise RecommendError(f"jobs must be >= 1, got {jobs!r}")


def checked_lrs(lrs: Sequence[float]) -> tuple[float, ...]:
    """The η grid *lrs* sorted, each value once (RecommendError: empty, or a value not > 0)."""
    values = tuple(float(x) for x in lrs)
    if not values:
        raise RecommendError("the learning-rate grid is empty")
    bad = [x for x in values if not (x > 0 and math.isfinite(x))]
    if bad:
        raise RecommendError(f"learning rates must be finite and > 0, got {bad[0]!r}")
    return tuple(sorted(set(values)))


@dataclass(frozen=True)
class RaceOptions:
    """How a race runs (:func:`netsim.tuning.race.recommend`); checked when made.

    lrs : the η grid (None: the default grid (:func:`netsim.tuning.candidates.lr_grid`) around the rule's η, which the race may widen
        by up to *widen* steps beyond either end after its first rung; a grid given is kept to).
    factor, first, last : keep 1/*factor* of the candidates per rung, at least *finalists*;
        rung horizons grow by *factor*, from *first* to *last* of the horizon (fractions).
    finalists, replicates : the best *finalists* at the last rung each run *replicates*
        times in all (their pilot and ``replicates − 1`` runs on other time and minibatch draws).
    budget_s, eval_rows : cap on the pilots' simulated seconds (the rungs shrink to fit; the
        grid is then not widened); training rows the pilots' loss is evaluated on.
    target : the loss to reach (None or 0: ``run.target_loss``, else set by the race).
    alike : > 0: groupings timed within a factor ``e**alike`` of an earlier one are not raced.
    jobs, scheduler : processes for the pilots (None: the usable CPUs, at most one per four
        candidates), or a Dask scheduler (address or Client) whose workers run them.
    extrapolate, safer, tie : rank the last rung by the loss headed for at the horizon; to
        near-ties (within the fraction *tie*) prefer the fewest groups, then (*safer*) the
        smaller η.
    guard : pick among the finalists at most *guard* times slower to SSGD's level than the
        fastest (inf: off; with ``aim = "one_group"`` only when that aim cannot be set).
    aim, references, slack : without a target given, ``"level"`` ranks by the loss at each
        rung's end; ``"one_group"`` ranks the rungs and the finalists by their time to the loss
        SSGD ends at, estimated by the *references* best one-group pilots run to the full
        horizon, a run counting only when it ends within ``1 + slack`` times that loss;
        ``"auto"``: ``"one_group"`` when the first rung finds the pilots on a plateau, else
        ``"level"``.
    early : with a target the user gave, a pilot that reaches it runs its replicates at
        once, each until it reaches the target, and every rung from then on ranks it by the
        mean time over its runs (False: one run until the last rung).
    decide : with a target the user gave, each finalist whose runs all reach it runs again
        until it has this many runs in all, each stopped where it reaches the target, and
        the pick is the finalist first there on the mean over them (at most *replicates*:
        off; off with a budget).
    plateau : at the first rung, when the pilot on the cut line has lowered its loss by less
        than this fraction (all still on their initial plateau), no stable pilot is cut there
        and the next rung keeps a quarter (0: off).
    look : > 0: where the first rung is on a plateau, a grouping's η is stepped up beyond the
        grid only along a trend (its order there is noise otherwise), and where the second
        rung is on its plateau, every stable pilot runs on by this fraction of the way to the
        next rung before any is cut; at that look the better half goes on while the cut
        line is still on its plateau, else a quarter (0: off).
    """

    lrs: tuple[float, ...] | None = None
    factor: float = 2.0
    first: float = 1 / 8
    last: float = 1 / 2
    finalists: int = 3
    replicates: int = 3
    budget_s: float | None = None
    eval_rows: int = 2000
    target: float | None = None
    alike: float = 0.0
    jobs: int | None = None
    scheduler: Any = None
    widen: int = 3
    extrapolate: bool = False
    safer: bool = False
    tie: float = TIE
    guard: float = GUARD
    aim: str = "level"
    references: int = 2
    slack: float = 0.2
    plateau: float = 0.05
    look: float = 0.4
    early: bool = True
    decide: int = DECIDE

    def __post_init__(self) -> None:
        if self.lrs is not None:
            object.__setattr__(self, "lrs", checked_lrs(self.lrs))
        if not (self.factor > 1 and 0 < self.first <= self.last <= 1):
            raise RecommendError(
                f"need factor > 1 and 0 < first <= last <= 1, got {self.factor!r}, "
                f"{self.first!r}, {self.last!r}"
            )
        if self.replicates < 1:
            raise RecommendError(f"replicates must be >= 1, got {self.replicates!r}")
        if self.decide < 0:
            raise RecommendError(f"decide must be >= 0, got {self.decide!r}")
        if not self.guard >= 1:
            raise RecommendError(f"guard must be >= 1 (inf: off), got {self.guard!r}")
        if self.aim not in AIMS:
            raise RecommendError(f"aim must be one of {', '.join(AIMS)}, got {self.aim!r}")
        if not (self.references >= 1 and self.slack >= 0 and 0 <= self.plateau < 1):
            raise RecommendError(
                f"need references >= 1, slack >= 0 and 0 <= plateau < 1, got "
                f"{self.references!r}, {self.slack!r}, {self.plateau!r}"
            )
        if not 0 <= self.look < 1:
            raise RecommendError(f"need 0 <= look < 1, got {self.look!r}")
        check_jobs(self.jobs)

    @property
    def grid(self) -> tuple[float, ...]:
        """The η grid (empty before the race sets it from the rule's η)."""
        return self.lrs or ()

    @property
    def ratio(self) -> float:
        """The η grid's ratio between neighbours (3 for a grid of one)."""
        lrs = self.grid
        return lrs[1] / lrs[0] if len(lrs) > 1 else 3.0


@dataclass(frozen=True)
class Target:
    """The loss (the pilots' training loss) the candidates are timed to reach.

    ``source`` says where it comes from (``given``, ``run.target_loss`` or how the race
    set it); ``given``: whether the user set it, in which case the pick is the finalist
    that reaches it first.
    """

    loss: float
    source: str
    given: bool = False

    @classmethod
    def asked(cls, option: float | None, run_target: float) -> Target | None:
        """The target the user set: the *option* (``RaceOptions.target``), else the scenario's
        ``run.target_loss`` *run_target*; None when neither is set (or it is 0).
        RecommendError for a target below 0."""
        loss = option if option is not None else (run_target or None)
        if not loss:
            return None
        if not loss > 0:
            raise RecommendError(f"target loss must be > 0, got {loss!r}")
        return cls(float(loss), "given" if option is not None else "run.target_loss", True)
