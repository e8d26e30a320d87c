"""The race's recommendation (``netsim group``) as tables that fit a terminal, as CSV
rows, and as one closing line (pure: nothing is printed here).

A grouping is shown by its plain name (``one group (SSGD)``, ``singletons (ASGD)``) and
its shape (``8 × 2``: 8 groups of 2 workers; ``3 classes``: one group per worker class);
the member lists are in ``--members`` and the JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from rich.table import Table
from rich.text import Text

from ..grouping import ONE_GROUP, SINGLETONS
from .columns import fit_columns, text_width

if TYPE_CHECKING:
    from ..sim.measurement import Measurement


class Recommendation(Protocol):
    """What the renderers read of the race's pick (:class:`netsim.tuning.evidence.Recommendation`;
    results do not import tuning): the grouping *name*, its *groups* and η, the target,
    the evidence (*pilots*, best first by :meth:`ranking`) and what the race cost."""

    name: str
    groups: tuple[tuple[int, ...], ...]
    lr: float
    target: float
    target_source: str
    reason: str
    pilots: list[Any]
    rungs: list[float]
    measurement: Measurement | None
    sim_s: float
    wall_s: float
    horizon: float
    verified: list[dict[str, Any]]
    pruned: dict[str, str]
    unseen: list[dict[str, Any]]

    @property
    def separated(self) -> bool: ...
    @property
    def pick(self) -> Any: ...
    def ranking(self) -> list[Any]: ...
    def as_dict(self) -> dict[str, Any]: ...


__all__ = [
    "PLAIN",
    "plain_name",
    "shape_text",
    "candidate_rows",
    "CANDIDATE_PRIORITY",
    "candidates_table",
    "class_rows",
    "group_verdict",
    "MAX_ROWS",
]

PLAIN = {ONE_GROUP: "one group (SSGD)", SINGLETONS: "singletons (ASGD)"}
"""Plain names of the candidates that are a rule of their own."""

MAX_ROWS = 20
"""Candidates listed on a terminal (the rest are counted in the caption; --wide lists all)."""

CANDIDATE_PRIORITY = (
    "grouping",
    "groups",
    "η",
    "predicted (s)",
    "interval (s)",
    "rung",
    "how",
    "updates/s",
    "staleness",
    "pilot sim s",
    "pilot wall s",
    "members",
)
"""The candidate table's columns, most wanted first (the last leave first at a narrow width)."""


def plain_name(name: str) -> str:
    """``one group (SSGD)``, ``singletons (ASGD)``; any other name unchanged.

    >>> plain_name("one group"), plain_name("kmeans:2")
    ('one group (SSGD)', 'kmeans:2')
    """
    return PLAIN.get(name, name)


def shape_text(groups: Sequence[Sequence[int]], classes: list[str] | None = None) -> str:
    """A partition in a few characters: ``3 classes`` when each group holds exactly the
    workers of one worker class (and there are two classes or more), ``8 × 2`` for 8 groups
    of 2, else the group sizes in order (``4+4+8``; past 8 groups ``11 groups of 1–4``).

    *groups*: lists of worker ids; *classes*: the class name of each worker.

    >>> shape_text([[0, 1], [2, 3], [4, 5, 6, 7]], ["f", "f", "m", "m", "s", "s", "s", "s"])
    '3 classes'
    >>> shape_text([[0, 1], [2, 3]]), shape_text([[0], [1, 2, 3]])
    ('2 × 2', '1+3')
    """
    sizes = [len(g) for g in groups]
    if classes and len(groups) > 1:
        by_class: dict[str, set] = {}
        for w, c in enumerate(classes):
            by_class.setdefault(c, set()).add(w)
        if len(by_class) == len(groups) and {frozenset(g) for g in groups} == {
            frozenset(s) for s in by_class.values()
        }:
            return f"{len(groups)} classes"
    if len(set(sizes)) == 1:
        return f"{len(sizes)} × {sizes[0]}"
    if len(sizes) <= 8:
        return "+".join(map(str, sizes))
    return f"{len(sizes)} groups of {min(sizes)}–{max(sizes)}"


def members_text(groups: Sequence[Sequence[int]]) -> str:
    """``[0,1] [2,3]`` (every worker id, nothing cut)."""
    return " ".join("[" + ",".join(map(str, g)) + "]" for g in groups)


