"""Reading run folders: one run, the runs of a ``compare`` or ``sweep`` folder, or the same
columns straight from a Result. Columns are numpy arrays keyed by their CSV header names; a
CSV's unfinished last line (a killed writer) is ignored."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..config.grid import SEED_KEY, format_value
from ..sim.records import PHASES, Result, bias_rows
from ..sim.summary import Summary, problems, summarize
from .runfiles import CURVE, SERVER_UPDATES, UPDATES, FolderError

__all__ = [
    "RunData",
    "read_run",
    "check_complete",
    "find_runs",
    "from_result",
    "short_label",
    "relabel",
]


def _read_json(path: Path) -> Any:
    """The JSON value in *path*; FolderError naming the file when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise FolderError(f"{path}: not readable JSON ({type(exc).__name__}: {exc})") from None


def _check_summary(summary: Any, path: Path) -> Summary:
    """FolderError naming *path* unless *summary* keeps the contract (:class:`Summary`)."""
    if problem := problems(summary, where=str(path)):
        raise FolderError(problem)
    return summary


@dataclass(frozen=True)
class RunData:
    """One run as plain columns.

    Attributes
    ----------
    summary : :class:`~netsim.sim.summary.Summary`, the run's ``summary.json``.
    curve : dict of ndarray (n_evaluations,): update, sim_time (s), loss, test_accuracy.
    updates : dict of ndarray (n_applied_gradients,): version, sim_time (s), worker, group, staleness.
    timeline : dict of ndarray (n_spans,) or None: worker, phase (index into PHASES), start, end (s).
    label : str, the legend entry of this run; runs sharing *group* share a colour (seeds).
    values : dict, swept ``{key: value}`` when the run is part of a sweep.
    bias : dict of float ndarray (n_evaluations,) or None: the ``bias.csv`` columns
        (update, sim_time, worst_class_accuracy, accuracy_<label>, share_<class>,
        share_group<k>, step_share_<class>; NaN where a label has no test row).
    """

    path: Path | None
    summary: Summary
    curve: dict
    updates: dict
    timeline: dict | None = None
    label: str = ""
    group: str = ""
    values: dict = field(default_factory=dict)
    bias: dict | None = None


def _rows(path: Path) -> list[list[str]]:
    """The data rows of a CSV file; an unfinished last line (a killed writer) is left out.
    FolderError naming the file when it is missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FolderError(f"{path}: not readable ({type(exc).__name__}: {exc})") from None
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    try:
        return list(csv.reader(io.StringIO(text, newline="")))[1:]
    except csv.Error as exc:
        raise FolderError(f"{path}: not readable CSV ({exc})") from None


def _header(path: Path) -> list[str]:
    """The header row of a CSV file ([] when unreadable or empty)."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _columns(path: Path, names: Sequence[str], kinds: Sequence[Callable[[str], Any]]) -> dict:
    """Columns of a CSV file with a header row; FolderError naming the file and line
    when it is unreadable or a cell is not of its column's type."""
    body = _rows(path)
    out = {}
    for i, (name, kind) in enumerate(zip(names, kinds)):
        try:
            out[name] = np.array(
                [kind(r[i]) for r in body], dtype=kind if kind in (int, float) else object
            )
        except (ValueError, IndexError, KeyError, TypeError, OverflowError):
            bad = next(n for n, r in enumerate(body, 2) if not _cell_ok(r, i, kind))
            raise FolderError(
                f"{path}: line {bad}: column {name!r} missing or not {getattr(kind, '__name__', 'valid')}"
            ) from None
    return out


def _cell_ok(row: list[str], i: int, kind: Callable[[str], Any]) -> bool:
    try:
        kind(row[i])
        return True
    except (ValueError, IndexError, KeyError, TypeError, OverflowError):
        return False


def check_complete(path: Path, summary: Summary, curve_rows: int, update_rows: int) -> None:
    """FolderError when the files of run folder *path* disagree with its ``summary.json``:
    ``updates.csv`` must hold one row per applied gradient and ``curve.csv`` at least the
    first evaluation (a truncated or emptied file, or files of another run)."""
    if update_rows != summary["gradients_applied"]:
        raise FolderError(
            f"{path / 'updates.csv'}: {update_rows} rows, but summary.json counts "
            f"{summary['gradients_applied']} applied gradients (a truncated file, or another run's)"
        )
    if curve_rows == 0:
        raise FolderError(
            f"{path / 'curve.csv'}: no evaluation (every run has at least the first); the file is "
            "truncated or emptied"
        )


def read_run(
    path: str | Path, label: str = "", group: str = "", values: dict | None = None
) -> RunData:
    """Read the run folder *path*. Raises FolderError when ``summary.json`` is missing or
    the folder's files disagree with it (:func:`check_complete`)."""
    path = Path(path)
    if not (path / "summary.json").is_file():
        raise FolderError(f"{path}: no summary.json (not a run folder)")
    summary = _check_summary(_read_json(path / "summary.json"), path / "summary.json")
    curve = _columns(path / "curve.csv", CURVE, (int, float, float, float))
    updates = _columns(path / "updates.csv", UPDATES, (int, float, int, int, int))
    if _header(path / "updates.csv") == list(SERVER_UPDATES):
        updates.update(
            _columns(
                path / "updates.csv", SERVER_UPDATES, (int, float, int, int, int, float, float)
            )
        )
    check_complete(path, summary, len(curve["update"]), len(updates["version"]))
    timeline = None
    if (path / "timeline.csv").is_file():
        index = {name: i for i, name in enumerate(PHASES)}
        cols = _columns(
            path / "timeline.csv",
            ("worker", "phase", "start", "end"),
            (int, index.__getitem__, float, float),
        )
        timeline = {**cols, "phase": cols["phase"].astype(int)}
    bias = None
    if (path / "bias.csv").is_file():
        try:  # optional: a damaged bias.csv leaves the run readable without it
            with open(path / "bias.csv", newline="") as fh:
                rows = list(csv.reader(fh))
            bias = _bias_columns(rows[0], rows[1:])
        except (OSError, ValueError, IndexError):
            bias = None
    label = label or summary.get("label", summary["algorithm"])
    return RunData(
        path, summary, curve, updates, timeline, label, group or label, dict(values or {}), bias
    )


