"""The outcome of one run, defined once: the fields of ``summary.json`` with their units.

:class:`Summary` is the contract. :func:`summarize` builds it from a finished run's
:class:`~netsim.sim.records.Result` (every key it writes is declared here; extras the
engine adds are checked against it), :func:`problems` checks a summary read back from a
folder against it, and :func:`flat` derives the one-row view that the sweep CSV, the
mean/CI tables and ``to_pandas`` share. Times are in the scenario's time unit (seconds
unless ``time_unit`` says otherwise); staleness counts model updates.

The module imports no SimPy and writes nothing.
"""

import types
from collections.abc import Callable, Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    NotRequired,
    TypedDict,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

import numpy as np

from ..rules.base import Rule
from .records import (
    Recorder,
    Result,
    bias_summary,
    class_data_accuracy,
    staleness_stats,
    time_to_target,
    update_staleness,
    workers_idle_pct,
)
from .silence import silence_warning

if TYPE_CHECKING:
    from ..config.scenario import Scenario

Evaluation = tuple[int, float, float, float]
"""One row of the curve: update, sim_time, training loss, test accuracy."""

__all__ = [
    "Summary",
    "WorkerSummary",
    "GroupSummary",
    "Staleness",
    "summarize",
    "run_extras",
    "problems",
    "undeclared",
    "flat",
    "FLAT",
    "worst_class_accuracy",
]


class Staleness(TypedDict):
    """Staleness (model updates between a gradient's pull and its application)."""

    mean: float
    p50: float
    p95: float
    max: float


class WorkerSummary(TypedDict):
    """One worker's totals over the run (times in the run's time unit)."""

    id: int
    worker_class: str
    compute_s: float
    """Time spent computing gradients."""
    comm_s: float
    """Time spent pulling the model and pushing gradients."""
    idle_s: float
    """Time spent waiting (for a barrier, a group, the server)."""
    group: NotRequired[int]
    gradients_pushed: NotRequired[int]
    gradients_applied: NotRequired[int]
    gradients_dropped: NotRequired[int]
    down_s: NotRequired[float]
    """Time spent crashed."""


class GroupSummary(TypedDict):
    """One final group: its members and the updates it made."""

    id: int
    members: list[int]
    updates: int
    """Updates the group applied (after the last regroup, with online regrouping)."""
    mean_staleness: NotRequired[float]
    """Mean staleness per applied gradient of the group (updates)."""


class Summary(TypedDict):
    """The ``summary.json`` of a run. Required keys are in every run folder netsim ever
    wrote; readers must not count on a ``NotRequired`` one (older folders lack it)."""

    algorithm: str
    """The rule's name (``gsgd``, ``asgd``, ...)."""
    seed: int
    """The scenario seed that drove every random stream."""
    status: str
    """``ok``, ``diverged``, ``stalled``, ``interrupted`` or ``failed``."""
    sim_time: float
    """Emulated (or, for a real run, measured) time at the end of the run."""
    updates: int
    """Model updates applied (the model's final version)."""
    gradients_applied: int
    gradients_dropped: int
    final_loss: float | None
    """Training loss at the last evaluation; None for a diverged run."""
    final_test_accuracy: float | None
    workers: list[WorkerSummary]
    groups: list[GroupSummary]
    wall_s: float
    """Wall-clock seconds the run took (the only field that differs between equal runs)."""
    scenario: NotRequired[str]
    label: NotRequired[str]
    """Legend and folder name: the rule's name, or ``gsgd[auto]`` for a chosen grouping."""
    message: NotRequired[str]
    """Why the run did not end ``ok`` (empty when it did)."""
    warning: NotRequired[str]
    """Only in a run that ended ``ok`` with its final loss above its initial one: says so
    (a step size too large, likely; a loss that grew a million-fold is ``diverged`` instead)."""
    idle_pct: NotRequired[float]
    """Share of the workers' time spent idle (%)."""
    staleness_per_gradient: NotRequired[Staleness]
    staleness_per_update: NotRequired[Staleness]
    """Staleness of each update (the largest among the gradients it applied)."""
    events: NotRequired[list]
    """Cluster events as they happened: ``{time, kind, ...}``."""
    step: NotRequired[dict]
    """The step size actually used: ``lr`` and the schedule (``lr_schedule``, its keys, momentum)."""
    data: NotRequired[dict]
    """Partition, rows, and the label histogram per worker."""
    grouping: NotRequired[dict]
    """How groups were formed: ``method``, ``k``, ``members``, and the race's record for ``auto``."""
    network: NotRequired[dict]
    """Topology, hosts, message bytes and the busiest links' utilisation (networked runs)."""
    time_unit: NotRequired[str]
    """The unit of every time, when not seconds."""
    target_loss: NotRequired[float]
    time_to_target_s: NotRequired[float | None]
    """First time the training loss reached ``target_loss`` (None: never)."""
    updates_to_target: NotRequired[int | None]
    bias: NotRequired[dict]
    """Per-label test accuracy, the worst label, shares of gradients and steps by class and group."""
    consensus_distance: NotRequired[dict]
    """Rules without a PS: mean distance of the workers' models to their average."""
    diverged_at: NotRequired[dict]
    """``update`` and ``sim_time`` at which the loss exploded."""
    last_finite: NotRequired[dict]
    """A diverged run's last evaluation with a finite loss."""
    stalled_at: NotRequired[dict]
    """``sim_time`` and the workers (``waiting_for``) a stalled run waited for."""
    server: NotRequired[dict]
    """A server that takes time (``[server]``): ``busy_pct``, ``mean_queue`` (jobs waiting,
    time-averaged), ``mean_wait`` and ``mean_service`` per push served, ``pushes_served``,
    ``sends`` (model messages); with a receiving time, ``receive_busy_pct`` and
    ``mean_receive_wait``."""
    real: NotRequired[dict]
    """Real runs: the measured pace (medians, 95th percentiles in s) and the processes."""


