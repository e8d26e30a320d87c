"""What a real run measured per iteration, and the files and figures made of it (no torch, no I/O).

Times named without a unit are in scenario time units (real seconds / the run's time
scale, from the moment the server sent the first models); names ending in ``_s`` are
real seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..workload.replayed import GRADIENT_COLUMNS
from .pacecheck import PACE_SHORTFALL, least_scale, shortfall, suggested_scale

__all__ = [
    "Iteration",
    "bounded_stamps",
    "gradient_rows",
    "update_rows",
    "server_rows",
    "contention",
    "cpu_share",
    "CONTENDED",
    "SERVER_COLUMNS",
    "SERVER_FILE",
    "pace",
    "pace_failure",
    "overhead_seconds",
    "UPDATE_COLUMNS",
    "OVERRUN_SHARE",
]

UPDATE_COLUMNS = ("version", "time", "service_s", "queued")
"""``measured_updates.csv``: each update, when it was applied (units), the real time the
server spent on the push that made it (the rule, the step and the replies, s), and the
pushes waiting behind that one when the server took it."""

SERVER_FILE = "measured_server.csv"
SERVER_COLUMNS = (
    "kind",
    "worker",
    "iteration",
    "start",
    "end",
    "real_s",
    "gradients",
    "updates",
    "average_s",
    "cpu_s",
    "average_cpu_s",
)
"""``measured_server.csv``: the server's own time, one row per push served (``kind`` push:
``start`` when the server took it, ``end`` when it was done with it, model messages
included; ``gradients`` the gradients the updates it made applied, ``updates`` how many
it made, 0 when it only held the gradient, ``average_s`` the real seconds of its service
spent averaging several gradients into one update, ``average_cpu_s`` their CPU seconds) and
per model message (``kind`` send: the
message's ``worker`` and the ``iteration`` it starts, ``start`` and ``end`` of the
server's work on it: the message built and handed to the transport) and per model kept
for the curve (``kind`` snapshot, no worker: the copy, between two jobs). ``start`` and
``end`` in units on the server's clock, ``real_s`` = (end - start) × scale, ``cpu_s`` the
serving thread's CPU seconds over the same span (below ``real_s`` by the time it waited for
a core, or for the transport). A folder an earlier netsim wrote lacks the two CPU columns."""

CONTENDED = 0.8
"""A real run's gradients that had a core less than this share of their real time waited for
one: the run's processes outnumber the cores they got (:func:`contention`)."""

OVERRUN_SHARE = 0.5
"""A real run fails when more than this share of its gradients took longer to compute
than their drawn time: the machine did not keep the time scale."""


def bounded_stamps(start: float, end: float, since: float, arrived: float) -> tuple[float, float]:
    """A worker's compute start and end (units, on the server's clock through an estimated
    offset) kept within what the server saw: not before *since* (the model was sent), not
    after *arrived* (the gradient came in), the start not after the end. An error of the
    offset estimate would otherwise show as a negative message time.

    >>> bounded_stamps(1.0, 2.5, 0.5, 2.0)
    (1.0, 2.0)
    """
    start = min(max(start, since), arrived)
    return start, min(max(end, start), arrived)


class Iteration:
    """One iteration of one worker: the model's send, the worker's stamps, the push's service.

    ``sent``, ``compute_start``, ``compute_end``, ``arrived``, ``served`` (units; None
    until known); ``version`` (the model version sent); ``drawn`` (the compute time drawn,
    units); ``compute_real_s``, ``compute_cpu_s`` (the CPU time of the gradient's thread),
    ``wait_s``, ``overrun_s``, ``pull_transfer_s``,
    ``push_transfer_s`` (the real messages' own time, without injected latencies),
    ``service_s`` (s); ``queued`` (pushes waiting when it was served); ``load1``.
    """

    __slots__ = (
        "worker",
        "iteration",
        "version",
        "sent",
        "compute_start",
        "compute_end",
        "arrived",
        "served",
        "drawn",
        "compute_real_s",
        "wait_s",
        "overrun_s",
        "pull_transfer_s",
        "push_transfer_s",
        "service_s",
        "queued",
        "load1",
        "compute_cpu_s",
    )
    compute_start: float | None
    compute_end: float | None
    arrived: float | None
    served: float | None
    drawn: float | None
    compute_real_s: float | None
    compute_cpu_s: float | None
    wait_s: float | None
    overrun_s: float | None
    pull_transfer_s: float | None
    push_transfer_s: float | None
    service_s: float | None
    queued: int | None
    load1: float | None

    def __init__(self, worker: int, iteration: int, version: int, sent: float) -> None:
        self.worker, self.iteration, self.version, self.sent = worker, iteration, version, sent
        for name in self.__slots__[4:]:
            setattr(self, name, None)