def _bias_columns(header: list[str], rows: list[list]) -> dict:
    """bias.csv rows (text or numbers; empty or None = no value) → float columns, NaN for no value."""

    def num(v: str | float | None) -> float:
        return np.nan if v is None or v == "" else float(v)

    return {name: np.array([num(r[i]) for r in rows], dtype=float) for i, name in enumerate(header)}


def from_result(
    result: Result, path: Path | None = None, summary: Summary | None = None
) -> RunData:
    """The same columns straight from an in-memory Result (no files)."""
    rec = result.records
    curve = {name: np.array([row[i] for row in rec.curve]) for i, name in enumerate(CURVE)}
    updates = {
        "version": np.array(rec.version, dtype=int),
        "sim_time": np.array(rec.time, dtype=float),
        "worker": np.array(rec.worker, dtype=int),
        "group": np.array(rec.group, dtype=int),
        "staleness": np.array(rec.staleness, dtype=int),
    }
    if rec.server_wait is not None:
        updates["server_wait"] = np.array(rec.server_wait, dtype=float)
        updates["server_service"] = np.array(rec.server_service, dtype=float)
    timeline = None
    if rec.spans:
        spans = sorted(rec.spans, key=lambda s: (s[0], s[2]))
        timeline = {
            name: np.array([s[i] for s in spans])
            for i, name in enumerate(("worker", "phase", "start", "end"))
        }
    summary = summary if summary is not None else summarize(result)
    bias = _bias_columns(*bias_rows(result)) if rec.class_accuracy else None
    return RunData(
        path, summary, curve, updates, timeline, summary["label"], summary["label"], bias=bias
    )


def short_label(values: dict) -> str:
    """Legend text for swept values: ``gsgd, groups=[[fast],[slow]]`` (seed left out)."""
    parts = []
    for key, value in values.items():
        if key == SEED_KEY:
            continue
        text = format_value(value).replace('"', "").replace(", ", ",")
        parts.append(text if key == "run.algorithm" else f"{key.rsplit('.', 1)[-1]}={text}")
    return ", ".join(parts)


def find_runs(path: str | Path) -> list[RunData]:
    """Every run under *path*: the run itself, the runs a compare folder's
    ``compare.json`` lists (in its order; other subfolders are ignored), a
    sweep's points in grid order, or else each subfolder holding a run.

    Raises FolderError when *path* is missing or holds no run.
    """
    path = Path(path)
    if not path.is_dir():
        raise FolderError(f"{path}: no such folder")
    if (path / "summary.json").is_file():
        return [read_run(path)]
    if (path / "sweep.json").is_file():
        return _sweep_runs(path)
    if (path / "compare.json").is_file():
        listed = _read_json(path / "compare.json")
        if not isinstance(listed, list) or not all(
            isinstance(e, dict) and isinstance(e.get("folder", ""), str) for e in listed
        ):
            raise FolderError(
                f"{path / 'compare.json'}: expected a list of run summaries with their 'folder'"
            )
        runs = [
            read_run(path / entry["folder"])
            for entry in listed
            if entry.get("folder") and (path / entry["folder"] / "summary.json").is_file()
        ]
    else:
        runs = [read_run(sub) for sub in sorted(path.iterdir()) if (sub / "summary.json").is_file()]
    if not runs:
        raise FolderError(
            f"{path}: no run folders (expected summary.json, compare.json or sweep.json)"
        )
    return runs


def _sweep_runs(path: Path) -> list[RunData]:
    where = path / "sweep.json"
    plan = _read_json(where)
    if not isinstance(plan, dict) or not isinstance(plan.get("points"), list):
        raise FolderError(f"{where}: missing 'points' (a list of {{folder, values}})")
    runs = []
    for i, point in enumerate(plan["points"]):
        if not (
            isinstance(point, dict)
            and isinstance(point.get("folder"), str)
            and point["folder"]
            and isinstance(point.get("values"), dict)
        ):
            raise FolderError(
                f"{where}: points[{i}] must be an object with 'folder' (a name) and 'values' (an object)"
            )
        folder = path / point["folder"]
        if not (folder / "summary.json").is_file():
            continue  # not run yet (interrupted sweep)
        values = point["values"]
        group = short_label(values) or str(plan.get("name", "run"))
        seed = values.get(SEED_KEY)
        label = group if seed is None else f"{group} (seed {seed})"
        runs.append(read_run(folder, label=label, group=group, values=values))
    if not runs:
        raise FolderError(f"{path}: the sweep has no finished run yet")
    return runs


def relabel(runs: list[RunData], prefix_of: Callable[[RunData], str]) -> list[RunData]:
    """Prefix labels and groups with ``prefix_of(run)`` (to tell runs of several folders apart)."""
    return [
        replace(r, label=f"{prefix_of(r)}: {r.label}", group=f"{prefix_of(r)}: {r.group}")
        for r in runs
    ]
