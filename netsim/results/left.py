"""What an interrupted command left in its output folder, in one line (read from the disk).

The command line says it after Ctrl-C or SIGTERM, whatever the moment: the folder's
run folders (a ``summary.json`` each, found to two levels down) and their statuses.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["left_in", "interrupt_line", "partial_compare_line"]


def _statuses(out: Path) -> list[str]:
    """Status of each run folder in *out* (itself, its subfolders and theirs), '' for a
    summary.json that cannot be read."""
    found = []
    for depth in ("", "*/", "*/*/"):
        for path in sorted(out.glob(f"{depth}summary.json")):
            try:
                found.append(str(json.loads(path.read_text(encoding="utf-8")).get("status", "")))
            except (OSError, ValueError, AttributeError):
                found.append("")
    return found


def left_in(out: Path | str | None) -> tuple[str, bool]:
    """(what *out* holds, whether every run in it ended ok) in words, e.g.
    ``"f1out is complete (status ok)"``, ``"cmp holds 2 runs: 1 ok, 1 interrupted"``."""
    if out is None:
        return "nothing was written", False
    out = Path(out)
    try:
        statuses = _statuses(out) if out.is_dir() else []
    except OSError:
        statuses = []
    if not statuses:
        return f"nothing was written in {out}", False
    if len(statuses) == 1:
        s = statuses[0] or "unreadable"
        what = "is complete" if s == "ok" else "holds what it recorded"
        return f"{out} {what} (status {s})", s == "ok"
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s or "unreadable"] = counts.get(s or "unreadable", 0) + 1
    if set(counts) == {"ok"}:
        return f"{out} holds {len(statuses)} complete runs (status ok)", True
    parts = ", ".join(f"{n} {s}" for s, n in counts.items())
    return f"{out} holds {len(statuses)} runs: {parts}", False


def interrupt_line(out: Path | str | None) -> str:
    """The one line said when Ctrl-C or SIGTERM ended a command writing into *out*."""
    what, ok = left_in(out)
    if ok:
        return f"interrupted after the run{'s' if 'runs' in what else ''} ended: {what}"
    if what.startswith("nothing"):
        return f"interrupted before the run started: {what}"
    return f"interrupted: {what}"


def partial_compare_line(out: Path | str, total: int) -> str:
    """The one line said when Ctrl-C or SIGTERM ended a comparison of *total* runs whose
    runs are written only when finished (on Dask): the runs ``out/compare.json`` lists."""
    try:
        done = len(json.loads((Path(out) / "compare.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        done = 0
    if not done:
        return f"interrupted before any run finished: nothing was written in {out}"
    if done >= total:
        return f"interrupted after its {total} runs ended: they are in {out}"
    return (
        f"interrupted after {done} of {total} runs: they are in {out} (listed in "
        f"compare.json); the other {total - done} were not written"
    )
