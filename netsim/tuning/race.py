"""Recommend a (grouping, learning rate) pair by racing short pilot emulations.

The emulator itself is the model. Every candidate — a grouping
(:func:`netsim.tuning.candidates.candidate_groupings`) × a learning rate η from a log grid —
is a pilot emulation of the scenario (:mod:`.pilots`); the pilots race by successive
halving (:mod:`.halving`), ranked by the loss of their curves (:mod:`.scoring`), and the
pick comes from the last rung's finalists (:mod:`.pick`). Every setting is a field of
:class:`~netsim.tuning.options.RaceOptions`. How the race works and how often its pick is
within 5 % of an exhaustive search: docs/GROUPING.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..rng import Streams
from ..rules import GROUPING_RULE
from ..sim.engine import Prepared, Simulation, prepare
from ..sim.measurement import Measurement, measure, unreachable
from .candidates import candidate_groupings, lr_grid
from .evidence import Groups, Pilot, Recommendation, overlapping
from .halving import edge_steps, plan_rungs, run_halving, rung_fractions
from .options import RaceOptions, RecommendError, Target, check_jobs
from .pick import choose, sureness
from .pilots import PilotRunner, PilotSetup, base_lr, make_pilots, pilot_rule, run_losses
from .pool import StickyPool, usable_cpus
from .scoring import mean_curve, mean_time_to_target, smoothed, time_to, time_to_loss

if TYPE_CHECKING:
    from ..config.events import ClusterEvent
    from ..config.scenario import Scenario

__all__ = [
    "Pilot",
    "RaceOptions",
    "Recommendation",
    "RecommendError",
    "decide",
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


def recommend(
    scenario: Scenario,
    prepared: Prepared | None = None,
    options: RaceOptions | None = None,
    *,
    measurement: Measurement | None = None,
    candidates: Mapping[str, Groups] | None = None,
    rule: Any = None,
    on_rung: Callable[[int, int, int], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    **settings: Any,
) -> Recommendation:
    """Race (grouping, η) candidates by successive halving of pilot emulations.

    Parameters
    ----------
    scenario, prepared : its horizon ``run.until`` (s) scales the rungs; shared data,
        shards and initial model (made here when None).
    options, settings : the race's settings (:class:`RaceOptions`; default its defaults),
        with *settings* (its field names) replacing some: ``recommend(sc, lrs=(0.3, 1.0))``.
    measurement, candidates : the probe phase (made from the scenario's streams when None)
        and ``{name: groups}`` (:func:`candidate_groupings` on the measurement when None).
    rule : the rule asking (groups, k_max, probe rounds, η, options); default the scenario's GSGD.
    on_rung, on_progress : ``on_rung(rung, rungs, candidates)`` before each rung (0-based; may
        raise to abandon the race), ``on_progress(share)`` of the planned work done
        (:func:`netsim.tuning.halving.done_share`).

    Raises :exc:`RecommendError` for empty candidates or η grid, η <= 0, too small a budget
    or another bad setting.
    """
    wall0 = time.perf_counter()
    options = replace(options or RaceOptions(), **settings)
    prepared = prepared or prepare(scenario)
    rule = rule if rule is not None else scenario.rules.get(GROUPING_RULE)
    measurement, candidates = _measured(scenario, prepared, rule, measurement, candidates)
    options = _with_grid(scenario, rule, options)
    given = Target.asked(options.target, scenario.run.target_loss)
    pilots, pruned = make_pilots(measurement, candidates, options.grid, options.alike)
    horizons = plan_rungs(scenario.run.until, measurement, len(pilots), options)
    setup = PilotSetup.of(
        scenario, prepared, rule, horizons[0], options.eval_rows, given is not None
    )
    runner = PilotRunner(setup, pilots, horizons, options.replicates)
    aim = (given.loss, scenario.run.until) if given is not None else None
    finals = run_halving(runner, options, on_rung, on_progress, aim)
    chosen = choose(finals, pilots, horizons, scenario.run.until, given, options, runner.level)
    pick = chosen.pick
    close = overlapping(pick, finals)  # the reason ends with how sure the race is
    sim_s = sum(p.sim_s for p in pilots) + (0.0 if measurement is None else measurement.duration)
    return Recommendation(
        name=pick.name,
        groups=pick.groups,
        lr=pick.lr,
        target=chosen.target.loss,
        target_source=chosen.target.source,
        reason=f"{chosen.reason}; {sureness(pick, close)}",
        pilots=pilots,
        rungs=horizons,
        measurement=measurement,
        sim_s=sim_s,
        wall_s=time.perf_counter() - wall0,
        horizon=scenario.run.until,
        pruned=pruned,
        unseen=_unseen_events(scenario.events, horizons[-1]),
        finals=finals,
        close=close,
        given=chosen.target.given,
    )


def _with_grid(scenario: Scenario, rule: Any, options: RaceOptions) -> RaceOptions:
    """*options* with the race's η grid: ``lrs`` when given (then kept to: no widening),
    else :func:`lr_grid` around the rule's η (widened only without a budget)."""
    if options.lrs is not None:
        return replace(options, widen=0)
    centre = rule.lr if rule is not None else base_lr(scenario)
    widen = options.widen if options.budget_s is None else 0
    return replace(options, lrs=lr_grid(centre), widen=widen)


def _measured(
    scenario: Scenario,
    prepared: Prepared,
    rule: Any,
    measurement: Measurement | None,
    candidates: Mapping[str, Groups] | None,
) -> tuple[Measurement | None, Mapping[str, Groups]]:
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
        assert measurement is not None  # made above when neither was given
        candidates = candidate_groupings(
            measurement.iteration,
            hand=rule.groups if spec else None,
            k_max=spec.k_max if spec else 8,
            seed=seed,
        )
    if not candidates:
        raise RecommendError("the candidate set is empty: no grouping to recommend")
    return measurement, candidates


def _unseen_events(events: tuple[ClusterEvent, ...], until: float) -> list[dict[str, Any]]:
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


def decide(
    scenario: Scenario,
    prepared: Prepared,
    measurement: Measurement,
    rule: Any,
    on_rung: Callable[[int, int, int], None] | None,
) -> Recommendation:
    """The grouping decision a run with ``grouping = "auto"`` injects into the engine
    (``Simulation(..., decide=decide)``): :func:`recommend` on the run's own measurement."""
    return recommend(scenario, prepared, measurement=measurement, rule=rule, on_rung=on_rung)


def verify(
    scenario: Scenario,
    rec: Recommendation,
    prepared: Prepared | None = None,
    top: int = 3,
    jobs: int | None = None,
) -> list[dict[str, Any]]:
    """Run the *top* candidates of *rec* in full (whole training set evaluated every
    1/100 of the horizon, scenario seed) and set ``rec.verified``: per candidate the
    predicted time to target (s, with its interval) beside the emulated one.

    *jobs*: processes the runs are spread over (as in :func:`recommend`; None: one per
    usable CPU, at most one per run). BLAS and OpenMP run one thread per process, so the rows are
    the same for any *jobs*."""
    if top < 1:
        raise RecommendError(f"--verify needs at least one candidate, got {top!r}")
    check_jobs(jobs)
    prepared = prepared or prepare(scenario)
    H = scenario.run.until
    run = replace(
        scenario.run, eval_every=H / 100, eval_every_updates=0, timeline_until=0.0, target_loss=0.0
    )
    full = replace(scenario, run=run)
    chosen = rec.ranking()[:top]

    def work(i: int) -> dict[str, Any]:
        p = chosen[i]
        pilot = pilot_rule(scenario, p.groups, p.lr)
        res = Simulation(full, GROUPING_RULE, prepared, rule=pilot).run()
        curve = run_losses(res.curve)
        hit = time_to(curve, rec.target, H, rec.given) if res.status == "ok" else None
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
        rows: list[dict[str, Any]] = pool.run(list(range(len(chosen))), [None] * len(chosen), costs)
    rec.verified = rows
    return rows


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
