"""A collective's step sent as one fast batch (an otherwise idle network, no shared link)
gives the times of the same transfers sent as flows, also when another transfer or a link
change comes in the middle of it."""

from __future__ import annotations

import pytest
import simpy

from netsim.net.collectives import allreduce
from netsim.net.flows import FlowNetwork
from netsim.net.topology import star

B, L, S = 1e9, 2e-6, 4e6
RING = [f"h{i}" for i in range(6)]


def run(busy: bool, extra=None, change=None, algorithm="ring"):
    """Times (collective, extra transfer) on a 9-host star. *busy*: a long flow between h7
    and h8 (links no ring flow uses) keeps the network from being idle, so every step goes
    as ordinary flows. *extra*: (t, src, dst, bytes) started at t; *change*: (t, u, v, bw)."""
    env = simpy.Environment()
    net = FlowNetwork(env, star(9, bandwidth=B, latency=L))
    if busy:
        net.transfer("h7", "h8", 1e15)
    proc = allreduce(net, RING, S, algorithm)
    out = {}

    def later():
        if extra:
            yield env.timeout(extra[0])
            record = yield net.transfer(extra[1], extra[2], extra[3])
            out["extra"] = record.end

    def link():
        if change:
            yield env.timeout(change[0])
            net.set_link(change[1], change[2], bandwidth=change[3])

    env.process(later())
    env.process(link())
    env.run(until=10.0)
    out["collective"] = proc.value if proc.triggered else None
    out["utilisation"] = dict(
        ((u, v), x)
        for u, v, x in net.link_utilisation(10.0)
        if "h7" not in (u, v) and "h8" not in (u, v)
    )
    return out


@pytest.mark.parametrize("algorithm", ["ring", "halving_doubling"])
def test_an_idle_network_gives_the_flow_models_times(algorithm):
    fast, flows = run(False, algorithm=algorithm), run(True, algorithm=algorithm)
    assert fast["collective"] == pytest.approx(flows["collective"], rel=1e-12)
    assert fast["utilisation"] == pytest.approx(flows["utilisation"], rel=1e-9)


@pytest.mark.parametrize("at", [0.0005, 0.0071, 0.0203])  # in latency, sending, between steps
def test_a_transfer_in_the_middle_of_a_step(at):
    # h0 -> h1 shares h0's uplink and h1's downlink with the ring's h0 -> h1 chunk
    fast = run(False, extra=(at, "h0", "h1", 2e6))
    flows = run(True, extra=(at, "h0", "h1", 2e6))
    assert fast["collective"] == pytest.approx(flows["collective"], rel=1e-9)
    assert fast["extra"] == pytest.approx(flows["extra"], rel=1e-9)
    assert fast["collective"] > run(False)["collective"]  # it did slow the ring down


def test_a_link_cut_and_restored_in_the_middle_of_a_step():
    for change in [(0.0071, "h2", "s0", 0.0), (0.0071, "h2", "s0", B / 4)]:
        fast, flows = run(False, change=change), run(True, change=change)
        if change[3] == 0.0:
            assert fast["collective"] is None and flows["collective"] is None  # never ends
        else:
            assert fast["collective"] == pytest.approx(flows["collective"], rel=1e-9)
