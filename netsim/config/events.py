"""Timed changes to the cluster during a run: slowdowns, crashes, recoveries, link changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ScenarioError
from ..params import Table, show

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["ClusterEvent", "parse_events", "KINDS"]

KINDS = ("slowdown", "crash", "recover", "link")


@dataclass(frozen=True)
class ClusterEvent:
    """One ``[[events]]`` entry.

    ``slowdown``: compute times of *workers* are multiplied by *factor* from *time* (s)
    on (factor < 1 speeds up; 1 restores). ``crash``: *workers* stop (work in progress is
    lost); they come back after *duration* s when it is > 0. ``recover``: crashed *workers*
    return. ``link``: the link *link* = (u, v) gets *bandwidth* (bit/s; 0 cuts it: a partition) and/or *latency* (s).
    """

    time: float
    kind: str
    workers: tuple = ()
    factor: float = 1.0
    duration: float = 0.0
    link: tuple = ()
    bandwidth: float | None = None
    latency: float | None = None

    def as_dict(self) -> dict:
        out = {"time": self.time, "kind": self.kind}
        if self.workers:
            out["workers"] = list(self.workers)
        if self.kind == "slowdown":
            out["factor"] = self.factor
        if self.duration:
            out["duration"] = self.duration
        if self.link:
            out["link"] = list(self.link)
            out.update(
                {
                    k: v
                    for k, v in (("bandwidth", self.bandwidth), ("latency", self.latency))
                    if v is not None
                }
            )
        return out


def _workers(t: Table, classes: dict, n_workers: int) -> tuple:
    spec = t.get("worker", (int, str, list))
    items = spec if isinstance(spec, list) else [spec]
    ids: list[int] = []
    for item in items:
        if isinstance(item, str) and item in classes:
            ids.extend(classes[item])
        elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < n_workers:
            ids.append(item)
        else:
            raise ScenarioError(
                t.key("worker"),
                f"{show(item)} is neither a worker id in 0..{n_workers - 1} "
                f"nor a worker class ({', '.join(map(show, classes))})",
            )
    return tuple(sorted(set(ids)))


def parse_events(
    items: list, *, until: float, classes: dict, n_workers: int, graph: nx.Graph | None = None
) -> tuple[ClusterEvent, ...]:
    """Validate ``[[events]]``: kinds, times inside the run, known workers and links."""
    events = []
    for i, item in enumerate(items):
        t = Table(item, f"events[{i}]")
        kind = t.get("kind", str, choices=KINDS)
        time = t.get("time", float, minimum=0.0)
        if time >= until:
            raise ScenarioError(
                t.key("time"),
                f"{time!r} is outside the run (allowed: 0 <= time < run.until = {until:g})",
            )
        if kind == "link":
            if graph is None:
                raise ScenarioError(t.key("kind"), "a link event needs a [network] table")
            link = t.get("link", list, item=(str, int))
            if len(link) != 2 or not graph.has_edge(*link):
                raise ScenarioError(
                    t.key("link"),
                    f"{show(link)} is not a link of the topology (give [u, v] node names)",
                )
            bw = t.get("bandwidth", float, None, minimum=0.0)
            lat = t.get("latency", float, None, minimum=0.0)
            if bw is None and lat is None:
                raise ScenarioError(t.key("bandwidth"), "give bandwidth (bit/s) and/or latency (s)")
            events.append(ClusterEvent(time, kind, link=tuple(link), bandwidth=bw, latency=lat))
        else:
            workers = _workers(t, classes, n_workers)
            factor = t.get("factor", float, 1.0, positive=True) if kind == "slowdown" else 1.0
            duration = t.get("duration", float, 0.0, minimum=0.0) if kind == "crash" else 0.0
            events.append(ClusterEvent(time, kind, workers, factor, duration))
        t.done()
    return tuple(sorted(events, key=lambda e: e.time))
