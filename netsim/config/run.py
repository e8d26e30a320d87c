"""``[run]``, and the budgets that refuse runs which could not finish."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import ScenarioError
from ..params import Table
from ..rules import DEFAULT_RULE
from ..workload.timemodels import TimeModel
from .events import ClusterEvent

__all__ = ["RunSpec", "Timed", "MAX_GRADIENTS", "MAX_EVALUATIONS", "MAX_EVALUATED", "MIN_UNTIL"]

MAX_GRADIENTS = 1e8
"""Most gradient computations a run may be expected to make: the sum over classes of
count × run.until / (median compute time + fixed latencies). Beyond this a run cannot
finish in reasonable wall time (the emulator makes ~1e5 per wall second at best)."""


MAX_EVALUATIONS = 1e7
"""Most periodic events of one kind a run may schedule (run.until / eval_every, ...)."""


MAX_EVALUATED = 5e12
"""Most multiply-adds a run's periodic evaluations may make in all: evaluations × entries of
the training and test sets × the model's first-layer width (1 for the binary models, the
classes for softmax, the first hidden width for the MLP); from minutes to an hour or two."""


MIN_UNTIL = 1e-9
"""Shortest horizon (s): shorter ones are below the resolution of the event times."""


class Timed(Protocol):
    """What the budgets read of a worker class (:class:`~netsim.config.workers.WorkerClass`):
    its size, compute-time model and fixed latencies (s)."""

    @property
    def count(self) -> int: ...

    @property
    def compute(self) -> TimeModel: ...

    @property
    def pull_latency(self) -> float: ...

    @property
    def push_latency(self) -> float: ...

    def typical_step(self) -> float: ...


@dataclass(frozen=True)
class RunSpec:
    """``[run]``: seed, algorithm, horizon (s), evaluation cadence (s or updates).

    ``timeline_until``: record per-worker phase spans up to this simulated time
    (s); negative: the whole run; 0: none. ``target_loss`` (> 0): the summary
    reports when the evaluated training loss first reached it. ``compact_gradients``:
    keep minibatch gradients as their low-rank factors (needs ``model.l2 = 0``); same
    results, far less memory with thousands of workers. ``time_unit``: the name of
    one unit of simulated time in tables and figures (``"s"``, or ``"units"`` for a
    scenario that counts abstract time units); it changes no number. ``eval_rows``
    (> 0): evaluations read a fixed random subset of that many training rows (the
    loss) and test rows (the accuracy), drawn from the seed; 0: all rows.
    """

    seed: int = 0
    algorithm: str = DEFAULT_RULE
    until: float = 100.0
    max_updates: int = 0
    eval_every: float = 0.0
    eval_every_updates: int = 0
    batch_size: int = 32
    timeline_until: float = -1.0
    target_loss: float = 0.0
    compact_gradients: bool = False
    time_unit: str = "s"
    eval_rows: int = 0


def read_run(t: Table) -> RunSpec:
    spec = RunSpec(
        seed=t.get("seed", int, 0, minimum=0),
        algorithm=t.get("algorithm", str, DEFAULT_RULE),
        until=t.get("until", float, 100.0, positive=True, minimum=MIN_UNTIL),
        max_updates=t.get("max_updates", int, 0, minimum=0),
        eval_every=t.get("eval_every", float, 0.0, minimum=0),
        eval_every_updates=t.get("eval_every_updates", int, 0, minimum=0),
        batch_size=t.get("batch_size", int, 32, positive=True),
        timeline_until=t.get("timeline_until", float, -1.0),
        target_loss=t.get("target_loss", float, 0.0, minimum=0.0),
        compact_gradients=t.get("compact_gradients", bool, False),
        time_unit=t.get("time_unit", str, "s"),
        eval_rows=t.get("eval_rows", int, 0, minimum=0),
    )
    t.done()
    return spec


def check_rule_budget(run: RunSpec, rules: dict, n_workers: int) -> None:
    """Rule timers and probes that could not finish: periodic regrouping more often
    than MAX_EVALUATIONS times per run, probe phases beyond MAX_GRADIENTS iterations."""
    for name, rule in rules.items():
        spec = getattr(rule, "grouping", None)
        every = getattr(spec, "regroup_every_s", 0.0)
        if every and run.until / every > MAX_EVALUATIONS:
            raise ScenarioError(
                f"algorithms.{name}.regroup_every_s",
                f"{every!r} s gives {run.until / every:.3g} "
                f"regroupings over run.until = {run.until:g} s (at most {MAX_EVALUATIONS:.0e})",
            )
        rounds = getattr(spec, "probe_rounds", 0)
        if rounds * n_workers > MAX_GRADIENTS:
            raise ScenarioError(
                f"algorithms.{name}.probe_rounds",
                f"{rounds} rounds × {n_workers} workers is more "
                f"than {MAX_GRADIENTS:.0e} probe iterations",
            )


def _steps(workers: Sequence[Timed]) -> list[float]:
    """Each class's typical iteration (s): median compute time plus fixed latencies."""
    return [wc.typical_step() for wc in workers]


