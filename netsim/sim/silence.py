"""Workers a run went on without: none of their gradients arrived (applied or dropped) in
the second half of a run that ended ``ok`` (a link cut for good, a latency beyond the
horizon), under a rule that does not wait for them (asynchronous rules carry on where a
synchronous one would stall). Pure: reads a Result's records."""

from __future__ import annotations

from ..rules import RULES
from .records import Result

__all__ = ["silent_workers", "silence_warning"]


def silent_workers(
    n_workers: int, arrivals: list[tuple[float, int]], horizon: float
) -> list[tuple[int, float | None]]:
    """(worker, time of its last gradient or None) of every worker none of whose gradients
    arrived after *horizon* / 2, when some other worker's did; *arrivals*: (time, worker)
    of every gradient applied or dropped.

    >>> silent_workers(3, [(1.0, 0), (2.0, 1), (9.0, 0), (9.5, 1), (3.0, 2)], 10.0)
    [(2, 3.0)]
    >>> silent_workers(2, [(1.0, 0), (9.0, 0)], 10.0)
    [(1, None)]
    >>> silent_workers(2, [(1.0, 0), (2.0, 1)], 10.0)
    []
    """
    last: dict[int, float] = {}
    for t, w in arrivals:
        last[w] = max(t, last.get(w, t))
    half = horizon / 2
    if not any(t > half for t in last.values()):
        return []  # nobody delivered late in the run: not one worker's silence
    return [(w, last.get(w)) for w in range(n_workers) if last.get(w, -1.0) <= half]


def silence_warning(result: Result) -> str:
    """A sentence naming the silent workers of *result* (a Result that ended ``ok`` under a
    rule that ``carries_on``), or ''."""
    rule = RULES.get(result.algorithm)
    if result.status != "ok" or not getattr(rule, "carries_on", False) or not result.sim_time:
        return ""
    rec = result.records
    arrivals = list(zip(rec.time, rec.worker)) + list(zip(rec.drop_time, rec.drop_worker))
    silent = silent_workers(len(result.workers), arrivals, result.sim_time)
    if not silent:
        return ""
    classes = {w.id: w.worker_class for w in result.workers}
    parts = [
        f"worker {w} ({classes.get(w, '?')}) "
        + ("sent no gradient" if t is None else f"sent none after t = {t:g}")
        for w, t in silent[:5]
    ]
    more = f" and {len(silent) - 5} more" if len(silent) > 5 else ""
    return (
        f"{', '.join(parts)}{more}: the run went on without "
        f"{'it' if len(silent) == 1 else 'them'} (a link cut or a latency beyond the horizon?)"
    )
