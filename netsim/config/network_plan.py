"""The scenario's [network] table: topology, placement and message sizes, validated."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ScenarioError
from ..net.placement import place
from ..net.topology import TopologyError
from ..net.topology import hosts as list_hosts
from ..net.topology_io import is_file, load_topology
from ..params import Table
from ..presets import preset_dir

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np

__all__ = [
    "NetworkPlan",
    "parse_network",
    "topology_dirs",
    "find_topology_file",
    "load_named_topology",
    "SHIPPED_TOPOLOGIES",
    "SHARING",
    "PLACEMENTS",
]

SHARING = ("maxmin", "rtt")
PLACEMENTS = ("packed", "spread", "per_datacenter", "random")
SHIPPED_TOPOLOGIES = preset_dir("topologies")
SHIPPED_TOPOLOGIES = SHIPPED_TOPOLOGIES.resolve() if SHIPPED_TOPOLOGIES is not None else None
"""The topology presets shipped with netsim (package data), or None."""


@dataclass(frozen=True)
class NetworkPlan:
    """Where everything sits and how big messages are.

    ``graph`` is the topology (see :mod:`netsim.topology`), ``ps_host`` (None: no PS,
    ``ps_host = "none"``, for rules without one) and ``worker_hosts`` (one per worker id)
    its hosts, ``bytes_per_value`` 4 (float32)
    or 8 (float64), ``header_bytes`` added to every model pull and gradient push,
    ``message_bytes`` (if > 0) the payload size to emulate instead of the real model's
    (train a small model while the network carries, say, a 100 MB one).
    """

    graph: nx.Graph
    ps_host: Hashable | None
    worker_hosts: tuple[Hashable, ...]
    sharing: str = "maxmin"
    bytes_per_value: int = 4
    header_bytes: int = 64
    topology: str = ""
    message_bytes: float = 0.0

    def payload_bytes(self, n_params: int) -> float:
        """Bytes of one model or gradient of *n_params* values, header excluded: the
        real model's size, or ``message_bytes`` when the scenario emulates a larger one."""
        return self.message_bytes or n_params * self.bytes_per_value


NO_PS = "none"
"""``[network] ps_host`` of a cluster without a parameter server (rules without one only)."""


def topology_dirs(base: Path) -> list[Path]:
    """Where a preset name is looked up: *base*, its topologies/, ../topologies, the shipped presets."""
    dirs = [base, base / "topologies", base.parent / "topologies"] + (
        [SHIPPED_TOPOLOGIES] if SHIPPED_TOPOLOGIES else []
    )
    return list(dict.fromkeys(d.resolve() for d in dirs))


def find_topology_file(spec: str, base: Path) -> Path | None:
    """The file a preset name or path *spec* names (searched in :func:`topology_dirs`), or None."""
    if spec.startswith("topohub:"):
        return None
    for directory in topology_dirs(base):
        for candidate in (directory / spec, directory / f"{spec}.toml"):
            if is_file(candidate):
                return candidate.resolve()
    return None


def load_named_topology(spec: str | dict, base: Path) -> nx.Graph:
    """Load a topology named by a preset, a file path, ``topohub:KEY`` or an inline table.

    Raises TopologyError (unparsable or invalid) or FileNotFoundError (no such name).
    """
    if isinstance(spec, str) and not spec.startswith("topohub:"):
        candidate = find_topology_file(spec, base)
        if candidate is not None:
            return load_topology(str(candidate), base_dir=str(candidate.parent))
        raise FileNotFoundError(
            f"no topology preset or file {spec!r} (looked in "
            f"{', '.join(str(d) for d in topology_dirs(base))})"
        )
    return load_topology(spec, base_dir=str(base))


def _load(spec: str | dict, where: str, scenario_path: Path) -> tuple[nx.Graph, str]:
    try:
        graph = load_named_topology(spec, scenario_path.parent)
    except FileNotFoundError as exc:
        raise ScenarioError(where, str(exc)) from None
    return graph, spec if isinstance(spec, str) else "inline"


def parse_network(
    t: Table, scenario_path: Path, classes: list[dict], seed_rng: np.random.Generator
) -> NetworkPlan:
    """Validate ``[network]`` and place the PS and workers.

    *classes* holds, per worker class, ``count`` and optional ``datacenter`` / ``hosts``.
    Raises ScenarioError naming ``network.KEY`` (or the worker class key).
    """
    spec = t.get("topology", (str, dict))
    sharing = t.get("sharing", str, "maxmin", choices=SHARING)
    policy = t.get("placement", str, "packed", choices=PLACEMENTS)
    ps_host = t.get("ps_host", str, None)
    counts = t.get("counts", list, None, item=int)
    for i, n in enumerate(counts or ()):
        if n < 0:
            raise ScenarioError(
                f"{t.key('counts')}[{i}]", f"{n!r} is not allowed (a worker count >= 0)"
            )
    bytes_per_value = t.get("bytes_per_value", int, 4, choices=(4, 8))
    header = t.get("header_bytes", int, 64, minimum=0)
    message = t.get("message_bytes", float, 0.0, minimum=0.0)
    t.done()
    try:
        graph, name = _load(spec, t.key("topology"), scenario_path)
    except TopologyError as exc:
        raise ScenarioError(t.key("topology"), str(exc)) from None
    n_workers = sum(c["count"] for c in classes)
    try:
        with_ps = ps_host != NO_PS
        explicit = _class_hosts(graph, classes, ps_host if with_ps else None, with_ps)
        ps, workers = place(
            graph,
            n_workers,
            policy=policy,
            ps_host=ps_host if with_ps else None,
            hosts=explicit,
            counts=counts,
            rng=seed_rng,
            with_ps=with_ps,
        )
    except TopologyError as exc:
        raise ScenarioError(t.key(_placement_key(exc.element)), str(exc)) from None
    return NetworkPlan(graph, ps, tuple(workers), sharing, bytes_per_value, header, name, message)


def _placement_key(element: str) -> str:
    """The [network] key a placement error belongs to."""
    for key in ("ps_host", "counts", "hosts"):
        if str(element).startswith(key):
            return key
    return "placement"


def _class_hosts(
    graph: nx.Graph, classes: list[dict], ps_host: Hashable | None, with_ps: bool = True
) -> list[Hashable] | None:
    """Explicit worker hosts when classes name hosts or datacenters, else None."""
    if not any(c.get("hosts") or c.get("datacenter") is not None for c in classes):
        return None
    taken = (ps_host or list_hosts(graph)[0]) if with_ps else None
    all_hosts = [h for h in list_hosts(graph) if h != taken]
    used: set[Hashable] = set()
    chosen: list[Hashable] = []
    for i, c in enumerate(classes):
        if c.get("hosts"):
            picked = list(c["hosts"])
        elif c.get("datacenter") is not None:
            pool = [
                h
                for h in all_hosts
                if graph.nodes[h].get("dc") == c["datacenter"] and h not in used
            ]
            if len(pool) < c["count"]:
                raise ScenarioError(
                    f"workers[{i}].datacenter",
                    f"datacenter {c['datacenter']!r} has "
                    f"{len(pool)} free hosts, the class needs {c['count']}",
                )
            picked = pool[: c["count"]]
        else:
            raise ScenarioError(
                f"workers[{i}]", "when one class sets hosts or datacenter, every class must"
            )
        used.update(picked)
        chosen.extend(picked)
    return chosen
