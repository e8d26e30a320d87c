"""What a run does before training: its workers built, its timeline recorded, its
groups measured and decided (``rule.probe_rounds()``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ScenarioError
from ..net.comm import NoServer
from ..workload.base import Model
from .collector import building
from .lean import LeanCrew
from .measurement import measure
from .records import Recorder
from .worker import BatchSampler, Computation, RowGather, worker_process

__all__ = ["start_workers", "record_spans", "form_groups"]


def start_workers(sim: Any, model: Model) -> None:
    """The workers of the :class:`~netsim.sim.engine.Simulation` *sim*, computing with
    *model*: lean callbacks of one crew when the run allows it (``sim.general_reason``
    empty), else a SimPy process each."""
    scenario, env, prep, rule = sim.scenario, sim.env, sim.prepared, sim.rule
    X, y = prep.dataset.X_train, prep.dataset.y_train
    residual = model.residual if scenario.run.compact_gradients else None
    late = (
        residual is not None and rule.reads_current()
    )  # factors at the end: pre-emption wastes none
    batch = scenario.run.batch_size
    gather = RowGather(X)  # one scratch buffer for every worker's minibatch rows
    crew = None
    if not sim.general_reason:
        comm = None if all(sim.comm.instant) else sim.comm
        crew = LeanCrew(env, sim.ps, model, y, gather, comm)
    how = Computation(model.gradient, X, y, residual, gather, late)
    sim.ps.lean = crew is not None
    with building():  # see netsim.sim.collector
        for wid, wc, m in scenario.worker_slots():
            st = sim.states[wid]
            draws = wc.draws(sim.streams, wid, m)
            sampler = BatchSampler(prep.shards[wid], batch, sim.streams.rng("batch", wid))
            if crew is not None:
                crew.add(st, sampler, draws)
            else:
                comm = NoServer(sim.comm) if rule.peer else sim.comm
                st.process = env.process(worker_process(env, st, sim.ps, comm, how, sampler, draws))


def record_spans(env: Any, states: list, recorder: Recorder, service: Any, until: float) -> None:
    """Record the workers' phases (and the server's, *service*) as spans of *recorder*
    until simulated time *until* (s; negative: the whole run, 0: none)."""
    if until == 0:
        return
    for st in states:
        st.spans = recorder.spans
    if service is not None:
        service.spans = recorder.spans
    if until > 0:

        def stop_recording(_: object) -> None:
            for st in states:
                st.enter(st.phase, env.now)
                st.spans = None
            if service is not None:
                service.close_spans(env.now)

        env.timeout(until).callbacks.append(stop_recording)


def form_groups(sim: Any, on_rung: Callable[[int, int, int], None]) -> float:
    """Measure and group the workers of *sim* when its rule asks for it
    (``rule.probe_rounds()``), setting ``sim.grouping``; returns the measurement time (s).
    *on_rung(rung, rungs, candidates)*: the progress of a grouping race."""
    rule = sim.rule
    rounds = rule.probe_rounds()
    if not rounds:
        sim.grouping = rule.grouping_record()
        return 0.0
    m = measure(
        sim.scenario,
        sim.prepared.w0.size,
        rounds,
        sim.streams,
        [st.slowdown for st in sim.states],
    )
    if sim.dynamics.unmeasurable(m):
        return 0.0
    if rule.wants_recommendation():
        if sim.decide is None:
            raise ScenarioError(
                f"algorithms.{sim.algorithm}.grouping",
                "'auto' races pilot runs, which this "
                "caller did not provide: run the scenario through netsim.api (or the "
                "netsim command), or pass decide=netsim.tuning.race.decide",
                sim.scenario.path,
            )
        rec = sim.decide(sim.scenario, sim.prepared, m, rule, on_rung)
        rule.adopt(rec.groups, rec.lr)
        record = rec.as_dict()
    else:
        record = rule.on_measured(m.iteration, sim.scenario.run.seed)
    sim.grouping = {**record, "measurement": m.as_dict()}
    sim.ps.record_event("measurement", duration=m.duration, groups=[list(g) for g in rule.groups])
    sim.ps.reset_groups(len(rule.groups))
    return m.duration
