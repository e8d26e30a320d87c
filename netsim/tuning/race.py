"""Recommend a (grouping, learning rate) pair by racing short pilot emulations.

The emulator itself is the model. Every candidate (a grouping from
:func:`netsim.tuning.candidates.candidate_groupings` × a learning rate η from a log grid)
starts from the same prepared data, shards, initial model and time draws (common random
numbers: one ``prepare`` and the scenario seed's streams); optionally (``alike``)
groupings whose measured timing is close to an earlier candidate's are not raced.
Successive halving: all candidates run to the first rung (1/8 of the horizon); the
better half (by the median loss of the last quarter of the run so far, evaluated on a
fixed subsample of the training set), at least four, continue to the next rung, twice as
long — the same runs, resumed, not restarted — and so on up to the last rung (half the
horizon), where the four best of those that reach it (``finalists``) each run twice more
with other time and minibatch draws (``replicates``). The pick is the finalist with the
lowest loss (mean over its runs of the last quarter of the curve smoothed as the
time-to-target criterion smooths it: :func:`_final_score`); with ``tie`` > 0, of the
finalists within that fraction of the lowest loss whose runs all reach the target, the
one with the fewest groups. Without a given target, only the finalists that reach SSGD's
level (the lowest loss a one-group pilot holds at the end of its pilot) at most ``guard``
times later than the fastest of them are considered (:func:`_guarded`). The target loss,
unless ``run.target_loss`` gives one, is the highest of the losses the lowest-loss such
finalist's runs hold at the end, which every run of the pick reaches. With a given target
the pick is the finalist whose runs all reach it first, and when none does, the one with
the lowest loss, and the reason says so. Why
these rungs, and how often the pick is within 5 % of an exhaustive search:
docs/GROUPING.md.

For every candidate the report gives the predicted time to target with an interval: for
a last-rung candidate whose runs all reach the target, the mean of their times (interval:
the earliest and latest); for a pilot that reached the target, read off its curve
(interval: where it crosses the target ± its own noise); otherwise extrapolated from the
pilot's last half with a straight line in (log t, loss) (interval: ± 2 standard errors of
the slope); and the cost of its pilot in simulated and wall seconds. The recommendation
says how sure it is: the pick's interval, and the other finalists whose intervals meet it
(:func:`overlapping`), in which case the race cannot tell them apart and a ``--verify``
or a larger ``--budget`` is advised.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from ..rng import Streams
from ..rules import GROUPING_RULE, RULES
from ..sim.engine import Prepared, Simulation, prepare
from ..sim.measurement import Measurement, measure, unreachable
from .candidates import candidate_groupings
from .pool import StickyPool, usable_cpus
from .progress import GroupTiming, group_timing, prune_alike

__all__ = [
    "Pilot",
    "Recommendation",
    "RecommendError",
    "recommend",
    "verify",
    "lr_grid",
    "rung_fractions",
    "edge_steps",
    "smoothed",
    "time_to_loss",
    "mean_curve",
    "mean_time_to_target",
    "overlapping",
    "pilot_rule",
]


GUARD = 1.5
"""The default of ``recommend(guard=...)``: without a target given, a finalist that reaches
the lowest loss a one-group pilot holds (SSGD's level by the end of its pilot) more than
this many times later than the fastest finalist is not picked, whatever its loss at the
last rung (:func:`_guarded`). On the benchmark's four suites it changed 6 picks of 192,
each to a better one (docs/GROUPING.md)."""

TIE = 0.0
"""The default of ``recommend(tie=...)``: finalists whose last-rung loss is within this
fraction of the lowest count as tied; of those (that reach the target in every run) the one
with the fewest groups is picked. Off: with the first rung at 1/8 of the horizon, a tie of
1 % changed 2 picks of the benchmark's 96 scenarios, both to a worse one (docs/GROUPING.md)."""


class RecommendError(ValueError):
    """Bad recommender input (empty candidates, bad η grid, too small a budget): one line."""


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
    groups: tuple
    lr: float
    curve: list = field(default_factory=list)
    rung: int = 0
    sim_s: float = 0.0
    wall_s: float = 0.0
    status: str = "ok"
    predicted: float = math.inf
    low: float = math.inf
    high: float = math.inf
    how: str = ""
    timing: GroupTiming | None = None
    curves: list = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} η={self.lr:.3g}"

    @property
    def loss(self) -> float:
        """Loss at the pilot's last evaluation (inf when diverged)."""
        return self.curve[-1][1] if self.curve and self.status == "ok" else math.inf

    def as_dict(self) -> dict:
        def num(x):
            return None if not math.isfinite(x) else float(x)

        return {
            "name": self.name,
            "lr": self.lr,
            "k": len(self.groups),
            "groups": [list(g) for g in self.groups],
            "rung": self.rung,
            "pilot_sim_s": self.sim_s,
            "pilot_wall_s": self.wall_s,
            "status": self.status,
            "loss": num(self.loss),
            "predicted_time_to_target_s": num(self.predicted),
            "interval_s": [num(self.low), num(self.high)],
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
    """The recommended grouping and η, the target, and every candidate's evidence."""

    name: str
    groups: tuple
    lr: float
    target: float
    target_source: str
    reason: str
    pilots: list
    rungs: list
    measurement: Measurement | None
    sim_s: float
    wall_s: float
    horizon: float
    verified: list = field(default_factory=list)
    pruned: dict = field(
        default_factory=dict
    )  # grouping not raced -> the alike grouping raced for it
    unseen: list = field(default_factory=list)
    """The scenario's timed events (``[[events]]`` as dicts) at or after the last rung: the race did not see them."""
    close: list = field(default_factory=list)
    """The other finalists the pick is not separated from (:func:`overlapping`): the race
    cannot tell which of them reaches the target first; empty when the pick stands apart."""

    @property
    def separated(self) -> bool:
        """Whether the pick's interval of time to target meets no other finalist's."""
        return not self.close

    @property
    def pick(self) -> Pilot:
        return next(p for p in self.pilots if p.name == self.name and p.lr == self.lr)

    def ranking(self) -> list[Pilot]:
        """Pilots best first: by predicted time to target, then rung, then loss."""
        return sorted(
            self.pilots,
            key=lambda p: (p is not self.pick, -p.rung, p.predicted, _score(p), p.label),
        )

    def as_dict(self) -> dict:
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


def lr_grid(base: float, points: int = 5, ratio: float = 3.0) -> tuple[float, ...]:
    """*points* learning rates spaced by *ratio*, centred (geometrically) on *base*.

    >>> lr_grid(0.1, 3)
    (0.0333..., 0.1, 0.3...)
    """
    half = (points - 1) / 2
    return tuple(float(base * ratio ** (i - half)) for i in range(points))


def rung_fractions(
    n_candidates: int, factor: float = 3.0, first: float = 1 / 27, last: float = 1.0
) -> list[float]:
    """Rung horizons as fractions of the full horizon: *first*, ×*factor*, ..., *last*.

    >>> rung_fractions(50)
    [0.037..., 0.111..., 0.333..., 1.0]
    >>> rung_fractions(50, last=1 / 3)
    [0.037..., 0.111..., 0.333...]
    """
    out = [first]
    while out[-1] * factor < last - 1e-9:
        out.append(out[-1] * factor)
    if out[-1] < last - 1e-9:
        out.append(last)
    return out


def _check_jobs(jobs) -> None:
    """A *jobs* argument of :func:`recommend` or :func:`verify`: None or >= 1 (else RecommendError)."""
    if jobs is not None and not jobs >= 1:
        raise RecommendError(f"jobs must be >= 1, got {jobs!r}")


def _validate_lrs(lrs) -> tuple[float, ...]:
    lrs = tuple(float(x) for x in lrs)
    if not lrs:
        raise RecommendError("the learning-rate grid is empty")
    bad = [x for x in lrs if not (x > 0 and math.isfinite(x))]
    if bad:
        raise RecommendError(f"learning rates must be finite and > 0, got {bad[0]!r}")
    return tuple(sorted(set(lrs)))


def pilot_rule(scenario, groups, lr, rule=None):
    """The raced rule (default: the scenario's GSGD) with fixed *groups* and step *lr*,
    keeping its other options (``Rule.piloted``)."""
    base = rule if rule is not None else scenario.rules.get(GROUPING_RULE)
    if base is None:
        return RULES[GROUPING_RULE](lr, [list(g) for g in groups])
    return base.piloted(groups, lr)


def base_lr(scenario) -> float:
    """The η the scenario gives GSGD (else its run algorithm's η): the centre of the default grid."""
    rule = scenario.rules.get(GROUPING_RULE) or scenario.rules[scenario.run.algorithm]
    return float(rule.lr)


def recommend(
    scenario,
    prepared: Prepared | None = None,
    *,
    measurement: Measurement | None = None,
    candidates: dict | None = None,
    lrs=None,
    factor: float = 2.0,
    first: float = 1 / 8,
    last: float = 1 / 2,
    finalists: int = 4,
    replicates: int = 3,
    budget_s: float | None = None,
    eval_rows: int = 2000,
    target: float | None = None,
    rule=None,
    alike: float = 0.0,
    jobs: int | None = None,
    on_rung=None,
    on_progress=None,
    widen: int = 3,
    scheduler=None,
    extrapolate: bool = False,
    safer: bool = False,
    tie: float = TIE,
    guard: float = GUARD,
) -> Recommendation:
    """Race (grouping, η) candidates by successive halving of pilot emulations (module doc).

    Parameters
    ----------
    scenario, prepared, measurement : its horizon ``run.until`` (s) scales the rungs; shared data,
        shards and initial model; the probe phase (made from the scenario's streams when None).
    candidates, lrs : ``{name: groups}`` (:func:`candidate_groupings`); η grid (:func:`lr_grid`).
    factor : keep 1/*factor* of the candidates per rung, at least *finalists*; rung
        horizons grow by *factor*, from *first* to *last* of the horizon.
    replicates : runs per finalist (its pilot and ``replicates − 1`` runs with other time and
        minibatch draws; the finalists: the best *finalists* at the last rung).
    budget_s, eval_rows : cap on the pilots' simulated seconds (rung horizons shrink to fit);
        training rows the pilots evaluate the loss on (a fixed subsample).
    target : default ``run.target_loss``, else the highest loss any run of the lowest-loss
        finalist holds at the end of the last rung.
    rule : the GSGD rule asking (groups, k_max, probe rounds, η, options); default the scenario's.
    alike : > 0: groupings timed within ``e**alike`` of an earlier one are not raced (prune_alike).
    jobs, scheduler : processes for the pilots (:mod:`netsim.tuning.pool`; None: the usable
        CPUs, at most one per 4 candidates; the same result for any *jobs*), or a Dask
        scheduler (address or Client) whose workers run them (:mod:`.dask_pool`).
    on_rung, on_progress : ``on_rung(rung, rungs, candidates)`` before each rung (0-based; may
        raise to abandon the race), ``on_progress(share)`` (:func:`_done_share`).
    widen : with the default grid and no *budget_s*, up to this many η steps beyond
        either end of the grid per grouping after the first rung (:func:`edge_steps`).
    extrapolate, safer, tie : rank by the loss headed for at the horizon (:func:`_headed_score`);
        near-ties (within *tie*, :data:`TIE`: off) to the fewest groups, then smaller η.
    guard : pick among the finalists at most *guard* times slower to SSGD's level (:data:`GUARD`).

    Raises :exc:`RecommendError` for empty candidates or η grid, η <= 0, too small a budget.
    """
    wall0 = time.perf_counter()
    prepared = prepared or prepare(scenario)
    rule = rule if rule is not None else scenario.rules.get(GROUPING_RULE)
    measurement, candidates = _measured(scenario, prepared, rule, measurement, candidates)
    lrs, widen = _grid(scenario, rule, lrs, widen if budget_s is None else 0)
    given_target = _check_options(scenario, factor, first, last, replicates, jobs, target, guard)
    pilots, pruned = _pilots(measurement, candidates, lrs, alike)
    plan = ((first, last), finalists, budget_s, replicates)
    horizons = _plan(scenario.run.until, measurement, len(pilots), factor, *plan)
    runner = _Runner.of(scenario, prepared, rule, pilots, horizons, replicates, eval_rows)
    how = _Halving(factor, finalists, widen, lrs, extrapolate, safer, tie)
    finals = _race(runner, how, jobs, on_rung, on_progress, scheduler)
    chosen = _choose(scenario, horizons, finals, pilots, given_target, target, how, guard)
    pick, reason, target, source = chosen
    close = overlapping(pick, finals)  # the reason ends with how sure the race is: _sureness
    sim_s = sum(p.sim_s for p in pilots) + (0.0 if measurement is None else measurement.duration)
    return Recommendation(
        *(pick.name, pick.groups, pick.lr, target, source, f"{reason}; {_sureness(pick, close)}"),
        *(pilots, horizons, measurement, sim_s, time.perf_counter() - wall0, scenario.run.until),
        pruned=pruned,
        unseen=_unseen_events(scenario.events, horizons[-1]),
        close=close,
    )


def _grid(scenario, rule, lrs, widen: int) -> tuple[tuple[float, ...], int]:
    """(the race's η grid: *lrs*, else :func:`lr_grid` around the rule's η; the η steps it may
    be widened by: *widen* with the default grid, 0 with a grid given, which is kept to)."""
    if lrs is not None:
        return _validate_lrs(lrs), 0
    return _validate_lrs(lr_grid(rule.lr if rule is not None else base_lr(scenario))), widen


def _pilots(measurement, candidates: dict, lrs, alike: float) -> tuple[list, dict]:
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


def _plan(H, measurement, n, factor, span, finalists, budget_s, replicates) -> list[float]:
    """Rung horizons (s) for *n* pilots over a horizon *H* (s): from ``span[0]`` to
    ``span[1]`` of it by *factor*, shrunk to fit *budget_s* (:func:`_fit_budget`, a first
    rung of at least two of the slowest worker's measured iterations)."""
    slowest = (
        float(measurement.iteration.mean(axis=1).max()) if measurement is not None else H / 1000
    )
    return _fit_budget(
        [f * H for f in rung_fractions(n, factor, *span)],
        n,
        factor,
        finalists,
        budget_s,
        2 * slowest,
        replicates,
    )


def _measured(scenario, prepared: Prepared, rule, measurement, candidates):
    """(measurement, candidates) of a race: the probe phase made from the scenario's
    streams and :func:`candidate_groupings` on it, where not given.

    Raises the measurement's error when a worker cannot reach the server, and
    RecommendError for an empty candidate set."""
    seed = scenario.run.seed
    spec = rule.grouping if rule is not None and hasattr(rule, "grouping") else None
    if measurement is None and candidates is None:
        measurement = measure(
            scenario, prepared.w0.size, spec.probe_rounds if spec else 5, Streams(seed)
        )
    error = None if measurement is None else unreachable(measurement, scenario)
    if error is not None:
        raise error
    if candidates is None:
        candidates = candidate_groupings(
            measurement.iteration,
            hand=rule.groups if spec else None,
            k_max=spec.k_max if spec else 8,
            seed=seed,
        )
    if not candidates:
        raise RecommendError("the candidate set is empty: no grouping to recommend")
    return measurement, candidates


def _check_options(scenario, factor, first, last, replicates, jobs, target, guard) -> float | None:
    """The target loss given (*target*, else ``run.target_loss``; None: none), after checking
    the race's options (RecommendError, one line, on the first bad one)."""
    if not (factor > 1 and 0 < first <= last <= 1):
        raise RecommendError(
            f"need factor > 1 and 0 < first <= last <= 1, got {factor!r}, {first!r}, {last!r}"
        )
    if replicates < 1:
        raise RecommendError(f"replicates must be >= 1, got {replicates!r}")
    if not guard >= 1:
        raise RecommendError(f"guard must be >= 1 (inf: off), got {guard!r}")
    _check_jobs(jobs)
    if given_target := (target if target is not None else (scenario.run.target_loss or None)):
        if not given_target > 0:
            raise RecommendError(f"target loss must be > 0, got {given_target!r}")
    return given_target


@dataclass
class _Runner:
    """The pilot runs of one race: what they share (prepared data, evaluation rows, the
    pilots' scenario) and this process's paused pilots. :meth:`work` runs in the pool's
    processes (a forked child keeps its own ``sims``); :meth:`batch` in this one."""

    scenario: object
    prepared: Prepared
    rule: object
    pilots: list
    horizons: list
    replicates: int
    pilot_sc: object
    eval_set: tuple
    sims: dict = field(default_factory=dict)
    """This process's pilots: pilot index → (its paused run, rungs passed)."""

    @classmethod
    def of(cls, scenario, prepared, rule, pilots, horizons, replicates, eval_rows) -> _Runner:
        """The runner of a race over *pilots* to rung *horizons* (s), its loss evaluated on
        *eval_rows* training rows (drawn from the scenario seed) every 1/8 of the first rung."""
        pilot_sc = replace(
            scenario,
            run=replace(
                scenario.run,
                eval_every=min(horizons[0] / 8, scenario.run.until / 100),
                eval_every_updates=0,
                timeline_until=0.0,
                target_loss=0.0,
            ),
        )
        rows = np.sort(
            np.random.default_rng(scenario.run.seed).permutation(prepared.dataset.X_train.shape[0])[
                :eval_rows
            ]
        )
        eval_set = (
            _compact(prepared.dataset.X_train[rows]),
            prepared.dataset.y_train[rows],
        )  # gathered once for all pilots
        return cls(scenario, prepared, rule, pilots, horizons, replicates, pilot_sc, eval_set)

    def per_s(self, i: int) -> float:
        """Pilot *i*'s wall cost per simulated second, for spreading the work: measured once
        it ran, else guessed from its gradients and updates per second."""
        p = self.pilots[i]
        if p.sim_s > 0 and p.wall_s > 0:
            return p.wall_s / p.sim_s
        return 1e-4 * (
            1.0
            + (p.timing.gradients_per_s + p.timing.updates_per_s if p.timing is not None else 0.0)
        )

    def _simulation(self, sc, groups, lr) -> Simulation:
        """A run of scenario *sc* with *groups* and η *lr*, its loss on the fixed evaluation rows."""
        pilot = pilot_rule(self.scenario, groups, lr, self.rule)
        return Simulation(sc, pilot.name, self.prepared, rule=pilot, eval_set=self.eval_set)

    def work(self, task):
        """A pilot resumed to a rung, or a last-rung candidate's replicate run:
        (simulated s, wall s, curve [(t s, loss)], diverged). The task carries the pilot's
        groups and η: a child forked before a pilot was added does not know it."""
        kind, i, arg, (groups, lr) = task
        if kind == "replicate":
            run = replace(
                self.pilot_sc.run,
                seed=replicate_seed(self.scenario.run.seed, arg),
                until=self.horizons[-1],
            )
            sim = self._simulation(replace(self.pilot_sc, run=run), groups, lr)
            w0 = time.perf_counter()
            res = sim.run()
            return res.sim_time, time.perf_counter() - w0, _losses(res.curve), res.status != "ok"
        *before, until = arg  # the rung horizons so far (s): this rung's last
        sim, passed = self.sims.get(i, (None, -1))
        if passed != len(before):  # new here, or moved from another process: replay the rungs
            sim = self._simulation(self.pilot_sc, groups, lr)
            sim.begin()
            for h in before:
                _to_rung(sim, h)
        t0, w0 = sim.env.now, time.perf_counter()
        _to_rung(sim, until)
        self.sims[i] = sim, len(before) + 1
        return (
            sim.env.now - t0,
            time.perf_counter() - w0,
            _losses(sim.recorder.curve),
            bool(sim.ps.diverged),
        )

    def batch(self, pool, r: int, ids: list, replicate: bool, advance: bool = True) -> None:
        """Advance pilots *ids* to rung *r* (with *replicate*, also their replicate runs;
        without *advance*, only those)."""
        pilots, horizons = self.pilots, self.horizons
        h = horizons[r]
        tasks = [
            ("advance", i, tuple(horizons[: r + 1]), (pilots[i].groups, pilots[i].lr))
            for i in (ids if advance else ())
        ]
        if replicate:  # the replicates do not depend on the last rung: one batch
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
                self.per_s(i) * (h - start if kind == "advance" else horizons[-1])
                for kind, i, _, _ in tasks
            ],
            [self.per_s(i) * h for _, i, _, _ in tasks],
        )
        for (kind, i, _, _), outcome in zip(tasks, outcomes):
            _credit(pilots[i], r, kind == "advance", *outcome)


