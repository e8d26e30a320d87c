"""All-reduce on the flow network: idle-network times against the α-β cost model worked out
by hand, and contention from the flow model."""

from __future__ import annotations

import pytest
import simpy

from netsim.net.collectives import allreduce, schedule
from netsim.net.flows import FlowNetwork
from netsim.net.topology import fat_tree, star

B = 1e9  # bit/s on every link
L = 2e-6  # s per link
S = 4e6  # bytes reduced


def elapsed(G, hosts, algorithm, nbytes=S):
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    proc = allreduce(net, hosts, nbytes, algorithm)
    env.run()
    return proc.value


@pytest.mark.parametrize("n", [2, 3, 8, 15])
def test_ring_on_a_star_is_alpha_beta(n):
    # every step: each host sends S/n to the next over its uplink and the next one's
    # downlink, no link shared: 2 latencies + the chunk at B; 2(n-1) steps
    G = star(n, bandwidth=B, latency=L)
    expected = 2 * (n - 1) * (2 * L + 8 * (S / n) / B)
    assert elapsed(G, [f"h{i}" for i in range(n)], "ring") == pytest.approx(expected, rel=1e-9)


def test_ring_on_a_fat_tree_is_alpha_beta():
    # k = 4, 16 hosts in order: a step lasts its longest path (h3 -> h4 and the like leave
    # the pod: 6 links) and no two of its flows share a directed link
    G = fat_tree(4, bandwidth=B, latency=L)
    expected = 2 * 15 * (6 * L + 8 * (S / 16) / B)
    assert elapsed(G, [f"h{i}" for i in range(16)], "ring") == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_halving_doubling_on_a_star_is_alpha_beta(n):
    # log2 n halving steps of S/2, S/4, ... and the same doubling steps
    G = star(n, bandwidth=B, latency=L)
    m = n.bit_length() - 1
    expected = 2 * sum(2 * L + 8 * (S / 2**k) / B for k in range(1, m + 1))
    assert elapsed(G, [f"h{i}" for i in range(n)], "halving_doubling") == pytest.approx(
        expected, rel=1e-9
    )


def test_halving_doubling_of_six_adds_a_pre_and_a_post_step():
    # hosts 4, 5 hand their whole vector to 0, 1 (S), the four halve and double, S back
    G = star(6, bandwidth=B, latency=L)
    expected = 2 * (2 * L + 8 * S / B) + 2 * sum(2 * L + 8 * (S / 2**k) / B for k in (1, 2))
    assert elapsed(G, [f"h{i}" for i in range(6)], "halving_doubling") == pytest.approx(
        expected, rel=1e-9
    )


def test_contention_with_another_flow_halves_the_shared_link():
    # two hosts, no latency; a long flow h0 -> h2 shares h2's downlink with the ring's
    # h1 -> h2 chunk in both steps: that chunk goes at B/2, the one back at B
    G = star(3, bandwidth=B, latency=0.0)
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    net.transfer("h0", "h2", 1e12)
    proc = allreduce(net, ["h1", "h2"], S, "ring")
    env.run(until=1.0)
    assert proc.value == pytest.approx(2 * 8 * (S / 2) / (B / 2), rel=1e-9)


def test_one_host_takes_no_time_and_bad_input_is_refused():
    assert schedule("ring", 1) == [] and elapsed(star(1), ["h0"], "ring") == 0.0
    with pytest.raises(ValueError, match="all-reduce algorithm must be one of"):
        schedule("tree", 4)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        schedule("ring", 0)


def test_every_host_ends_with_every_share():
    # the schedules move the right amounts: ring and halving-doubling send 2 (n-1)/n of
    # the vector per host (the bandwidth-optimal volume) when n is a power of two
    for algorithm in ("ring", "halving_doubling"):
        for n in (2, 4, 8):
            sent = [0.0] * n
            for step in schedule(algorithm, n):
                for a, _, share in step:
                    sent[a] += share
            assert sent == pytest.approx([2 * (n - 1) / n] * n)
