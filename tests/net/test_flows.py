"""FlowNetwork and routing: finish times computed by hand."""

from __future__ import annotations

import networkx as nx
import pytest
import simpy

from netsim.net.flows import FlowNetwork, TransferRecord
from netsim.net.routing import equal_cost_paths, path_count, route
from netsim.net.topology import TopologyError, fat_tree, hosts, leaf_spine, star

S = 1_000_000  # bytes
B = 1e9  # bit/s
LAT = 1e-3  # s per link; a host-to-host path on a star has 2 links


def run_transfers(G, specs, **kw):
    """specs: (name, src, dst, nbytes, start delay); returns {name: TransferRecord}."""
    env = simpy.Environment()
    net = FlowNetwork(env, G, **kw)
    out = {}

    def proc(name, src, dst, nbytes, delay):
        yield env.timeout(delay)
        out[name] = yield net.transfer(src, dst, nbytes)

    for spec in specs:
        env.process(proc(*spec))
    env.run()
    return out, net, env


def test_single_flow_ends_at_latency_plus_size_over_bottleneck():
    out, net, _ = run_transfers(star(2, bandwidth=B, latency=LAT), [("a", "h0", "h1", S, 0)])
    assert out["a"].end == pytest.approx(2 * LAT + 8 * S / B, rel=1e-9)  # 0.010 s
    assert out["a"].path == (("h0", "s0"), ("s0", "h1")) and out["a"].start == 0
    # leaf-spine across racks: 2 host links (1 us, 10G) + 2 fabric links (2 us, 40G)
    G = leaf_spine(
        2, 1, 1, host_bandwidth=10e9, fabric_bandwidth=40e9, host_latency=1e-6, fabric_latency=2e-6
    )
    out, net, _ = run_transfers(G, [("a", "h0", "h1", S, 0)])
    expected = 2e-6 + 4e-6 + 8 * S / 10e9
    assert out["a"].end == pytest.approx(expected, rel=1e-9)
    assert net.min_transfer_time("h0", "h1", S) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_n_flows_through_one_bottleneck(n):
    # n senders into h0 start together: h0's downlink is shared n ways from t = 2*LAT
    G = star(n + 1, bandwidth=B, latency=LAT)
    out, _, _ = run_transfers(G, [(i, f"h{i + 1}", "h0", S, 0) for i in range(n)])
    for rec in out.values():
        assert rec.end == pytest.approx(2 * LAT + n * 8 * S / B, rel=1e-9)


def test_staggered_start_follows_piecewise_rates():
    # A: h0 -> h1 at t=0, sends from 2 ms alone at 1 Gbit/s.
    # B: h2 -> h1 at t=2 ms, sends from 4 ms. In [2, 4] ms A sends 2e6 of its 8e6 bits;
    # then both get 0.5 Gbit/s: A's 6e6 bits take 12 ms -> A ends at 16 ms, while B
    # has sent 6e6 bits; its last 2e6 bits go alone at 1 Gbit/s -> B ends at 18 ms.
    G = star(3, bandwidth=B, latency=LAT)
    out, net, env = run_transfers(G, [("A", "h0", "h1", S, 0), ("B", "h2", "h1", S, 2e-3)])
    assert out["A"].end == pytest.approx(0.016, rel=1e-9)
    assert out["B"].end == pytest.approx(0.018, rel=1e-9)
    # s0 -> h1 carried 2 * 8e6 bits in 18 ms at 1 Gbit/s: 16/18 busy
    util = net.link_utilisation()
    assert util[0][:2] == ("s0", "h1") and util[0][2] == pytest.approx(16 / 18, rel=1e-9)
    assert dict(((u, v), x) for u, v, x in util)[("h1", "s0")] == 0.0
    assert net.bytes_carried()[("h0", "s0")] == pytest.approx(S, rel=1e-9)


