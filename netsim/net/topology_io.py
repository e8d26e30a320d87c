"""Load topologies from presets, specs, GraphML files and Topology Zoo / SNDlib.

The only module of the network layer that reads files. A spec (a TOML file or
an inline dict) has exactly one of these sources, plus an optional
``description``:

``builder = "fat_tree"`` with ``[args]``
    A builder of :data:`netsim.net.topology.BUILDERS` called with ``args``.
``graphml = "file.graphml"``
    A GraphML file (relative to the spec's directory or *base_dir*).
``topohub = "topozoo/Abilene"``
    A wide-area graph shipped by the ``topohub`` package (Internet Topology
    Zoo, SNDlib, ...); read from the installed package, never downloaded.

For GraphML and topohub graphs, ``bandwidth`` (bit/s, default 10e9) and
``latency`` (s, default 0) are the defaults for links that lack them. An
edge's bandwidth is its ``bandwidth`` attribute, else Topology Zoo's
``LinkSpeedRaw``, else the default; its latency is its ``latency`` attribute,
else the great-circle distance between its endpoints' coordinates (GraphML
``Latitude``/``Longitude`` or topohub ``pos = (lon, lat)``) at 2/3 of the
speed of light, else the default. Nodes without a ``role`` become hosts.
Parallel edges merge (bandwidths add, shortest latency kept); self-loops go.
"""

from __future__ import annotations

import math
import os
import tomllib
from pathlib import Path

import networkx as nx

from .topology import BUILDERS, TopologyError, validate_graph

__all__ = ["load_topology", "list_presets", "great_circle_latency"]

_EARTH_RADIUS_M = 6_371_000.0
_FIBRE_SPEED_M_S = 2.0 / 3.0 * 299_792_458.0
_SOURCES = ("builder", "graphml", "topohub")
_KEYS = {"builder", "args", "graphml", "topohub", "bandwidth", "latency", "description"}


def great_circle_latency(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """One-way latency (s) over the great circle between two points (degrees) at 2/3 c."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * _EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(a))) / _FIBRE_SPEED_M_S


def list_presets(directory: str | os.PathLike) -> list[str]:
    """Names (file stems) of the ``*.toml`` presets in *directory*, sorted."""
    return sorted(p.stem for p in Path(directory).glob("*.toml"))


def load_topology(
    spec_or_path: dict | str | os.PathLike, *, base_dir: str | os.PathLike | None = None
) -> nx.Graph:
    """Build and validate the topology described by *spec_or_path*.

    Parameters
    ----------
    spec_or_path : dict, str or os.PathLike
        An inline spec; a path to a ``.toml`` spec or ``.graphml`` file; a
        preset name, found as ``<base_dir>/<name>.toml``; or
        ``"topohub:<key>"``, short for ``{"topohub": "<key>"}``.
    base_dir : str or os.PathLike, optional
        Directory for relative paths and preset names (default: the current
        directory).

    Returns
    -------
    networkx.Graph
        Validated by :func:`netsim.net.topology.validate_graph`.

    Raises
    ------
    TopologyError
        For a missing or unparsable file, an unknown key or builder, bad
        builder arguments or an invalid graph; the element names the file.
    """
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    if isinstance(spec_or_path, dict):
        return _from_spec(spec_or_path, "<inline spec>", base)
    if isinstance(spec_or_path, str) and spec_or_path.startswith("topohub:"):
        return _from_spec({"topohub": spec_or_path[len("topohub:") :]}, spec_or_path, base)
    try:
        path = Path(spec_or_path)
        if not path.is_absolute():
            path = base / path
        if not is_file(path) and not path.suffix:
            path = path.with_suffix(".toml")
    except (TypeError, ValueError) as err:  # not a path at all
        raise TopologyError(repr(spec_or_path), f"not a topology name or path: {err}") from None
    if not is_file(path):
        raise TopologyError(str(path), f"no such topology file or preset {str(spec_or_path)!r}")
    if path.suffix.lower() == ".graphml":
        return _from_spec({"graphml": str(path)}, str(path), base)
    try:
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError, ValueError) as err:
        raise TopologyError(str(path), f"unparsable TOML: {type(err).__name__}: {err}") from None
    except OSError as err:
        raise TopologyError(str(path), f"cannot be read: {err.strerror or err}") from None
    return _from_spec(spec, str(path), path.parent)


def is_file(path: str | os.PathLike) -> bool:
    """``Path(path).is_file()``, False for names the OS refuses (too long, NUL bytes, ...)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


_KINDS = {
    "builder": (str, "a string"),
    "args": (dict, "a table"),
    "graphml": (str, "a string"),
    "topohub": (str, "a string"),
    "description": (str, "a string"),
}


def _from_spec(spec: object, where: str, base: str | os.PathLike) -> nx.Graph:
    if not isinstance(spec, dict):
        raise TopologyError(where, f"must be a table, got {spec!r}")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise TopologyError(f"{where} [{unknown[0]!r}]", f"unknown key (allowed: {sorted(_KEYS)})")
    sources = [key for key in _SOURCES if key in spec]
    if len(sources) != 1:
        raise TopologyError(where, f"needs exactly one of {list(_SOURCES)}, got {sources}")
    for key, (kind, name) in _KINDS.items():
        if key in spec and not isinstance(spec[key], kind):
            raise TopologyError(f"{where} [{key}]", f"must be {name}, got {spec[key]!r}")
    for key, low in (("bandwidth", 0.0), ("latency", 0.0)):
        value = spec.get(key, 1.0)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not low <= value < math.inf
        ):
            need = ">= 0 bit/s" if key == "bandwidth" else ">= 0 s"
            raise TopologyError(
                f"{where} [{key}]", f"must be a finite number {need}, got {value!r}"
            )
    try:
        if "builder" in spec:
            G = _build(spec, where)
        else:
            bandwidth = spec.get("bandwidth", 10e9)
            latency = spec.get("latency", 0.0)
            if "graphml" in spec:
                G = _read_graphml(Path(base) / spec["graphml"], where)
            else:
                G = _read_topohub(spec["topohub"], where)
            G = _normalise(G, bandwidth, latency)
        return validate_graph(G)
    except TopologyError as err:
        if str(err.element).startswith(where):
            raise
        raise TopologyError(f"{where} [{err.element}]", err.message) from err