def summarize(result: Result) -> Summary:
    """The :class:`Summary` of a finished run (plain JSON values).

    Raises TypeError when the run carries an extra that the contract does not declare.
    """
    rec = result.records
    last = _last_finite(rec.curve)
    final = None if result.status == "diverged" else last  # a diverged model has no loss to report
    regroups = [e["update"] for e in rec.events if e["kind"] == "regroup"]
    group_stale = _per_group(rec, len(result.groups), regroups[-1] if regroups else None)
    out = {
        "scenario": result.scenario,
        "algorithm": result.algorithm,
        "label": result.label or result.algorithm,
        "seed": result.seed,
        "status": result.status,
        "message": result.message,
        **_warning(result, rec.curve[0][2] if rec.curve else None, final),
        "sim_time": result.sim_time,
        "updates": result.updates,
        "gradients_applied": len(rec.staleness),
        "gradients_dropped": len(rec.drop_time),
        "final_loss": final[2] if final else None,
        "final_test_accuracy": final[3] if final else None,
        "staleness_per_gradient": staleness_stats(rec.staleness),
        "staleness_per_update": staleness_stats(update_staleness(rec.staleness, rec.version)),
        "idle_pct": workers_idle_pct([vars(w) for w in result.workers]),
        "workers": [vars(w).copy() for w in result.workers],
        "groups": [
            {
                "id": k,
                "members": list(m),
                "updates": group_stale[k][0],
                "mean_staleness": group_stale[k][1],
            }
            for k, m in enumerate(result.groups)
        ],
        "events": list(rec.events),
        **_target(result),
        **({"bias": _bias(result)} if rec.class_accuracy else {}),
        **({"consensus_distance": _consensus(rec.consensus)} if rec.consensus else {}),
        **(
            {"last_finite": dict(zip(("update", "sim_time", "loss", "test_accuracy"), last))}
            if result.status == "diverged" and last
            else {}
        ),
        **result.extra,
        "wall_s": result.wall_s,
    }
    if extra := undeclared(out):
        raise TypeError(f"summary keys not in the contract (netsim.sim.summary.Summary): {extra}")
    return cast(Summary, out)  # its keys checked just above, its values by construction


def run_extras(
    scenario: "Scenario", data: dict, rule: Rule, grouping: dict | None, ended: dict
) -> dict:
    """The entries every producer of a :class:`Result` adds to the summary (``extra``), in
    summary.json order: the *data* record, ``time_unit`` when not s, *ended* (where a run
    ``diverged_at`` or ``stalled_at``), ``target_loss``, the *grouping* record and the
    ``step`` (η and schedule) *rule* used."""
    extra: dict = {"data": data}
    if scenario.run.time_unit != "s":
        extra["time_unit"] = scenario.run.time_unit
    extra.update(ended)
    if scenario.run.target_loss:
        extra["target_loss"] = scenario.run.target_loss
    if grouping is not None:
        extra["grouping"] = grouping
    extra["step"] = {"lr": float(rule.lr), **rule.update.as_dict()}
    return extra


