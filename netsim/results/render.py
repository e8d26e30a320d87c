"""Rich renderables of results: run and sweep tables, the live view, grouping and
topology tables, plain progress lines. Pure functions of data; nothing is printed here."""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from ..sim.summary import Summary
from .columns import COLUMN_PAD, fit_columns  # noqa: F401  (re-exported)
from .columns import text_width as _text_width
from .grouptable import (
    MAX_ROWS,
    Recommendation,
    candidates_table,
    class_rows,
    group_verdict,
    plain_name,
)
from .grouptable import far_text as _far_text  # noqa: F401  (kept for callers)
from .grouptable import interval_text as _interval_text
from .liveview import live_view, plain_line
from .tables import mean_ci_rows, run_rows

if TYPE_CHECKING:
    from ..config.schema import KeySpec
    from ..grouping.clustering import Grouping
    from ..sim.measurement import Measurement

__all__ = [
    "compare_table",
    "sweep_table",
    "live_view",
    "plain_line",
    "measurement_table",
    "silhouette_table",
    "ranking_table",
    "topology_list_table",
    "topology_table",
    "keys_table",
    "scenario_list_table",
    "recommendation_tables",
]


def _fmt(value: object, spec: str = ".4g") -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


RUN_PRIORITY = (
    "run",
    "final loss",
    "test acc",
    "updates",
    "staleness mean",
    "idle %",
    "status",
    "time to target",
    "groups",
    "sim time",
    "worst label: acc",
    "p95",
    "max",
    "per-update mean",
)
"""The compare/run table's columns, most wanted first; at a narrow width the last go first
(the gradient and step shares by worker class after all of these)."""


