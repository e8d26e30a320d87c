"""Plain tables from run summaries: sweep rows, mean and 95 % CI per grid point (pure)."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from ..config.grid import SEED_KEY, format_value
from ..sim.summary import Summary, flat, worst_class_accuracy

__all__ = [
    "worst_class_accuracy",
    "share_text",
    "share_header",
    "worst_label_text",
    "class_data_text",
    "sweep_rows",
    "mean_ci",
    "mean_ci_rows",
    "to_csv",
    "run_rows",
    "METRICS",
]

METRICS = (
    "final_loss",
    "final_test_accuracy",
    "worst_class_accuracy",
    "updates",
    "staleness_mean",
    "idle_pct",
)
"""Summary fields averaged over seeds in the mean/CI table."""


def share_text(summary: Summary, kind: str = "gradient") -> str:
    """Shares (%) by worker class of the applied gradients (*kind* ``gradient``) or of
    the model steps (``step``), in class order: ``52/31/17`` (see :func:`share_header`)."""
    shares = summary.get("bias", {}).get(f"{kind}_share_by_class", {})
    return "/".join(f"{100 * x:.0f}" for x in shares.values())


def share_header(summaries: list[Summary], kind: str = "gradient") -> str:
    """Column title for :func:`share_text`: ``grad % of worker classes fast/medium/slow`` (the
    first run's class names), or their initials (``.../f/m/s``) when the names are long and
    the initials differ; *kind* ``data_acc``: the title of :func:`class_data_text`."""
    key = f"{'gradient' if kind == 'data_acc' else kind}_share_by_class"
    names = next((list(s["bias"][key]) for s in summaries if "bias" in s), [])
    initials = [n[:1] for n in names]
    if len("/".join(names)) > 12 and len(set(initials)) == len(initials):
        names = initials
    head = {"gradient": "grad % of", "step": "step % of", "data_acc": "acc on data of"}[kind]
    return f"{head} worker classes {'/'.join(names)}".rstrip()


def worst_label_text(summary: Summary) -> str:
    """The worst-predicted label and its test accuracy: ``4: 0.2230`` (``-`` without one)."""
    bias = summary.get("bias", {})
    if bias.get("worst_class_accuracy") is None:
        return "-"
    return f"{bias['worst_class']}: {bias['worst_class_accuracy']:.4f}"


def class_data_text(summary: Summary) -> str:
    """Test accuracy on each worker class's own data (its label mix), in class order:
    ``0.91/0.90/0.55`` (``-`` for a class without tested rows, or without the figures)."""
    acc = summary.get("bias", {}).get("accuracy_on_class_data")
    if not acc:
        return "-"
    return "/".join("-" if a is None else f"{a:.2f}" for a in acc.values())


def sweep_rows(points: list[tuple[str, dict, Summary]]) -> list[dict]:
    """One row per run: ``point`` (folder name), the swept values by key, then
    :func:`netsim.sim.summary.flat` (``algorithm``/``seed`` only when not swept).

    *points* holds ``(folder, values, summary)`` in grid order.
    """
    rows = []
    for folder, values, summary in points:
        fields = flat(summary)
        del fields["label"]
        if "run.algorithm" in values:
            del fields["algorithm"]
        if SEED_KEY in values:
            del fields["seed"]
        rows.append({"point": folder, **values, **fields})
    return rows


def mean_ci(rows: list[dict], keys: list[str]) -> list[dict]:
    """Mean and 95 % confidence half-width (Student t) of :data:`METRICS` over the
    runs that share the values of *keys* (seeds pooled), in first-seen order.

    Failed runs (status other than ``ok``) are counted but not averaged. Each
    output row: the *keys*, ``runs``, ``failed``, then ``M_mean`` and ``M_ci95``
    per metric (``M_ci95`` is NaN with fewer than two runs).
    """
    from scipy import (
        stats,  # a scikit-learn dependency; imported here to keep `import netsim` light
    )

    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(format_value(row[k]) for k in keys), []).append(row)
    table = []
    for members in groups.values():
        ok = [r for r in members if r["status"] == "ok"]
        out = {k: members[0][k] for k in keys}
        out.update(runs=len(members), failed=len(members) - len(ok))
        for metric in METRICS:
            x = np.array([r[metric] for r in ok if r[metric] is not None], dtype=float)
            out[f"{metric}_mean"] = float(x.mean()) if len(x) else math.nan
            out[f"{metric}_ci95"] = (
                float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
                if len(x) > 1
                else math.nan
            )
        table.append(out)
    return table


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return format_value(value)


def to_csv(rows: list[dict]) -> str:
    """CSV text of *rows* (header from the first row); floats exact, missing → empty."""
    if not rows:
        return ""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(rows[0]))
    writer.writerows([_cell(v) for v in row.values()] for row in rows)
    return buf.getvalue()


def _num(value: object, spec: str) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


def run_rows(
    summaries: list[Summary], labels: list[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """(header, rows of text) comparing runs, one row per run labelled by
    *labels* (default: each summary's ``label``): updates, time, loss, accuracy, staleness per gradient (mean, p95,
    max) and per update (mean), the worst label and its accuracy, the accuracy on each
    worker class's data and the shares of gradients and model steps by worker class, idle share, time to target when one is set, status."""
    target = any("time_to_target_s" in s for s in summaries)
    header = (
        [
            "run",
            "groups",
            "updates",
            "sim time",
            "final loss",
            "test acc",
            "worst label: acc",
            share_header(summaries, "data_acc"),
            share_header(summaries),
            share_header(summaries, "step"),
            "staleness mean",
            "p95",
            "max",
            "per-update mean",
            "idle %",
        ]
        + (["time to target"] if target else [])
        + ["status"]
    )
    rows = []
    for i, s in enumerate(summaries):
        st, su = s["staleness_per_gradient"], s["staleness_per_update"]
        rows.append(
            [
                labels[i] if labels else s.get("label", s["algorithm"]),
                str(len(s["groups"])),
                str(s["updates"]),
                _num(s["sim_time"], ".6g"),
                _num(s["final_loss"], ".5f"),
                _num(s["final_test_accuracy"], ".4f"),
                worst_label_text(s),
                class_data_text(s),
                share_text(s) or "-",
                share_text(s, "step") or "-",
                _num(st["mean"], ".2f"),
                _num(st["p95"], ".1f"),
                str(st["max"]),
                _num(su["mean"], ".2f"),
                _num(s["idle_pct"], ".1f"),
                *([_num(s.get("time_to_target_s"), ".5g")] if target else []),
                s["status"],
            ]
        )
    return header, rows


def mean_ci_rows(table: list[dict], keys: list[str]) -> tuple[list[str], list[list[str]]]:
    """(header, rows of text) of an :func:`mean_ci` table: ``mean ± ci95`` cells."""
    names = {"worst_class_accuracy": "worst label accuracy"}  # a label, not a worker class
    header = (
        [k.rsplit(".", 1)[-1] for k in keys]
        + ["runs"]
        + [names.get(m, m.replace("_", " ")) for m in METRICS]
    )
    spec = {
        "final_loss": ".5f",
        "final_test_accuracy": ".4f",
        "worst_class_accuracy": ".4f",
        "updates": ".1f",
        "staleness_mean": ".2f",
        "idle_pct": ".1f",
    }
    rows = []
    for row in table:
        cells = [format_value(row[k]) for k in keys] + [
            f"{row['runs']}" + (f" ({row['failed']} failed)" if row["failed"] else "")
        ]
        for m in METRICS:
            mean, ci = row[f"{m}_mean"], row[f"{m}_ci95"]
            cells.append(_num(mean, spec[m]) + ("" if math.isnan(ci) else f" ± {ci:{spec[m]}}"))
        rows.append(cells)
    return header, rows