def _warning(result: Result, initial: float | None, final: Evaluation | None) -> dict:
    """``{"warning": ...}`` for a run that ended ok with its final loss above *initial*, or
    that went on without a silent worker (:mod:`netsim.sim.silence`); else ``{}``.

    >>> from types import SimpleNamespace as NS
    >>> r = NS(status="ok", extra={"step": {"lr": 500.0}})
    >>> _warning(r, 0.5, (43, 200.0, 1000.0, 0.5))["warning"]
    'the loss ended above its start (0.5 → 1000, 2,000 ×); a smaller lr (500 here) may help'
    >>> _warning(r, 0.5, (43, 200.0, 0.4, 0.5))
    {}
    """
    silent = silence_warning(result) if hasattr(result, "records") else ""
    if result.status != "ok" or final is None or initial is None or not final[2] > initial:
        return {"warning": silent} if silent else {}
    times = final[2] / initial if initial > 0 else None
    ratio = "" if times is None else f", {times:,.0f} ×" if times >= 100 else f", {times:.3g} ×"
    lr = (result.extra.get("step") or {}).get("lr")
    hint = f" ({lr:g} here)" if lr is not None else ""
    loss = (
        f"the loss ended above its start ({initial:.5g} → {final[2]:.5g}{ratio}); "
        f"a smaller lr{hint} may help"
    )
    return {"warning": f"{loss}; {silent}" if silent else loss}


def _consensus(distances: list[float]) -> dict:
    return {
        "final": distances[-1],
        "max": max(distances),
        "mean": float(np.mean(distances)),
        "per_evaluation": list(distances),  # the rows of curve.csv
    }


def _last_finite(curve: list[Evaluation]) -> Evaluation | None:
    """The last evaluation with a finite loss, or None (a diverged run reports it as
    ``last_finite`` and no final loss).

    >>> _last_finite([(0, 0.0, 0.7, 0.5), (5, 1.0, 0.4, 0.8), (6, 1.2, float("nan"), 0.1)])
    (5, 1.0, 0.4, 0.8)
    """
    for row in reversed(curve):
        if np.isfinite(row[2]):
            return row
    return None


def _per_group(rec: Recorder, n_groups: int, after: int | None) -> list[tuple[int, float]]:
    """(updates, mean staleness) per group; an update is counted once per version.

    With online regrouping, only updates after the last regroup (which happened
    when the model had version *after*) count, so the figures belong to the final
    groups; group ids outside the final groups are never counted.

    >>> rec = Recorder()
    >>> rec.applied(1.0, [0, 1], 0, [0, 0], 1); rec.applied(2.0, [2], 2, [1], 2); rec.applied(3.0, [2], 1, [3], 3)
    >>> _per_group(rec, 2, None), _per_group(rec, 2, 2)
    ([(1, 0.0), (1, 3.0)], [(0, 0.0), (1, 3.0)])
    """
    versions: list[set] = [set() for _ in range(n_groups)]
    sums = [0] * n_groups
    counts = [0] * n_groups
    for g, s, v in zip(rec.group, rec.staleness, rec.version):
        if (after is not None and v <= after) or g >= n_groups:
            continue
        versions[g].add(v)
        sums[g] += s
        counts[g] += 1
    return [(len(versions[k]), sums[k] / counts[k] if counts[k] else 0.0) for k in range(n_groups)]


def _target(result: Result) -> dict:
    target = result.extra.get("target_loss")
    if not target:
        return {}
    t, u = time_to_target(result.records.curve, target)
    return {"target_loss": target, "time_to_target_s": t, "updates_to_target": u}


def _bias(result: Result) -> dict:
    """:func:`~netsim.sim.records.bias_summary`, with ``accuracy_on_class_data`` when the
    run's label histograms are known (``data`` in ``result.extra``)."""
    bias = bias_summary(result)
    histograms = result.extra.get("data", {}).get("label_histogram")
    if histograms is not None:
        classes = [w.worker_class for w in result.workers]
        bias["accuracy_on_class_data"] = class_data_accuracy(
            bias["class_accuracy"], histograms, classes
        )
    return bias


