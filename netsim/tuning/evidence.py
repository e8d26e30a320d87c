"""What a race leaves behind: each candidate's evidence and the recommendation (pure).

A :class:`Pilot` is one (grouping, η) candidate with its pilot's curve, cost and predicted
time to target; a :class:`Recommendation` is the pick, the target and every pilot, as
``summary.json`` and ``netsim group --json`` record it (:meth:`Recommendation.as_dict`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..sim.measurement import Measurement
from .candidates import Groups
from .progress import GroupTiming
from .scoring import Curve, all_runs, rung_score

__all__ = ["Groups", "Pilot", "Recommendation", "overlapping"]


def _num(x: float) -> float | None:
    """*x* as a JSON number (None when not finite)."""
    return float(x) if math.isfinite(x) else None


@dataclass
class Pilot:
    """One candidate's evidence.

    ``curve``: (time s, loss) pairs of its pilot; ``sim_s``/``wall_s``: what its pilot
    cost; ``rung``: the last rung it ran (0-based); ``predicted``, ``low``, ``high``:
    time to target (s; inf when not expected within reach); ``how``: ``emulated`` or
    ``extrapolated``; ``curves``: a last-rung candidate's runs (its pilot first, then
    its replicates); ``timing``: the grouping's update rate and staleness from the
    measured iteration times (:mod:`netsim.tuning.progress`).
    """

    name: str
    groups: Groups
    lr: float
    curve: Curve = field(default_factory=list)
    rung: int = 0
    sim_s: float = 0.0
    wall_s: float = 0.0
    status: str = "ok"
    predicted: float = math.inf
    low: float = math.inf
    high: float = math.inf
    how: str = ""
    timing: GroupTiming | None = None
    curves: list[Curve] = field(default_factory=list)
    reference: Curve = field(default_factory=list)
    """A one-group pilot run on to the full horizon to set the race's aim (else empty)."""
    timed: list[Curve] = field(default_factory=list)
    """A finalist's further runs, each stopped where it reaches the target a user gave,
    that the pick is decided on beside ``curves`` (:attr:`RaceOptions.decide`; else empty)."""

    @property
    def runs(self) -> int:
        """How many runs its predicted time rests on (:func:`all_runs`)."""
        return len(all_runs(self))

    @property
    def label(self) -> str:
        return f"{self.name} η={self.lr:.3g}"

    @property
    def loss(self) -> float:
        """Loss at the pilot's last evaluation (inf when diverged)."""
        return self.curve[-1][1] if self.curve and self.status == "ok" else math.inf

    @property
    def per_s(self) -> float:
        """Wall seconds per simulated second of its runs, for spreading the work: measured
        once it ran, else guessed from its gradients and updates per second."""
        if self.sim_s > 0 and self.wall_s > 0:
            return self.wall_s / self.sim_s
        t = self.timing
        return 1e-4 * (1.0 + (t.gradients_per_s + t.updates_per_s if t is not None else 0.0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "lr": self.lr,
            "k": len(self.groups),
            "groups": [list(g) for g in self.groups],
            "rung": self.rung,
            "pilot_sim_s": self.sim_s,
            "pilot_wall_s": self.wall_s,
            "status": self.status,
            "loss": _num(self.loss),
            "predicted_time_to_target_s": _num(self.predicted),
            "interval_s": [_num(self.low), _num(self.high)],
            "how": self.how,
            **(
                {
                    "updates_per_s": self.timing.updates_per_s,
                    "mean_staleness": self.timing.mean_staleness,
                }
                if self.timing is not None
                else {}
            ),
        }


@dataclass
class Recommendation:
    """The recommended grouping and η, the target, and every candidate's evidence.

    ``target``: the loss the candidates are timed to, ``target_source``: where it comes
    from; ``rungs``: the rung horizons (s); ``sim_s``/``wall_s``: what the race cost
    (the measurement included); ``horizon``: the scenario's ``run.until`` (s).
    """

    name: str
    groups: Groups
    lr: float
    target: float
    target_source: str
    reason: str
    pilots: list[Pilot]
    rungs: list[float]
    measurement: Measurement | None
    sim_s: float
    wall_s: float
    horizon: float
    verified: list[dict[str, Any]] = field(default_factory=list)
    pruned: dict[str, str] = field(default_factory=dict)
    """Grouping not raced → the alike grouping raced for it."""
    unseen: list[dict[str, Any]] = field(default_factory=list)
    """The scenario's timed events (``[[events]]`` as dicts) at or after the last rung: the race did not see them."""
    finals: list[Pilot] = field(default_factory=list)
    """The last rung's finalists (those run ``replicates`` times to its end), in race order."""
    close: list[Pilot] = field(default_factory=list)
    """The other finalists the pick is not separated from (:func:`overlapping`): the race
    cannot tell which of them reaches the target first; empty when the pick stands apart."""
    given: bool = False
    """Whether the user gave the target (``--target`` or ``run.target_loss``): times to it
    are read where the curves first cross it (:func:`~.scoring.reached_at`)."""

    @property
    def separated(self) -> bool:
        """Whether the pick's interval of time to target meets no other finalist's."""
        return not self.close

    @property
    def pick(self) -> Pilot:
        return next(p for p in self.pilots if p.name == self.name and p.lr == self.lr)

    def ranking(self) -> list[Pilot]:
        """Pilots best first: by predicted time to target, then rung, then loss."""
        pick = self.pick
        return sorted(
            self.pilots,
            key=lambda p: (p is not pick, -p.rung, p.predicted, rung_score(p), p.label),
        )

    def as_dict(self) -> dict[str, Any]:
        """The ``grouping`` record of summary.json: the pick, its η and the evidence."""
        return {
            "method": "race",
            "recommended": self.name,
            "k": len(self.groups),
            "lr": self.lr,
            "members": [list(g) for g in self.groups],
            "target_loss": self.target,
            "target_source": self.target_source,
            "reason": self.reason,
            "predicted_time_to_target_s": _num(self.pick.predicted),
            "interval_s": [_num(self.pick.low), _num(self.pick.high)],
            "separated": self.separated,
            "not_separated_from": [p.label for p in self.close],
            "rungs_s": list(self.rungs),
            "cost_sim_s": self.sim_s,
            "cost_wall_s": self.wall_s,
            "candidates": [p.as_dict() for p in self.ranking()],
            **({"not_raced_alike": dict(self.pruned)} if self.pruned else {}),
            **({"events_after_race": self.unseen} if self.unseen else {}),
            **({"verified": self.verified} if self.verified else {}),
        }


def overlapping(pick: Pilot, others: list[Pilot]) -> list[Pilot]:
    """The pilots of *others* (*pick* aside) whose interval of time to target ``[low, high]``
    (s) meets the pick's: ``low <= pick.high`` and ``pick.low <= high``, in the order given.

    >>> a = Pilot("a", ((0,),), 1.0, low=10.0, high=12.0)
    >>> [p.name for p in overlapping(a, [a, Pilot("b", ((0,),), 1.0, low=11.5, high=15.0),
    ...                                  Pilot("c", ((0,),), 1.0, low=12.5, high=14.0)])]
    ['b']
    """
    return [p for p in others if p is not pick and p.low <= pick.high and pick.low <= p.high]
