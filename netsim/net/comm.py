"""Communication seam: how long a model pull and a gradient push take.

The engine asks a communication model for an event per transfer; a worker
yields it (or nothing, when the transfer is instantaneous). This module has the
fixed per-worker latency model; a network model offers the same two methods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import Protocol

import networkx as nx
import simpy

from .collectives import Step, run_steps
from .flows import FlowNetwork

__all__ = ["FixedLatency", "NetworkComm", "NoServer", "make_comm", "exchange"]

Message = tuple[int, int, float]
"""A peer message: from worker, to worker, share of the model."""


class Comm(Protocol):
    """What a worker asks of a communication model: per worker, the event of a pull or a
    push (None: it takes no time), and the shortest each can take (s)."""

    instant: list[bool]

    def pull(self, worker: int) -> simpy.Event | None: ...
    def push(self, worker: int) -> simpy.Event | None: ...
    def min_times(self, worker: int) -> tuple[float, float]: ...


class Plan(Protocol):
    """The network part of a scenario (:class:`netsim.config.network_plan.NetworkPlan`)."""

    @property
    def graph(self) -> nx.Graph: ...
    @property
    def ps_host(self) -> Hashable | None: ...
    @property
    def worker_hosts(self) -> Sequence[Hashable]: ...
    @property
    def sharing(self) -> str: ...
    @property
    def header_bytes(self) -> int: ...
    def payload_bytes(self, n_params: int) -> float: ...


def make_comm(
    env: simpy.Environment,
    pull_s: Iterable[float],
    push_s: Iterable[float],
    plan: Plan | None,
    n_params: int,
) -> tuple[FixedLatency | NetworkComm, FlowNetwork | None]:
    """The communication model of a scenario: (comm, FlowNetwork or None).

    Fixed latencies *pull_s*, *push_s* (s per worker) without a network *plan*;
    else transfers of ``plan.payload_bytes(n_params)`` over its topology.
    """
    if plan is None:
        return FixedLatency(env, pull_s, push_s), None
    net = FlowNetwork(env, plan.graph, sharing=plan.sharing, header_bytes=plan.header_bytes)
    payload = plan.payload_bytes(n_params)
    return NetworkComm(net, plan.ps_host, plan.worker_hosts, payload, payload), net


def exchange(
    env: simpy.Environment,
    comm: FixedLatency | NetworkComm,
    workers: Iterable[int],
    steps: list[Step],
) -> simpy.Process:
    """Run *steps* (as :func:`netsim.net.collectives.schedule` gives them, indices into
    *workers*) as worker-to-worker messages of *comm* (``comm.peers``), one step after the
    other. Returns a SimPy process whose value is the time it took (s)."""
    workers = list(workers)
    return run_steps(
        env, steps, lambda step: comm.peers([(workers[a], workers[b], s) for a, b, s in step])
    )


class NoServer:
    """The workers' view of *comm* under a rule without a parameter server: the model is
    the worker's own, so pulls and pushes take no time (``peer`` messages do)."""

    def __init__(self, comm: FixedLatency | NetworkComm) -> None:
        self.comm = comm
        self.instant = [True] * len(comm.instant)

    def pull(self, worker: int) -> None:
        return None

    def push(self, worker: int) -> None:
        return None

    def min_times(self, worker: int) -> tuple[float, float]:
        return 0.0, 0.0


class FixedLatency:
    """Per-worker constant latencies (s) for a model pull and a gradient push.

    Parameters
    ----------
    env : simpy.Environment
    pull_s, push_s : sequence of float, one per worker (s); 0 means instantaneous.
    """

    def __init__(
        self, env: simpy.Environment, pull_s: Iterable[float], push_s: Iterable[float]
    ) -> None:
        self.env = env
        self.pull_s = list(pull_s)
        self.push_s = list(push_s)
        self.instant = [not pull and not push for pull, push in zip(self.pull_s, self.push_s)]
        """Per worker: both transfers take no time (``pull`` and ``push`` always return None)."""

    def min_times(self, worker: int) -> tuple[float, float]:
        """The shortest a pull and a push of *worker* can take (s)."""
        return self.pull_s[worker], self.push_s[worker]

    def isolated(self, horizon: float) -> list[int]:
        """Workers whose own push or pull latency alone exceeds *horizon* (s): no message
        to or from them ends within it (rules without a PS)."""
        return [
            w
            for w, (a, b) in enumerate(zip(self.push_s, self.pull_s))
            if a > horizon or b > horizon
        ]

    def peers(self, messages: Sequence[Message]) -> simpy.Event | None:
        """Event that fires when every message ``(a, b, share)`` (from worker *a* to worker
        *b*, *share* of the model; the latency does not depend on size) has arrived: the
        longest of *a*'s push latency plus *b*'s pull latency, or None if that is 0."""
        delay = max((self.push_s[a] + self.pull_s[b] for a, b, _ in messages), default=0.0)
        return self.env.timeout(delay) if delay else None

    def pull(self, worker: int) -> simpy.Event | None:
        """Event that fires when *worker* has received the model, or None if at once."""
        delay = self.pull_s[worker]
        return self.env.timeout(delay) if delay else None

    def push(self, worker: int) -> simpy.Event | None:
        """Event that fires when *worker*'s gradient reached the PS, or None if at once."""
        delay = self.push_s[worker]
        return self.env.timeout(delay) if delay else None


