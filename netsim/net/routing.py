"""Shortest-latency routing with deterministic ECMP.

A route minimises the sum of link ``latency`` (s); ties are broken by hop count;
the remaining equal-cost paths are all kept and one is chosen per flow by a
stable hash of the flow's key (ECMP). Latency sums equal within a relative
``1e-9`` count as equal.

All functions are pure. Work is memoised in an optional ``cache`` dict owned
by the caller (e.g. one per :class:`~netsim.network.FlowNetwork`); it holds one
shortest-path DAG per root node, which encodes every equal-cost path to that
root, and per (src, dst) pair the sub-DAG with path counts. A cache must not be
reused after the graph changes. Results never depend on what is cached.
"""
from __future__ import annotations

import hashlib
import heapq
import itertools

from .topology import TopologyError, natural_key

__all__ = ["route", "equal_cost_paths", "path_count", "flow_hash"]

_RTOL = 1e-9


def flow_hash(flow_key):
    """Stable 64-bit hash of ``repr(flow_key)`` (BLAKE2b; not Python's salted ``hash``)."""
    digest = hashlib.blake2b(repr(flow_key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _rank(G, cache):
    """``{node: position in natural order}``, the tie order of equal-cost hops."""
    if cache is not None and "rank" in cache:
        return cache["rank"]
    rank = {n: i for i, n in enumerate(sorted(G, key=natural_key))}
    if cache is not None:
        cache["rank"] = rank
    return rank


def _dag(G, root, cache):
    """Shortest-path DAG rooted at *root* (Dijkstra on (latency, hops)).

    Returns ``(hops, count)``: ``hops[v]`` is the tuple of neighbours of ``v``
    that are next hops toward *root*, in natural order, and ``count[v]`` the
    number of equal-cost paths between ``v`` and *root*.
    """
    key = ("dag", root)
    if cache is not None and key in cache:
        return cache[key]
    dist = {root: (0.0, 0)}
    preds = {root: []}
    order, done = [], set()
    tie = itertools.count()
    heap = [(0.0, 0, next(tie), root)]
    while heap:
        lat, hops, _, u = heapq.heappop(heap)
        if u in done or (lat, hops) != dist[u]:
            continue                         # stale heap entry
        done.add(u)
        order.append(u)
        for v, data in G.adj[u].items():
            cand = (lat + data["latency"], hops + 1)
            old = dist.get(v)
            if old is not None:
                if abs(cand[0] - old[0]) <= _RTOL * max(cand[0], old[0]):
                    if cand[1] == old[1]:
                        preds[v].append(u)
                    if cand[1] >= old[1]:
                        continue
                    cand = (old[0], cand[1])
                elif cand[0] > old[0]:
                    continue
            dist[v] = cand
            preds[v] = [u]
            heapq.heappush(heap, (cand[0], cand[1], next(tie), v))
    rank = _rank(G, cache).__getitem__
    next_hops = {v: tuple(sorted(p, key=rank)) for v, p in preds.items()}
    count = {root: 1}
    for v in order[1:]:
        count[v] = sum(count[u] for u in next_hops[v])
    if cache is not None:
        cache[key] = (next_hops, count)
    return next_hops, count


def _pair(G, src, dst, cache):
    """``(next_hops, count)`` restricted to what a walk from *src* to *dst* needs.

    Uses the DAG rooted at *dst*, unless only the one rooted at *src* is
    cached: then the sub-DAG of shortest src->dst paths is inverted and
    counted for this pair (and memoised). Both give the same paths, in the
    same order.
    """
    for node in (src, dst):
        if node not in G:
            raise TopologyError(f"node {node!r}", "not in graph")
    key = ("pair", src, dst)
    if cache is not None and key in cache:
        return cache[key]
    if cache is None or ("dag", dst) in cache or ("dag", src) not in cache:
        next_hops, count = _dag(G, dst, cache)
        if src not in count:
            raise TopologyError(f"route {src!r} -> {dst!r}", "no path")
        return next_hops, count
    back, _ = _dag(G, src, cache)            # next hops toward src: invert them
    if dst not in back:
        raise TopologyError(f"route {src!r} -> {dst!r}", "no path")
    succ, stack = {dst: ()}, [dst]
    while stack:
        v = stack.pop()
        for u in back[v]:
            if u not in succ:
                succ[u] = ()
                stack.append(u)
            succ[u] += (v,)
    rank = _rank(G, cache).__getitem__
    succ = {u: tuple(sorted(s, key=rank)) for u, s in succ.items()}
    count, stack = {dst: 1}, [src]           # paths to dst, by iterative post-order
    while stack:
        u = stack[-1]
        if u in count:
            stack.pop()
            continue
        pending = [v for v in succ[u] if v not in count]
        if pending:
            stack.extend(pending)
        else:
            count[u] = sum(count[v] for v in succ[u])
            stack.pop()
    cache[key] = (succ, count)
    return succ, count


def path_count(G, src, dst, *, cache=None):
    """Number of equal-cost shortest paths from *src* to *dst* (1 if equal)."""
    if src == dst:
        return 1
    return _pair(G, src, dst, cache)[1][src]


def route(G, src, dst, *, flow_key=None, cache=None):
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
    next_hops, count = _pair(G, src, dst, cache)
    index = flow_hash((src, dst) if flow_key is None else flow_key) % count[src]
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


def equal_cost_paths(G, src, dst, *, cache=None):
    """Every equal-cost path from *src* to *dst*, as lists of directed links.

    In the order used by :func:`route`. The number of paths can grow
    exponentially on meshes; use :func:`path_count` to check first.
    """
    if src == dst:
        return [[]]
    next_hops, _ = _pair(G, src, dst, cache)

    def walk(u):
        if u == dst:
            yield []
            return
        for v in next_hops[u]:
            for rest in walk(v):
                yield [(u, v)] + rest

    return list(walk(src))
