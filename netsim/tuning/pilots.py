"""The race's pilot runs: short emulations of a (grouping, η) candidate, paused at each rung.

Every pilot starts from the same prepared data, shards, initial model and time draws
(common random numbers: one ``prepare`` and the scenario seed's streams) and evaluates its
loss on the same fixed rows of the training set. A :class:`PilotRunner` advances pilots rung
by rung in a pool's processes (each pilot resumed where it paused, not restarted) and runs
the last rung's replicates (the same candidate on other time and minibatch draws).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..rules import GROUPING_RULE, RULES
from ..sim.engine import Prepared, Simulation
from ..sim.measurement import Measurement
from .evidence import Groups, Pilot
from .pool import StickyPool
from .progress import group_timing, prune_alike
from .scoring import Curve, reached_at

if TYPE_CHECKING:
    from ..config.scenario import Scenario
    from ..rules.base import Rule

__all__ = [
    "Outcome",
    "PilotRunner",
    "PilotSetup",
    "Task",
    "base_lr",
    "make_pilots",
    "pilot_rule",
    "replicate_seed",
    "run_losses",
]

Task = tuple[str, int, Any, tuple[Groups, float]]
"""A pool task: (``advance``, ``replicate`` or ``to_target``, pilot index, the rung
horizons so far (s), the replicate's number or (its number, the target loss), (the pilot's
groups, its η))."""

Outcome = tuple[float, float, Curve, bool]
"""What a task returns: (simulated s, wall s, curve [(t s, loss)], diverged)."""


def pilot_rule(scenario: Scenario, groups: Groups, lr: float, rule: Any = None) -> Rule:
    """The raced rule (default: the scenario's GSGD) with fixed *groups* and step *lr*,
    keeping its other options (``Rule.piloted``)."""
    base = rule if rule is not None else scenario.rules.get(GROUPING_RULE)
    if base is None:
        made: Rule = RULES[GROUPING_RULE](lr, [list(g) for g in groups])
        return made
    piloted: Rule = base.piloted(groups, lr)
    return piloted


def base_lr(scenario: Scenario) -> float:
    """The η the scenario gives GSGD (else its run algorithm's η): the centre of the default grid."""
    rule = scenario.rules.get(GROUPING_RULE) or scenario.rules[scenario.run.algorithm]
    return float(rule.lr)


def replicate_seed(seed: int, k: int) -> int:
    """Seed of the recommender's replicate run *k* (k >= 1), derived from the scenario *seed*."""
    return int(np.random.SeedSequence([seed, 0x5EED, k]).generate_state(1)[0] >> 1)


def make_pilots(
    measurement: Measurement | None,
    candidates: Mapping[str, Groups],
    lrs: tuple[float, ...],
    alike: float,
) -> tuple[list[Pilot], dict[str, str]]:
    """(a pilot per candidate grouping × η, {grouping not raced: the alike one raced})."""
    timings = (
        {name: group_timing(measurement.iteration, groups) for name, groups in candidates.items()}
        if measurement is not None
        else {}
    )
    pruned = prune_alike(timings, alike)
    pilots = [
        Pilot(name, tuple(tuple(g) for g in groups), lr, timing=timings.get(name))
        for name, groups in candidates.items()
        if name not in pruned
        for lr in lrs
    ]
    return pilots, pruned


def run_losses(curve: list[tuple[int, float, float, float]]) -> Curve:
    """(time s, loss) pairs of a run's curve rows (update, time s, loss, accuracy)."""
    return [(t, loss) for _, t, loss, _ in curve]


def _compact(X: Any) -> Any:
    """The pilots' evaluation rows *X* (m, d) as a CSR matrix when under a third of the entries
    are nonzero (MNIST's: 19 %; sparse products are faster there and give the same losses up to
    rounding), else *X*."""
    if isinstance(X, np.ndarray) and np.count_nonzero(X) * 3 < X.size:
        return sp.csr_matrix(X)
    return X


def _to_rung(sim: Simulation, until: float) -> None:
    """Advance a pilot to the rung horizon *until* (s) and evaluate there (unless it stopped)."""
    sim.advance(until)
    if not sim.stopped:
        sim.evaluate()


@dataclass(frozen=True)
class PilotSetup:
    """What every pilot of a race shares: the scenario asked about, its prepared data, the
    raced rule, the pilots' scenario (evaluated every 1/8 of the first rung, at most every
    1/100 of the horizon and, with a target the user gave, at least as often as the
    scenario's run; no target, no timeline) and the evaluation rows (X, y)."""

    scenario: Scenario
    prepared: Prepared
    rule: Any
    pilot_sc: Scenario
    eval_set: tuple[Any, np.ndarray]

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        prepared: Prepared,
        rule: Any,
        first_rung: float,
        eval_rows: int,
        given: bool = False,
    ) -> PilotSetup:
        """The setup of a race whose first rung ends at *first_rung* (s), its loss evaluated on
        *eval_rows* training rows (drawn from the scenario seed). *given*: the user gave a
        target, which the pilots' curves are then read on at least as finely as the
        scenario's own evaluations (``run.eval_every``) read it."""
        every = min(first_rung / 8, scenario.run.until / 100)
        if given and scenario.run.eval_every > 0:
            every = min(every, scenario.run.eval_every)
        pilot_sc = replace(
            scenario,
            run=replace(
                scenario.run,
                eval_every=every,
                eval_every_updates=0,
                timeline_until=0.0,
                target_loss=0.0,
            ),
        )
        X, y = prepared.dataset.X_train, prepared.dataset.y_train
        rows = np.sort(np.random.default_rng(scenario.run.seed).permutation(X.shape[0])[:eval_rows])
        return cls(scenario, prepared, rule, pilot_sc, (_compact(X[rows]), y[rows]))

    def simulation(self, sc: Scenario, groups: Groups, lr: float) -> Simulation:
        """A run of scenario *sc* with *groups* and η *lr*, its loss on the fixed evaluation rows."""
        pilot = pilot_rule(self.scenario, groups, lr, self.rule)
        return Simulation(sc, pilot.name, self.prepared, rule=pilot, eval_set=self.eval_set)


@dataclass
class PilotRunner:
    """The pilot runs of one race to the rung horizons *horizons* (s), each last-rung
    candidate run *replicates* times in all. :meth:`work` runs in the pool's processes (a
    forked child keeps its own ``sims``); :meth:`batch` in this one."""

    setup: PilotSetup
    pilots: list[Pilot]
    horizons: list[float]
    replicates: int
    sims: dict[int, tuple[Simulation, int]] = field(default_factory=dict)
    """This process's pilots: pilot index → (its paused run, rungs passed)."""
    level: float | None = None
    """The race's aim, the loss SSGD ends at, once set (:func:`netsim.tuning.halving.set_aim`)."""

    def work(self, task: Task) -> Outcome:
        """A pilot resumed to a rung, or a last-rung candidate's replicate run:
        (simulated s, wall s, curve [(t s, loss)], diverged). The task carries the pilot's
        groups and η: a child forked before a pilot was added does not know it."""
        kind, i, arg, (groups, lr) = task
        setup = self.setup
        if kind == "to_target":
            return self._to_target(arg, groups, lr)
        if kind == "replicate":
            sim = self._replicate(arg, groups, lr)
            w0 = time.perf_counter()
            res = sim.run()
            return res.sim_time, time.perf_counter() - w0, run_losses(res.curve), res.status != "ok"
        *before, until = arg  # the rung horizons so far (s): this rung's last
        if i in self.sims and self.sims[i][1] == len(before):
            sim = self.sims[i][0]
        else:  # new here, or moved from another process: replay the rungs
            sim = setup.simulation(setup.pilot_sc, groups, lr)
            sim.begin()
            for h in before:
                _to_rung(sim, h)
        t0, w0 = sim.env.now, time.perf_counter()
        _to_rung(sim, until)
        self.sims[i] = sim, len(before) + 1
        return (
            sim.env.now - t0,
            time.perf_counter() - w0,
            run_losses(sim.recorder.curve),
            bool(sim.ps.diverged),
        )

    def _replicate(self, k: int, groups: Groups, lr: float) -> Simulation:
        """Replicate run *k* (k >= 1) of a candidate of *groups* and η *lr*, not started: the
        pilots' scenario on the replicate's seed, to the last rung."""
        setup = self.setup
        run = replace(
            setup.pilot_sc.run,
            seed=replicate_seed(setup.scenario.run.seed, k),
            until=self.horizons[-1],
        )
        return setup.simulation(replace(setup.pilot_sc, run=run), groups, lr)

    def _to_target(self, arg: tuple[int, float], groups: Groups, lr: float) -> Outcome:
        """Replicate run *k* of a candidate (*arg* = (k, target loss)) up to the evaluation
        where its curve first reaches the target, or to the last rung: (simulated s, wall s,
        curve, diverged)."""
        k, target = arg
        sim = self._replicate(k, groups, lr)
        w0 = time.perf_counter()
        sim.begin()
        run = sim.scenario.run
        step = 4 * run.eval_every  # a few evaluations at a time
        while not sim.stopped and sim.env.now < run.until:
            sim.advance(sim.env.now + step)
            if reached_at(run_losses(sim.recorder.curve), target) is not None:
                break
        curve = run_losses(sim.recorder.curve)
        return sim.env.now, time.perf_counter() - w0, curve, bool(sim.ps.diverged)

    def to_target(
        self, pool: StickyPool, ids: list[int], target: float, runs: int | None = None
    ) -> None:
        """Run replicates of each pilot of *ids*, each until it reaches *target* (or to the
        last rung). Without *runs*: its ``replicates − 1`` replicates, on the seeds of the
        last rung's, their curves following the pilot's in ``curves``, so that a candidate
        is timed to a target the user gave on all its runs from the rung where it reaches
        it on (the last rung's replicate runs of the same seeds continue them). With
        *runs*: replicates ``replicates`` to ``runs − 1``, on seeds no other run has, their
        curves in ``timed``: the further runs the pick is decided on."""
        pilots, last = self.pilots, self.horizons[-1]
        first, stop = (1, self.replicates) if runs is None else (self.replicates, runs)
        tasks: list[Task] = [
            ("to_target", i, (k, target), (pilots[i].groups, pilots[i].lr))
            for i in ids
            for k in range(first, stop)
        ]
        costs = [pilots[i].per_s * last / 4 for _, i, _, _ in tasks]  # most stop early
        outcomes = pool.run(tasks, [None] * len(tasks), costs, costs)
        for (_, i, _, _), outcome in zip(tasks, outcomes):
            if runs is None:
                _credit(pilots[i], pilots[i].rung, False, outcome)
            else:
                sim_s, wall_s, curve, _ = outcome  # a run that diverged short of the
                pilots[i].sim_s += sim_s  # target never reaches it
                pilots[i].wall_s += wall_s
                pilots[i].timed.append(curve)

    def batch(
        self, pool: StickyPool, r: int, ids: list[int], replicate: bool, advance: bool = True
    ) -> None:
        """Advance pilots *ids* to rung *r* (with *replicate*, also their replicate runs;
        without *advance*, only those)."""
        pilots, horizons = self.pilots, self.horizons
        h = horizons[r]
        tasks: list[Task] = [
            ("advance", i, tuple(horizons[: r + 1]), (pilots[i].groups, pilots[i].lr))
            for i in (ids if advance else ())
            if not pilots[i].curve or pilots[i].rung < r  # a reference is ahead already
        ]
        if replicate:  # the replicates do not depend on the last rung: one batch
            for i in ids:  # runs stopped at a target are run again, to the last rung
                pilots[i].curves = pilots[i].curves[:1]
            tasks += [
                ("replicate", i, rep, (pilots[i].groups, pilots[i].lr))
                for i in ids
                for rep in range(1, self.replicates)
            ]
        start = horizons[r - 1] if r else 0.0
        outcomes = pool.run(
            tasks,
            [i if kind == "advance" else None for kind, i, _, _ in tasks],
            [
                pilots[i].per_s * (h - start if kind == "advance" else horizons[-1])
                for kind, i, _, _ in tasks
            ],
            [pilots[i].per_s * h for _, i, _, _ in tasks],
        )
        for (kind, i, _, _), outcome in zip(tasks, outcomes):
            _credit(pilots[i], r, kind == "advance", outcome)

    def extend(self, pool: StickyPool, ids: list[int], until: float) -> None:
        """Run pilots *ids*, paused at the last rung, on to *until* (s): each one's curve to
        then becomes its ``reference`` (a diverged run ends at inf); its ``curve``, ``rung``
        and ``status`` stay those of the last rung."""
        pilots, rungs = self.pilots, tuple(self.horizons)
        tasks: list[Task] = [
            ("advance", i, (*rungs, until), (pilots[i].groups, pilots[i].lr)) for i in ids
        ]
        left = until - rungs[-1]
        outcomes = pool.run(
            tasks,
            list(ids),
            [pilots[i].per_s * left for i in ids],
            [pilots[i].per_s * until for i in ids],
        )
        for i, (sim_s, wall_s, curve, diverged) in zip(ids, outcomes):
            p = pilots[i]
            p.sim_s += sim_s
            p.wall_s += wall_s
            p.reference = curve + ([(curve[-1][0] if curve else 0.0, math.inf)] if diverged else [])


def _credit(p: Pilot, r: int, advanced: bool, outcome: Outcome) -> None:
    """Book an *outcome* on pilot *p*: its run advanced to rung *r* (else a replicate run)."""
    sim_s, wall_s, curve, diverged = outcome
    p.sim_s += sim_s
    p.wall_s += wall_s
    if advanced:  # runs to a target (:meth:`PilotRunner.to_target`) stay beside the new curve
        p.rung, p.curve = r, curve
        p.curves = [curve, *p.curves[1:]]
    else:
        p.curves.append(curve)
    if diverged:
        p.status = "diverged"