def _cell(value: object) -> str:
    return "" if value is None else repr(float(value)) if isinstance(value, float) else str(value)


def gradient_rows(iterations: list[Iteration], classes: list[str], end: float) -> list[list[str]]:
    """Rows of ``measured_gradients.csv`` (:data:`GRADIENT_COLUMNS`), by worker then
    iteration. *classes*: each worker's class name; *end* (units): when the run stopped,
    so an iteration not served has ``cycle = end - sent`` (a lower bound) and ``complete`` 0."""
    rows = []
    for it in sorted(iterations, key=lambda i: (i.worker, i.iteration)):
        done = it.served is not None
        values = {
            "worker": it.worker,
            "worker_class": classes[it.worker],
            "iteration": it.iteration,
            "version_read": it.version,
            "sent": it.sent,
            "compute_start": it.compute_start,
            "compute_end": it.compute_end,
            "arrived": it.arrived,
            "served": it.served,
            "drawn": it.drawn,
            "compute_real_s": it.compute_real_s,
            "wait_s": it.wait_s,
            "overrun_s": it.overrun_s,
            "cycle": (it.served if it.served is not None else max(end, it.sent)) - it.sent,
            "complete": int(done),
            "load1": it.load1,
            "pull_transfer_s": it.pull_transfer_s,
            "push_transfer_s": it.push_transfer_s,
            "service_s": it.service_s,
            "queued": it.queued,
            "compute_cpu_s": it.compute_cpu_s,
        }
        rows.append([_cell(values[c]) for c in GRADIENT_COLUMNS])
    return rows


def update_rows(updates: list[tuple[int, float, float, int]]) -> list[list[str]]:
    """Rows of ``measured_updates.csv`` (:data:`UPDATE_COLUMNS`) from (version, time, service_s, queued)."""
    return [[str(v), repr(t), repr(s), str(q)] for v, t, s, q in updates]


def server_rows(served: list[tuple], scale: float) -> list[list[str]]:
    """Rows of ``measured_server.csv`` (:data:`SERVER_COLUMNS`) from the server's records
    ``(kind, worker, start, end, a, b, cpu_s[, average_s, average_cpu_s])``: for a push a =
    gradients, b = updates, then the real and CPU seconds it spent averaging gradients; for
    a send a = the iteration, b unused; for a snapshot neither (worker -1).

    >>> server_rows([("push", 3, 1.0, 1.5, 2, 1, 0.01, 0.004, 0.003)], 0.05)[0][5:]
    ['0.025', '2', '1', '0.004', '0.01', '0.003']
    """
    rows = []
    for kind, wid, start, end, a, b, cpu, *more in served:
        real = repr((end - start) * scale)
        head = [kind, "" if kind == "snapshot" else str(wid), str(a) if kind == "send" else ""]
        if kind == "push":
            tail = [str(a), str(b), repr(more[0]), repr(cpu), repr(more[1])]
        else:
            tail = ["", "", "", repr(cpu), ""]
        rows.append([*head, repr(start), repr(end), real, *tail])
    return rows


def _quantiles(values: Iterable[float | None], *qs: float) -> list[float | None]:
    a = np.asarray([v for v in values if v is not None], dtype=float)
    return [float(np.quantile(a, q)) if a.size else None for q in qs]


def overhead_seconds(
    iterations: list[Iteration], latencies: list[float], scale: float, own_server: bool
) -> float | None:
    """Mean real seconds a served iteration took beyond the scenario's own times: its cycle
    (``served - sent``; ``arrived - sent`` when the scenario models its server, *own_server*)
    less its drawn compute time and its worker's injected latencies (*latencies*: per
    worker, pull + push, units), × *scale*. None when no iteration was served.

    >>> it = Iteration(0, 0, 0, 1.0)
    >>> it.arrived, it.served, it.drawn = 3.5, 3.6, 2.0
    >>> round(overhead_seconds([it], [0.25], 0.1, False), 9), round(overhead_seconds([it], [0.25], 0.1, True), 9)
    (0.035, 0.025)
    """
    over = []
    for it in iterations:
        end = it.arrived if own_server else it.served
        if it.served is not None and it.drawn is not None and end is not None:
            over.append(end - it.sent - it.drawn - latencies[it.worker])
    if not over:
        return None
    return max(0.0, float(np.mean(over))) * scale


