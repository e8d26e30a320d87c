"""Probing the modelled network: round-trip and pull+push times derived by hand."""

from __future__ import annotations

import numpy as np
import pytest

from netsim.net.probe import probe
from netsim.net.topology import multi_datacenter, star

B = 1e9  # bit/s per link direction
LAT = 1e-3  # s per link; host -> switch -> host is 2 links
M, G = 2_000_000, 500_000  # model and gradient bytes
P = 64  # probe bytes


def test_star_alone_and_loaded():
    net = star(4, bandwidth=B, latency=LAT)  # PS h0, workers h1..h3
    out = probe(
        net, "h0", ["h1", "h2", "h3"], model_bytes=M, grad_bytes=G, probe_bytes=P, load=True
    )
    assert set(out) == {"rtt", "pull_push", "rtt_loaded", "pull_push_loaded"}
    assert all(v.shape == (3,) for v in out.values())
    # alone: probe there (2 LAT + 8P/B) and back (same): RTT = 4 ms + 1.024 us
    np.testing.assert_allclose(out["rtt"], 2 * (2 * LAT) + 2 * 8 * P / B, rtol=1e-9)
    # pull 2 MB then push 0.5 MB, each after a 2-link latency: 4 ms + 16 ms + 4 ms
    alone = 2 * (2 * LAT) + 8 * (M + G) / B
    np.testing.assert_allclose(out["pull_push"], alone, rtol=1e-9)
    # loaded: the 3 workers move in lock step; every phase shares the PS's link
    # 3 ways (probes into h0, replies / model out of h0, gradients into h0), so each
    # phase's serialisation time triples: RTT = 4 ms + 3 * 1.024 us,
    # pull+push = 4 ms + 3 * 20 ms = 64 ms.
    np.testing.assert_allclose(out["rtt_loaded"], 2 * (2 * LAT) + 3 * 2 * 8 * P / B, rtol=1e-9)
    np.testing.assert_allclose(
        out["pull_push_loaded"], 2 * (2 * LAT) + 3 * 8 * (M + G) / B, rtol=1e-9
    )
    assert np.all(out["pull_push_loaded"] > out["pull_push"])
    assert "rtt_loaded" not in probe(net, "h0", ["h1"], model_bytes=M, grad_bytes=G, rounds=1)


def test_wan_latency_dominates_rtt():
    # two datacenters, 1 host each, WAN one-way latency 20 ms; the other links 1 us,
    # 10 Gbit/s (WAN 1 Gbit/s). Path dc0-h0 -> leaf -> spine -> gw -> gw -> spine ->
    # leaf -> dc1-h0: 6 intra-DC links (6 us) + WAN (20 ms); the WAN is the bottleneck.
    dc = {
        "racks": 1,
        "hosts_per_rack": 1,
        "spines": 1,
        "host_bandwidth": 10e9,
        "fabric_bandwidth": 10e9,
        "host_latency": 1e-6,
        "fabric_latency": 1e-6,
    }
    net = multi_datacenter([dc, dc], [(0, 1, 0.020, 1e9)])
    out = probe(net, "dc0-h0", ["dc1-h0"], model_bytes=M, grad_bytes=G, probe_bytes=P, rounds=2)
    one_way = 6e-6 + 0.020
    assert out["rtt"][0] == pytest.approx(2 * one_way + 2 * 8 * P / 1e9, rel=1e-9)
    assert out["pull_push"][0] == pytest.approx(2 * one_way + 8 * (M + G) / 1e9, rel=1e-9)


def test_rounds_must_be_positive():
    with pytest.raises(ValueError, match="rounds.*0"):
        probe(star(2), "h0", ["h1"], model_bytes=1, grad_bytes=1, rounds=0)
