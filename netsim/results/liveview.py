"""The live view of a running rule and its one-line form, sized to the terminal (pure).

The share done and the ETA come first, on a line of their own at the top, so that no
terminal width crops them and no number of groups pushes them off the screen; the group
rows that do not fit the terminal's height are summarised in one row.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..sim.records import Snapshot

__all__ = ["live_view", "plain_line", "status_text", "PLAIN_WIDTH", "MAX_LIVE_ROWS"]

MAX_LIVE_ROWS = 24
"""Group rows shown when the terminal's height is not known."""

PLAIN_WIDTH = 80
"""Characters a ``--no-live`` progress line may take: details leave first."""


def _who(snap: Snapshot, position: str) -> str:
    """The run a progress line is about: ``[2/3] gsgd``, or ``gsgd`` alone."""
    return f"{position} {snap.label}" if position else snap.label


def eta_text(eta: float | None) -> str:
    """``eta 12 s``, ``eta 3 min``; ``eta …`` while unknown (early in a run)."""
    if eta is None:
        return "eta …"
    if eta < 90:
        return f"eta {eta:.0f} s"
    return f"eta {eta / 60:.0f} min" if eta < 5400 else f"eta {eta / 3600:.1f} h"


def status_text(snap: Snapshot, position: str = "", eta: float | None = None) -> str:
    """``42% done, eta 12 s · [1/3] gsgd  t = 84 / 200  updates 312`` (share and ETA first)."""
    return (
        f"{100 * snap.fraction:.0f}% done, {eta_text(eta)} · {_who(snap, position)}  "
        f"t = {snap.sim_time:.6g} / {snap.until:g}  updates {snap.updates}"
    )


def loss_text(snap: Snapshot) -> str:
    if snap.loss is None:
        return "loss evaluated after the run" if snap.after else "loss not evaluated yet"
    if snap.evaluated_update == 0 and snap.updates > 0:
        return f"loss not evaluated since t = 0 (initial {snap.loss:.5f}; see run.eval_every)"
    return f"loss {snap.loss:.5f} (evaluated at t = {snap.evaluated_at:.6g}, update {snap.evaluated_update})"


def bar_text(fraction: float, width: int) -> Text:
    """A bar of *width* characters, the share *fraction* (0..1) filled, on a line of its own
    (rich's ProgressBar ends without a newline, so the text after it shares its line)."""
    filled = max(0, min(width, round(fraction * width)))
    bar = Text("━" * filled, style="bar.complete", no_wrap=True)
    bar.append("━" * (width - filled), style="bar.back")
    return bar


def live_view(
    snap: Snapshot,
    title: str = "",
    done: Sequence[Snapshot] = (),
    position: str = "",
    eta: float | None = None,
    size: tuple[int, int] | None = None,
) -> Group:
    """The share done and ETA (top line), a bar, the loss, the rules already finished
    (*done*: their final snapshots; the last ones that fit) and a row per group of the
    running rule; *size* (columns, lines) of the terminal: the rows beyond its height are
    summarised in one row (None: at most :data:`MAX_LIVE_ROWS` rows)."""
    width, height = size if size is not None else (None, None)
    top = [
        Text(status_text(snap, position, eta), no_wrap=True, overflow="ellipsis"),
        bar_text(snap.fraction, min(width or 60, 120)),
        Text(title or loss_text(snap), no_wrap=True, overflow="ellipsis"),
    ]
    if snap.note:
        top.append(Text(f"{_who(snap, position)}: {snap.note}", no_wrap=True, overflow="ellipsis"))
    rows_left = MAX_LIVE_ROWS if height is None else max(1, height - len(top) - 5)
    finished = list(done)
    if finished and height is not None:
        keep = max(0, min(len(finished), (height - len(top)) // 3))
        finished = finished[len(finished) - keep :] if keep else []
    parts: list = list(top)
    if finished:
        hidden = len(done) - len(finished)
        if hidden:
            parts.append(Text(f"… {hidden} earlier rules finished", no_wrap=True))
        for d in finished:
            parts.append(
                Text(
                    f"finished {d.label}: t = {d.sim_time:.6g}, {d.updates} updates, "
                    f"loss {'-' if d.loss is None else format(d.loss, '.5f')}",
                    no_wrap=True,
                    overflow="ellipsis",
                )
            )
        rows_left = max(1, rows_left - len(finished) - (1 if hidden else 0))
    parts.append(_group_table(snap, rows_left))
    return Group(*parts)


def _group_table(snap: Snapshot, rows: int) -> Table:
    """One row per group, the first *rows* (the last of them a summary of the rest)."""
    table = Table()
    for col in ("group", "members", "updates", "mean staleness", "idle %"):
        table.add_column(col, justify="right", no_wrap=True)
    groups = snap.groups
    shown = groups if len(groups) <= rows else groups[: max(0, rows - 1)]
    for g in shown:
        table.add_row(
            str(g.id),
            str(g.members),
            str(g.updates),
            f"{g.mean_staleness:.2f}",
            f"{g.idle_pct:.1f}",
        )
    rest = groups[len(shown) :]
    if rest:
        n = sum(g.updates for g in rest)
        members = sum(g.members for g in rest)
        stale = sum(g.mean_staleness * g.updates for g in rest) / n if n else 0.0
        idle = sum(g.idle_pct for g in rest) / len(rest)
        table.add_row(f"+{len(rest)} more", str(members), str(n), f"{stale:.2f}", f"{idle:.1f}")
    return table


def plain_line(
    snap: Snapshot, position: str = "", eta: float | None = None, width: int = PLAIN_WIDTH
) -> str:
    """One line of progress for non-terminal output (*position*: ``[2/3]``; *eta*: wall s),
    at most *width* characters when the label allows: the loss details, then the test
    accuracy, then the loss leave first."""
    if snap.note:
        return f"{_who(snap, position)}: {snap.note}"
    head = (
        f"{_who(snap, position)}: {100 * snap.fraction:.0f}% "
        + ("" if eta is None else f"{eta_text(eta)} ")
        + f"t={snap.sim_time:.6g}/{snap.until:g} updates={snap.updates}"
    )
    acc = (
        ""
        if snap.test_accuracy is None or snap.evaluated_update == 0
        else f" acc={snap.test_accuracy:.4f}"
    )
    for tail in (
        f" {_plain_loss(snap, True)}{acc}",
        f" {_plain_loss(snap, False)}{acc}",
        f" {_plain_loss(snap, False)}",
        "",
    ):
        if len(head) + len(tail) <= width:
            return head + tail
    return head


def _plain_loss(snap: Snapshot, long: bool) -> str:
    if snap.loss is None:
        return "loss=" + loss_text(snap).removeprefix("loss ")
    if snap.evaluated_update == 0 and snap.updates > 0:
        if long:
            return f"loss=- (not evaluated since t = 0; initial {snap.loss:.5f})"
        return "loss=- (not evaluated since t = 0)"
    if long:
        return f"loss={snap.loss:.5f} (t={snap.evaluated_at:.6g})"
    return f"loss={snap.loss:.5f}"