def _build(spec: dict, where: str) -> nx.Graph:
    name = spec["builder"]
    if name not in BUILDERS:
        raise TopologyError(
            f"{where} [builder]", f"unknown builder {name!r} (known: {sorted(BUILDERS)})"
        )
    args = spec.get("args", {})
    if not isinstance(args, dict):
        raise TopologyError(f"{where} [args]", f"must be a table, got {args!r}")
    try:
        return BUILDERS[name](**args)
    except TypeError as err:  # unexpected or missing keyword
        raise TopologyError(f"{where} [args]", f"bad arguments for {name}: {err}") from err


def _read_graphml(path: Path, where: str) -> nx.Graph:
    if not is_file(path):
        raise TopologyError(f"{where} [graphml]", f"no such file {str(path)!r}")
    try:
        return nx.read_graphml(path)
    except Exception as err:  # ParseError, NetworkXError, KeyError, ... from the reader
        raise TopologyError(str(path), f"unparsable GraphML: {err}") from err


def _read_topohub(key: str, where: str) -> nx.Graph:
    try:
        import topohub
    except ImportError as err:
        raise TopologyError(
            f"{where} [topohub]", "the 'topohub' package is not installed (pip install topohub)"
        ) from err
    try:
        data = topohub.get(key)
    except KeyError as err:
        raise TopologyError(f"{where} [topohub]", f"no topology {key!r} in topohub") from err
    G = nx.node_link_graph(data, edges="edges")
    names = [G.nodes[n].get("name") for n in G]
    if None not in names and len(set(names)) == len(names):
        G = nx.relabel_nodes(G, dict(zip(G, names, strict=True)))
    for n, pos in G.nodes(data="pos"):
        if pos is not None:
            G.nodes[n]["Longitude"], G.nodes[n]["Latitude"] = pos
    return G


def _coords(attrs: dict) -> tuple[float, float] | None:
    lat, lon = attrs.get("Latitude"), attrs.get("Longitude")
    return None if lat is None or lon is None else (float(lat), float(lon))


def _normalise(H: nx.Graph, bandwidth: float, latency: float) -> nx.Graph:
    """A simple undirected nx.Graph in the netsim vocabulary from a foreign graph."""
    G = nx.Graph(name=H.graph.get("name", ""))
    for n, attrs in H.nodes(data=True):
        G.add_node(n, **attrs)
        G.nodes[n].setdefault("role", "host")
    for u, v, attrs in H.edges(data=True):
        if u == v:
            continue
        bw = attrs.get("bandwidth", attrs.get("LinkSpeedRaw", bandwidth))
        lat = attrs.get("latency")
        if lat is None:
            a, b = _coords(H.nodes[u]), _coords(H.nodes[v])
            lat = great_circle_latency(*a, *b) if a and b else latency
        if G.has_edge(u, v):
            old = G.edges[u, v]
            bw, lat = old["bandwidth"] + bw, min(old["latency"], lat)
        G.add_edge(u, v, bandwidth=bw, latency=lat)
    return G
