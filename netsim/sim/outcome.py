"""What a run gives back: its Result when it ends, Snapshots while it goes."""

from __future__ import annotations

from typing import Any

from .records import GroupSnapshot, Result, Snapshot, WorkerStats, idle_pct
from .server import ParameterServer
from .summary import run_extras
from .worker import COMM, COMPUTE, DOWN, IDLE, WorkerState

__all__ = ["result", "snapshot", "worker_stats", "group_snapshots"]


def result(sim: Any, wall_s: float) -> Result:
    """The Result of the :class:`~netsim.sim.engine.Simulation` *sim* at its current
    simulated time, *wall_s* wall seconds after it began."""
    now = float(sim.env.now)
    stats = worker_stats(sim.states, sim.classes, sim.rule.group_index(), now)
    ps = sim.ps
    status = (
        "interrupted"
        if sim.interrupted
        else "diverged"
        if ps.diverged
        else "stalled"
        if ps.stalled
        else "ok"
    )
    data = sim.prepared.data_summary(sim.scenario.data, sim.scenario.run.batch_size)
    ended = {}
    if ps.diverged:
        ended["diverged_at"] = {"update": ps.version, "sim_time": now}
    if ps.stalled:
        ended["stalled_at"] = {"sim_time": now, "waiting_for": ps.stalled_on}
    extra = run_extras(sim.scenario, data, sim.rule, sim.grouping, ended)
    if sim.service is not None:
        sim.service.close_spans(now)
        extra["server"] = sim.service.summary(now)
    if sim.net is not None:
        extra["network"] = network_extra(sim.scenario.network, sim.comm, sim.net, now)
    return Result(
        scenario=sim.scenario.name,
        algorithm=sim.algorithm,
        label=sim.label,
        seed=sim.scenario.run.seed,
        sim_time=now,
        updates=ps.version,
        groups=[list(g) for g in sim.rule.groups],
        workers=stats,
        records=sim.recorder,
        status=status,
        message=sim.interrupted or ps.diverged or ps.stalled,
        wall_s=wall_s,
        final_w=ps.w,
        model_info=sim.model.export_info(),
        extra=extra,
    )


def network_extra(plan: Any, comm: Any, net: Any, now: float) -> dict:
    """The ``network`` entry of summary.json: the plan, message sizes and the ten busiest
    links of the flow network *net* over the run's *now* seconds."""
    return {
        "topology": plan.topology,
        "ps_host": plan.ps_host,
        "worker_hosts": list(plan.worker_hosts),
        "sharing": plan.sharing,
        "message_bytes": comm.model_bytes,
        "header_bytes": plan.header_bytes,
        "busiest_links": [
            {"link": f"{u}->{v}", "utilisation": float(x)}  # none over no time
            for u, v, x in (net.link_utilisation(now)[:10] if now > 0 else [])
        ],
    }


def snapshot(sim: Any) -> Snapshot:
    """The live state of the Simulation *sim* for a progress display (see :class:`Snapshot`)."""
    now = float(sim.env.now)
    curve = sim.recorder.curve
    groups = group_snapshots(sim.rule.groups, sim.states, sim.ps, now)
    last = curve[-1] if curve else None
    run = sim.scenario.run
    return Snapshot(
        sim.label,
        sim.algorithm,
        now,
        run.until,
        sim.ps.version,
        run.max_updates,
        last[2] if last else None,
        last[3] if last else None,
        last[1] if last else None,
        last[0] if last else None,
        groups,
    )


def worker_stats(
    states: list[WorkerState], classes: list[str], group_of: list[int], now: float
) -> list[WorkerStats]:
    """Each worker's totals at *now* (s), its phase in progress closed there (*states*: the
    WorkerStates; *classes*, *group_of*: each worker's class name and group)."""
    stats = []
    for st in states:
        st.enter(st.phase, now)
        stats.append(
            WorkerStats(
                id=st.wid,
                worker_class=classes[st.wid],
                group=group_of[st.wid],
                gradients_pushed=st.pushed,
                gradients_applied=st.applied,
                gradients_dropped=st.dropped,
                compute_s=st.spent[COMPUTE],
                comm_s=st.spent[COMM],
                idle_s=st.spent[IDLE],
                down_s=st.spent[DOWN],
            )
        )
    return stats


def group_snapshots(
    groups: list, states: list[WorkerState], ps: ParameterServer, now: float
) -> tuple[GroupSnapshot, ...]:
    """Each group's figures at *now* (s): its updates, mean staleness per gradient and the
    idle share of its members (*states*: the WorkerStates; *ps*: the server's counters)."""
    out = []
    for k, members in enumerate(groups):
        idle = total = 0.0
        for w in members:
            st = states[w]
            running = now - st.since
            idle += st.spent[IDLE] + (running if st.phase == IDLE else 0.0)
            total += sum(st.spent) + running
        n_grads = ps.group_gradients[k]
        out.append(
            GroupSnapshot(
                k,
                len(members),
                ps.group_updates[k],
                ps.group_staleness[k] / n_grads if n_grads else 0.0,
                idle_pct(idle, total),
            )
        )
    return tuple(out)
