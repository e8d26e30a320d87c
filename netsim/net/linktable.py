"""The links a :class:`~netsim.net.flows.FlowNetwork` sends on: directed links, their
capacities and latencies, and the paths between hosts, found once and memoised until a link
changes (pure: no SimPy, no I/O)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .flowstate import Found, Pair, Step
from .routing import route
from .topology import validate_graph

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["LinkTable"]


class LinkTable:
    """Directed links of a topology, with their capacities (bit/s) and latencies (s).

    Link ``i`` is ``links[i]``; both directions of an edge are links. The paths found
    (:meth:`path`) and the batches' steps (:meth:`step`) are kept until :meth:`set` changes
    a link.

    Raises :class:`TopologyError` when *G* is invalid (the table keeps a copy of it).
    """

    def __init__(self, G: nx.Graph) -> None:
        validate_graph(G)
        self.graph = G.copy()
        """The table's own copy of *G*: link changes change it, never the caller's graph."""
        self.links = [(u, v) for a, b in G.edges for u, v in ((a, b), (b, a))]
        """Directed links; link ``i`` is ``links[i]``."""
        self.index = {link: i for i, link in enumerate(self.links)}
        self.capacity = np.array([G.edges[link]["bandwidth"] for link in self.links], dtype=float)
        """Capacity of every directed link, bit/s, shape (n_links,)."""
        self.latency = np.array([G.edges[link]["latency"] for link in self.links], dtype=float)
        """Latency of every directed link, s, shape (n_links,)."""
        self.cap = self.capacity.tolist()  # the same, as floats for the re-plans
        self.lat = self.latency.tolist()
        self.routes: dict = {}  # routing memo (see netsim.net.routing.route)
        self.paths: dict[tuple, Found] = {}  # (src, dst, key) -> path (see path)
        self.steps: dict[tuple, Step] = {}  # (pairs, keys) -> Step, while the routes stand

    def path(self, src: Hashable, dst: Hashable, flow_key: object) -> Found:
        """``(path, idx, latency, finite)``: the directed links from *src* to *dst*, their
        indices, the sum of their latencies (s) and the indices of the finite ones."""
        key = (src, dst, flow_key)
        found = self.paths.get(key)
        if found is None:
            path = tuple(route(self.graph, src, dst, flow_key=flow_key, cache=self.routes))
            index = self.index
            idx = tuple([index[link] for link in path])
            finite = self.finite(idx)
            found = self.paths[key] = (path, idx, self.path_latency(idx), finite)
        return found

    def finite(self, idx: tuple) -> tuple:
        """The links of *idx* whose capacity is finite (those a flow shares its rate on)."""
        cap = self.cap
        return tuple([i for i in idx if cap[i] != math.inf])

    def path_latency(self, idx: tuple) -> float:
        """``float(self.latency[idx].sum())`` (s): numpy adds fewer than 8 values one at a
        time, more pairwise."""
        if len(idx) >= 8:
            return float(self.latency[list(idx)].sum())
        lat, total = self.lat, 0.0
        for i in idx:
            total += lat[i]
        return total

    def min_time(self, found: Found, bits: float) -> float:
        """Time (s) to send *bits* on the path *found* (:meth:`path`) of an idle network: its
        latency plus ``bits / bottleneck``; ``inf`` when a link is cut and there are bits."""
        latency, idx = found[2], found[1]
        if not bits:
            return latency
        cap = self.cap
        bottleneck = min([cap[i] for i in idx]) if idx else math.inf
        return latency + bits / bottleneck if bottleneck > 0 else math.inf

    def alone_rate(self, links: tuple[int, ...], weight: float | None) -> float:
        """The rate (bit/s) of a flow alone on the finite *links* (not empty): their least
        capacity, or with a *weight* (``sharing="rtt"``) the weighted solve's level times the
        weight, not always the least capacity in floats."""
        cap = self.cap
        if weight is None:
            return min([cap[i] for i in links])
        return min([cap[i] / weight for i in links]) * weight

    def step(self, pairs: Sequence[Pair], keys: Sequence[Hashable]) -> Step:
        """The :class:`~netsim.net.flowstate.Step` of these transfers (kept until a link
        changes)."""
        memo = (tuple(pairs), tuple(keys))
        step = self.steps.get(memo)
        if step is None:
            step = Step()
            found = [self.path(src, dst, key) for (src, dst), key in zip(pairs, keys, strict=True)]
            step.paths = found
            step.latency = np.array([f[2] for f in found])
            step.links = np.array([i for f in found for i in f[3]], dtype=np.intp)
            step.counts = np.array([len(f[3]) for f in found])
            cap = self.cap
            step.bottleneck = np.array([min([cap[i] for i in f[3]], default=np.inf) for f in found])
            step.disjoint = np.unique(step.links).size == step.links.size
            self.steps[memo] = step
        return step

    def set(
        self,
        u: Hashable,
        v: Hashable,
        bandwidth: float | None,
        latency: float | None,
    ) -> bool:
        """Change the link between *u* and *v* (both directions; None: unchanged) and forget
        the paths found. True when a link became finite or infinite. KeyError when there is no
        such link."""
        if not self.graph.has_edge(u, v):
            raise KeyError(f"no link {u!r}-{v!r}")
        was_finite = np.isfinite(self.capacity)
        for link in ((u, v), (v, u)):
            i = self.index[link]
            if bandwidth is not None:
                self.capacity[i] = self.cap[i] = float(bandwidth)
            if latency is not None:
                self.latency[i] = self.lat[i] = float(latency)
        if bandwidth is not None:
            self.graph.edges[u, v]["bandwidth"] = float(bandwidth)
        if latency is not None:
            self.graph.edges[u, v]["latency"] = float(latency)
        self.routes.clear()
        self.paths.clear()
        self.steps.clear()
        return bandwidth is not None and bool((np.isfinite(self.capacity) != was_finite).any())

    def utilisation(
        self, carried: np.ndarray, sim_time: float
    ) -> list[tuple[Hashable, Hashable, float]]:
        """Busiest links first: ``[(u, v, carried bits / (bandwidth * sim_time)), ...]`` for
        every directed link (*carried*: bits per link, shape (n_links,); *sim_time* > 0 s),
        rounded to 12 significant digits, ties in link order; 0 for links of infinite or zero
        bandwidth."""
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(self.capacity > 0, carried / (self.capacity * sim_time), 0.0)
        shares = [float(f"{x:.12g}") for x in util.tolist()]
        order = sorted(range(len(self.links)), key=lambda i: -shares[i])
        return [(*self.links[i], shares[i]) for i in order]