def test_rtt_sharing_weights_by_inverse_latency():
    # a -(1 ms)- s -(1 ms)- d and b -(3 ms)- s: path latencies 2 ms and 4 ms, weights 2:1.
    # a sends alone from 2 ms to 4 ms (2e6 bits), then a gets 2/3 Gbit/s, b 1/3:
    # a's 6e6 bits take 9 ms -> ends 13 ms; b sent 3e6 bits by then, its 5e6 left go at
    # 1 Gbit/s -> ends 18 ms. Plain max-min would end a at 16 ms.
    G = nx.Graph()
    for n in "abd":
        G.add_node(n, role="host")
    G.add_node("s", role="switch")
    G.add_edge("a", "s", bandwidth=B, latency=1e-3)
    G.add_edge("b", "s", bandwidth=B, latency=3e-3)
    G.add_edge("s", "d", bandwidth=B, latency=1e-3)
    specs = [("a", "a", "d", S, 0), ("b", "b", "d", S, 0)]
    out, _, _ = run_transfers(G, specs, sharing="rtt")
    assert out["a"].end == pytest.approx(0.013, rel=1e-9)
    assert out["b"].end == pytest.approx(0.018, rel=1e-9)
    out, _, _ = run_transfers(G, specs)
    assert out["a"].end == pytest.approx(0.016, rel=1e-9)


def test_latency_only_cases_and_headers():
    G = star(2, bandwidth=B, latency=LAT)
    G.add_node("h9", role="host")
    G.add_edge("h9", "s0", bandwidth=float("inf"), latency=LAT)
    out, _, _ = run_transfers(G, [("self", "h0", "h0", S, 0.5), ("zero", "h0", "h1", 0, 0)])
    assert out["self"].end == 0.5 and out["self"].path == ()
    assert out["zero"].end == pytest.approx(2 * LAT, rel=1e-12)
    G2 = G.copy()
    G2.add_node("h8", role="host")
    G2.add_edge("h8", "s0", bandwidth=float("inf"), latency=LAT)
    out, _, _ = run_transfers(G2, [("inf", "h9", "h8", S, 0)])
    assert out["inf"].end == pytest.approx(2 * LAT, rel=1e-12)
    # 40 header bytes per transfer: (S + 40) * 8 / B
    out, net, _ = run_transfers(
        star(2, bandwidth=B, latency=LAT), [("a", "h0", "h1", S, 0)], header_bytes=40
    )
    assert out["a"].end == pytest.approx(2 * LAT + 8 * (S + 40) / B, rel=1e-9)
    assert isinstance(out["a"], TransferRecord) and out["a"].nbytes == S


def test_bad_arguments():
    env = simpy.Environment()
    G = star(2)
    with pytest.raises(ValueError, match="sharing.*'fair'"):
        FlowNetwork(env, G, sharing="fair")
    net = FlowNetwork(env, G)
    with pytest.raises(ValueError, match="nbytes.*-1"):
        net.transfer("h0", "h1", -1)
    with pytest.raises(TopologyError, match="node 'h7'"):
        net.transfer("h0", "h7", 10)
    G.edges["h0", "s0"]["latency"] = -1.0
    with pytest.raises(TopologyError, match=r"edge \('s0', 'h0'\).*-1\.0"):  # s0 added first
        FlowNetwork(env, G)


def test_ssgd_round_on_fat_tree_k8():
    # 127 workers push 1 MB to h0. The first bytes arrive after 2 hops (2 us, from h1..h3
    # under the same edge switch); from then on the edge -> h0 link is saturated (max-min
    # is work-conserving) until all 127 * 8e6 bits are through: 2e-6 + 0.1016 s.
    G = fat_tree(8, bandwidth=10e9, latency=1e-6)
    H = hosts(G)
    specs = [(h, h, "h0", S, 0) for h in H[1:]]
    out, net, env = run_transfers(G, specs)
    last = max(r.end for r in out.values())
    assert last == pytest.approx(2e-6 + 127 * 8 * S / 10e9, rel=1e-9)
    assert net.link_utilisation()[0][:2] == ("p0-edge0", "h0")


# ------------------------------------------------------------------ routing


