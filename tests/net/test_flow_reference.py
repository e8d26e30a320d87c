"""FlowNetwork against an independent fluid reference simulator written in this file.

The reference uses netsim only to build topologies and to route (the public
:func:`netsim.net.routing.route`, with the transfer's ``flow_key``). It models:

Documented (``FlowNetwork``, ``transfer``, ``set_link``, ``TransferRecord``, README):

* ``transfer`` called at *t* takes the route of the graph as it is at *t*; the record's
  ``start`` is *t* and ``path`` that route.
* It first waits out its path latency ``L`` (sum of the link latencies) using no
  bandwidth, then sends ``8 * (nbytes + header_bytes)`` bits at its fair rate; ``end`` is
  when the last bit is through.
* Rates: max-min over directed links (full duplex) by progressive filling, recomputed
  whenever a flow starts sending or ends; ``sharing="rtt"`` weights a flow by
  ``1 / max(L, 1e-9 s)``; infinite-bandwidth links never constrain.
* ``set_link(bandwidth=...)`` applies at once to every flow crossing the link (both
  directions), so rates are also recomputed then; ``set_link(latency=...)`` and the
  new routes apply to transfers called from then on.

Inferred where the docs are silent:

* a flow of 0 bits, or one with no finite link on its path when it starts sending, ends
  at ``t + L``; a self-transfer has the empty path, ``L = 0`` and ends at *t* (the
  "zero", "inf" and "self" cases of ``test_flows.py``);
* the RTT weight keeps the ``L`` of the call (``set_link``: a latency change applies
  to later transfers only);
* a transfer and a latency change at the same instant: order undocumented, never drawn.

``bytes_carried`` is checked on links finite throughout: every bit of a flow crosses
each link of its path. Random link changes also make infinite links finite (two hand cases
of that are at the end of the file).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import simpy

from netsim.net import flows
from netsim.net.flows import FlowNetwork
from netsim.net.routing import route
from netsim.net.topology import fat_tree, hosts, leaf_spine, multi_datacenter, star
from netsim.net.topology_io import load_topology

PRESETS = Path(__file__).resolve().parents[2] / "topologies"
INF = math.inf
RTOL = 1e-9


@pytest.fixture(autouse=True, params=["default", "virtual time"])
def _hub_flows(request, monkeypatch):
    """Every case twice: as the network serves flows by default, and with flows that split
    by hubs served by virtual time from the first one (``HUB_FLOWS`` = 1)."""
    if request.param == "virtual time":
        monkeypatch.setattr(flows, "HUB_FLOWS", 1)


MIN_RTT = 1e-9  # documented floor of the RTT weight's latency


@dataclass(frozen=True)
class Transfer:
    """``net.transfer(src, dst, nbytes, flow_key=key)`` called at time *t*."""

    src: object
    dst: object
    nbytes: float
    t: float
    key: object = None


@dataclass(frozen=True)
class Change:
    """``net.set_link(u, v, bandwidth=..., latency=...)`` called at time *t*."""

    t: float
    u: object
    v: object
    bandwidth: float | None = None
    latency: float | None = None


@dataclass
class _Flow:
    path: list
    send: float  # when sending starts: t + path latency
    bits: float
    weight: float
    end: float | None = None
    left: float = field(init=False)

    def __post_init__(self):
        self.left = self.bits


# ------------------------------------------------------------------ reference


def max_min(paths, weights, cap):
    """Weighted max-min rates by textbook progressive filling.

    Raise every unfrozen flow's rate by ``weight * step`` where ``step`` saturates the
    first link(s); freeze the flows on saturated links; repeat. Flows crossing no
    finite link get ``inf``.
    """
    finite = [[link for link in p if cap[link] < INF] for p in paths]
    rate = [0.0 if links else INF for links in finite]
    free = {f for f, links in enumerate(finite) if links}
    left = {link: cap[link] for links in finite for link in links}
    while free:
        load = {}
        for f in free:
            for link in finite[f]:
                load[link] = load.get(link, 0.0) + weights[f]
        share = {link: left[link] / w for link, w in load.items()}
        step = min(share.values())
        for f in free:
            rate[f] += weights[f] * step
        full = {link for link, s in share.items() if s == step}
        for link, w in load.items():
            left[link] = 0.0 if link in full else max(left[link] - step * w, 0.0)
        free -= {f for f in free if any(link in full for link in finite[f])}
    return rate


def _capacities(G):
    return {link: G.edges[link]["bandwidth"] for u, v in G.edges for link in ((u, v), (v, u))}


def _launch(G, transfers, changes, sharing, header_bytes):
    """Route every transfer on the graph as it is when it is called: flows and
    the bandwidth changes ``(t, link, bandwidth)`` for the sending phase."""
    G = G.copy()
    calls = sorted(
        [(tr.t, 1, i) for i, tr in enumerate(transfers)]
        + [(ch.t, 0, j) for j, ch in enumerate(changes)]
    )
    lat_times = {ch.t for ch in changes if ch.latency is not None}
    assert not lat_times & {tr.t for tr in transfers}, "order undocumented"
    flows, bw_changes, memo = [None] * len(transfers), [], {}
    for t, is_transfer, i in calls:
        if not is_transfer:
            ch = changes[i]
            for key in ("bandwidth", "latency"):
                if getattr(ch, key) is not None:
                    G.edges[ch.u, ch.v][key] = getattr(ch, key)
            if ch.bandwidth is not None:
                bw_changes += [(t, (ch.u, ch.v), ch.bandwidth), (t, (ch.v, ch.u), ch.bandwidth)]
            memo = {}
            continue
        tr = transfers[i]
        path = route(G, tr.src, tr.dst, flow_key=tr.key, cache=memo)
        latency = sum(G.edges[link]["latency"] for link in path)
        weight = 1.0 / max(latency, MIN_RTT) if sharing == "rtt" else 1.0
        flows[i] = _Flow(path, t + latency, 8.0 * (tr.nbytes + header_bytes), weight)
    return flows, bw_changes


def _send(flows, bw_changes, cap):
    """Event loop of the sending phase: sets every flow's ``end``."""
    pending = sorted((f for f in flows if f.bits > 0), key=lambda f: f.send)
    bw_changes = sorted(bw_changes, key=lambda c: c[0])
    active, now = [], 0.0
    while pending or active:
        while bw_changes and bw_changes[0][0] <= now:
            _, link, bandwidth = bw_changes.pop(0)
            cap[link] = bandwidth
        while pending and pending[0].send <= now:
            active.append(pending.pop(0))
        rates = max_min([f.path for f in active], [f.weight for f in active], cap)
        finish = [now + f.left / r for f, r in zip(active, rates, strict=True)]
        nxt = min(finish, default=INF)
        if pending:
            nxt = min(nxt, pending[0].send)
        if bw_changes:
            nxt = min(nxt, bw_changes[0][0])
        still = []
        for f, r, done in zip(active, rates, finish, strict=True):
            if done <= nxt:
                f.end = done
            else:
                f.left = max(f.left - r * (nxt - now), 0.0)
                still.append(f)
        active, now = still, nxt


