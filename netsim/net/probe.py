"""Measure round-trip and pull+push times of workers on a modelled network."""

from __future__ import annotations

from collections.abc import Generator, Hashable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from .flows import FlowNetwork

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["probe"]

Process = Generator[simpy.Event, Any, None]
"""A SimPy process body."""


def _ping_pull_push(
    env: simpy.Environment,
    net: FlowNetwork,
    ps: Hashable,
    worker: Hashable,
    sizes: tuple[float, float, float],
    out: dict[str, np.ndarray],
    i: int,
    r: int,
) -> Process:
    """One worker: probe to the PS and back, then pull the model and push a gradient
    (*sizes*: probe, model and gradient bytes); its times go to column *i*, row *r*."""
    probe_bytes, model_bytes, grad_bytes = sizes
    t0 = env.now
    yield net.transfer(worker, ps, probe_bytes)
    yield net.transfer(ps, worker, probe_bytes)
    t1 = env.now
    yield net.transfer(ps, worker, model_bytes)
    yield net.transfer(worker, ps, grad_bytes)
    out["rtt"][r, i] = t1 - t0
    out["pull_push"][r, i] = env.now - t1


def _alone(
    env: simpy.Environment,
    net: FlowNetwork,
    ps: Hashable,
    workers: list[Hashable],
    sizes: tuple[float, float, float],
    out: dict[str, np.ndarray],
    rounds: int,
) -> Process:
    for r in range(rounds):
        for i, w in enumerate(workers):
            yield env.process(_ping_pull_push(env, net, ps, w, sizes, out, i, r))


def _loaded(
    env: simpy.Environment,
    net: FlowNetwork,
    ps: Hashable,
    workers: list[Hashable],
    sizes: tuple[float, float, float],
    out: dict[str, np.ndarray],
    rounds: int,
) -> Process:
    for r in range(rounds):
        yield env.all_of(
            [
                env.process(_ping_pull_push(env, net, ps, w, sizes, out, i, r))
                for i, w in enumerate(workers)
            ]
        )


def probe(
    G: nx.Graph,
    ps_host: Hashable,
    worker_hosts: Iterable[Hashable],
    *,
    model_bytes: float,
    grad_bytes: float,
    probe_bytes: float = 64,
    rounds: int = 3,
    load: bool = False,
    **network: Any,
) -> dict[str, np.ndarray]:
    """Measure each worker's round-trip and pull+push times to the PS.

    Runs a private :class:`simpy.Environment` and :class:`FlowNetwork` on *G*.
    A measurement is: the worker sends *probe_bytes* to the PS, which answers
    with *probe_bytes* (round-trip time); then the worker pulls *model_bytes*
    from the PS and pushes *grad_bytes* to it (pull+push time). "Alone", the
    workers measure one at a time; "loaded", all workers measure at once, so
    they share links (a round ends when every worker is done).

    Parameters
    ----------
    G : networkx.Graph
        Topology (see :mod:`netsim.topology`).
    ps_host : node
        Host of the parameter server.
    worker_hosts : sequence of node, length n_workers
    model_bytes, grad_bytes : int
        Sizes of the pulled model and the pushed gradient, bytes.
    probe_bytes : int, default 64
        Size of each probe message, bytes.
    rounds : int, default 3
        Measurements per worker, averaged. The network model is
        deterministic, so rounds agree unless the network is loaded by
        unequal flows; the argument is kept for jittered models.
    load : bool, default False
        Also measure under load (keys ``*_loaded``).
    **network
        Passed to :class:`FlowNetwork`: ``sharing``, ``header_bytes``.

    Returns
    -------
    dict of str to ndarray of shape (n_workers,)
        ``"rtt"`` and ``"pull_push"`` (s), measured alone, and with *load*
        also ``"rtt_loaded"`` and ``"pull_push_loaded"`` (s); entry i is
        worker ``worker_hosts[i]``; ``inf`` for a worker behind a cut link (bandwidth 0),
        and for every worker after it when measured alone (they wait their turn for ever).
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    workers = list(worker_hosts)
    sizes = (probe_bytes, model_bytes, grad_bytes)
    result: dict[str, np.ndarray] = {}
    modes = [("", _alone)] + ([("_loaded", _loaded)] if load else [])
    for suffix, driver in modes:
        env = simpy.Environment()
        net = FlowNetwork(env, G, **network)
        out = {
            "rtt": np.full((rounds, len(workers)), np.inf),
            "pull_push": np.full((rounds, len(workers)), np.inf),
        }
        env.process(driver(env, net, ps_host, workers, sizes, out, rounds))
        env.run()
        for name, samples in out.items():
            result[name + suffix] = samples.mean(axis=0)
    return result