class NetworkComm:
    """Transfers over a :class:`netsim.net.flows.FlowNetwork`: a pull carries the model
    PS → worker host, a push carries the gradient worker host → PS (bytes include
    the header). A transfer that takes no time at all (zero latency, infinite
    bandwidth) is instantaneous, exactly as a zero fixed latency.

    Parameters
    ----------
    net : FlowNetwork
    ps_host : the PS's host (None: no PS, transfers to it take no time);
    worker_hosts : one host per worker id.
    model_bytes, grad_bytes : int, message sizes (bytes).
    """

    def __init__(
        self,
        net: FlowNetwork,
        ps_host: Hashable | None,
        worker_hosts: Iterable[Hashable],
        model_bytes: float,
        grad_bytes: float,
    ) -> None:
        self.net = net
        self.ps_host = ps_host
        self.hosts = list(worker_hosts)
        self.model_bytes = model_bytes
        self.grad_bytes = grad_bytes
        self.instant = self._instant()
        """Per worker: both transfers take no time (``pull`` and ``push`` always return None)."""

    def _instant(self) -> list[bool]:
        """:attr:`instant`: with every link of some latency, only a worker on the PS's host
        (no link crossed) is; else each host's paths to and from the PS tell."""
        net, ps_host = self.net, self.ps_host
        if ps_host is None:  # no PS: nothing is pulled or pushed
            return [True] * len(self.hosts)
        graph = net.graph
        if all(h in graph for h in (ps_host, *self.hosts)) and all(
            latency > 0 for *_, latency in graph.edges(data="latency")
        ):
            return [h == ps_host for h in self.hosts]
        return [  # the flow keys of pull and push: their routes, found once
            net.min_transfer_time(ps_host, h, self.model_bytes, flow_key=("pull", w)) == 0
            and net.min_transfer_time(h, ps_host, self.grad_bytes, flow_key=("push", w)) == 0
            for w, h in enumerate(self.hosts)
        ]

    def min_times(self, worker: int) -> tuple[float, float]:
        """The shortest a pull and a push of *worker* can take (s): alone on the network
        as it is now; ``inf`` across a cut link."""
        host = self.hosts[worker]
        if self.ps_host is None:
            return 0.0, 0.0
        return (
            self.net.min_transfer_time(
                self.ps_host, host, self.model_bytes, flow_key=("pull", worker)
            ),
            self.net.min_transfer_time(
                host, self.ps_host, self.grad_bytes, flow_key=("push", worker)
            ),
        )

    def isolated(self, horizon: float) -> list[int]:
        """Workers cut off from the others (rules without a PS): outside the part of the
        topology, joined by links that carry a whole model within *horizon* (s), that holds
        the most workers (ties: the one of the lowest worker id)."""
        net = self.net
        bits = 8.0 * (self.model_bytes + net.header_bytes)
        usable = nx.Graph()
        usable.add_nodes_from(net.graph)
        for u, v, data in net.graph.edges(data=True):  # the network's graph: events applied
            capacity = data["bandwidth"]
            if capacity > 0 and data["latency"] + bits / capacity <= horizon:
                usable.add_edge(u, v)
        part: dict[Hashable, int] = {}
        for k, nodes in enumerate(nx.connected_components(usable)):
            part.update(dict.fromkeys(nodes, k))
        counts = Counter(part[h] for h in self.hosts)
        best = max(counts.values())
        if best == 1 and len(self.hosts) > 1:  # nobody reaches anybody
            return list(range(len(self.hosts)))
        main = next(part[h] for h in self.hosts if counts[part[h]] == best)
        return [w for w, h in enumerate(self.hosts) if part[h] != main]

    def peers(self, messages: Sequence[Message]) -> simpy.Event | None:
        """Event that fires when every message ``(a, b, share)`` (*share* of the model from
        worker *a* to worker *b*) has arrived, the messages sent at once."""
        hosts = self.hosts
        return self.net.transfer_many(
            [(hosts[a], hosts[b]) for a, b, _ in messages],
            [share * self.model_bytes for _, _, share in messages],
            [("peer", a, b) for a, b, _ in messages],
        )

    def pull(self, worker: int) -> simpy.Event | None:
        if self.instant[worker]:
            return None
        return self.net.transfer(
            self.ps_host, self.hosts[worker], self.model_bytes, flow_key=("pull", worker)
        )

    def push(self, worker: int) -> simpy.Event | None:
        if self.instant[worker]:
            return None
        return self.net.transfer(
            self.hosts[worker], self.ps_host, self.grad_bytes, flow_key=("push", worker)
        )
