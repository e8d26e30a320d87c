"""Measurement phase: probe rounds on the modelled cluster before training."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import simpy

from ..errors import ScenarioError
from ..net.comm import Comm, make_comm

if TYPE_CHECKING:
    from ..config.scenario import Scenario
    from ..rng import Streams

__all__ = ["Measurement", "measure", "unreachable"]


@dataclass(frozen=True)
class Measurement:
    """What the probe rounds saw, per worker.

    ``iteration`` (n_workers, rounds): pull + compute + push, s; ``compute`` and
    ``comm`` the same split; ``rtt`` (n_workers,): round trip of a small probe
    message to the PS, s; ``duration``: simulated time the phase took, s.
    """

    iteration: np.ndarray
    compute: np.ndarray
    comm: np.ndarray
    rtt: np.ndarray
    duration: float

    def cut_off(self, horizon: float) -> list[int]:
        """The workers whose probe transfers take longer than *horizon* (s) or never end (a
        link of their path is cut): cut off from the PS by the network."""
        return np.flatnonzero(~(self.comm.sum(axis=1) <= horizon)).tolist()

    def as_dict(self) -> dict:
        return {
            "rounds": int(self.iteration.shape[1]),
            "duration_s": self.duration,
            "mean_iteration_s": self.iteration.mean(axis=1).tolist(),
            "mean_compute_s": self.compute.mean(axis=1).tolist(),
            "mean_comm_s": self.comm.mean(axis=1).tolist(),
            "rtt_s": self.rtt.tolist(),
        }


def _prober(
    env: simpy.Environment,
    wid: int,
    comm: Comm,
    draws: Iterator[float],
    rounds: int,
    out: dict[str, np.ndarray],
) -> Generator[simpy.Event, object, None]:
    for r in range(rounds):
        start = env.now
        event = comm.pull(wid)
        if event is not None:
            yield event
        pulled = env.now
        yield env.timeout(next(draws))
        computed = env.now
        event = comm.push(wid)
        if event is not None:
            yield event
        out["iteration"][wid, r] = env.now - start
        out["compute"][wid, r] = computed - pulled
        out["comm"][wid, r] = (pulled - start) + (env.now - computed)


def measure(
    scenario: Scenario,
    n_params: int,
    rounds: int,
    streams: Streams,
    slowdown: Sequence[float] | None = None,
) -> Measurement:
    """Run *rounds* probe iterations of every worker at once on a private clock.

    Compute times come from each worker's ``"probe"`` stream (same distribution as
    training, other draws, so training's draws are untouched); transfers use the
    scenario's communication model under the load of all workers probing together.
    *slowdown* (n_workers,) scales compute times (current per-worker factors).
    A round that never ends (a link of the worker's path is cut) is measured as ``inf``.
    """
    env = simpy.Environment()
    comm, net = make_comm(
        env, scenario.pull_latencies(), scenario.push_latencies(), scenario.network, n_params
    )
    n = scenario.n_workers
    out = {k: np.full((n, rounds), np.inf) for k in ("iteration", "compute", "comm")}
    for wid, wc, m in scenario.worker_slots():
        factor = 1.0 if slowdown is None else float(slowdown[wid])
        draws = (t * factor for t in wc.draws(streams, wid, m, "probe"))
        env.process(_prober(env, wid, comm, draws, rounds, out))
    env.run()
    return Measurement(
        out["iteration"], out["compute"], out["comm"], _rtt(scenario), float(env.now)
    )


def _rtt(scenario: Scenario) -> np.ndarray:
    """Round trip (s) of a small probe: on the topology, or the fixed pull + push latencies."""
    plan = scenario.network
    if plan is None:
        return np.asarray(scenario.pull_latencies()) + np.asarray(scenario.push_latencies())
    if plan.ps_host is None:  # no PS to probe
        return np.zeros(len(plan.worker_hosts))
    from ..net.probe import probe

    res = probe(
        plan.graph,
        plan.ps_host,
        list(plan.worker_hosts),
        model_bytes=64,
        grad_bytes=64,
        rounds=1,
        sharing=plan.sharing,
        header_bytes=plan.header_bytes,
    )
    return np.asarray(res["rtt"])


def unreachable(m: Measurement, scenario: Scenario) -> ScenarioError | None:
    """The error to raise when a grouping cannot be measured within ``run.until``: some
    workers are cut off from the PS by the scenario's network."""
    off = m.cut_off(scenario.run.until)
    if not off:
        return None
    return ScenarioError(
        "network",
        f"workers {off} are cut off from the parameter server: their probe transfers take "
        f"longer than run.until = {scenario.run.until:g} s or never end (a link of bandwidth "
        "0, or all but, on their path), so no grouping can be measured",
        scenario.path,
    )