def _table(
    header: list[str], rows: list[list[str]], title: str = "", left: Container[int] = (0,)
) -> Table:
    """A rich Table of text *rows*; columns whose index is in *left* are left-aligned.
    The first column (the run's label) is never wrapped or cut: narrow consoles wrap the others."""
    table = Table(title=title or None)
    for i, col in enumerate(header):
        width = max([len(row[0]) for row in rows] + [len(col)]) if i == 0 else None
        table.add_column(
            col, justify="left" if i in left else "right", no_wrap=i == 0, min_width=width
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _fitted_table(
    header: list[str],
    rows: list[list[str]],
    title: str,
    left: Container[int] = (0,),
    width: int | None = None,
    priority: Sequence[str] = (),
) -> Table:
    """A results table whose cells are never cut: each column exactly as wide as its longest
    cell or header word; with a *width* (the terminal's), the columns that do not fit are
    left out (:func:`fit_columns`) and the caption says which; without, every column (print
    it at a width that holds it all)."""
    keep = fit_columns(header, rows, width, priority)
    caption = None
    if len(keep) < len(header):
        hidden = [header[i] for i in range(len(header)) if i not in keep]
        caption = f"{len(hidden)} more column{'s' if len(hidden) > 1 else ''} ({', '.join(hidden)}): --wide shows all"
    table = Table(title=title or None, caption=caption)
    for i in keep:
        table.add_column(
            header[i],
            justify="left" if i in left else "right",
            width=_text_width(header, rows, i),
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(Text(row[i], overflow="fold") for i in keep))
    return table


def compare_table(summaries: list[Summary], title: str = "", width: int | None = None) -> Table:
    """One row per run (see :func:`netsim.results.tables.run_rows`); *width*: fit the columns
    to this many characters (:func:`fit_columns`), None: all columns."""
    header, rows = run_rows(summaries)
    return _fitted_table(
        header, rows, title, left=(0, len(header) - 1), width=width, priority=RUN_PRIORITY
    )


def sweep_table(table: list[dict], keys: list[str], title: str, width: int | None = None) -> Table:
    """Mean ± 95 % CI per grid point (see :func:`netsim.results.tables.mean_ci_rows`); *width*
    as for :func:`compare_table` (the grid's own columns and the final loss stay longest)."""
    header, rows = mean_ci_rows(table, keys)
    own = [k.rsplit(".", 1)[-1] for k in keys]
    return _fitted_table(
        header,
        rows,
        title,
        width=width,
        priority=(*own, "final loss", "final test accuracy", "runs", "updates", "staleness mean"),
    )


def keys_table(specs: Iterable[KeySpec]) -> Table:
    """Every scenario key: type, default, allowed values, unit."""
    rows = [
        [
            k.key,
            k.type,
            "(required)" if k.required else ("-" if k.default is None else str(k.default)),
            k.allowed or "-",
            k.unit or "-",
        ]
        for k in specs
    ]
    return _table(
        ["key", "type", "default", "allowed", "unit"], rows, "scenario keys", left=(0, 1, 2, 3, 4)
    )


def scenario_list_table(presets: dict, descriptions: dict | None = None) -> Table:
    """Presets by name with their file and, when given, their description."""
    descriptions = descriptions or {}
    return _table(
        ["name", "description", "file"],
        [[name, descriptions.get(name, ""), str(path)] for name, path in presets.items()],
        "scenario presets",
        left=(0, 1, 2),
    )


def measurement_table(info: dict, title: str) -> Table:
    """Per worker: class, host, measured iteration/compute/comm times (s), RTT (ms), chosen group."""
    m, chosen = info["measurement"], info["grouping"]
    group_of = {w: k for k, g in enumerate(chosen.groups) for w in g}
    header = [
        "worker",
        "class",
        "host",
        "iteration (s)",
        "compute (s)",
        "comm (s)",
        "RTT (ms)",
        "group",
    ]
    rows = [
        [
            str(w),
            info["classes"][w],
            str(info["hosts"][w]),
            f"{m.iteration[w].mean():.4g}",
            f"{m.compute[w].mean():.4g}",
            f"{m.comm[w].mean():.4g}",
            f"{m.rtt[w] * 1e3:.4g}",
            str(group_of[w]),
        ]
        for w in range(len(info["classes"]))
    ]
    return _table(header, rows, title, left=(1, 2))


def silhouette_table(grouping: Grouping) -> Table:
    """The automatic grouping's criterion per K, the chosen K marked."""
    rows = [
        [str(k), f"{v:.4f}" + ("  ←" if k == grouping.k else "")]
        for k, v in grouping.criterion.items()
    ]
    return _table(["K", "silhouette"], rows, "silhouette per K (auto)", left=())


def ranking_table(predictions: Iterable[Any]) -> Table:  # netsim.tuning.advisor.Prediction
    """Advisor predictions, best first: update rate, staleness, its η, predicted progress
    (fresh synchronous steps per second)."""
    rows = [
        [
            p.name,
            str(len(p.groups)),
            f"{p.update_rate:.4g}",
            f"{p.mean_staleness:.3g}",
            f"{p.lr:.3g}",
            f"{p.progress:.4g}",
            short_groups(p.groups),
        ]
        for p in predictions
    ]
    return _table(
        ["grouping", "K", "updates/s", "mean staleness", "η", "progress/s", "groups"],
        rows,
        "advisor ranking (closed form, each grouping at its own η; best first)",
        left=(0, 6),
    )


def short_groups(groups: Iterable[Iterable[int]], limit: int = 60) -> str:
    """``[0,1] [2,3]``, cut to *limit* characters."""
    text = " ".join("[" + ",".join(map(str, g)) + "]" for g in groups)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def topology_list_table(presets: dict) -> Table:
    return _table(
        ["name", "file"],
        [[name, str(path)] for name, path in presets.items()],
        "topology presets",
        left=(0, 1),
    )


def topology_table(name: str, info: dict) -> Table:
    """Counts, roles, diameter and bisection bandwidth of one topology."""
    lat, bis = info["diameter_latency_s"], info["bisection_bandwidth_bps"]
    rows = [
        ("hosts", info["hosts"]),
        ("switches", info["switches"]),
        ("links", info["links"]),
        ("node roles", ", ".join(f"{r} {n}" for r, n in info["roles"].items())),
        ("connected", info["connected"]),
        ("diameter (hops)", info["diameter_hops"]),
        ("diameter (latency)", "-" if lat is None else f"{lat * 1e3:.6g} ms"),
        ("bisection bandwidth", "-" if bis is None else f"{bis / 1e9:.6g} Gbit/s"),
    ]
    table = Table(title=f"topology {name}", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(key, str(value))
    return table


# ---- grouping recommendation (netsim group) ----------------------------------------------------
def _num_text(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def _event_text(event: dict) -> str:
    """One ``[[events]]`` entry (its ``as_dict``) in a few words, e.g. ``crash of workers 3, 4 at 400 s``."""
    what = event["kind"] + (f" ×{event['factor']:g}" if event["kind"] == "slowdown" else "")
    if event.get("workers"):
        what += (
            " of worker"
            + ("s " if len(event["workers"]) > 1 else " ")
            + ", ".join(map(str, event["workers"]))
        )
    if event.get("link"):
        what += " of link " + "–".join(map(str, event["link"]))
    return f"{what} at {event['time']:g} s"


def race_line(summary: Summary) -> str | None:
    """What ``grouping = "auto"`` chose in a run (its summary.json dict), in one line, and the
    timed events its race did not see; None for a run without the race."""
    g = summary.get("grouping") or {}
    if g.get("method") != "race":
        return None
    text = (
        f"{summary['label']}: grouping auto picked {g['recommended']} (K = {g['k']}), η = {g['lr']:.4g} "
        f"(race: {g['cost_sim_s']:.4g} simulated s)"
    )
    unseen = g.get("events_after_race") or []
    if unseen:
        text += f"; it ran to {g['rungs_s'][-1]:g} s and did not see " + ", ".join(
            _event_text(e) for e in unseen
        )
    return text


def recommendation_tables(
    rec: Recommendation,
    name: str,
    classes: list[str],
    hosts: list | None = None,
    rows: int | None = MAX_ROWS,
    width: int | None = None,
    members: bool = False,
) -> list[Table | Text]:
    """The measurement (per worker class; per worker with *members*), the candidates
    (predicted time to target with interval, η, shape: :func:`netsim.results.grouptable.candidates_table`
    fitted to *width*), the pick with its reason, predicted vs emulated when verified, and
    the verdict line."""
    out: list[Table | Text] = []
    m = rec.measurement
    if m is not None:
        out.append(
            _measured_table(rec, m, name, classes, hosts)
            if members
            else _class_table(rec, m, name, classes, width)
        )
    out.append(candidates_table(rec, classes, width, members, rows))
    out.append(
        Text(
            f"recommended: {plain_name(rec.name)} (K = {len(rec.groups)}), η = {rec.lr:.4g} — {rec.reason}. "
            f"Target: {rec.target_source}. Cost: {rec.sim_s:.4g} simulated s, {rec.wall_s:.3g} wall s."
        )
    )
    if rec.unseen:
        out.append(
            Text(
                f"note: the race ran to {rec.rungs[-1]:g} s of the {rec.horizon:g} s horizon and did not see "
                f"{len(rec.unseen)} later timed event{'s' if len(rec.unseen) > 1 else ''}: "
                + ", ".join(_event_text(e) for e in rec.unseen)
                + "; check the pick with `netsim compare --groupings`."
            )
        )
    if rec.verified:
        out.append(_verified_table(rec))
    out.append(Text(group_verdict(rec, classes)))
    return out


def _class_table(
    rec: Recommendation, m: Measurement, name: str, classes: list[str], width: int | None
) -> Table:
    """The recommendation's measurement per worker class (--members: per worker)."""
    header, rows = class_rows(rec, classes)
    return _fitted_table(
        header,
        rows,
        f"{name}: measured over {m.iteration.shape[1]} probe rounds ({m.duration:.4g} s simulated)",
        left=(0, 1),
        width=width,
    )


def _measured_table(
    rec: Recommendation, m: Measurement, name: str, classes: list[str], hosts: list | None
) -> Table:
    """The recommendation's measurement, per worker, with the group it is picked into."""
    pick_of = {w: k for k, g in enumerate(rec.groups) for w in g}
    t = Table(
        title=f"{name}: measured over {m.iteration.shape[1]} probe rounds ({m.duration:.4g} s simulated)"
    )
    cols = (
        ["worker", "class"]
        + (["host"] if hosts else [])
        + ["iteration (s)", "compute (s)", "comm (s)", "RTT (ms)", "group"]
    )
    for col in cols:
        t.add_column(col, justify="left" if col in ("class", "host") else "right")
    for w in range(len(classes)):
        t.add_row(
            str(w),
            classes[w],
            *([str(hosts[w])] if hosts else []),
            f"{m.iteration[w].mean():.4g}",
            f"{m.compute[w].mean():.4g}",
            f"{m.comm[w].mean():.4g}",
            f"{m.rtt[w] * 1e3:.4g}",
            str(pick_of[w]),
        )
    return t


def _verified_table(rec: Recommendation) -> Table:
    """Predicted against emulated time to target for the candidates run in full."""
    v = Table(title="verified: predicted vs emulated in full (scenario seed, whole training set)")
    for col in (
        "grouping",
        "η",
        "predicted (s)",
        "interval (s)",
        "emulated (s)",
        "final loss",
        "wall s",
    ):
        v.add_column(col, justify="left" if col == "grouping" else "right")
    for r in rec.verified:
        v.add_row(
            plain_name(r["name"]),
            f"{r['lr']:.3g}",
            _num_text(r["predicted_s"]),
            _interval_text(*(math.inf if x is None else x for x in r["interval_s"])),
            _num_text(r["emulated_s"]),
            _num_text(r["final_loss"]),
            f"{r['wall_s']:.3g}",
        )
    return v


def _gap_text(gap: float | None, points: bool = False) -> str:
    if gap is None:
        return ""
    return f" ({gap:+.2f} pt)" if points else f" ({gap:+.1%})"


def prediction_table(
    rows: list[dict], variants: list[str], title: str = "", width: int | None = None
) -> Table:
    """netsim's predictions of a real run (:func:`netsim.api.predict`'s ``rows``): one row
    per figure, the real run's value, then each variant's mean over its seeds ± the
    half-width of its 95 % interval, with the mean's relative error (idle %: its difference
    in percentage points)."""
    header = ["figure", "real", *variants]
    text = [
        [r["label"], _fmt(r["real"], ".5g")]
        + [
            _fmt(r[v], ".5g")
            + (f" ± {r[f'{v}_ci']:.3g}" if r.get(f"{v}_ci") else "")
            + _gap_text(r[f"{v}_gap"], r["metric"] == "idle_pct")
            for v in variants
        ]
        for r in rows
    ]
    return _fitted_table(header, text, title, width=width)
