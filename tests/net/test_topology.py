"""Topology builders, validation, loaders and placement: hand-derived invariants."""

from __future__ import annotations

import itertools
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from netsim.net.placement import place
from netsim.net.topology import (
    TopologyError,
    fat_tree,
    hosts,
    leaf_spine,
    multi_datacenter,
    star,
    validate_graph,
)
from netsim.net.topology_io import list_presets, load_topology

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "topologies"


def roles(G):
    out = {}
    for _, r in G.nodes(data="role"):
        out[r] = out.get(r, 0) + 1
    return out


# ----------------------------------------------------------------- builders


@pytest.mark.parametrize(
    "k, n_hosts, n_switches, n_links",
    [
        # hosts k^3/4; switches k pods * k + (k/2)^2 cores = 5k^2/4;
        # links: k^3/4 host-edge + k*(k/2)^2 edge-agg + k*(k/2)*(k/2) agg-core = 3k^3/4
        (2, 2, 5, 6),
        (4, 16, 20, 48),
        (6, 54, 45, 162),
        (8, 128, 80, 384),
    ],
)
def test_fat_tree_counts(k, n_hosts, n_switches, n_links):
    G = fat_tree(k)
    r = roles(G)
    assert r["host"] == n_hosts
    assert r["edge"] + r["agg"] + r["core"] == n_switches
    assert r["core"] == (k // 2) ** 2 and r["edge"] == r["agg"] == k * k // 2
    assert G.number_of_edges() == n_links
    assert all(G.degree(n) == k for n, role in G.nodes(data="role") if role != "host")
    validate_graph(G)


def test_fat_tree_hosts_at_most_six_hops_apart():
    G = fat_tree(4)
    H = hosts(G)
    assert H == [f"h{i}" for i in range(16)]
    lengths = dict(nx.all_pairs_shortest_path_length(G))
    hops = [lengths[a][b] for a, b in itertools.combinations(H, 2)]
    assert max(hops) == 6 and min(hops) == 2
    # same edge switch: 2 hops; same pod: 4; other pod: 6
    assert lengths["h0"]["h1"] == 2 and lengths["h0"]["h2"] == 4 and lengths["h0"]["h4"] == 6


@pytest.mark.parametrize("k", [3, 0, 1, 2.0, "4"])
def test_fat_tree_rejects_bad_k(k):
    with pytest.raises(TopologyError, match=r"^k: .*" + repr(k).replace(".", r"\.")):
        fat_tree(k)


def test_star_and_leaf_spine_shapes():
    G = star(12, bandwidth=1e9, latency=2e-6)
    assert G.number_of_nodes() == 13 and G.number_of_edges() == 12
    assert hosts(G)[:3] == ["h0", "h1", "h2"] and hosts(G)[-1] == "h11"  # natural order
    assert G.edges["h3", "s0"] == {"bandwidth": 1e9, "latency": 2e-6}
    L = leaf_spine(3, 4, 2, host_bandwidth=10e9, fabric_bandwidth=40e9)
    assert L.number_of_edges() == 3 * (4 + 2)
    assert sorted(L.adj["h5"]) == ["leaf1"]  # rack 1 = hosts 4..7
    assert L.edges["leaf2", "spine1"]["bandwidth"] == 40e9


def test_multi_datacenter_prefixes_and_wan():
    G = multi_datacenter(
        [
            {"racks": 1, "hosts_per_rack": 2, "spines": 1},
            {"racks": 2, "hosts_per_rack": 1, "spines": 2},
        ],
        [(0, 1, 0.02, 1e9)],
    )
    assert hosts(G) == ["dc0-h0", "dc0-h1", "dc1-h0", "dc1-h1"]
    assert G.nodes["dc1-h1"]["dc"] == 1 and G.nodes["dc0-gw"]["role"] == "wan"
    assert G.edges["dc0-gw", "dc1-gw"] == {"bandwidth": 1e9, "latency": 0.02}
    assert sorted(G.adj["dc1-gw"]) == ["dc0-gw", "dc1-spine0", "dc1-spine1"]
    with pytest.raises(TopologyError, match=r"wan\[0\].*got 5"):
        multi_datacenter([{"racks": 1, "hosts_per_rack": 1, "spines": 1}], [(0, 5, 0.1, 1e9)])
    with pytest.raises(TopologyError, match=r"dcs\[0\]\.racks"):
        multi_datacenter([{"racks": 0, "hosts_per_rack": 1, "spines": 1}], [])


# --------------------------------------------------------------- validation


def _two_hosts(**edge):
    G = nx.Graph()
    G.add_node("a", role="host")
    G.add_node("b", role="host")
    G.add_edge("a", "b", **edge)
    return G


@pytest.mark.parametrize(
    "edge, match",
    [
        ({"bandwidth": 1e9, "latency": -1e-3}, r"edge \('a', 'b'\): latency .* got -0\.001"),
        ({"bandwidth": -1.0, "latency": 1e-3}, r"edge \('a', 'b'\): bandwidth .* got -1\.0"),
        ({"bandwidth": -5, "latency": 0}, r"bandwidth .* got -5"),
        ({"latency": 1e-3}, r"edge \('a', 'b'\): missing attribute 'bandwidth'"),
        ({"bandwidth": 1e9}, r"missing attribute 'latency'"),
    ],
)
def test_validate_rejects_bad_links(edge, match):
    with pytest.raises(TopologyError, match=match):
        validate_graph(_two_hosts(**edge))


def test_validate_rejects_bad_nodes():
    G = _two_hosts(bandwidth=1e9, latency=0)
    G.nodes["a"]["role"] = "router"
    with pytest.raises(TopologyError, match=r"node 'a': role .* 'router'"):
        validate_graph(G)
    del G.nodes["a"]["role"]
    with pytest.raises(TopologyError, match=r"node 'a': missing attribute 'role'"):
        validate_graph(G)
    G.nodes["a"]["role"] = G.nodes["b"]["role"] = "switch"
    with pytest.raises(TopologyError, match="no host"):
        validate_graph(G)
    with pytest.raises(TopologyError, match="star|bandwidth"):
        star(3, bandwidth=-1.0)


# ------------------------------------------------------------------ loaders


def test_presets_load_with_expected_sizes():
    assert {"star16", "leaf_spine_small", "fat_tree_k4", "fat_tree_k16", "geo3"} <= set(
        list_presets(PRESETS)
    )
    assert len(hosts(load_topology("star16", base_dir=PRESETS))) == 16
    assert len(hosts(load_topology("fat_tree_k4", base_dir=PRESETS))) == 16
    assert len(hosts(load_topology(PRESETS / "fat_tree_k16.toml"))) == 16**3 // 4
    assert len(hosts(load_topology("leaf_spine_small", base_dir=PRESETS))) == 32
    geo = load_topology("geo3", base_dir=PRESETS)
    wan = sorted(geo.edges["dc0-gw", f"dc{i}-gw"]["latency"] for i in (1, 2, 3))
    assert wan == [0.001, 0.020, 0.080]


def test_inline_spec_same_shape_as_preset():
    G = load_topology({"builder": "fat_tree", "args": {"k": 2, "bandwidth": 1e9}})
    assert G.number_of_edges() == 6 and G.edges["h0", "p0-edge0"]["bandwidth"] == 1e9


def test_bad_toml_files_name_file_and_element(tmp_path):
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('builder = "torus"\n')
    with pytest.raises(TopologyError, match=r"unknown\.toml \[builder\]: unknown builder 'torus'"):
        load_topology(unknown)
    broken = tmp_path / "broken.toml"
    broken.write_text('builder = "star"\n[args\nn_hosts = 2\n')
    with pytest.raises(TopologyError, match=r"broken\.toml: unparsable TOML"):
        load_topology(broken)
    bad_arg = tmp_path / "badarg.toml"
    bad_arg.write_text('builder = "fat_tree"\n[args]\nk = 5\n')
    with pytest.raises(TopologyError, match=r"badarg\.toml \[k\]: must be even, got 5"):
        load_topology(bad_arg)
    extra = tmp_path / "extra.toml"
    extra.write_text('builder = "star"\n[args]\nn_hosts = 2\nradix = 3\n')
    with pytest.raises(TopologyError, match=r"extra\.toml \[args\]: .*radix"):
        load_topology(extra)
    with pytest.raises(TopologyError, match=r"nope\.toml: no such"):
        load_topology("nope", base_dir=tmp_path)


def test_graphml_great_circle_latency_and_errors(tmp_path):
    G = nx.Graph()
    G.add_node("a", Latitude=0.0, Longitude=0.0)
    G.add_node("b", Latitude=0.0, Longitude=1.0)
    G.add_node("c")
    G.add_edge("a", "b", LinkSpeedRaw=2.5e9)
    G.add_edge("b", "c")
    path = tmp_path / "zoo.graphml"
    nx.write_graphml(G, path)
    spec = tmp_path / "zoo.toml"
    spec.write_text('graphml = "zoo.graphml"\nbandwidth = 1e9\nlatency = 0.004\n')
    H = load_topology(spec)
    # 1 degree of the equator = 6371 km * pi / 180 = 111.1949 km; at 2/3 c = 1.99862e8 m/s
    assert H.edges["a", "b"]["latency"] == pytest.approx(111_194.93 / 199_861_638.7, rel=1e-6)
    assert H.edges["a", "b"]["bandwidth"] == 2.5e9  # LinkSpeedRaw wins
    assert H.edges["b", "c"] == {"bandwidth": 1e9, "latency": 0.004}  # spec defaults
    assert hosts(H) == ["a", "b", "c"]
    garbage = tmp_path / "garbage.graphml"
    garbage.write_text("<graphml><graph><node id='a'")
    with pytest.raises(TopologyError, match=r"garbage\.graphml: unparsable GraphML"):
        load_topology(garbage)
    G.add_edge("a", "c", latency=-1.0)
    nx.write_graphml(G, path)
    with pytest.raises(TopologyError, match=r"zoo\.toml \[edge \('a', 'c'\)\]: latency .* -1\.0"):
        load_topology(spec)


def test_topohub_wan_latency_from_coordinates():
    pytest.importorskip("topohub")
    G = load_topology({"topohub": "topozoo/Abilene", "bandwidth": 10e9})
    assert len(hosts(G)) == 11
    # topohub lists New York - Chicago as 1146.16 km; at 2/3 c that is 5.7348 ms
    assert G.edges["New York", "Chicago"]["latency"] == pytest.approx(
        1146.16e3 / 199_861_638.7, rel=1e-3
    )
    assert load_topology("topohub:sndlib/polska").number_of_nodes() == 12
    with pytest.raises(TopologyError, match=r"\[topohub\]: no topology 'topozoo/Nowhere'"):
        load_topology({"topohub": "topozoo/Nowhere"})


# ---------------------------------------------------------------- placement


def test_place_packed_spread_and_explicit():
    G = fat_tree(4)  # pod p holds hosts 4p .. 4p+3
    assert place(G, 3) == ("h0", ["h1", "h2", "h3"])
    # spread deals pods first (h1 is pod 0's first free host), then alternates the
    # two edge switches of each pod: pod 1 gives h4 (edge0) then h6 (edge1)
    ps, workers = place(G, 8, policy="spread", ps_host="h0")
    assert workers == ["h1", "h4", "h8", "h12", "h2", "h6", "h10", "h14"]
    assert place(G, 2, hosts=["h5", "h9"], ps_host="h15") == ("h15", ["h5", "h9"])
    with pytest.raises(TopologyError, match=r"worker host 'h99'"):
        place(G, 1, hosts=["h99"])
    with pytest.raises(TopologyError, match=r"ps_host 'core0'"):
        place(G, 1, ps_host="core0")
    with pytest.raises(TopologyError, match=r"n_workers.*16 workers but only 15"):
        place(G, 16)
    a = place(G, 5, policy="random", rng=np.random.default_rng(7))
    assert a == place(G, 5, policy="random", rng=np.random.default_rng(7))
    assert len(set(a[1])) == 5 and "h0" not in a[1]


def test_place_per_datacenter_and_unreachable_worker():
    G = load_topology("geo3", base_dir=PRESETS)
    ps, workers = place(G, 3, policy="per_datacenter", counts={1: 2, 3: 1})
    assert ps == "dc0-h0" and workers == ["dc1-h0", "dc1-h1", "dc3-h0"]
    with pytest.raises(TopologyError, match=r"counts.*sum to n_workers=4"):
        place(G, 4, policy="per_datacenter", counts=[0, 2, 1])
    G.remove_edge("dc0-gw", "dc3-gw")
    with pytest.raises(TopologyError, match=r"worker host 'dc3-h0': has no path"):
        place(G, 3, policy="per_datacenter", counts={1: 2, 3: 1})
