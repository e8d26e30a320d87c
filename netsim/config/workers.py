"""``[[workers]]``: worker classes, their ids, and where they sit on the ``[network]``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ScenarioError
from ..params import Table, show
from ..rng import Streams
from ..workload.partition import PartitionSpec
from ..workload.timemodels import TimeModel, make_time_model
from .data import DataSpec, class_data
from .network_plan import NetworkPlan, parse_network

__all__ = ["WorkerClass", "MAX_WORKERS", "class_ids"]

MAX_WORKERS = 1_000_000
"""Most workers a scenario may have, over all classes."""


@dataclass(frozen=True)
class WorkerClass:
    """``[[workers]]``: *count* workers sharing a compute-time model and latencies (s);
    *overhead*, when set, a time drawn per iteration and added to the compute time (the
    machine's own cost around a gradient: wake-ups, message handling)."""

    name: str
    count: int
    compute: TimeModel
    pull_latency: float = 0.0
    push_latency: float = 0.0
    datacenter: int | None = None
    hosts: tuple | None = None
    partition: PartitionSpec | None = None
    labels: tuple[int, ...] | None = None
    overhead: TimeModel | None = None

    def typical_step(self) -> float:
        """A typical iteration (s): the median compute time, the overhead's and the fixed
        latencies."""
        extra = self.overhead.typical() if self.overhead is not None else 0.0
        return self.compute.typical() + extra + self.pull_latency + self.push_latency

    def draws(
        self, streams: Streams, wid: int, member: int, stream: str = "compute"
    ) -> Iterator[float]:
        """Worker *wid*'s compute times (member *member* of the class) from the stream
        *stream*, each with a drawn overhead added when the class has one (from the stream
        ``{stream}-overhead``)."""
        draws = self.compute.draws(streams.rng(stream, wid), member)
        if self.overhead is None:
            return draws
        extra = self.overhead.draws(streams.rng(f"{stream}-overhead", wid), member)
        return (c + o for c, o in zip(draws, extra))


def class_ids(workers: Sequence[WorkerClass]) -> dict[str, tuple[int, ...]]:
    """Worker class name → its worker ids (ids are given in class order)."""
    out: dict[str, tuple[int, ...]] = {}
    start = 0
    for wc in workers:
        out[wc.name] = tuple(range(start, start + wc.count))
        start += wc.count
    return out


def read_workers(
    items: list, data: DataSpec = DataSpec(), base: Path | None = None
) -> tuple[WorkerClass, ...]:
    if not items:
        raise ScenarioError("workers", "at least one [[workers]] class is needed")
    classes, names, total = [], set(), 0
    for i, item in enumerate(items):
        t = Table(item, f"workers[{i}]")
        name = t.get("name", str, f"class{i}")
        if name in names:
            raise ScenarioError(t.key("name"), f"duplicate worker class name {show(name)}")
        names.add(name)
        count = t.get("count", int, 1, positive=True, maximum=MAX_WORKERS)
        total += count
        if total > MAX_WORKERS:
            raise ScenarioError(
                t.key("count"),
                f"{total} workers in the first {i + 1} classes; at most "
                f"{MAX_WORKERS} are allowed in all",
            )
        latency = t.get("latency", float, 0.0, minimum=0.0)
        t.known.append("compute")
        if "compute" not in t.data:
            raise ScenarioError(t.key("compute"), "missing (a time in s, or a table {dist = ...})")
        compute = make_time_model(
            t.data["compute"], t.key("compute"), count, base=base, worker_class=name
        )
        overhead = None
        if "overhead" in t.data:
            t.known.append("overhead")
            overhead = make_time_model(
                t.data["overhead"], t.key("overhead"), count, base=base, worker_class=name
            )
        partition, labels = class_data(t, data)
        hosts = t.get("hosts", list, None)
        if hosts is not None and (
            len(hosts) != count or not all(isinstance(h, str) for h in hosts)
        ):
            raise ScenarioError(
                t.key("hosts"), f"expected {count} host names (one per worker), got {show(hosts)}"
            )
        classes.append(
            WorkerClass(
                name,
                count,
                compute,
                pull_latency=t.get("pull_latency", float, latency, minimum=0.0),
                push_latency=t.get("push_latency", float, latency, minimum=0.0),
                datacenter=t.get("datacenter", int, None, minimum=0),
                hosts=tuple(hosts) if hosts else None,
                partition=partition,
                labels=labels,
                overhead=overhead,
            )
        )
        t.done()
    return tuple(classes)


def read_network(
    top: Table, path: Path, workers: Sequence[WorkerClass], seed: int
) -> NetworkPlan | None:
    """The ``[network]`` table's plan (None without one); fixed latencies only without it,
    datacenter/hosts placements only with it."""
    if not top.has("network"):
        for i, wc in enumerate(workers):
            if wc.datacenter is not None or wc.hosts:
                raise ScenarioError(f"workers[{i}]", "datacenter/hosts need a [network] table")
        return None
    for i, wc in enumerate(workers):
        if wc.pull_latency or wc.push_latency:
            raise ScenarioError(
                f"workers[{i}].latency",
                "fixed latencies apply only without a [network] "
                "table; with one, transfers follow the topology",
            )
    return parse_network(
        top.table("network"),
        path,
        [{"count": wc.count, "datacenter": wc.datacenter, "hosts": wc.hosts} for wc in workers],
        Streams(seed).rng("placement"),
    )