def reference(G, transfers, changes=(), *, sharing="maxmin", header_bytes=0):
    """``[(end, path), ...]`` of *transfers* by the reference model."""
    flows, bw_changes = _launch(G, transfers, changes, sharing, header_bytes)
    for f in flows:
        if f.bits == 0:
            f.end = f.send
    _send(flows, bw_changes, _capacities(G))
    return [(f.end, tuple(f.path)) for f in flows]


# --------------------------------------------------------------------- netsim


def run_netsim(G, transfers, changes=(), **kw):
    """The TransferRecords of *transfers* run through FlowNetwork, and the network."""
    env = simpy.Environment()
    net = FlowNetwork(env, G.copy(), **kw)
    records = [None] * len(transfers)

    def call(i, tr):
        event = net.transfer(tr.src, tr.dst, tr.nbytes, flow_key=tr.key)
        event.callbacks.append(lambda ev: records.__setitem__(i, ev.value))

    for i, tr in enumerate(transfers):
        env.timeout(tr.t).callbacks.append(lambda _e, i=i, tr=tr: call(i, tr))
    for ch in changes:
        env.timeout(ch.t).callbacks.append(
            lambda _e, ch=ch: net.set_link(ch.u, ch.v, bandwidth=ch.bandwidth, latency=ch.latency)
        )
    env.run()
    return records, net


def check(G, transfers, changes=(), **kw):
    """Every transfer's start, path and end agree with the reference; so do the
    bytes carried by links that are finite throughout."""
    want = reference(G, transfers, changes, **kw)
    got, net = run_netsim(G, transfers, changes, **kw)
    for tr, rec, (end, path) in zip(transfers, got, want, strict=True):
        assert rec is not None, tr
        assert (rec.start, rec.path) == (tr.t, path), tr
        assert rec.end == pytest.approx(end, rel=RTOL), (tr, rec.end, end)
    ever_inf = {link for link, c in _capacities(G).items() if c == INF}
    ever_inf |= {
        link for ch in changes if ch.bandwidth == INF for link in ((ch.u, ch.v), (ch.v, ch.u))
    }
    carried = dict.fromkeys(net.links, 0.0)
    for tr, (_, path) in zip(transfers, want, strict=True):
        for link in path:
            carried[link] += tr.nbytes + kw.get("header_bytes", 0)
    got_bytes = net.bytes_carried()
    links = [link for link in net.links if link not in ever_inf]
    np.testing.assert_allclose(
        [got_bytes[link] for link in links], [carried[link] for link in links], rtol=RTOL, atol=1e-6
    )


