"""Rich renderables of runs: the compare table, the live view, plain progress lines; no printing."""
from __future__ import annotations

from rich.console import Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .tables import share_header, share_text, worst_class_accuracy

__all__ = ["compare_table", "live_view", "plain_line"]

MAX_LIVE_ROWS = 24


def _fmt(value, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def compare_table(summaries: list[dict], title: str = "") -> Table:
    """One row per run: updates, time, loss, accuracy, staleness, idle share."""
    table = Table(title=title or None)
    target = any("time_to_target_s" in s for s in summaries)
    cols = ["algorithm", "groups", "updates", "sim time (s)", "final loss", "test acc", "worst class acc",
            share_header(summaries), share_header(summaries, "step"), "staleness mean", "p95", "max", "idle %"] + (["time to target (s)"] if target else []) + ["status"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("algorithm", "status") else "right")
    for s in summaries:
        total = sum(w["compute_s"] + w["comm_s"] + w["idle_s"] for w in s["workers"]) or 1.0
        idle = 100.0 * sum(w["idle_s"] for w in s["workers"]) / total
        st = s["staleness"]
        table.add_row(Text(s.get("label", s["algorithm"])), str(len(s["groups"])), str(s["updates"]),
                      _fmt(s["sim_time"], ".6g"), _fmt(s["final_loss"], ".5f"),
                      _fmt(s["final_test_accuracy"], ".4f"), _fmt(worst_class_accuracy(s), ".4f"),
                      Text(share_text(s) or "-"), Text(share_text(s, "step") or "-"), _fmt(st["mean"], ".2f"),
                      _fmt(st["p95"], ".1f"), str(st["max"]), _fmt(idle, ".1f"),
                      *([_fmt(s.get("time_to_target_s"), ".5g")] if target else []), s["status"])
    return table


def live_view(snap: dict, title: str = "") -> Group:
    """Per-group table plus a progress bar in simulated time."""
    table = Table(title=title or Text(f"{snap['algorithm']}  t = {snap['sim_time']:.6g} / {snap['until']:g} s  "
                                      f"updates {snap['updates']}  loss {_fmt(snap['loss'], '.5f')}"))
    for col in ("group", "members", "updates", "mean staleness", "idle %"):
        table.add_column(col, justify="right")
    groups = snap["groups"]
    for g in groups[:MAX_LIVE_ROWS]:
        table.add_row(str(g["id"]), str(g["members"]), str(g["updates"]),
                      f"{g['mean_staleness']:.2f}", f"{g['idle_pct']:.1f}")
    if len(groups) > MAX_LIVE_ROWS:
        table.add_row(f"… {len(groups) - MAX_LIVE_ROWS} more", "", "", "", "")
    bar = ProgressBar(total=snap["until"], completed=min(snap["sim_time"], snap["until"]))
    return Group(table, bar)


def plain_line(snap: dict) -> str:
    """One line of progress for non-terminal output."""
    return (f"{snap['algorithm']}: t={snap['sim_time']:.6g}/{snap['until']:g} s "
            f"updates={snap['updates']} loss={_fmt(snap['loss'], '.5f')} "
            f"test_acc={_fmt(snap['test_accuracy'], '.4f')}")
