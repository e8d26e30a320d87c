"""Figures describing a topology: counts, diameter, bisection bandwidth (pure)."""

from __future__ import annotations

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from .topology import hosts as list_hosts

__all__ = ["describe"]


def describe(G: nx.Graph) -> dict:
    """Hosts, switches, links, diameter (hops and s) and bisection bandwidth (bit/s).

    The diameter is the largest host-to-host shortest path: in hops, and in
    latency (s) along the minimum-latency path. The bisection bandwidth is the
    maximum flow between the first and the second half of the hosts in natural
    order (links of capacity ``bandwidth`` in each direction); for the symmetric
    builders (star, leaf-spine, fat-tree) that split is a worst case, so it is
    the bisection bandwidth; otherwise read it as the bandwidth across that cut.
    Undefined (None) with fewer than 2 hosts or a disconnected graph.
    """
    host_list = list_hosts(G)
    nodes = list(G.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    rows = [index[u] for u, v in G.edges] + [index[v] for u, v in G.edges]
    cols = [index[v] for u, v in G.edges] + [index[u] for u, v in G.edges]
    lat = [float(d["latency"]) for *_, d in G.edges(data=True)] * 2
    hop_graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    lat_graph = csr_matrix((np.asarray(lat) + 1e-300, (rows, cols)), shape=(len(nodes), len(nodes)))
    h = [index[x] for x in host_list]
    hops = shortest_path(hop_graph, unweighted=True, indices=h)[:, h] if h else np.zeros((0, 0))
    lats = shortest_path(lat_graph, indices=h)[:, h] if h else np.zeros((0, 0))
    connected = bool(h) and bool(np.isfinite(hops).all())
    out = {
        "hosts": len(host_list),
        "switches": G.number_of_nodes() - len(host_list),
        "links": G.number_of_edges(),
        "roles": dict(
            sorted(
                {
                    r: sum(1 for _, x in G.nodes(data="role") if x == r)
                    for _, r in G.nodes(data="role")
                }.items()
            )
        ),
        "connected": connected,
        "diameter_hops": int(hops.max()) if connected and len(h) > 1 else None,
        "diameter_latency_s": float(np.round(lats.max(), 15)) if connected and len(h) > 1 else None,
        "bisection_bandwidth_bps": _bisection(G, host_list) if connected and len(h) > 1 else None,
    }
    return out


def _bisection(G: nx.Graph, host_list: list) -> float:
    half = len(host_list) // 2
    D = nx.DiGraph()
    for u, v, d in G.edges(data=True):
        D.add_edge(u, v, capacity=float(d["bandwidth"]))
        D.add_edge(v, u, capacity=float(d["bandwidth"]))
    for x in host_list[:half]:
        D.add_edge("__source__", x)  # no capacity attribute: unbounded
    for x in host_list[half : 2 * half]:
        D.add_edge(x, "__sink__")
    value, _ = nx.maximum_flow(D, "__source__", "__sink__")
    return float(value)