# ------------------------------------------------------ the reference by hand


def test_reference_textbook_rates():
    # as test_fairshare.py: links c0 = 1, c1 = 2; flow 0 on both, 1 on link 0, 2 on link 1
    cap = {0: 1.0, 1: 2.0, 2: INF}
    paths = [[0, 1], [0], [1, 2]]
    assert max_min(paths, [1, 1, 1], cap) == pytest.approx([0.5, 0.5, 1.5], rel=1e-12)
    assert max_min(paths, [2, 1, 1], cap) == pytest.approx([2 / 3, 1 / 3, 4 / 3], rel=1e-12)
    assert max_min(paths, [1, 1, 4], cap) == pytest.approx([0.4, 0.6, 1.6], rel=1e-12)
    assert max_min([[2], []], [1, 1], cap) == [INF, INF]


def test_reference_hand_cases():
    # test_flows.py's staggered case: A ends at 16 ms, B at 18 ms; with 40 header bytes
    # and a lone flow: 2 ms + 8 * (1e6 + 40) / 1e9
    G = star(3, bandwidth=1e9, latency=1e-3)
    specs = [Transfer("h0", "h1", 1e6, 0.0), Transfer("h2", "h1", 1e6, 2e-3)]
    assert [e for e, _ in reference(G, specs)] == pytest.approx([0.016, 0.018], rel=1e-12)
    ((end, path),) = reference(G, specs[:1], header_bytes=40)
    assert end == pytest.approx(2e-3 + 8 * (1e6 + 40) / 1e9, rel=1e-12)
    assert path == (("h0", "s0"), ("s0", "h1"))
    # halving h0's link at 6 ms: 4e6 bits by then, 4e6 more at 0.5 Gbit/s -> 14 ms
    ((end, _),) = reference(G, specs[:1], [Change(6e-3, "s0", "h0", bandwidth=5e8)])
    assert end == pytest.approx(0.014, rel=1e-12)
    # zero bytes and a self-transfer cost latency only
    ends = [
        e for e, _ in reference(G, [Transfer("h0", "h1", 0, 1.0), Transfer("h2", "h2", 1e6, 1.0)])
    ]
    assert ends == pytest.approx([1.002, 1.0], rel=1e-12)


def half_infinite():
    """h0 -(inf, 0 s)- s -(1 Gbit/s, 0 s)- h1."""
    G = nx.Graph()
    G.add_nodes_from(["h0", "h1"], role="host")
    G.add_node("s", role="switch")
    G.add_edge("h0", "s", bandwidth=INF, latency=0.0)
    G.add_edge("s", "h1", bandwidth=1e9, latency=0.0)
    return G


def infinite_link():
    """h0 -(inf, 1 ms)- h1."""
    G = nx.Graph()
    G.add_nodes_from(["h0", "h1"], role="host")
    G.add_edge("h0", "h1", bandwidth=INF, latency=1e-3)
    return G


# 1 MB from h0 to h1 at t = 0 on either graph; the infinite link becomes finite later
INF_TO_FINITE = {
    # sending alone at 1 Gbit/s from 0; at 2 ms (2e6 bits sent) h0-s drops to 0.5 Gbit/s:
    # 6e6 bits take 12 ms more -> 14 ms (not 8 ms)
    "while sending": (half_infinite, Change(2e-3, "h0", "s", bandwidth=5e8), 0.014),
    # the link gets 1 Gbit/s at 0.5 ms, during the 1 ms latency: 1 ms + 8e6 bits / 1e9 = 9 ms
    "during latency": (infinite_link, Change(5e-4, "h0", "h1", bandwidth=1e9), 0.009),
}


@pytest.mark.parametrize("case", INF_TO_FINITE)
def test_reference_infinite_link_made_finite(case):
    graph, change, end = INF_TO_FINITE[case]
    ((got, _),) = reference(graph(), [Transfer("h0", "h1", 1e6, 0.0)], [change])
    assert got == pytest.approx(end, rel=1e-12)


