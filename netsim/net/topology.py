"""Pure builders of datacenter network graphs.

A builder is called as ``G = fat_tree(4, bandwidth=10e9)`` and returns a new
undirected :class:`networkx.Graph`; it reads no file, prints nothing and draws no
random number. Every physical link is one edge and is full duplex: each direction
has its own capacity ``bandwidth``.

Attribute vocabulary (the only names the rest of netsim reads):

============  ======  =====================================================
``bandwidth`` edge    capacity of each direction, bit/s, float >= 0 (may be inf; 0: the
                      link is cut and carries nothing, routes still cross it)
``latency``   edge    one-way propagation delay, s, finite float >= 0
``role``      node    one of :data:`ROLES`; flows start and end at ``"host"``
``dc``        node    datacenter id (int), set by :func:`multi_datacenter`
``pod``       node    pod id (int) of hosts, edge and agg switches of :func:`fat_tree`
============  ======  =====================================================

Host names are readable and stable (``h0``, ``h1``, ... or ``dc0-h3``);
:func:`hosts` lists them in natural order (``h2`` before ``h10``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import networkx as nx

__all__ = [
    "ROLES",
    "TopologyError",
    "BUILDERS",
    "star",
    "leaf_spine",
    "fat_tree",
    "multi_datacenter",
    "validate_graph",
    "hosts",
    "natural_key",
]

ROLES = frozenset({"host", "tor", "leaf", "spine", "edge", "agg", "core", "switch", "wan"})
"""Allowed values of the node attribute ``role``."""


class TopologyError(ValueError):
    """A topology (graph, spec or file) is invalid at *element*.

    ``str(err)`` is ``"<element>: <message>"``; both parts stay available as
    the attributes ``element`` and ``message``.
    """

    def __init__(self, element: str, message: str) -> None:
        super().__init__(f"{element}: {message}")
        self.element = element
        self.message = message


def natural_key(node: object) -> tuple:
    """Sort key putting ``h2`` before ``h10`` (works for str and int nodes)."""
    parts = re.split(r"(\d+)", str(node))
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


def hosts(G: nx.Graph) -> list:
    """The nodes of *G* whose ``role`` is ``"host"``, in natural order."""
    return sorted((n for n, r in G.nodes(data="role") if r == "host"), key=natural_key)


MAX_LINKS = 200_000
"""Most links a built topology may have (a bigger graph does not fit the flow model's memory)."""


def _size(name: str, links: float) -> None:
    """Refuse a builder call that would make more than MAX_LINKS links."""
    if links > MAX_LINKS:
        raise TopologyError(name, f"would build {links:.3g} links; at most {MAX_LINKS} are allowed")


def _count(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TopologyError(name, f"must be an integer >= {minimum}, got {value!r}")
    return value


def _link(name_bw: str, bandwidth: object, name_lat: str, latency: object) -> dict[str, float]:
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) or not bandwidth >= 0:
        raise TopologyError(name_bw, f"must be >= 0 bit/s (0: cut), got {bandwidth!r}")
    if (
        isinstance(latency, bool)
        or not isinstance(latency, (int, float))
        or not 0 <= latency < math.inf
    ):
        raise TopologyError(name_lat, f"must be a finite number >= 0 s, got {latency!r}")
    return {"bandwidth": float(bandwidth), "latency": float(latency)}


def star(n_hosts: int, *, bandwidth: float = 10e9, latency: float = 5e-6) -> nx.Graph:
    """Hosts ``h0`` ... ``h{n_hosts-1}`` around one switch ``s0``.

    Parameters
    ----------
    n_hosts : int
        Number of hosts, >= 1.
    bandwidth : float, default 10e9
        Capacity of each host link per direction, bit/s.
    latency : float, default 5e-6
        One-way latency of each host link, s (a host-to-host path has twice it).

    Returns
    -------
    networkx.Graph
        ``n_hosts + 1`` nodes and ``n_hosts`` edges.
    """
    _count("n_hosts", n_hosts)
    _size("n_hosts", n_hosts)
    attrs = _link("bandwidth", bandwidth, "latency", latency)
    G = nx.Graph(name=f"star({n_hosts})")
    G.add_node("s0", role="switch")
    for i in range(n_hosts):
        G.add_node(f"h{i}", role="host")
        G.add_edge(f"h{i}", "s0", **attrs)
    return G


def _add_leaf_spine(
    G: nx.Graph,
    prefix: str,
    racks: int,
    hosts_per_rack: int,
    spines: int,
    host_link: dict[str, float],
    fabric_link: dict[str, float],
    extra: dict[str, object],
) -> None:
    for s in range(spines):
        G.add_node(f"{prefix}spine{s}", role="spine", **extra)
    for r in range(racks):
        leaf = f"{prefix}leaf{r}"
        G.add_node(leaf, role="leaf", **extra)
        for s in range(spines):
            G.add_edge(leaf, f"{prefix}spine{s}", **fabric_link)
        for j in range(hosts_per_rack):
            host = f"{prefix}h{r * hosts_per_rack + j}"
            G.add_node(host, role="host", **extra)
            G.add_edge(host, leaf, **host_link)


def leaf_spine(
    racks: int,
    hosts_per_rack: int,
    spines: int,
    *,
    host_bandwidth: float = 10e9,
    fabric_bandwidth: float = 40e9,
    host_latency: float = 1e-6,
    fabric_latency: float = 1e-6,
) -> nx.Graph:
    """Two-tier Clos: every leaf (ToR) ``leaf{r}`` links to every ``spine{s}``.

    Parameters
    ----------
    racks, hosts_per_rack, spines : int
        Number of leaves, hosts under each leaf and spines, each >= 1. Host
        ``h{r * hosts_per_rack + j}`` is the j-th host of rack r.
    host_bandwidth, fabric_bandwidth : float
        Capacity per direction of host-leaf and leaf-spine links, bit/s.
    host_latency, fabric_latency : float
        One-way latency of host-leaf and leaf-spine links, s.

    Returns
    -------
    networkx.Graph
        ``racks * (hosts_per_rack + spines)`` edges.
    """
    for name, value in (("racks", racks), ("hosts_per_rack", hosts_per_rack), ("spines", spines)):
        _count(name, value)
    _size("racks", racks * (hosts_per_rack + spines))
    host_link = _link("host_bandwidth", host_bandwidth, "host_latency", host_latency)
    fabric_link = _link("fabric_bandwidth", fabric_bandwidth, "fabric_latency", fabric_latency)
    G = nx.Graph(name=f"leaf_spine({racks}, {hosts_per_rack}, {spines})")
    _add_leaf_spine(G, "", racks, hosts_per_rack, spines, host_link, fabric_link, {})
    return G


def fat_tree(k: int, *, bandwidth: float = 10e9, latency: float = 1e-6) -> nx.Graph:
    """Al-Fares k-ary fat-tree with uniform links.

    ``k`` pods, each with ``k/2`` edge switches ``p{p}-edge{i}`` and ``k/2``
    aggregation switches ``p{p}-agg{i}``; ``(k/2)**2`` cores ``core{j}``; each edge
    switch serves ``k/2`` hosts, host ``h{p*(k/2)**2 + i*(k/2) + j}``. Agg switch
    ``i`` of every pod links to cores ``i*(k/2)`` ... ``i*(k/2) + k/2 - 1``.

    Parameters
    ----------
    k : int
        Switch port count, even and >= 2.
    bandwidth : float, default 10e9
        Capacity of every link per direction, bit/s.
    latency : float, default 1e-6
        One-way latency of every link, s.

    Returns
    -------
    networkx.Graph
        ``k**3/4`` hosts, ``5*k**2/4`` switches and ``3*k**3/4`` edges
        (``k**3/4`` each of host-edge, edge-agg and agg-core links); full
        bisection bandwidth; any two hosts are at most 6 hops apart.
    """
    _count("k", k, 2)
    if k % 2:
        raise TopologyError("k", f"must be even, got {k!r}")
    _size("k", 3 * k**3 // 4)
    attrs = _link("bandwidth", bandwidth, "latency", latency)
    half = k // 2
    G = nx.Graph(name=f"fat_tree({k})")
    for c in range(half * half):
        G.add_node(f"core{c}", role="core")
    for p in range(k):
        for i in range(half):
            agg, edge = f"p{p}-agg{i}", f"p{p}-edge{i}"
            G.add_node(agg, role="agg", pod=p)
            G.add_node(edge, role="edge", pod=p)
            for c in range(i * half, (i + 1) * half):
                G.add_edge(agg, f"core{c}", **attrs)
        for i in range(half):
            edge = f"p{p}-edge{i}"
            for a in range(half):
                G.add_edge(edge, f"p{p}-agg{a}", **attrs)
            for j in range(half):
                host = f"h{p * half * half + i * half + j}"
                G.add_node(host, role="host", pod=p)
                G.add_edge(host, edge, **attrs)
    return G


_DC_KEYS = {
    "racks",
    "hosts_per_rack",
    "spines",
    "host_bandwidth",
    "fabric_bandwidth",
    "host_latency",
    "fabric_latency",
    "gateway_bandwidth",
    "gateway_latency",
}


def _add_datacenter(G: nx.Graph, i: int, spec: object) -> None:
    where = f"dcs[{i}]"
    if not isinstance(spec, dict):
        raise TopologyError(where, f"must be a dict, got {spec!r}")
    unknown = sorted(set(spec) - _DC_KEYS)
    if unknown:
        raise TopologyError(f"{where}.{unknown[0]}", f"unknown key (allowed: {sorted(_DC_KEYS)})")
    for key in ("racks", "hosts_per_rack", "spines"):
        _count(f"{where}.{key}", spec.get(key))
    _size(f"{where}.racks", spec["racks"] * (spec["hosts_per_rack"] + spec["spines"]))
    opts = {
        "host_bandwidth": 10e9,
        "host_latency": 1e-6,
        "fabric_bandwidth": 40e9,
        "fabric_latency": 1e-6,
    } | spec
    opts.setdefault("gateway_bandwidth", opts["fabric_bandwidth"])
    opts.setdefault("gateway_latency", opts["fabric_latency"])
    host, fabric, gateway = (
        _link(
            f"{where}.{t}_bandwidth",
            opts[f"{t}_bandwidth"],
            f"{where}.{t}_latency",
            opts[f"{t}_latency"],
        )
        for t in ("host", "fabric", "gateway")
    )
    _add_leaf_spine(
        G, f"dc{i}-", spec["racks"], spec["hosts_per_rack"], spec["spines"], host, fabric, {"dc": i}
    )
    G.add_node(f"dc{i}-gw", role="wan", dc=i)
    for s in range(spec["spines"]):
        G.add_edge(f"dc{i}-spine{s}", f"dc{i}-gw", **gateway)


def multi_datacenter(dcs: list[dict], wan: list[tuple[int, int, float, float]]) -> nx.Graph:
    """Leaf-spine datacenters joined by WAN links between their gateways.

    Datacenter ``i`` is a :func:`leaf_spine` whose node names are prefixed
    ``dc{i}-`` (hosts ``dc{i}-h0`` ...), plus a gateway ``dc{i}-gw`` (role
    ``"wan"``) linked to each of its spines. Every node carries ``dc=i``.

    Parameters
    ----------
    dcs : list of dict
        One dict per datacenter with keys ``racks``, ``hosts_per_rack``,
        ``spines`` and optionally the link keywords of :func:`leaf_spine`,
        ``gateway_bandwidth`` (bit/s, default ``fabric_bandwidth``) and
        ``gateway_latency`` (s, default ``fabric_latency``) of spine-gateway links.
    wan : list of (int, int, float, float)
        ``(dc_a, dc_b, latency_s, bandwidth_bps)`` per WAN link between gateways.

    Returns
    -------
    networkx.Graph
    """
    if not isinstance(dcs, (list, tuple)) or not dcs:
        raise TopologyError("dcs", f"must be a non-empty list of dicts, got {dcs!r}")
    if not isinstance(wan, (list, tuple)):
        raise TopologyError(
            "wan", f"must be a list of (dc_a, dc_b, latency_s, bandwidth_bps), got {wan!r}"
        )
    _size("dcs", len(dcs) + len(wan))
    G = nx.Graph(name=f"multi_datacenter({len(dcs)})")
    for i, spec in enumerate(dcs):
        _add_datacenter(G, i, spec)
    for j, link in enumerate(wan):
        where = f"wan[{j}]"
        if not isinstance(link, (list, tuple)) or len(link) != 4:
            raise TopologyError(
                where, f"must be (dc_a, dc_b, latency_s, bandwidth_bps), got {link!r}"
            )
        a, b, lat, bw = link
        for end in (a, b):
            if isinstance(end, bool) or not isinstance(end, int) or not 0 <= end < len(dcs):
                raise TopologyError(
                    where, f"datacenter id must be in 0..{len(dcs) - 1}, got {end!r}"
                )
        if a == b or G.has_edge(f"dc{a}-gw", f"dc{b}-gw"):
            raise TopologyError(where, f"self or duplicate WAN link between dc{a} and dc{b}")
        G.add_edge(
            f"dc{a}-gw", f"dc{b}-gw", **_link(f"{where} bandwidth", bw, f"{where} latency", lat)
        )
    return G


BUILDERS: dict[str, Callable[..., nx.Graph]] = {
    "star": star,
    "leaf_spine": leaf_spine,
    "fat_tree": fat_tree,
    "multi_datacenter": multi_datacenter,
}
"""Builder functions by the name used in topology specs."""


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def validate_graph(G: nx.Graph) -> nx.Graph:
    """Check *G* against the attribute vocabulary and return it unchanged.

    Raises :exc:`TopologyError` naming the offending node or edge for a
    directed or multi graph, a self-loop, a missing attribute, a ``bandwidth``
    that is not >= 0, a ``latency`` that is negative or not finite, an unknown
    ``role``, or a graph without hosts.
    """
    if G.is_directed() or G.is_multigraph():
        raise TopologyError(
            "graph", f"must be an undirected simple nx.Graph, got {type(G).__name__}"
        )
    for n, role in G.nodes(data="role"):
        if role is None:
            raise TopologyError(f"node {n!r}", "missing attribute 'role'")
        if role not in ROLES:
            raise TopologyError(f"node {n!r}", f"role must be one of {sorted(ROLES)}, got {role!r}")
    for u, v, data in G.edges(data=True):
        where = f"edge ({u!r}, {v!r})"
        if u == v:
            raise TopologyError(where, "self-loop")
        for key in ("bandwidth", "latency"):
            if key not in data:
                raise TopologyError(where, f"missing attribute {key!r}")
        bw, lat = data["bandwidth"], data["latency"]
        if not _number(bw) or not bw >= 0:
            raise TopologyError(where, f"bandwidth must be >= 0 bit/s (0: cut), got {bw!r}")
        if not _number(lat) or not 0 <= lat < math.inf:
            raise TopologyError(where, f"latency must be a finite number >= 0 s, got {lat!r}")
    if not any(r == "host" for _, r in G.nodes(data="role")):
        raise TopologyError("graph", "has no host (no node with role 'host')")
    return G