def test_route_prefers_latency_then_hops():
    G = nx.Graph()
    G.add_edge("a", "b", latency=2.0)
    G.add_edge("a", "c", latency=1.0)
    G.add_edge("c", "b", latency=1.0)  # same latency, one more hop
    assert route(G, "a", "b") == [("a", "b")]
    G.edges["a", "b"]["latency"] = 2.5  # now the 2-hop path is faster
    assert route(G, "a", "b") == [("a", "c"), ("c", "b")]
    assert route(G, "b", "a") == [("b", "c"), ("c", "a")]
    G.add_node("z")
    with pytest.raises(TopologyError, match="'a' -> 'z'.*no path"):
        route(G, "a", "z")
    with pytest.raises(TopologyError, match="node 'q'"):
        route(G, "q", "a")


def test_ecmp_is_deterministic_and_spreads():
    G = fat_tree(4)
    # pod 0 -> pod 3: 2 aggs * 2 cores = 4 equal-cost paths; same pod, other edge: 2
    assert path_count(G, "h0", "h15") == 4 and path_count(G, "h0", "h3") == 2
    paths = equal_cost_paths(G, "h0", "h15")
    assert len({tuple(p) for p in paths}) == 4 and all(len(p) == 6 for p in paths)
    chosen = {tuple(route(G, "h0", "h15", flow_key=i)) for i in range(64)}
    assert chosen == {tuple(p) for p in paths}
    assert route(G, "h0", "h15", flow_key="x") == route(G, "h0", "h15", flow_key="x")
    # the cache never changes the answer, whichever endpoint's DAG it holds
    cache = {}
    route(G, "h15", "h0", cache=cache)
    route(G, "h4", "h0", cache=cache)
    for key in range(8):
        assert route(G, "h0", "h15", flow_key=key, cache=cache) == route(
            G, "h0", "h15", flow_key=key
        )


def test_lone_transfer_takes_two_events():
    """Alone on the network its end is known when it starts: one timeout to that end
    (which delivers it) and its own event."""
    env = simpy.Environment()
    net = FlowNetwork(env, star(3, bandwidth=B, latency=LAT))
    done = net.transfer("h0", "h1", S)
    steps = 0
    while env.peek() < float("inf"):
        env.step()
        steps += 1
    assert steps == 2
    assert done.value.end == pytest.approx(2 * LAT + 8 * S / B)


def test_a_lone_transfer_joined_in_its_latency_keeps_its_place():
    """A starts alone (its end known at once), C arrives while A is still in its path
    latency, B (started after A, same latency) arrives with A: A and B start sending at
    one instant and, their ends equal, A is delivered first, as it started first.

    Hand-computed: C alone from t_C = 0.1 ms + LAT at B bit/s; from t_AB = LAT + LAT all
    three share h0's link at B / 3; C, 0.9 ms ahead, has sent 0.9e6 bits of its 8e6 then.
    Then C ends when it has sent the rest at B / 3 (A and B each send as much meanwhile);
    A and B end together at B / 2 with what they have left."""
    G = star(4, bandwidth=B, latency=LAT)
    G.edges["h3", "s0"]["latency"] = 1e-4
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    order = []
    a = net.transfer("h1", "h0", S)
    b = net.transfer("h2", "h0", S)
    c = net.transfer("h3", "h0", S)
    for name, event in (("a", a), ("b", b), ("c", c)):
        event.callbacks.append(lambda ev, name=name: order.append(name))
    env.run()
    bits = 8 * S
    t_c, t_ab = 1e-4 + LAT, 2 * LAT
    ahead = (t_ab - t_c) * B
    c_end = t_ab + (bits - ahead) / (B / 3)
    ab_end = c_end + (bits - (bits - ahead)) / (B / 2)
    assert c.value.end == pytest.approx(c_end, rel=1e-12)
    assert a.value.end == b.value.end == pytest.approx(ab_end, rel=1e-12)
    assert order == ["c", "a", "b"]


def test_replan_waits_for_events_due_at_the_same_instant():
    """Two transfers arriving at one instant start sending in one re-plan: the second's
    arrival is due when the first's timeout fires, so the re-plan is queued after it."""
    specs = [("a", "h0", "h2", S, 0.0), ("b", "h1", "h2", S, 0.0)]
    out, _, _ = run_transfers(star(3, bandwidth=B, latency=LAT), specs)
    assert out["a"].end == out["b"].end == pytest.approx(2 * LAT + 2 * 8 * S / B)
