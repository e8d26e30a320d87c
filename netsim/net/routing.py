"""Shortest-latency routing with deterministic ECMP.

A route minimises the sum of link ``latency`` (s); ties are broken by hop count;
the remaining equal-cost paths are all kept and one is chosen per flow by a
stable hash of the flow's key (ECMP). Latency sums equal within a relative
``1e-9`` count as equal.

The general algorithm builds one shortest-path DAG per root node (Dijkstra on
(latency, hops)), which encodes every equal-cost path to that root, and walks
it. A graph that is exactly :func:`~netsim.net.topology.fat_tree` with one latency
on every link takes a fast path between hosts that returns the same paths
arithmetically (see :func:`_fat_tree_layout`).

All functions are pure. Work is memoised in an optional ``cache`` dict owned
by the caller (e.g. one per :class:`~netsim.net.flows.FlowNetwork`); it holds the
fat-tree layout (or ``None``), plain-tuple adjacency, the natural node order,
how often each node was an endpoint, one DAG per root node and, per (src, dst)
pair routed on the inverted DAG of its source, that sub-DAG with path counts.
A cache must not be reused after the graph changes. Results never depend on
what is cached.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Iterator
from typing import NamedTuple

import networkx as nx

from .topology import TopologyError, natural_key

__all__ = ["route", "equal_cost_paths", "path_count", "flow_hash"]

_RTOL = 1e-9

Node = Hashable
"""A node of the topology (hosts and switches are named by strings)."""
Link = tuple[Node, Node]
"""A directed link ``(u, v)``."""
Cache = dict | None
"""The caller's memo (see the module docstring), or None."""
Hops = tuple[dict[Node, tuple[Node, ...]], dict[Node, int]]
"""``(next_hops, count)``: each node's next hops toward the root, its number of paths."""