def test_reference_rtt_hand_case():
    # test_flows.py's RTT case: path latencies 2 and 4 ms, weights 2:1 -> 13 and 18 ms
    G = nx.Graph()
    G.add_nodes_from("abd", role="host")
    G.add_node("s", role="switch")
    G.add_edge("a", "s", bandwidth=1e9, latency=1e-3)
    G.add_edge("b", "s", bandwidth=1e9, latency=3e-3)
    G.add_edge("s", "d", bandwidth=1e9, latency=1e-3)
    specs = [Transfer("a", "d", 1e6, 0.0), Transfer("b", "d", 1e6, 0.0)]
    ends = [e for e, _ in reference(G, specs, sharing="rtt")]
    assert ends == pytest.approx([0.013, 0.018], rel=1e-12)


# ---------------------------------------------------------------- random cases


def random_graph(rng):
    """A connected graph of 3-9 nodes (at least two hosts) with mixed link speeds,
    some infinite, some zero latencies and some equal ones (ECMP ties)."""
    n = int(rng.integers(3, 10))
    G = nx.Graph()
    roles = ["host", "host"] + [str(r) for r in rng.choice(["host", "switch"], n - 2)]
    for i, role in enumerate(roles):
        G.add_node(f"n{i}", role=role)
    pairs = [(i, int(rng.integers(0, i))) for i in range(1, n)]
    pairs += [
        tuple(int(x) for x in rng.choice(n, 2, replace=False)) for _ in range(rng.integers(0, n))
    ]
    for a, b in pairs:
        bw = (
            INF
            if rng.random() < 0.08
            else float(rng.choice([1e9, 2.5e9, 10e9]) * rng.uniform(0.5, 2))
        )
        u = rng.random()
        lat = 0.0 if u < 0.1 else 1e-4 if u < 0.4 else float(rng.uniform(0, 4e-4))
        G.add_edge(f"n{a}", f"n{b}", bandwidth=bw, latency=lat)
    return G


def random_transfers(rng, H, n, hub=None, grid=2e-4):
    """*n* transfers between hosts *H* (one end *hub* in half of them, when given):
    some of 0 bytes, some of equal sizes, half started on a coarse time grid."""
    out = []
    for _ in range(n):
        src, dst = (H[i] for i in rng.integers(0, len(H), 2))
        if hub is not None and rng.random() < 0.5:
            src, dst = (hub, dst) if rng.random() < 0.5 else (src, hub)
        u = rng.random()
        nbytes = (
            0
            if u < 0.1
            else int(rng.choice([100_000, 1_000_000]))
            if u < 0.3
            else int(10 ** rng.uniform(3, 6.5))
        )
        t = (
            float(rng.integers(0, 4) * grid)
            if rng.random() < 0.5
            else float(rng.uniform(0, 4 * grid))
        )
        key = int(rng.integers(0, 1000)) if rng.random() < 0.3 else None
        out.append(Transfer(src, dst, nbytes, t, key))
    return out


def random_changes(rng, G, n, horizon=3e-3):
    """*n* ``set_link`` calls at distinct random times, mostly on links of finite
    bandwidth: a new bandwidth (sometimes infinite; an infinite link gets a finite one)
    and/or a new latency."""
    bw = {frozenset(e): G.edges[e]["bandwidth"] for e in G.edges}
    out = []
    for t in np.sort(rng.uniform(0, horizon, n)):
        finite = [e for e in G.edges if bw[frozenset(e)] < INF]
        infinite = [e for e in G.edges if bw[frozenset(e)] == INF]
        pool = infinite if infinite and (not finite or rng.random() < 0.3) else finite
        u, v = pool[int(rng.integers(len(pool)))]
        new_bw = new_lat = None
        old = bw[frozenset((u, v))]
        if old == INF:
            new_bw = float(10 ** rng.uniform(8.5, 10))
            bw[frozenset((u, v))] = new_bw
        elif rng.random() < 0.8:
            new_bw = INF if rng.random() < 0.1 else float(old * rng.uniform(0.2, 3))
            bw[frozenset((u, v))] = new_bw
        if new_bw is None or rng.random() < 0.3:
            new_lat = float(rng.uniform(0, 4e-4))
        out.append(Change(float(t), u, v, new_bw, new_lat))
    return out


def options(rng):
    return {"sharing": str(rng.choice(["maxmin", "rtt"])), "header_bytes": int(rng.choice([0, 64]))}


@pytest.mark.parametrize("seed", range(120))
def test_random_graphs(seed):
    rng = np.random.default_rng(seed)
    G = random_graph(rng)
    changes = random_changes(rng, G, int(rng.integers(0, 4))) if seed % 2 else []
    check(G, random_transfers(rng, hosts(G), int(rng.integers(2, 31))), changes, **options(rng))


