"""Flows served by virtual time (HubQueues) against closed forms and the water-filling."""

import numpy as np
import pytest
import simpy

from netsim.net import flows
from netsim.net.flows import FlowNetwork
from netsim.net.topology import star

C = 1e9  # bit/s, every link of the star
LAT = 1e-5  # s, every link


N = flows.HUB_FLOWS + 4  # flows at once: enough to be served by virtual time


def _net(n_hosts=N + 1):
    env = simpy.Environment()
    return env, FlowNetwork(env, star(n_hosts, bandwidth=C, latency=LAT))


def test_pushes_to_one_host_end_as_processor_sharing():
    """N pushes of 1..N MB to h0, started together: they share h0's link in equally, so the
    k-th smallest ends at T_k = T_(k-1) + 8 (b_k - b_(k-1)) (n - k + 1) / C after the path
    latency (the workers' own links carry one flow each)."""
    env, net = _net()
    sizes = [1e6 * k for k in range(1, N + 1)]
    events = [net.transfer(f"h{k}", "h0", b) for k, b in enumerate(sizes, start=1)]
    env.run(until=2 * LAT + 1e-3)
    assert net._queues is not None  # N flows in flight split by one hub: virtual time
    env.run()
    want, t, prev = [], 2 * LAT, 0.0
    for k, b in enumerate(sizes):
        t += 8 * (b - prev) * (len(sizes) - k) / C
        prev = b
        want.append(t)
    assert [e.value.end for e in events] == pytest.approx(want, rel=1e-12)
    assert net._queues is None  # all done: the network is idle again


def test_equal_flows_end_together_in_the_order_they_started():
    """N pulls of 1 MB started together share h0's link out: all end at once, at
    2 latencies + N * 8 Mbit / C, delivered in the order they were started."""
    env, net = _net()
    order = []
    for k in range(N, 0, -1):  # hN first
        net.transfer("h0", f"h{k}", 1e6).callbacks.append(
            lambda e, k=k: order.append((k, e.value.end))
        )
    env.run(until=3 * LAT)
    assert net._queues is not None
    env.run()
    assert [k for k, _ in order] == list(range(N, 0, -1))
    (end,) = {end for _, end in order}
    assert end == pytest.approx(2 * LAT + N * 8e6 / C, rel=1e-12)
    assert net._generation == 2  # one re-plan at arrival, one at the end: served together


@pytest.mark.parametrize("seed", range(5))
def test_bits_carried_mid_run_as_the_water_filling_counts_them(seed, monkeypatch):
    """Pushes and pulls of random sizes started at random times: the bytes every link has
    carried at a time when many are in flight, and every end, as without virtual time."""
    rng = np.random.default_rng(seed)
    plan = [
        (int(rng.integers(1, N + 1)), bool(rng.random() < 0.5), float(10 ** rng.uniform(5, 6.5)))
        for _ in range(4 * N)
    ]
    starts = np.sort(rng.uniform(0, 5e-3, len(plan)))

    def run(hub_flows):
        monkeypatch.setattr(flows, "HUB_FLOWS", hub_flows)
        env, net = _net()
        ends = []

        def go():
            for (host, push, size), t in zip(plan, starts, strict=True):
                yield env.timeout(t - env.now)
                src, dst = (f"h{host}", "h0") if push else ("h0", f"h{host}")
                ends.append(net.transfer(src, dst, size))

        env.process(go())
        env.run(until=float(starts[-1]))
        in_groups = net._queues is not None
        carried = net.bytes_carried()
        env.run()
        return in_groups, carried, [e.value.end for e in ends]

    virtual, carried_v, ends_v = run(1)
    water, carried_w, ends_w = run(10**9)
    assert virtual and not water
    links = sorted(carried_w)
    np.testing.assert_allclose(
        [carried_v[k] for k in links], [carried_w[k] for k in links], rtol=1e-9
    )
    np.testing.assert_allclose(ends_v, ends_w, rtol=1e-12)
