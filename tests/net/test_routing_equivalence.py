"""The new routing returns exactly the paths of the routing it replaced.

The reference is a frozen, verbatim copy of ``netsim/routing.py`` as it was
before the fast paths (commit f7bb15a): a Dijkstra DAG per destination (or an
inverted one per source when only that is cached). Comparisons use several
flow keys per pair so that different equal-cost paths get chosen (one key on
the 16,384 host pairs of fat_tree(8)). Nothing here is timed.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import random
from pathlib import Path

import networkx as nx
import pytest

from netsim.net import routing as new
from netsim.net.topology import (
    TopologyError,
    fat_tree,
    hosts,
    leaf_spine,
    multi_datacenter,
    natural_key,
    star,
)
from netsim.net.topology_io import list_presets, load_topology

PRESETS = Path(__file__).resolve().parents[2] / "topologies"
KEYS = (None, 1, 2, "x", (7, "y"))  # flow keys tried on every pair


# ---------------------------------------------------------------------------
# Frozen reference: netsim/routing.py at f7bb15a, from _RTOL to the end, verbatim.
# ---------------------------------------------------------------------------

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
            continue  # stale heap entry
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
    back, _ = _dag(G, src, cache)  # next hops toward src: invert them
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
    count, stack = {dst: 1}, [src]  # paths to dst, by iterative post-order
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


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------


def reference(G, pairs, keys, *, warm=()):
    """``{(src, dst, key): path}`` from the frozen routing.

    Without *warm*, every answer comes from the DAG rooted at the destination
    (what ``cache=None`` computes). With *warm*, the DAGs of those roots are
    computed first and the frozen cache rules pick one (the inverted DAG of the
    source when only the source's is cached).
    """
    cache = {}
    for root in warm:
        _dag(G, root, cache)
    out = {}
    for s, d in pairs:
        if not warm and s != d:
            _dag(G, d, cache)
        for key in keys:
            out[s, d, key] = route(G, s, d, flow_key=key, cache=cache)
    return out


def assert_same_routes(G, pairs, keys=KEYS, *, warm=()):
    expected = reference(G, pairs, keys, warm=warm)
    cache = {}
    for (s, d, key), path in expected.items():
        assert new.route(G, s, d, flow_key=key, cache=cache) == path, (s, d, key)
    for s, d in pairs[:20]:  # no cache: same answer
        assert new.route(G, s, d, cache=None) == expected[s, d, keys[0]], (s, d)


def assert_same_sets(G, pairs):
    """path_count and equal_cost_paths (same paths, same order) agree."""
    ref_cache, cache = {}, {}
    for s, d in pairs:
        assert new.path_count(G, s, d, cache=cache) == path_count(G, s, d, cache=ref_cache), (s, d)
        assert new.equal_cost_paths(G, s, d, cache=cache) == equal_cost_paths(
            G, s, d, cache=ref_cache
        ), (s, d)


def host_pairs(G, *, limit=64, sample=300, seed=0):
    """All ordered host pairs when there are at most *limit* hosts, else a seeded sample."""
    H = hosts(G)
    if len(H) <= limit:
        return list(itertools.product(H, H))
    rng = random.Random(seed)
    return [tuple(rng.sample(H, 2)) for _ in range(sample)]


def ps_to_all(G):
    """The first host (the PS) to every other host."""
    H = hosts(G)
    return [(H[0], h) for h in H[1:]]


def all_to_ps(G):
    """Every other host to the first host (the PS)."""
    H = hosts(G)
    return [(h, H[0]) for h in H[1:]]


def assert_same_routes_all_ways(G, pairs):
    """*pairs*, PS-to-all and all-to-PS, each with a fresh cache (PS-to-all then
    roots the general algorithm at the PS)."""
    for case in (pairs, ps_to_all(G), all_to_ps(G)):
        assert_same_routes(G, case)


def modified_fat_tree():
    """fat_tree(4) after some link latencies were changed, as FlowNetwork.set_link does."""
    G = fat_tree(4)
    G.edges["p0-agg0", "core0"]["latency"] = 5e-6  # longer: avoid core0 from p0
    G.edges["p3-agg1", "core3"]["latency"] = 1e-6 * (1 + 1e-12)  # within the tolerance
    G.edges["h5", "p1-edge0"]["latency"] = 0.0
    return G


def wan_ring():
    """Three datacenters whose WAN latencies tie only within rounding: 0.1 + 0.2 vs 0.3."""
    dc = {
        "racks": 2,
        "hosts_per_rack": 2,
        "spines": 2,
        "host_latency": 1e-6,
        "fabric_latency": 3e-6,
        "gateway_latency": 2e-6,
    }
    return multi_datacenter([dc, dc, dc], [(0, 1, 0.1, 1e9), (1, 2, 0.2, 1e9), (0, 2, 0.3, 1e9)])


def mesh(seed=3):
    """Small random mesh, every node a host, latencies drawn from a few values (many ties)."""
    G = nx.connected_watts_strogatz_graph(30, 4, 0.3, seed=seed)
    rng = random.Random(seed)
    for u, v in G.edges:
        G.edges[u, v].update(bandwidth=1e9, latency=rng.choice([1e-6, 2e-6, 3e-6]))
    nx.set_node_attributes(G, "host", "role")
    return G


def grid():
    G = nx.relabel_nodes(nx.grid_2d_graph(5, 5), lambda n: f"n{n[0]}-{n[1]}")
    nx.set_edge_attributes(G, 1e-6, "latency")
    nx.set_node_attributes(G, "host", "role")
    return G


def broken_fat_trees():
    """fat_tree(4) with a link removed, one added, and one with all latencies zero."""
    cut = fat_tree(4)
    cut.remove_edge("p2-agg1", "core2")
    extra = fat_tree(4)
    extra.add_edge("p0-edge0", "p1-edge1", bandwidth=1e9, latency=1e-6)
    mixed = fat_tree(4)
    for u, v in list(mixed.edges)[::2]:
        mixed.edges[u, v]["latency"] = 1  # int 1 and float 1.0
    for u, v in list(mixed.edges)[1::2]:
        mixed.edges[u, v]["latency"] = 1.0
    return {"cut": cut, "extra": extra, "zero": fat_tree(4, latency=0.0), "int and float": mixed}


BUILT = {
    "fat_tree(2)": lambda: fat_tree(2),
    "fat_tree(6)": lambda: fat_tree(6, latency=3e-7),
    "leaf_spine uneven": lambda: leaf_spine(3, 4, 3, host_latency=1e-6, fabric_latency=3e-6),
    "star": lambda: star(5, latency=2e-6),
    "modified fat_tree": modified_fat_tree,
    "wan ring": wan_ring,
    "mesh": mesh,
    "grid": grid,
    **{f"fat_tree(4) {name}": (lambda G=G: G) for name, G in broken_fat_trees().items()},
}


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list_presets(PRESETS))
def test_presets_route_as_before(name):
    G = load_topology(PRESETS / f"{name}.toml")
    H = hosts(G)
    if len(H) <= 64:
        assert_same_routes_all_ways(G, host_pairs(G))
        return
    # Large preset (k=16 fat-tree): a frozen DAG per destination costs ~10 ms, so the
    # references root at a few hubs (the PS and 15 seeded hosts) and every pair has a hub.
    rng = random.Random(1)
    hubs = [H[0]] + rng.sample(H[1:], 15)
    pairs = [(rng.choice(H), rng.choice(hubs)) for _ in range(150)]
    pairs += [(rng.choice(hubs), rng.choice(H)) for _ in range(150)]
    assert_same_routes(G, pairs + ps_to_all(G) + all_to_ps(G), keys=(None, 1, "x"), warm=hubs)


@pytest.mark.parametrize("name", list(BUILT))
def test_builder_graphs_route_as_before(name):
    G = BUILT[name]()
    assert_same_routes_all_ways(G, host_pairs(G))


def test_fat_tree_8_all_host_pairs():
    G = fat_tree(8)
    assert_same_routes(G, list(itertools.product(hosts(G), hosts(G))), keys=(None,))


@pytest.mark.parametrize("name", ["fat_tree(4)", "modified fat_tree", "wan ring", "mesh"])
def test_switch_endpoints_and_path_sets(name):
    G = fat_tree(4) if name == "fat_tree(4)" else BUILT[name]()
    nodes = sorted(G, key=natural_key)
    pairs = list(itertools.product(nodes, nodes))
    assert_same_routes(G, pairs, keys=(None, 3))
    assert_same_sets(G, pairs)


def test_a_shared_cache_never_changes_an_answer():
    G = fat_tree(4)
    H = hosts(G)
    expected = reference(G, list(itertools.product(H, H)), KEYS)
    cache = {}
    new.route(G, "core1", "h3", cache=cache)  # general algorithm first
    new.path_count(G, "h7", "p2-agg0", cache=cache)
    for (s, d, key), path in expected.items():
        assert new.route(G, s, d, flow_key=key, cache=cache) == path
    ref_cache = {}
    for s, d in itertools.product(H, H):
        assert new.path_count(G, s, d, cache=cache) == path_count(G, s, d, cache=ref_cache)


def test_the_fat_tree_fast_path_is_taken_exactly_on_uniform_fat_trees():
    """Guards the coverage of the tests above: both algorithms are exercised."""
    fast = [
        load_topology(PRESETS / "fat_tree_k4.toml"),
        fat_tree(2),
        fat_tree(6, latency=3e-7),
        fat_tree(8),
        broken_fat_trees()["zero"],
        broken_fat_trees()["int and float"],
    ]
    general = [
        modified_fat_tree(),
        broken_fat_trees()["cut"],
        broken_fat_trees()["extra"],
        fat_tree(4).to_directed(),
        nx.MultiGraph(fat_tree(4)),
        leaf_spine(2, 2, 2),
        star(3),
        nx.relabel_nodes(fat_tree(4), {"h0": "h00"}),
    ]
    nan = fat_tree(4)
    nx.set_edge_attributes(nan, float("nan"), "latency")
    general.append(nan)
    assert all(new._fat_tree_layout(G) is not None for G in fast)
    assert all(new._fat_tree_layout(G) is None for G in general)


def test_errors_are_unchanged():
    G = fat_tree(4)
    G.add_node("lonely", role="host")
    for call in (route, new.route):
        with pytest.raises(TopologyError, match="'h0' -> 'lonely'.*no path"):
            call(G, "h0", "lonely", cache={})
        with pytest.raises(TopologyError, match="node 'q'"):
            call(G, "q", "h0", cache={})
        with pytest.raises(TopologyError, match="node 'q'"):
            call(G, "q", "q")