def _kinds(tp: Any) -> tuple:
    """The JSON value kinds (isinstance classes) an annotation admits; a float admits an int."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return tuple(k for arg in get_args(tp) for k in _kinds(arg))
    if tp is type(None):
        return (type(None),)
    if tp is float:
        return (int, float)
    if isinstance(tp, type) and issubclass(tp, dict):  # a TypedDict, or dict
        return (dict,)
    return (origin or tp,)


def problems(value: object, kind: Any = Summary, where: str = "summary") -> str | None:
    """The first way *value* breaks the contract *kind* (a missing required key, a value
    of the wrong JSON type, nested records included), as ``"<where>: ..."``; None if none.

    >>> problems({"algorithm": "x"}, where="summary.json")
    "summary.json: missing 'seed'"
    """
    if not isinstance(value, dict):
        return f"{where}: expected a JSON object, got {type(value).__name__}"
    hints = get_type_hints(kind)
    for key in hints:
        if key in kind.__required_keys__ and key not in value:
            return f"{where}: missing {key!r}"
    for key, tp in hints.items():
        if key not in value:
            continue
        item, kinds = value[key], _kinds(tp)
        if not isinstance(item, kinds) or (isinstance(item, bool) and bool not in kinds):
            return f"{where}: {key!r} has the wrong type ({type(item).__name__})"
        if _is_record(tp):
            if found := problems(item, tp, f"{where}: {key}"):
                return found
        elif get_origin(tp) is list and get_args(tp) and _is_record(get_args(tp)[0]):
            for i, entry in enumerate(item):
                if found := problems(entry, get_args(tp)[0], f"{where}: {key}[{i}]"):
                    return found
    return None


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def undeclared(summary: Mapping[str, Any]) -> list[str]:
    """Keys of *summary* (top level, workers and groups) that :class:`Summary` does not declare."""
    out = [k for k in summary if k not in Summary.__annotations__]
    for key, kind in (("workers", WorkerSummary), ("groups", GroupSummary)):
        for entry in summary.get(key, []):
            out += [f"{key}[].{k}" for k in entry if k not in kind.__annotations__]
    return sorted(set(out))


def worst_class_accuracy(summary: Summary) -> float | None:
    """The lowest per-label test accuracy at the end of the run (None in summaries without it)."""
    return summary.get("bias", {}).get("worst_class_accuracy")


def _stale(
    summary: Summary,
    key: Literal["staleness_per_gradient", "staleness_per_update"],
    stat: Literal["mean", "p50", "p95", "max"],
) -> float | None:
    stats = summary.get(key)
    return None if stats is None else stats.get(stat)


FLAT: dict[str, Callable[[Summary], Any]] = {
    "label": lambda s: s.get("label", s["algorithm"]),
    "algorithm": lambda s: s["algorithm"],
    "seed": lambda s: s["seed"],
    "status": lambda s: s["status"],
    "sim_time": lambda s: s["sim_time"],
    "updates": lambda s: s["updates"],
    "gradients_applied": lambda s: s["gradients_applied"],
    "gradients_dropped": lambda s: s["gradients_dropped"],
    "final_loss": lambda s: s["final_loss"],
    "final_test_accuracy": lambda s: s["final_test_accuracy"],
    "worst_class_accuracy": worst_class_accuracy,
    "staleness_mean": lambda s: _stale(s, "staleness_per_gradient", "mean"),
    "staleness_p50": lambda s: _stale(s, "staleness_per_gradient", "p50"),
    "staleness_p95": lambda s: _stale(s, "staleness_per_gradient", "p95"),
    "staleness_max": lambda s: _stale(s, "staleness_per_gradient", "max"),
    "update_staleness_mean": lambda s: _stale(s, "staleness_per_update", "mean"),
    "update_staleness_max": lambda s: _stale(s, "staleness_per_update", "max"),
    "idle_pct": lambda s: s.get("idle_pct"),
    "groups": lambda s: len(s["groups"]),
    "wall_s": lambda s: s["wall_s"],
}
"""The one-row view of a summary, column by column, in sweep.csv order (``wall_s`` last):
``staleness_*`` per applied gradient, ``update_staleness_*`` per update (both in updates),
``idle_pct`` in %, ``groups`` the number of final groups. Absent fields are None."""


def flat(summary: Summary) -> dict:
    """The :data:`FLAT` row of one summary (the sweep CSV row, a ``to_pandas`` row)."""
    return {name: get(summary) for name, get in FLAT.items()}
