"""Routing where latency sums tie only within rounding, or links cost nothing.

Expected paths are worked out by hand: least latency first (sums equal within
1e-9 relative count as equal), then fewest hops, then ECMP among the rest.
"""

from __future__ import annotations

import networkx as nx

from netsim.net.routing import equal_cost_paths, path_count, route


def near_tie():
    """r-a-b-v sums to exactly 0.3 in 3 hops; r-u-v sums to 0.1 + 0.2 (one ulp more) in 2."""
    G = nx.Graph()
    G.add_edge("r", "a", latency=0.15)
    G.add_edge("a", "b", latency=0.15)
    G.add_edge("b", "v", latency=0.0)
    G.add_edge("r", "u", latency=0.1 + 0.2)
    G.add_edge("u", "v", latency=0.0)
    return G


def test_a_near_tie_reached_after_its_node_is_finished_takes_the_fewer_hops():
    # 0.1 + 0.2 != 0.3 in floating point, but within the tolerance: equal latency,
    # so the 2-hop path wins over the 3-hop one, whichever end the DAG is rooted at.
    G = near_tie()
    assert 0.1 + 0.2 != 0.3
    assert route(G, "v", "r") == [("v", "u"), ("u", "r")]
    assert route(G, "r", "v") == [("r", "u"), ("u", "v")]
    cache = {}
    route(G, "r", "a", cache=cache)  # warm the DAG of r
    assert route(G, "v", "r", cache=cache) == [("v", "u"), ("u", "r")]
    assert path_count(G, "v", "r") == 1


def test_zero_latency_links_route_by_hops_and_keep_every_equal_path():
    # a 4-cycle w-x-y-z of free links plus a free chord x-z: every path costs 0 s,
    # so hops decide: x-z is one hop; w to y has two 2-hop paths, via x and via z.
    G = nx.Graph()
    for u, v in (("w", "x"), ("x", "y"), ("y", "z"), ("z", "w"), ("x", "z")):
        G.add_edge(u, v, latency=0.0)
    assert route(G, "x", "z") == [("x", "z")]
    assert path_count(G, "w", "y") == 2
    assert equal_cost_paths(G, "w", "y") == [[("w", "x"), ("x", "y")], [("w", "z"), ("z", "y")]]