def pace(iterations: list[Iteration], scale: float, overhead_s: float | None = None) -> dict:
    """What the real run measured, summarised for ``summary.json``'s ``real`` entry: the
    share of gradients whose real computation overran its drawn time, the median and 95th
    percentile of the gradient's real compute time, of each message's transfer and of the
    server's service (s), the gradients' CPU time over their real time (``compute_cpu_share``:
    below 1 by the share they waited for a core), the highest 1-minute load average seen, and
    *overhead_s* (the mean overhead per iteration, :func:`overhead_seconds`)."""
    pushed = [it for it in iterations if it.compute_real_s is not None]
    overruns = [it.overrun_s for it in pushed if it.overrun_s is not None]
    out = {
        "time_scale": scale,
        "gradients_measured": len(pushed),
        "overrun_share": (sum(1 for o in overruns if o > 0) / len(pushed)) if pushed else 0.0,
        "overrun_median_s": _quantiles([o for o in overruns if o > 0], 0.5)[0],
    }
    for name in ("compute_real_s", "pull_transfer_s", "push_transfer_s", "service_s"):
        med, p95 = _quantiles((getattr(it, name) for it in iterations), 0.5, 0.95)
        out[name.removesuffix("_s") + "_median_s"] = med
        out[name.removesuffix("_s") + "_p95_s"] = p95
    out["compute_cpu_share"] = cpu_share(
        (it.compute_real_s, it.compute_cpu_s)
        for it in pushed
        if it.compute_cpu_s is not None and it.compute_real_s is not None
    )
    loads = [it.load1 for it in pushed if it.load1 is not None and math.isfinite(it.load1)]
    out["load1_max"] = max(loads) if loads else None
    out["overhead_mean_s"] = overhead_s
    return out


def pace_failure(summary: dict, scale: float, cycles: list[float] | None = None) -> str:
    """Why the run failed to keep its time scale ('' when it kept it), from :func:`pace`'s
    dict: most gradients overran their drawn time, or the mean overhead per iteration cost
    more than :data:`.pacecheck.PACE_SHORTFALL` of the updates for workers of typical
    cycles *cycles* (units)."""
    share = summary["overrun_share"]
    if summary["gradients_measured"] < 4:
        return ""
    over = summary.get("overhead_mean_s")
    if cycles and over and (lost := shortfall(cycles, over, scale)) > PACE_SHORTFALL:
        least = suggested_scale(least_scale(cycles, over))
        return (
            f"the machine did not keep the time scale: messages, wake-ups and the server's "
            f"queue and service added {over * 1e3:.3g} ms to each iteration (mean), "
            f"{lost:.1%} of the updates at {scale:g} s per unit (at most "
            f"{PACE_SHORTFALL:.0%}); rerun with --time-scale {least:.2g} or more"
        )
    if share <= OVERRUN_SHARE:
        return ""
    grad = summary["compute_real_median_s"] or 0.0
    return (
        f"the machine did not keep the time scale: {share:.0%} of the gradients took longer "
        f"to compute than their drawn time (a gradient took {grad * 1e3:.3g} ms here, median); "
        f"rerun with a larger --time-scale than {scale:g}"
    )


def cpu_share(spans: Iterable[tuple[float, float]]) -> float | None:
    """Summed CPU seconds over summed real seconds of *spans* ((real, cpu) pairs); None when
    there are none or they took no time. Below 1 by the share spent waiting for a core (or,
    for the server, for the transport).

    >>> cpu_share([(0.004, 0.003), (0.006, 0.002)])
    0.5
    """
    pairs = list(spans)
    wall = sum(w for w, _ in pairs)
    return sum(c for _, c in pairs) / wall if wall > 0 else None


def contention(real: dict, processes: int, cores: int | None) -> str:
    """What a real run's CPU shares say ('' when its gradients had a core at least
    :data:`CONTENDED` of their time): *real* is ``summary.json``'s ``real`` entry, the run had
    *processes* on a machine of *cores*.

    >>> contention({"compute_cpu_share": 0.3, "server_cpu_share": 0.37}, 17, 2)[:59]
    'the processes waited for a core: the gradients had one 30 %'
    >>> contention({"compute_cpu_share": 0.95, "server_cpu_share": 0.6}, 17, 2)
    ''
    """
    grads, server = real.get("compute_cpu_share"), real.get("server_cpu_share")
    if grads is None or grads >= CONTENDED:
        return ""
    jobs = "" if server is None else f", the server's jobs {100 * server:.0f} %"
    return (
        f"the processes waited for a core: the gradients had one {100 * grads:.0f} % of their time"
        f"{jobs} ({processes} processes on {cores or '?'} cores); the server's times measured "
        "here include that wait (netsim calibrate --cpu fits them without it)"
    )