def flow_hash(flow_key: object) -> int:
    """Stable 64-bit hash of ``repr(flow_key)`` (BLAKE2b; not Python's salted ``hash``)."""
    digest = hashlib.blake2b(repr(flow_key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _rank(G: nx.Graph, cache: Cache) -> dict[Node, int]:
    """``{node: position in natural order}``, the tie order of equal-cost hops."""
    if cache is not None and "rank" in cache:
        return cache["rank"]
    rank = {n: i for i, n in enumerate(sorted(G, key=natural_key))}
    if cache is not None:
        cache["rank"] = rank
    return rank


def _adjacency(G: nx.Graph, cache: Cache) -> dict[Node, tuple[tuple[Node, dict], ...]]:
    """``{u: ((v, edge attributes), ...)}`` in *G*'s neighbour order; plain tuples, read fast."""
    if cache is not None and "adj" in cache:
        return cache["adj"]
    adj = {u: tuple(nbrs.items()) for u, nbrs in G.adjacency()}
    if cache is not None:
        cache["adj"] = adj
    return adj


def _dag(G: nx.Graph, root: Node, cache: Cache) -> Hops:
    """Shortest-path DAG rooted at *root*.

    Two stages: Dijkstra (networkx) gives each node's least latency ``d``; a link ``u - v``
    is *tight* toward the root when ``d[u] + latency`` equals ``d[v]`` within the
    relative tolerance. A breadth-first search from *root* over tight links
    then gives each node its fewest hops, and its next hops are the tight
    neighbours one hop nearer. (Tolerance is judged against the least latency,
    so zero-latency links and near-equal sums cannot reorder finished nodes.)

    Returns ``(hops, count)``: ``hops[v]`` is the tuple of neighbours of ``v``
    that are next hops toward *root*, in natural order, and ``count[v]`` the
    number of equal-cost paths between ``v`` and *root*.
    """
    key = ("dag", root)
    if cache is not None and key in cache:
        return cache[key]
    adj = _adjacency(G, cache)
    dist = nx.single_source_dijkstra_path_length(G, root, weight="latency")
    level, order = {root: 0}, [root]
    preds: dict[Node, list[Node]] = {root: []}
    frontier = [root]
    while frontier:
        found = []
        for u in frontier:
            near, below = dist[u], level[u] + 1
            for v, data in adj[u]:
                if level.get(v, below) < below:
                    continue  # v is as near as u, or nearer
                cand, best = near + data["latency"], dist[v]
                if abs(cand - best) > _RTOL * max(cand, best):
                    continue  # not on a least-latency path
                if v not in level:
                    level[v], preds[v] = below, []
                    found.append(v)
                preds[v].append(u)
        order += found
        frontier = found
    rank = _rank(G, cache).__getitem__
    next_hops = {v: tuple(sorted(p, key=rank)) for v, p in preds.items()}
    count = {root: 1}
    for v in order[1:]:
        count[v] = sum(count[u] for u in next_hops[v])
    if cache is not None:
        cache[key] = (next_hops, count)
    return next_hops, count


def _root(src: Node, dst: Node, cache: Cache) -> Node:
    """The endpoint whose DAG serves the pair: *dst* if its DAG is cached, else *src*
    if its DAG is, else the one that was an endpoint more often (*dst* on ties).

    So one-to-all (a PS sending to every worker) builds one DAG, as all-to-one does.
    """
    if cache is None:
        return dst
    uses = cache.setdefault("uses", {})
    for node in (src, dst):
        uses[node] = uses.get(node, 0) + 1
    if ("dag", dst) in cache:
        return dst
    if ("dag", src) in cache:
        return src
    return dst if uses[dst] >= uses[src] else src


def _pair(G: nx.Graph, src: Node, dst: Node, cache: Cache) -> Hops:
    """``(next_hops, count)`` restricted to what a walk from *src* to *dst* needs.

    Uses the DAG rooted at the endpoint chosen by :func:`_root`. For *src*, the
    sub-DAG of shortest src->dst paths is inverted and counted for this pair
    (and memoised). Both give the same paths, in the same order.
    """
    for node in (src, dst):
        if node not in G:
            raise TopologyError(f"node {node!r}", "not in graph")
    key = ("pair", src, dst)
    if cache is not None and key in cache:
        return cache[key]
    if cache is None or _root(src, dst, cache) == dst:
        next_hops, count = _dag(G, dst, cache)
        if src not in count:
            raise TopologyError(f"route {src!r} -> {dst!r}", "no path")
        return next_hops, count
    back, _ = _dag(G, src, cache)  # next hops toward src: invert them
    if dst not in back:
        raise TopologyError(f"route {src!r} -> {dst!r}", "no path")
    return _inverted(G, src, dst, back, cache)


def _inverted(
    G: nx.Graph, src: Node, dst: Node, back: dict[Node, tuple[Node, ...]], cache: dict
) -> Hops:
    """``(next_hops, count)`` toward *dst* on the shortest src->dst paths, from *back*, the
    next hops toward *src* of the DAG rooted at *src* (memoised per pair).

    A host hangs off one switch: every path to it ends with that link, so its paths are
    the switch's plus one hop, in the same order, and the switch's serve all its hosts.
    """
    key = ("pair", src, dst)
    if key in cache:
        return cache[key]
    last = back[dst]
    if len(last) == 1 and last[0] != src and len(G[dst]) == 1:
        via, count = _inverted(G, src, last[0], back, cache)
        succ = {**via, last[0]: (dst,), dst: ()}
        count = {**count, dst: 1}
        cache[key] = (succ, count)
        return succ, count
    # Walk back from dst level by level (a node's next hops toward src are all one hop
    # nearer src), so every node comes after all its successors toward dst.
    after: dict[Node, list[Node]] = {dst: []}
    order, frontier = [dst], [dst]
    while frontier:
        found = []
        for v in frontier:
            for u in back[v]:
                s = after.get(u)
                if s is None:
                    after[u] = [v]
                    found.append(u)
                else:
                    s.append(v)
        order += found
        frontier = found
    rank = _rank(G, cache).__getitem__
    count = {dst: 1}
    for u in order[1:]:
        s = after[u]
        s.sort(key=rank)
        count[u] = sum(count[v] for v in s)
    succ = {u: tuple(s) for u, s in after.items()}
    cache[key] = (succ, count)
    return succ, count


class _FatTree(NamedTuple):
    """Where things are in ``fat_tree(k)``; every tuple in natural node order."""

    half: int  # k / 2
    edge: dict  # host -> its edge switch
    pod: dict  # edge switch -> pod id
    aggs: dict  # pod id -> its agg switches
    cores: dict  # agg switch -> the cores it links to
    down: dict  # (core, pod id) -> the agg of that pod linked to the core


def _fat_tree_arity(n_nodes: int) -> int | None:
    """The k with ``k**3/4 + 5*k**2/4 == n_nodes`` (the node count of ``fat_tree(k)``), or None."""
    k = 2
    while k**3 // 4 + 5 * k * k // 4 < n_nodes:
        k += 2
    return k if k**3 // 4 + 5 * k * k // 4 == n_nodes else None


def _fat_tree_plan(k: int) -> tuple[_FatTree, list[Link]]:
    """``(layout, links)`` of ``fat_tree(k)`` from its naming scheme; links as (u, v).

    Counting up ``i`` in ``p{p}-agg{i}`` and ``c`` in ``core{c}`` is natural order.
    """
    half, links = k // 2, []
    ft = _FatTree(half, {}, {}, {}, {}, {})
    for p in range(k):
        ft.aggs[p] = tuple(f"p{p}-agg{i}" for i in range(half))
        for i, agg in enumerate(ft.aggs[p]):
            edge = f"p{p}-edge{i}"
            ft.cores[agg] = tuple(f"core{c}" for c in range(i * half, (i + 1) * half))
            ft.down.update({(core, p): agg for core in ft.cores[agg]})
            ft.pod[edge] = p
            links += [(agg, core) for core in ft.cores[agg]] + [(edge, a) for a in ft.aggs[p]]
            for j in range(half):
                host = f"h{(p * half + i) * half + j}"
                ft.edge[host] = edge
                links.append((host, edge))
    return ft, links


def _fat_tree_layout(G: nx.Graph) -> _FatTree | None:
    """The layout of *G* if it is exactly ``fat_tree(k)`` with one latency, else None.

    *G* qualifies when it has the nodes and links (by name) of
    :func:`~netsim.net.topology.fat_tree` and no other, and every link has the same
    latency ``L`` (s), an int or float with ``0 <= L`` and ``8 * L`` finite. Then
    every path of ``n`` hops sums to the same latency, which never decreases
    with ``n``, so the equal-cost paths of the general algorithm are the
    fewest-hop paths: between hosts under one edge switch, the 2-hop one; within
    a pod, one per agg switch; across pods, one per (agg, core) pair, ordered by
    agg then core.
    """
    if G.is_directed() or G.is_multigraph():
        return None
    k = _fat_tree_arity(G.number_of_nodes())
    if k is None or G.number_of_edges() != 3 * k**3 // 4:
        return None
    ft, links = _fat_tree_plan(k)
    adj = dict(G.adjacency())
    try:
        latencies = [adj[u][v].get("latency") for u, v in links]
    except KeyError:  # a link of fat_tree(k) is missing
        return None
    # as many links, all expected: same links, hence same nodes (none is isolated)
    if len(set(latencies)) != 1 or not set(map(type, latencies)) <= {int, float}:
        return None
    return ft if 0 <= latencies[0] and math.isfinite(8 * latencies[0]) else None


def _fat_tree(G: nx.Graph, cache: Cache) -> _FatTree | None:
    """:func:`_fat_tree_layout` of *G*, memoised in *cache*."""
    if cache is not None and "fat_tree" in cache:
        return cache["fat_tree"]
    ft = _fat_tree_layout(G)
    if cache is not None:
        cache["fat_tree"] = ft
    return ft


def _fat_tree_count(ft: _FatTree, es: Node, ed: Node) -> int:
    """Number of equal-cost paths between hosts under edge switches *es* and *ed*."""
    if es == ed:
        return 1
    return ft.half if ft.pod[es] == ft.pod[ed] else ft.half * ft.half


def _fat_tree_route(ft: _FatTree, src: Node, dst: Node, flow_key: object) -> list[Link]:
    """:func:`route` between distinct hosts of a fat-tree with layout *ft*."""
    es, ed = ft.edge[src], ft.edge[dst]
    if es == ed:
        return [(src, es), (es, dst)]
    index = flow_hash(flow_key) % _fat_tree_count(ft, es, ed)
    ps, pd = ft.pod[es], ft.pod[ed]
    if ps == pd:
        agg = ft.aggs[ps][index]
        return [(src, es), (es, agg), (agg, ed), (ed, dst)]
    agg = ft.aggs[ps][index // ft.half]
    core = ft.cores[agg][index % ft.half]
    agg2 = ft.down[core, pd]
    return [(src, es), (es, agg), (agg, core), (core, agg2), (agg2, ed), (ed, dst)]


def path_count(G: nx.Graph, src: Node, dst: Node, *, cache: Cache = None) -> int:
    """Number of equal-cost shortest paths from *src* to *dst* (1 if equal)."""
    if src == dst:
        return 1
    ft = _fat_tree(G, cache)
    if ft is not None and src in ft.edge and dst in ft.edge:
        return _fat_tree_count(ft, ft.edge[src], ft.edge[dst])
    return _pair(G, src, dst, cache)[1][src]


def route(
    G: nx.Graph, src: Node, dst: Node, *, flow_key: object = None, cache: Cache = None
) -> list[Link]:
    """The path of one flow from *src* to *dst* as directed links.

    Parameters
    ----------
    G : networkx.Graph
        Graph with edge attribute ``latency`` (s).
    src, dst : node
    flow_key : hashable with a stable repr, optional
        ECMP key; flows with equal keys take equal paths. Default ``(src, dst)``.
    cache : dict, optional
        Memo owned by the caller (see module docstring).

    Returns
    -------
    list of tuple
        Directed links ``(u, v)`` from *src* to *dst*; ``[]`` when ``src == dst``.
        Among the ``n`` equal-cost paths in lexicographic (natural) node order,
        path number ``flow_hash(flow_key) % n`` is returned.

    Raises
    ------
    TopologyError
        If a node is not in *G* or *dst* is unreachable.
    """
    if src == dst:
        if src not in G:
            raise TopologyError(f"node {src!r}", "not in graph")
        return []
    key = (src, dst) if flow_key is None else flow_key
    ft = _fat_tree(G, cache)
    if ft is not None and src in ft.edge and dst in ft.edge:
        return _fat_tree_route(ft, src, dst, key)
    next_hops, count = _pair(G, src, dst, cache)
    n = count[src]
    index = flow_hash(key) % n if n > 1 else 0  # one path: no need to hash the key
    path, u = [], src
    while u != dst:
        for v in next_hops[u]:
            n = count[v]
            if index < n:
                break
            index -= n
        path.append((u, v))
        u = v
    return path


def equal_cost_paths(G: nx.Graph, src: Node, dst: Node, *, cache: Cache = None) -> list[list[Link]]:
    """Every equal-cost path from *src* to *dst*, as lists of directed links.

    In the order used by :func:`route` (always by the general algorithm). The
    number of paths can grow exponentially on meshes; use :func:`path_count`
    to check first.
    """
    if src == dst:
        return [[]]
    next_hops, _ = _pair(G, src, dst, cache)

    def walk(u: Node) -> Iterator[list[Link]]:
        if u == dst:
            yield []
            return
        for v in next_hops[u]:
            for rest in walk(v):
                yield [(u, v)] + rest

    return list(walk(src))