def evaluation_horizon(run: RunSpec, workers: Sequence[Timed]) -> float:
    """The simulated time (s) periodic evaluations can run for: run.until, or with
    ``max_updates`` at most about 10 slowest steps per update."""
    if run.max_updates:
        return min(run.until, run.max_updates * 10 * max(_steps(workers)))
    return run.until


def check_budget(run: RunSpec, workers: Sequence[Timed]) -> float:
    """Refuse runs whose event count cannot finish: see MAX_GRADIENTS, MAX_EVALUATIONS.
    Returns the expected gradient count (without ``max_updates``' cap).

    With ``max_updates`` the run also ends after that many updates: each needs at
    least one gradient (so the gradient count to refuse is at least ``max_updates``)
    and lasts at most about 10 slowest steps (the evaluation count is bounded by that).
    """
    steps = _steps(workers)
    horizon = evaluation_horizon(run, workers)
    if run.eval_every and horizon / run.eval_every > MAX_EVALUATIONS:
        raise ScenarioError(
            "run.eval_every",
            f"{run.eval_every!r} s gives {horizon / run.eval_every:.3g} "
            f"evaluations over run.until = {run.until:g} s (at most {MAX_EVALUATIONS:.0e}; "
            "raise eval_every or lower run.until)",
        )
    cap = run.max_updates if run.max_updates else float("inf")  # each update takes >= 1 gradient
    total = 0.0
    for i, (wc, step) in enumerate(zip(workers, steps)):
        total += wc.count * run.until / step if step > 0 else float("inf")
        if min(total, cap) > MAX_GRADIENTS:
            raise ScenarioError(
                f"workers[{i}].compute",
                f"the run would make ~{min(total, cap):.3g} gradient "
                f"computations (sum of count × run.until / median compute time; here "
                f"{wc.count} × {run.until:g} s / {step:.3g} s); at most {MAX_GRADIENTS:.0e} can "
                "finish: lower run.until, run.max_updates or the worker count, or make compute "
                "times longer",
            )
    return total


def check_slowdown_budget(
    run: RunSpec,
    workers: Sequence[Timed],
    events: Sequence[ClusterEvent],
    items: list,
    gradients: float,
) -> None:
    """:func:`check_budget` with the ``slowdown`` events, from its expected count *gradients*:
    a worker whose compute times are multiplied by f from time t0 makes about
    (t1 − t0) / (typical · f + latencies) gradients until its next slowdown (or run.until)
    instead of (t1 − t0) / (typical + latencies). A refusal names the factor of the fastest
    slowdown (*items*: the raw ``[[events]]``)."""
    slow = [e for e in events if e.kind == "slowdown"]
    if not slow:
        return
    typical = [wc.compute.typical() for wc in workers]
    latency = [wc.pull_latency + wc.push_latency for wc in workers]
    ends = list(
        itertools.accumulate(wc.count for wc in workers)
    )  # worker w is of class bisect_right(ends, w)
    changes: dict[int, list] = {}
    for e in slow:  # in time order
        for w in e.workers:
            changes.setdefault(w, []).append((e.time, e.factor))

    def rate(k: int, f: float) -> float:
        step = typical[k] * f + latency[k]
        return 1.0 / step if step > 0 else math.inf

    total = gradients
    for w, seq in changes.items():
        k = bisect.bisect_right(ends, w)
        for (t0, f), t1 in zip(seq, [t for t, _ in seq[1:]] + [run.until]):
            total += (t1 - t0) * (rate(k, f) - rate(k, 1.0))
    cap = run.max_updates if run.max_updates else math.inf
    if min(total, cap) > MAX_GRADIENTS:
        low = min(e.factor for e in slow)
        i = next(
            i
            for i, item in enumerate(items)
            if isinstance(item, dict)
            and item.get("kind") == "slowdown"
            and float(item.get("factor", 1.0)) == low
        )
        raise ScenarioError(
            f"events[{i}].factor",
            f"{low!r} makes compute times so short that the run would make "
            f"~{min(total, cap):.3g} gradient computations; at most {MAX_GRADIENTS:.0e} can finish: "
            "use a larger factor, or lower run.until or run.max_updates",
        )