@cache
def preset(name):
    return load_topology(name, base_dir=PRESETS)


PRESET_NAMES = ["star16", "fat_tree_k4", "leaf_spine_small", "geo3", "fat_tree_k16"]
PRESET_CASES = [
    (name, seed) for name in PRESET_NAMES for seed in range(6 if name == "fat_tree_k16" else 20)
]


@pytest.mark.parametrize("name, seed", PRESET_CASES)
def test_presets(name, seed):
    rng = np.random.default_rng([seed, PRESET_NAMES.index(name)])
    G = preset(name)
    H = hosts(G)[:40]  # fat_tree_k16: the first 40 hosts, for contention
    changes = random_changes(rng, G, int(rng.integers(1, 4))) if seed % 2 else []
    transfers = random_transfers(rng, H, int(rng.integers(2, 31)), hub=H[0])
    check(G, transfers, changes, **options(rng))


def ps_transfers(rng, H, n):
    """*n* pushes to and pulls from ``H[0]`` (a PS) by the other hosts *H*, many at once:
    sizes of a few values (ties) or random, started on a coarse grid or at random."""
    out = []
    for _ in range(n):
        worker = H[int(rng.integers(1, len(H)))]
        src, dst = (worker, H[0]) if rng.random() < 0.5 else (H[0], worker)
        nbytes = (
            int(rng.choice([250_000, 1_000_000]))
            if rng.random() < 0.5
            else int(10 ** rng.uniform(4, 6.5))
        )
        t = float(rng.integers(0, 8) * 2e-4) if rng.random() < 0.5 else float(rng.uniform(0, 2e-3))
        out.append(Transfer(src, dst, nbytes, t))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_ps_traffic(seed):
    """A PS's pushes and pulls, 10-80 of them, on a star, a fat-tree and two datacenters:
    the flows split by hubs (the PS's links in and out) and, once enough are in flight,
    are served by virtual time; some runs change links on the way."""
    rng = np.random.default_rng([seed, 7])
    G = preset(["star16", "fat_tree_k4", "geo3", "leaf_spine_small"][seed % 4])
    changes = random_changes(rng, G, int(rng.integers(1, 3))) if seed % 3 == 0 else []
    transfers = ps_transfers(rng, hosts(G)[:16], int(rng.integers(10, 81)))
    check(G, transfers, changes, header_bytes=int(rng.choice([0, 64])))


def random_builder(rng):
    """star, oversubscribed leaf-spine, small fat-tree or two datacenters, random sizes."""
    kind = int(rng.integers(4))
    if kind == 0:
        return star(int(rng.integers(2, 9)), bandwidth=float(rng.uniform(1e9, 1e10)), latency=1e-5)
    if kind == 1:
        return leaf_spine(
            int(rng.integers(2, 4)),
            int(rng.integers(1, 5)),
            int(rng.integers(1, 3)),
            host_bandwidth=10e9,
            fabric_bandwidth=float(rng.choice([5e9, 10e9, 40e9])),
            fabric_latency=float(rng.choice([1e-6, 2e-6])),
        )
    if kind == 2:
        return fat_tree(int(rng.choice([2, 4])), bandwidth=float(rng.choice([1e9, 10e9])))
    dc = {"racks": 2, "hosts_per_rack": 2, "spines": 2, "gateway_bandwidth": 5e9}
    return multi_datacenter(
        [dc, dc], [(0, 1, float(rng.uniform(1e-4, 1e-3)), float(rng.uniform(1e9, 1e10)))]
    )


@pytest.mark.parametrize("seed", range(50))
def test_builders(seed):
    rng = np.random.default_rng([seed, 99])
    G = random_builder(rng)
    H = hosts(G)
    changes = random_changes(rng, G, int(rng.integers(1, 4))) if seed % 2 else []
    check(G, random_transfers(rng, H, int(rng.integers(2, 31)), hub=H[0]), changes, **options(rng))


# ------------------------------------------------------------ infinite -> finite


@pytest.mark.parametrize("case", INF_TO_FINITE)
def test_infinite_link_made_finite_constrains_started_transfers(case):
    """``set_link`` gives an infinite link a finite bandwidth while a transfer crosses it
    (sending, or still in its latency): the new limit applies at once."""
    graph, change, end = INF_TO_FINITE[case]
    (rec,), _ = run_netsim(graph(), [Transfer("h0", "h1", 1e6, 0.0)], [change])
    assert rec.end == pytest.approx(end, rel=RTOL)
