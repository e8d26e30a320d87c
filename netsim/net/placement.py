"""Choose the hosts of the parameter server and of the workers."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import networkx as nx

from .topology import TopologyError, natural_key
from .topology import hosts as list_hosts

if TYPE_CHECKING:
    import numpy as np

__all__ = ["place", "POLICIES"]

POLICIES = ("packed", "spread", "per_datacenter", "random")


def _check_host(G: nx.Graph, name: Hashable, what: str) -> Hashable:
    if name not in G or G.nodes[name].get("role") != "host":
        raise TopologyError(f"{what} {name!r}", "is not a host of the topology")
    return name


def _interleave(groups: list[list[Hashable]]) -> list[Hashable]:
    """Round-robin over lists: [[a, b], [c]] -> [a, c, b]."""
    out: list[Hashable] = []
    for layer in itertools.zip_longest(*groups):
        out.extend(x for x in layer if x is not None)
    return out


def _rack(G: nx.Graph, h: Hashable) -> Hashable:
    switches = sorted((n for n in G.adj[h] if G.nodes[n].get("role") != "host"), key=natural_key)
    return switches[0] if switches else h


def _spread(G: nx.Graph, candidates: list[Hashable]) -> list[Hashable]:
    """Hosts ordered so that consecutive picks alternate datacenter, pod, then rack."""

    def split(items: list[Hashable], level: int) -> list[Hashable]:
        if level == 3:
            return items
        keys: dict[Hashable, list[Hashable]] = {}
        for h in items:
            attrs = G.nodes[h]
            key = (attrs.get("dc"), attrs.get("pod"), _rack(G, h))[level]
            keys.setdefault(key, []).append(h)
        return _interleave([split(group, level + 1) for group in keys.values()])

    return split(candidates, 0)


def place(
    G: nx.Graph,
    n_workers: int,
    *,
    policy: str = "packed",
    ps_host: Hashable | None = None,
    hosts: Sequence[Hashable] | None = None,
    counts: dict[int, int] | Sequence[int] | None = None,
    rng: np.random.Generator | None = None,
    with_ps: bool = True,
) -> tuple[Hashable | None, list[Hashable]]:
    """Pick the PS host and *n_workers* distinct worker hosts.

    Parameters
    ----------
    G : networkx.Graph
        Topology (see :mod:`netsim.topology`).
    n_workers : int
        Number of workers, >= 1.
    policy : {"packed", "spread", "per_datacenter", "random"}, default "packed"
        Ignored when *hosts* is given. ``"packed"`` fills hosts in natural
        order; ``"spread"`` deals round-robin across datacenters, then pods,
        then racks (a host's first switch); ``"per_datacenter"`` takes
        ``counts[dc]`` hosts of each datacenter, packed; ``"random"`` draws
        uniformly without replacement with *rng*.
    ps_host : node, optional
        Host of the PS; default the first host in natural order.
    hosts : sequence of node, optional
        Explicit worker hosts (length *n_workers*).
    counts : dict of int to int or sequence of int, optional
        Workers per datacenter id, for ``"per_datacenter"``; sums to *n_workers*.
    rng : numpy.random.Generator, optional
        Required by ``"random"``.
    with_ps : bool, default True
        False: no PS (rules without one); every host may take a worker, *ps_host* is
        ignored and returned as None, and the workers must reach each other.

    Returns
    -------
    (ps_host, list of worker hosts)
        Workers never include the PS host.

    Raises
    ------
    TopologyError
        Unknown host names, too few hosts, bad counts, or a worker host with
        no path to the PS (the message names it).
    """
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise TopologyError("n_workers", f"must be an integer >= 1, got {n_workers!r}")
    all_hosts = list_hosts(G)
    if not all_hosts:
        raise TopologyError("graph", "has no host")
    if with_ps:
        ps_host = _check_host(G, all_hosts[0] if ps_host is None else ps_host, "ps_host")
    else:
        ps_host = None
    free = [h for h in all_hosts if h != ps_host]
    if hosts is not None:
        workers = _given(G, hosts, n_workers, ps_host)
    elif policy == "per_datacenter":
        workers = _per_datacenter(G, free, n_workers, counts)
    else:
        if n_workers > len(free):
            besides = f" besides the PS host {ps_host!r}" if with_ps else ""
            raise TopologyError(
                "n_workers", f"{n_workers} workers but only {len(free)} hosts{besides}"
            )
        if policy == "packed":
            workers = free[:n_workers]
        elif policy == "spread":
            workers = _spread(G, free)[:n_workers]
        elif policy == "random":
            if rng is None:
                raise TopologyError("rng", "policy 'random' needs a numpy Generator, got None")
            workers = [free[i] for i in rng.choice(len(free), size=n_workers, replace=False)]
        else:
            raise TopologyError("policy", f"must be one of {POLICIES}, got {policy!r}")
    _check_reachable(G, ps_host, workers)
    return ps_host, workers


def _given(
    G: nx.Graph, hosts: Sequence[Hashable], n_workers: int, ps_host: Hashable | None
) -> list[Hashable]:
    """The explicit worker *hosts*, checked: hosts of *G*, *n_workers* of them, distinct, not
    the PS host."""
    workers = [_check_host(G, h, "worker host") for h in hosts]
    if len(workers) != n_workers:
        raise TopologyError("hosts", f"must list n_workers={n_workers} hosts, got {len(workers)}")
    if len(set(workers)) != len(workers) or ps_host in workers:
        raise TopologyError("hosts", f"must be distinct and exclude the PS host {ps_host!r}")
    return workers


def _check_reachable(G: nx.Graph, ps_host: Hashable | None, workers: list[Hashable]) -> None:
    """Every worker host reaches the PS host (without a PS, *ps_host* None: the first worker's)."""
    hub = ps_host if ps_host is not None else workers[0]
    reachable = nx.node_connected_component(G, hub)
    for w in workers:
        if w not in reachable:
            what = f"the PS host {ps_host!r}" if ps_host is not None else f"worker host {hub!r}"
            raise TopologyError(f"worker host {w!r}", f"has no path to {what}")


def _per_datacenter(
    G: nx.Graph,
    free: list[Hashable],
    n_workers: int,
    counts: dict[int, int] | Sequence[int] | None,
) -> list[Hashable]:
    if counts is None:
        raise TopologyError(
            "counts", "policy 'per_datacenter' needs counts per datacenter, got None"
        )
    if not isinstance(counts, dict):
        counts = dict(enumerate(counts))
    for dc, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TopologyError(f"counts[{dc!r}]", f"must be an integer >= 0, got {n!r}")
    if sum(counts.values()) != n_workers:
        raise TopologyError("counts", f"must sum to n_workers={n_workers}, got {counts!r}")
    workers: list[Hashable] = []
    for dc, n in counts.items():
        pool = [h for h in free if G.nodes[h].get("dc") == dc]
        if not isinstance(n, int) or not 0 <= n <= len(pool):
            raise TopologyError(
                f"counts[{dc!r}]",
                f"must be in 0..{len(pool)} (free hosts of datacenter {dc!r}), got {n!r}",
            )
        workers.extend(pool[:n])
    return workers