def _credit(p: Pilot, r: int, advanced: bool, sim_s, wall_s, curve, diverged) -> None:
    """Book an outcome on pilot *p*: its run advanced to rung *r* (else a replicate run)."""
    p.sim_s += sim_s
    p.wall_s += wall_s
    if advanced:
        p.rung, p.curve = r, curve
        p.curves = [curve]
    else:
        p.curves.append(curve)
    if diverged:
        p.status = "diverged"


@dataclass(frozen=True)
class _Halving:
    """How the race halves: keep 1/*factor* per rung, at least *finalists*; after the first
    rung, up to *widen* η steps beyond the grid *lrs* (:func:`edge_steps`); how it judges the
    last rung (*extrapolate*, *safer*: see :func:`recommend`)."""

    factor: float
    finalists: int
    widen: int
    lrs: tuple
    extrapolate: bool = False
    safer: bool = False
    tie: float = TIE

    @property
    def ratio(self) -> float:
        """The η grid's ratio (3 for a grid of one)."""
        return self.lrs[1] / self.lrs[0] if len(self.lrs) > 1 else 3.0


def _race(
    runner: _Runner, halving: _Halving, jobs: int | None, on_rung, on_progress=None, scheduler=None
) -> list[Pilot]:
    """Run the successive halving over *runner*'s pilots (new ones appended to its list
    when the grid is widened) and return the last rung's candidates; *on_rung* and
    *on_progress* as in :func:`recommend` (the latter with 1.0 at the end too)."""
    pilots, horizons = runner.pilots, runner.horizons
    alive = list(range(len(pilots)))
    if jobs is None:  # a process per CPU, but a few first-rung pilots each (a fork is not free)
        jobs = max(1, min(usable_cpus(), len(pilots) // 4))
    if scheduler is not None:
        from .dask_pool import DaskStickyPool

        made: StickyPool = DaskStickyPool(runner.work, scheduler)
    else:
        made = StickyPool(runner.work, jobs)
    with made as pool:  # one thread per native pool, in every process
        for r in range(len(horizons)):
            if on_progress is not None:
                on_progress(_done_share(runner, halving, alive, r))
            if on_rung is not None:
                on_rung(r, len(horizons), len(alive))
            last = r == len(horizons) - 1
            runner.batch(pool, r, alive, last and len(alive) <= halving.finalists)
            keep = max(halving.finalists, math.ceil(len(alive) / halving.factor))
            if r == 0 and not last:  # pilots added here compete for the *keep* places
                alive += _widen(runner, pool, alive, halving)
            if last:
                break
            alive = _best(pilots, alive, keep)
        if len(alive) > halving.finalists:  # more reached the last rung: replicate its best
            alive = _best(pilots, alive, halving.finalists)
            runner.batch(pool, len(horizons) - 1, alive, True, advance=False)
    if on_progress is not None:
        on_progress(1.0)
    runner.sims.clear()  # free the SimPy state of every pilot
    for p in pilots:
        if p.rung < len(horizons) - 1:
            p.curves = []
    return [pilots[i] for i in alive]


def _done_share(runner: _Runner, halving: _Halving, alive: list, r: int) -> float:
    """Share (0..1) of the race's work done before rung *r*, which the pilots *alive* start:
    the wall seconds its pilots have spent, over those plus what the rungs from *r* on are
    planned to cost (the candidates each keeps, then the last rung's replicate runs, in
    simulated seconds) at the mean wall cost per simulated second of the pilots *alive*
    (:meth:`_Runner.per_s`: the candidates that stay are the ones updating most, dearer to
    emulate than the ones that left).

    >>> pilots = [Pilot("g", ((0,),), 1.0, sim_s=4.0, wall_s=4.0) for _ in range(8)]
    >>> runner = _Runner(None, None, None, pilots, [1.0, 2.0, 4.0], 3, None, ())
    >>> _done_share(runner, _Halving(2.0, 2, 0, (1.0,)), list(range(8)), 1)   # left: 8·1 + 4·2 + 2·2·4 = 32 s
    0.5
    """
    horizons = runner.horizons
    spent = sum(p.wall_s for p in runner.pilots)
    rate = float(np.mean([runner.per_s(i) for i in alive])) if alive else 0.0
    left, k = 0.0, len(alive)
    for j in range(r, len(horizons)):
        left += k * (horizons[j] - (horizons[j - 1] if j else 0.0))
        if j < len(horizons) - 1:
            k = max(halving.finalists, math.ceil(k / halving.factor))
    left += min(k, halving.finalists) * (runner.replicates - 1) * horizons[-1]
    return spent / (spent + left * rate) if spent + left * rate > 0 else 1.0


def _best(pilots: list, ids: list, keep: int) -> list[int]:
    """The *keep* of pilots *ids* with the lowest rung score (:func:`_score`), best first."""
    return sorted(ids, key=lambda i: (_score(pilots[i]), pilots[i].label))[:keep]


def _widen(runner: _Runner, pool, alive: list, halving: _Halving) -> list[int]:
    """Pilots beyond the η grid (:func:`edge_steps`, up to ``halving.widen`` rounds), run to
    the first rung: their indices (appended to ``runner.pilots``)."""
    pilots, added = runner.pilots, []
    for _ in range(halving.widen):
        steps = edge_steps([pilots[i] for i in alive + added], halving.ratio)
        if not steps:
            break
        new = list(range(len(pilots), len(pilots) + len(steps)))
        pilots += [Pilot(p.name, p.groups, lr, timing=p.timing) for p, lr in steps]
        runner.batch(pool, 0, new, False)
        added += new
    return added


def _target(finals: list, given_target, given: bool, H: float, H_run: float, how: _Halving):
    """(target loss, its source, {id(pilot): last-rung score}) of the race's *finals*: the
    target given (*given*: by the caller, else ``run.target_loss``), else the highest loss any
    run of the lowest-scoring finalist holds at the last rung's end *H_run* (s)."""
    ok = [p for p in finals if p.status == "ok" and p.curve]
    score = _headed_score if how.extrapolate else _final_score
    final = {id(p): score(p, H) for p in ok}  # Pilot is unhashable
    if given_target:
        return float(given_target), "given" if given else "run.target_loss", final
    if ok:
        best = min(ok, key=lambda p: (final[id(p)], p.label))
        target = max(_last_quarter(c) for c in best.curves)
        return target, f"loss every run of {best.label} holds at {H_run:g} s", final
    return math.inf, "no candidate finished", final


def _choose(scenario, horizons, finals, pilots, given_target, target, how, guard):
    """(pick, reason, target loss, its source) of a race to rungs *horizons* (s): the
    finalists the guard keeps (:func:`_guarded`, without a target given), the target
    (:func:`_target`; *target*: the caller's), every pilot's predicted time to it, and the
    pick among those kept (:func:`_pick`)."""
    H, H_run, given = scenario.run.until, horizons[-1], target is not None
    eligible, guarded = (finals, "") if given_target else _guarded(finals, pilots, guard, H)
    target, source, final = _target(eligible, given_target, given, H, H_run, how)
    _predict_all(pilots, finals, target, H)
    pick, reason = _pick(eligible, final, target, given_target, H, H_run, how, guarded)
    return pick, reason, target, source


def _predict_all(pilots: list, finals: list, target: float, H: float) -> None:
    """Every pilot's predicted time to *target* (:func:`_predict`); a finalist with several
    runs that all reach it: the mean of their times (interval: the earliest and latest)."""
    for p in pilots:
        _predict(p, target, H)
    for p in finals:
        if p.status != "ok" or not p.curve:
            continue
        each = [time_to_loss(c, target, H) for c in p.curves]
        if len(each) > 1 and None not in each:
            p.predicted, p.low, p.high = float(np.mean(each)), min(each), max(each)
            p.how = f"emulated, {len(each)} runs"


def _pick(
    finals: list,
    final: dict,
    target: float,
    given_target,
    H: float,
    H_run: float,
    how: _Halving,
    guarded: str = "",
):
    """(pick, reason) among the last rung's *finals* (those :func:`_guarded` kept; *final*:
    their scores by id; *how*: the race's settings, its near-tie rule ``tie`` and ``safer``;
    *guarded*: what the guard left out, for the reason); of a horizon *H* (s), the race ran
    to *H_run*."""
    ok = [p for p in finals if id(p) in final]
    reached = [p for p in ok if _reaches(p, target, H)]
    if reached and given_target:
        pick = min(reached, key=lambda p: (p.predicted, final[id(p)], p.label))
        return pick, (
            f"reaches the target loss {target:.5g} first ({pick.predicted:.4g} s) "
            f"{_among(len(finals))}"
        )
    if ok and given_target:
        pick = min(ok, key=lambda p: (final[id(p)], p.label))
        return pick, (
            f"no finalist reaches the target loss {target:.5g} within {H_run:g} s: "
            f"fell back to the lowest loss ({final[id(pick)]:.5g})"
        )
    if not ok:
        pick = min(finals, key=lambda p: p.label)
        return (
            pick,
            "every finalist diverged: fell back to the first finalist; try a smaller η grid",
        )
    best, pick = _tie_pick(ok, reached, lambda p: final[id(p)], how.safer, how.tie)
    if pick is best:
        loss, among = f"({final[id(pick)]:.5g})", _among(len(finals))
        lowest = f"{loss} {among}{guarded}" if guarded else f"{among} {loss}"
        return pick, f"lowest loss at {H_run:g} s {lowest}, reached first ({pick.predicted:.4g} s)"
    return pick, (
        f"fewest groups ({len(pick.groups)}) among the finalists within {how.tie:.0%} of the lowest "
        f"loss at {H_run:g} s ({final[id(pick)]:.5g} against {final[id(best)]:.5g} for "
        f"{best.label}, a tie at the race's resolution); reaches the target at "
        f"{pick.predicted:.4g} s"
    )


def _among(n: int) -> str:
    """``among N finalists``, or ``as the only finalist``."""
    return "as the only finalist" if n == 1 else f"among {n} finalists"


def _guarded(finals: list, pilots: list, guard: float, H: float) -> tuple[list, str]:
    """(the finalists the target and the pick come from, a note for the reason): of the
    *finals* that finished, those that reach SSGD's level, the lowest loss any one-group
    pilot of *pilots* holds at the end of its pilot (:func:`_score`), at most *guard* times
    later than the fastest of them (mean over each one's runs; smoothed as over a horizon
    *H*, s). All *finals* and no note when no one-group pilot finished, no finalist reaches
    that level, or none is left out.

    The benchmark scores a pick by its time to the loss SSGD ends at, which the best
    groupings reach early; the last rung ranks by the loss level at its end. A finalist
    lowest there but much slower to SSGD's level (a larger η of the same grouping, often)
    is left out."""
    one = [p for p in pilots if len(p.groups) == 1 and p.status == "ok" and p.curve]
    ok = [p for p in finals if p.status == "ok" and p.curve]
    if not one or len(ok) < 2 or not guard < math.inf:
        return finals, ""
    level = min(_score(p) for p in one)
    times = {}
    for p in ok:
        each = [time_to_loss(c, level, H) for c in p.curves or [p.curve]]
        times[id(p)] = math.inf if None in each else float(np.mean(each))
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


def _reaches(p: Pilot, target: float, H: float) -> bool:
    """Whether every run of finalist *p* reaches *target* (smoothed as over a horizon *H*, s)."""
    return all(time_to_loss(c, target, H) is not None for c in p.curves or [p.curve])


def edge_steps(pilots: list, ratio: float) -> list[tuple]:
    """The η steps beyond the grid the first rung calls for: ``[(pilot, η)]``, one per
    grouping (in the order of *pilots*):

    * its best pilot so far (lowest :func:`_score`) is at the top of its η values and
      stable: η × *ratio*;
    * all its pilots are unstable (diverged, or their loss risen to more than
      :data:`UNSTABLE` times that at the start): the smallest η / *ratio* (the whole
      grid lies beyond the edge of stability).

    Nothing else: a best η at the bottom among stable larger ones is not extended. On a
    short first rung, small steps look better than they end while larger ones go through
    their first transients, and extra small-η pilots crowd good ones out of the next rung
    (on the benchmark this lost good picks).

    >>> a = [Pilot("g", ((0,),), lr, curve=[(0.0, 0.7), (1.0, loss)]) for lr, loss in ((1.0, 0.5), (3.0, 0.4))]
    >>> [(p.lr, lr) for p, lr in edge_steps(a, 3.0)]
    [(3.0, 9.0)]
    >>> a.append(Pilot("g", ((0,),), 9.0, curve=[(0.0, 0.7), (1.0, 0.45)]))
    >>> edge_steps(a, 3.0)
    []
    >>> b = [Pilot("g", ((0,),), 3.0, status="diverged"), Pilot("g", ((0,),), 1.0, curve=[(0.0, 0.7), (1.0, 2.0)])]
    >>> [(p.lr, lr) for p, lr in edge_steps(b, 3.0)]
    [(1.0, 0.333...)]
    """
    by_name: dict[str, list] = {}
    for p in pilots:
        by_name.setdefault(p.name, []).append(p)
    out = []
    for same in by_name.values():
        same = sorted(same, key=lambda p: p.lr)
        best = min(same, key=lambda p: (_score(p), p.lr))
        if all(_unstable(p) for p in same):
            out.append((same[0], same[0].lr / ratio))
        elif best is same[-1]:
            out.append((best, best.lr * ratio))
    return out


UNSTABLE = 1.5
"""A pilot whose loss (:func:`_score`) is above this many times its loss at the start
is unstable (:func:`edge_steps`); early transients of stable steps stay well below."""


def _unstable(p: Pilot) -> bool:
    """Diverged, or its loss risen above :data:`UNSTABLE` times that at the start."""
    score = _score(p)
    return not math.isfinite(score) or score > UNSTABLE * p.curve[0][1]


def overlapping(pick: Pilot, others: list) -> list[Pilot]:
    """The pilots of *others* (*pick* aside) whose interval of time to target ``[low, high]``
    (s) meets the pick's: ``low <= pick.high`` and ``pick.low <= high``, in the order given.

    >>> a = Pilot("a", ((0,),), 1.0, low=10.0, high=12.0)
    >>> [p.name for p in overlapping(a, [a, Pilot("b", ((0,),), 1.0, low=11.5, high=15.0),
    ...                                  Pilot("c", ((0,),), 1.0, low=12.5, high=14.0)])]
    ['b']
    """
    return [p for p in others if p is not pick and p.low <= pick.high and pick.low <= p.high]


def _sureness(pick: Pilot, close: list) -> str:
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


def _tie_pick(ok: list, reached: list, score, safer: bool = False, tie: float = TIE) -> tuple:
    """(lowest-loss finalist, pick) among the finalists *ok* by *score* (a pilot's loss): the
    pick is, of those in *reached* (every run reaches the target) within the fraction *tie*
    of the lowest loss, the one with the fewest groups (then, with *safer*, the smallest η;
    then the lowest loss, then the label); the best itself when none."""
    best = min(ok, key=lambda p: (score(p), p.label))
    lowest = score(best)
    tied = [p for p in reached if score(p) - lowest <= tie * abs(lowest)] or [best]
    return best, min(tied, key=lambda p: (len(p.groups), p.lr if safer else 0.0, score(p), p.label))


def _unseen_events(events, until: float) -> list[dict]:
    """The timed *events* the race does not see (at or after *until*, s) as dicts, time
    order; a crash seen before *until* whose workers come back after it adds that return
    (a ``recover`` at crash time + duration)."""
    out = [e.as_dict() for e in events if e.time >= until]
    out += [
        {"time": e.time + e.duration, "kind": "recover", "workers": list(e.workers)}
        for e in events
        if e.kind == "crash" and e.duration > 0 and e.time < until <= e.time + e.duration
    ]
    return sorted(out, key=lambda e: e["time"])


def _compact(X):
    """The pilots' evaluation rows *X* (m, d) as a CSR matrix when under a third of the entries
    are nonzero (MNIST: 19 %, evaluated 2.4× faster; the same losses up to rounding), else *X*."""
    if isinstance(X, np.ndarray) and np.count_nonzero(X) * 3 < X.size:
        return sp.csr_matrix(X)
    return X


def _losses(curve) -> list[tuple[float, float]]:
    """(time s, loss) pairs of a run's curve rows (update, time s, loss, accuracy)."""
    return [(t, loss) for _, t, loss, _ in curve]


def _to_rung(sim: Simulation, until: float) -> None:
    """Advance a pilot to the rung horizon *until* (s) and evaluate there (unless it stopped)."""
    sim.advance(until)
    if not sim.stopped:
        sim.evaluate()


def _score(p: Pilot) -> float:
    """Rung ranking: the median loss of the last quarter of the pilot's run so far (the
    mean over its replicate runs when it has them; inf when diverged)."""
    if p.status != "ok" or not p.curve:
        return math.inf
    return float(np.mean([_last_quarter(c) for c in (p.curves or [p.curve])]))


def _final_score(p: Pilot, horizon: float) -> float:
    """Last-rung ranking: the mean over the candidate's runs of its loss curve smoothed as the
    time-to-target criterion smooths it (trailing median over :data:`SMOOTH` × *horizon*, s;
    at most a quarter of the run, which only rungs shrunk by a budget reach), averaged over
    the last quarter of the run; inf when diverged.

    The rung ranking's median of the raw last quarter (:func:`_score`) ignores loss
    excursions up to an eighth of the run long; the criterion counts those longer than
    half its window. So a large η whose loss swings high for stretches now looks as slow as
    it is (on the benchmark: 45 → 50 of 72 scenarios within 5 %, the worst regrets 187–341 %
    → 234 %; docs/GROUPING.md)."""
    if p.status != "ok" or not p.curve:
        return math.inf
    out = []
    for c in p.curves or [p.curve]:
        end = c[-1][0]
        window = min(
            SMOOTH * horizon, end / 4
        )  # rungs shrunk by a budget: at most the last quarter
        out.append(float(np.mean([loss for t, loss in smoothed(c, window) if t >= 0.75 * end])))
    return float(np.mean(out))


def _headed_score(p: Pilot, horizon: float) -> float:
    """:func:`_final_score` carried on to *horizon* (s): for each run, a line in (log t, loss)
    fitted to its smoothed curve over the last half of the run, and the fall it predicts from
    the middle of the run's last quarter to *horizon* added (a rise counts as none); the mean
    over the runs. A candidate still falling at the end of the last rung is credited for the
    rest of the horizon the race did not see; one that has levelled off, not.

    >>> run = [(t, 2.0 - 0.5 * math.log(t)) for t in np.arange(1.0, 17.0)]
    >>> p = Pilot("g", ((0,),), 1.0, curve=run, curves=[run])
    >>> round(_headed_score(p, 19.0) - _final_score(p, 19.0) + 0.5 * math.log(19 / 14), 9)
    0.0
    """
    base = _final_score(p, horizon)
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


def _last_quarter(curve) -> float:
    end = curve[-1][0]
    return float(np.median([loss for t, loss in curve if t >= 0.75 * end]))


def replicate_seed(seed: int, k: int) -> int:
    """Seed of the recommender's replicate run *k* (k >= 1), derived from the scenario *seed*."""
    return int(np.random.SeedSequence([seed, 0x5EED, k]).generate_state(1)[0] >> 1)


def _fit_budget(
    horizons: list[float],
    n: int,
    factor: float,
    finalists: int,
    budget_s,
    min_pilot: float,
    replicates: int = 1,
) -> list[float]:
    """Rung horizons (s), scaled down when their planned cost — *n* pilots through the
    rungs, then ``replicates − 1`` more runs of each last-rung candidate — exceeds
    *budget_s* (simulated s).

    Raises RecommendError when the scaled first rung would be shorter than *min_pilot* (s).

    >>> _fit_budget([1.0, 3.0, 9.0], 10, 3.0, 2, 24.0, 0.1, replicates=2)   # plan: 10 + 4·2 + 2·6 + 2·9 = 48
    [0.5, 1.5, 4.5]
    """
    if budget_s is None:
        return horizons
    alive, cost, prev = n, 0.0, 0.0
    for r, h in enumerate(horizons):
        if r:
            alive = min(alive, max(finalists, math.ceil(alive / factor)))
        cost += alive * (h - prev)
        prev = h
    cost += min(alive, finalists) * (replicates - 1) * horizons[-1]
    if cost <= budget_s:
        return horizons
    scale = budget_s / cost
    if not budget_s > 0 or horizons[0] * scale < min_pilot * (
        1 - 1e-12
    ):  # rounding: the budget named below runs
        need = math.ceil(
            cost * min_pilot / horizons[0] * (1 - 1e-12)
        )  # the plan scaled to a first rung of min_pilot
        raise RecommendError(
            f"pilot budget {budget_s:g} s is too small: {n} candidates through "
            f"{len(horizons)} rungs need at least {need:d} s (a first rung of "
            f"{min_pilot:.4g} s each)"
        )
    return [h * scale for h in horizons]


SMOOTH = 1 / 20  # trailing window of the smoothed loss curves, as a fraction of the horizon


def smoothed(curve, window: float) -> list[tuple[float, float]]:
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


def time_to_loss(curve, target: float, horizon: float) -> float | None:
    """First time (s) the smoothed *curve* (window: 1/20 of *horizon*, s) is at or below *target*, or None."""
    return next((t for t, loss in smoothed(curve, SMOOTH * horizon) if loss <= target), None)


def mean_curve(curves, horizon: float, points: int = 101) -> tuple[np.ndarray, np.ndarray]:
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


def mean_time_to_target(curves, target: float, horizon: float) -> tuple[float, float, bool]:
    """(first time, s, the mean smoothed curve of *curves* is at or below *target* — 2 ×
    *horizon* when never; its final value; whether it reached the target)."""
    grid, mean = mean_curve(curves, horizon)
    hit = np.flatnonzero(mean <= target)
    final = float(mean[-1])
    return (float(grid[hit[0]]), final, True) if hit.size else (2 * horizon, final, False)


def _predict(p: Pilot, target: float, horizon: float) -> None:
    """Time to *target* (s) with an interval, from *p*'s pilot curve."""
    if p.status != "ok" or len(p.curve) < 2 or not math.isfinite(target):
        p.predicted = p.low = p.high = math.inf
        p.how = "diverged" if p.status != "ok" else "too short"
        return
    t = np.array([c[0] for c in p.curve])
    loss = np.array([c[1] for c in smoothed(p.curve, SMOOTH * horizon)])
    noise = float(np.median(np.abs(np.diff(loss)))) if len(loss) > 2 else 0.0
    hit = np.flatnonzero(loss <= target)
    if hit.size:
        p.predicted = float(t[hit[0]])
        early = np.flatnonzero(loss <= target + noise)
        late = np.flatnonzero(loss <= target - noise)
        p.low = float(t[early[0]])
        p.high = float(t[late[0]]) if late.size else horizon
        p.how = "emulated"
        return
    half = t >= t[-1] / 2
    x, y = np.log(np.maximum(t[half], 1e-12)), loss[half]
    p.how = "extrapolated"
    if len(x) < 3 or np.ptp(x) == 0:
        p.predicted = p.low = p.high = math.inf
        return
    slope, icpt = np.polyfit(x, y, 1)
    resid = y - (slope * x + icpt)
    se = float(np.sqrt(resid.var() * len(x) / max(len(x) - 2, 1) / ((x - x.mean()) ** 2).sum()))

    def cross(s: float) -> float:
        if s >= 0:
            return math.inf
        z = (target - (y.mean() - s * x.mean())) / s
        return float(math.exp(z)) if z < 700 else math.inf

    p.predicted = max(cross(slope), float(t[-1]))
    p.low = max(cross(slope - 2 * se), float(t[-1]))
    p.high = max(cross(slope + 2 * se), float(t[-1]))


def decide(scenario, prepared: Prepared, measurement: Measurement, rule, on_rung) -> Recommendation:
    """The grouping decision a run with ``grouping = "auto"`` injects into the engine
    (``Simulation(..., decide=decide)``): :func:`recommend` on the run's own measurement."""
    return recommend(scenario, prepared, measurement=measurement, rule=rule, on_rung=on_rung)


def verify(
    scenario,
    rec: Recommendation,
    prepared: Prepared | None = None,
    top: int = 3,
    jobs: int | None = None,
) -> list[dict]:
    """Run the *top* candidates of *rec* in full (whole training set evaluated every
    1/100 of the horizon, scenario seed) and set ``rec.verified``: per candidate the
    predicted time to target (s, with its interval) beside the emulated one.

    *jobs*: processes the runs are spread over (as in :func:`recommend`; None: one per
    usable CPU, at most one per run). BLAS and OpenMP run one thread per process, so the rows are
    the same for any *jobs*."""
    if top < 1:
        raise RecommendError(f"--verify needs at least one candidate, got {top!r}")
    _check_jobs(jobs)
    prepared = prepared or prepare(scenario)
    H = scenario.run.until
    full = replace(
        scenario,
        run=replace(
            scenario.run,
            eval_every=H / 100,
            eval_every_updates=0,
            timeline_until=0.0,
            target_loss=0.0,
        ),
    )
    chosen = rec.ranking()[:top]

    def work(i: int) -> dict:
        p = chosen[i]
        pilot = pilot_rule(scenario, p.groups, p.lr)
        res = Simulation(full, GROUPING_RULE, prepared, rule=pilot).run()
        curve = _losses(res.curve)
        hit = time_to_loss(curve, rec.target, H) if res.status == "ok" else None
        return {
            "name": p.name,
            "lr": p.lr,
            "predicted_s": _num(p.predicted),
            "interval_s": [_num(p.low), _num(p.high)],
            "emulated_s": hit,
            "final_loss": curve[-1][1] if res.status == "ok" else None,
            "status": res.status,
            "wall_s": res.wall_s,
        }

    # cost of a full run ~ the pilot's wall seconds per simulated second
    costs = [p.wall_s / p.sim_s if p.sim_s > 0 else 1.0 for p in chosen]
    jobs = min(usable_cpus(), len(chosen)) if jobs is None else jobs
    with StickyPool(work, jobs) as pool:  # one thread per native pool, in every process
        rows = pool.run(list(range(len(chosen))), [None] * len(chosen), costs)
    rec.verified = rows
    return rows


def _num(x: float):
    return float(x) if math.isfinite(x) else None