def _num(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


FAR = 100
"""Predicted times beyond this many horizons are shown as ``> FAR·T``: an extrapolation
that far out only says the candidate will not get there."""


def far_text(x: float, horizon: float) -> str:
    """*x* (s) as a number, or ``> 100·T`` (T the horizon) beyond :data:`FAR` horizons.

    >>> far_text(12.5, 200.0), far_text(1.2e13, 200.0)
    ('12.5', '> 2e+04')
    """
    return f"> {_num(FAR * horizon)}" if x > FAR * horizon else _num(x)


def interval_text(low: float, high: float, horizon: float = math.inf) -> str:
    """``a – b``; ``≥ a`` or ``≤ b`` when one end is unknown; ``—`` when both are; an end
    beyond :data:`FAR` *horizon* s counts as unknown (``> FAR·T`` when both are beyond)."""
    if low > FAR * horizon:
        return far_text(low, horizon)
    high = math.inf if high > FAR * horizon else high
    lo, hi = (math.isfinite(x) for x in (low, high))
    if lo and hi:
        return f"{_num(low)} – {_num(high)}"
    if lo:
        return f"≥ {_num(low)}"
    return f"≤ {_num(high)}" if hi else "—"


def candidate_rows(
    rec: Recommendation, classes: list[str] | None = None, members: bool = False
) -> tuple[list[str], list[list[str]]]:
    """(header, rows of text) of the race's candidates in its order (the pick first,
    marked ``→``); *members*: a last column with every group's worker ids."""
    header = list(CANDIDATE_PRIORITY[:-1]) + (["members"] if members else [])
    ranking = rec.ranking()
    rows = []
    for p in ranking:
        timing = p.timing
        rows.append(
            [
                ("→ " if p is ranking[0] else "") + plain_name(p.name),
                shape_text(p.groups, classes),
                f"{p.lr:.3g}",
                far_text(p.predicted, rec.horizon),
                interval_text(p.low, p.high, rec.horizon),
                str(p.rung + 1),
                p.how or "—",
                "—" if timing is None else f"{timing.updates_per_s:.3g}",
                "—" if timing is None else f"{timing.mean_staleness:.3g}",
                f"{p.sim_s:.4g}",
                f"{p.wall_s:.3g}",
                *([members_text(p.groups)] if members else []),
            ]
        )
    return header, rows


def candidates_table(
    rec: Recommendation,
    classes: list[str] | None = None,
    width: int | None = None,
    members: bool = False,
    rows: int | None = MAX_ROWS,
) -> Table:
    """The race's candidates (the first *rows*; None: all) in a table whose cells are never
    cut: at a *width* the columns that do not fit leave (:data:`CANDIDATE_PRIORITY`) and the
    caption names them; None: every column."""
    header, text = candidate_rows(rec, classes, members)
    shown = text if rows is None else text[:rows]
    keep = fit_columns(header, shown, width, CANDIDATE_PRIORITY)
    notes = []
    if len(keep) < len(header):
        hidden = [header[i] for i in range(len(header)) if i not in keep]
        notes.append(
            f"{len(hidden)} more column{'s' if len(hidden) > 1 else ''} ({', '.join(hidden)}): --wide shows all"
        )
    if len(shown) < len(text):
        notes.append(
            f"{len(text) - len(shown)} more candidates stopped at early rungs (--wide lists all)"
        )
    if rec.pruned:
        notes.append(
            "not raced, timing alike an earlier candidate: "
            + ", ".join(
                f"{plain_name(n)} (like {plain_name(like)})" for n, like in rec.pruned.items()
            )
        )
    table = Table(
        title=f"candidates, the pick first: predicted time to loss {rec.target:.5g} "
        f"(rungs {', '.join(f'{h:.4g}' for h in rec.rungs)} s)",
        caption="; ".join(notes) or None,
    )
    for i in keep:
        table.add_column(
            header[i],
            justify="left" if header[i] in ("grouping", "groups", "how", "members") else "right",
            width=text_width(header, shown, i),
            overflow="fold",
        )
    for row in shown:
        table.add_row(*(Text(row[i], overflow="fold") for i in keep))
    return table


def class_rows(rec: Recommendation, classes: list[str]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the measurement per worker class: its workers, mean iteration,
    compute and communication times (s), RTT (ms), and the pick's groups that hold them."""
    m = rec.measurement
    if m is None:
        raise ValueError("the recommendation holds no measurement")
    group_of = {w: k for k, g in enumerate(rec.groups) for w in g}
    order: dict[str, list[int]] = {}
    for w, c in enumerate(classes):
        order.setdefault(c, []).append(w)
    rows = []
    for c, ws in order.items():
        rows.append(
            [
                c,
                _ids_text(ws),
                f"{m.iteration[ws].mean():.4g}",
                f"{m.compute[ws].mean():.4g}",
                f"{m.comm[ws].mean():.4g}",
                f"{m.rtt[ws].mean() * 1e3:.4g}",
                ",".join(str(k) for k in sorted({group_of[w] for w in ws})),
            ]
        )
    header = ["class", "workers", "iteration (s)", "compute (s)", "comm (s)", "RTT (ms)", "group"]
    return header, rows


def _ids_text(ids: list[int]) -> str:
    """``0–3``, ``0,2,5`` or ``0–3,8``: worker ids in runs.

    >>> _ids_text([0, 1, 2, 3]), _ids_text([0, 2, 5]), _ids_text([0, 1, 2, 3, 8])
    ('0–3', '0,2,5', '0–3,8')
    """
    parts: list[str] = []
    start = prev = ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(
            str(start) if start == prev else f"{start}{'–' if prev > start + 1 else ','}{prev}"
        )
        if i is not None:
            start = prev = i
    return ",".join(parts)


def _best_of(rec: Recommendation, name: str) -> Any:
    """The race's best-ranked candidate of grouping *name* (None when not raced)."""
    return next((p for p in rec.ranking() if p.name == name), None)


def group_verdict(rec: Recommendation, classes: list[str] | None = None) -> str:
    """One line: the pick, its predicted time to the target, and how much faster it is
    predicted to be than the hand groups, one group (SSGD) and singletons (ASGD), each at
    its best-ranked η (``1.42× faster than hand (86.1 s)``)."""
    pick = rec.pick
    head = (
        f"verdict: {plain_name(rec.name)} ({shape_text(rec.groups, classes)}) at η {rec.lr:.3g}, "
        f"predicted to reach loss {rec.target:.4g} in {far_text(pick.predicted, rec.horizon)} s"
    )
    parts = []
    runs = pick.runs
    for name in ("hand", ONE_GROUP, SINGLETONS):
        other = _best_of(rec, name)
        if other is not None and name != rec.name:
            fewer = other.runs if other.runs < runs else None
            parts.append(
                _than(pick.predicted, other.predicted, plain_name(name), rec.horizon, fewer)
            )
    tail = "" if rec.separated else "; not separated from the next (see the intervals)"
    return head + ("; " + ", ".join(parts) if parts else "") + tail


def _than(mine: float, other: float, name: str, horizon: float, runs: int | None = None) -> str:
    """``1.42× faster than hand (86.1 s)``, ``as fast as hand``, ``0.8× as fast as hand``;
    ``hand not predicted to get there`` beyond :data:`FAR` horizons. *runs*: the other's
    time rests on fewer runs than the pick's, this many (said beside it).

    >>> _than(9.3, 7.4, "singletons", 100.0, 1)
    '0.80× as fast as singletons (7.4 s, on 1 run)'
    >>> _than(0.0, 0.0, "hand", 100.0)
    'as fast as hand'
    """
    on = "" if runs is None else f"on {runs} run{'s' if runs > 1 else ''}"
    alone, beside = (f" ({on})", f", {on}") if on else ("", "")  # without / after a time
    if not math.isfinite(other) or other > FAR * horizon:
        return f"{name} not predicted to get there{alone}"
    if not math.isfinite(mine) or mine > FAR * horizon:
        return f"slower than {name} ({_num(other)} s{beside})"
    if mine <= 0:  # the target at the initial loss: the pick is there from the start
        return (
            f"as fast as {name}{alone}"
            if other <= 0
            else f"faster than {name} ({_num(other)} s{beside})"
        )
    ratio = other / mine
    if abs(ratio - 1) < 0.005:
        return f"as fast as {name}{alone}"
    how = f"{ratio:.2f}× faster than" if ratio > 1 else f"{ratio:.2f}× as fast as"
    return f"{how} {name} ({_num(other)} s{beside})"
