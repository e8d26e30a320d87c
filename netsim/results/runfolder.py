"""Run folders, written and read in one place: one run, a ``compare`` folder or a ``sweep`` folder.

A run folder holds ``summary.json``, ``curve.csv``, ``updates.csv`` and maybe
``timeline.csv`` and ``dropped.csv`` (see README, "Output files"). Columns are
returned as numpy arrays keyed by their CSV header names.
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..config.grid import SEED_KEY, format_value
from ..sim.records import PHASES, Result, summarize

__all__ = ["write_run", "write_compare", "summary_json", "RunData", "FolderError", "check_writable", "read_run",
           "find_runs", "from_result", "short_label", "relabel", "PHASES"]

CURVE = ("update", "sim_time", "loss", "test_accuracy")
UPDATES = ("version", "sim_time", "worker", "group", "staleness")


class FolderError(ValueError):
    """A folder is missing, holds no run, or holds a malformed file; the message names it."""


_NUMBER = (int, float)
_SUMMARY = {"algorithm": str, "seed": int, "status": str, "sim_time": _NUMBER, "updates": int,
            "gradients_applied": int, "gradients_dropped": int, "final_loss": _NUMBER + (type(None),),
            "final_test_accuracy": _NUMBER + (type(None),), "workers": list, "groups": list, "wall_s": _NUMBER}
_WORKER = {"id": int, "worker_class": str, "compute_s": _NUMBER, "comm_s": _NUMBER, "idle_s": _NUMBER}
_GROUP = {"id": int, "members": list, "updates": int}
_STALENESS = {"mean": _NUMBER, "p50": _NUMBER, "p95": _NUMBER, "max": _NUMBER}
_OPTIONAL = {"label": str, "scenario": str, "message": str, "idle_pct": _NUMBER, "events": list,
             "staleness_per_gradient": dict, "staleness_per_update": dict}


def _read_json(path: Path):
    """The JSON value in *path*; FolderError naming the file when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise FolderError(f"{path}: not readable JSON ({type(exc).__name__}: {exc})") from None


def _require(value, fields: dict, where: str) -> None:
    if not isinstance(value, dict):
        raise FolderError(f"{where}: expected a JSON object, got {type(value).__name__}")
    for key, kind in fields.items():
        if key not in value:
            raise FolderError(f"{where}: missing {key!r}")
        item = value[key]
        if not isinstance(item, kind) or (isinstance(item, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))):
            raise FolderError(f"{where}: {key!r} has the wrong type ({type(item).__name__})")


def _check_summary(summary, path: Path) -> dict:
    """FolderError naming *path* unless *summary* has the fields readers use."""
    _require(summary, _SUMMARY, str(path))
    _require(summary, {k: v for k, v in _OPTIONAL.items() if k in summary}, str(path))
    for key in ("staleness_per_gradient", "staleness_per_update"):
        if key in summary:
            _require(summary[key], _STALENESS, f"{path}: {key}")
    for i, w in enumerate(summary["workers"]):
        _require(w, _WORKER, f"{path}: workers[{i}]")
    for i, g in enumerate(summary["groups"]):
        _require(g, _GROUP, f"{path}: groups[{i}]")
    return summary


@dataclass(frozen=True)
class RunData:
    """One run as plain columns.

    Attributes
    ----------
    summary : dict, the ``summary.json`` contract.
    curve : dict of ndarray (n_evaluations,): update, sim_time (s), loss, test_accuracy.
    updates : dict of ndarray (n_applied_gradients,): version, sim_time (s), worker, group, staleness.
    timeline : dict of ndarray (n_spans,) or None: worker, phase (index into PHASES), start, end (s).
    label : str, the legend entry of this run; runs sharing *group* share a colour (seeds).
    values : dict, swept ``{key: value}`` when the run is part of a sweep.
    """
    path: Path | None
    summary: dict
    curve: dict
    updates: dict
    timeline: dict | None = None
    label: str = ""
    group: str = ""
    values: dict = field(default_factory=dict)


def summary_json(summary: dict) -> str:
    """The summary as stable JSON text (same summary → same bytes)."""
    return json.dumps(summary, indent=2, allow_nan=True) + "\n"


def write_run(result: Result, out_dir: str | Path) -> dict:
    """Write summary.json, curve.csv, updates.csv, and dropped.csv / timeline.csv when
    there is something to put in them, into *out_dir*."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rec = result.records
    with open(out / "curve.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["update", "sim_time", "loss", "test_accuracy"])
        writer.writerows([u, repr(t), repr(l), repr(a)] for u, t, l, a in rec.curve)
    with open(out / "updates.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["version", "sim_time", "worker", "group", "staleness"])
        writer.writerows(zip(rec.version, map(repr, rec.time), rec.worker, rec.group, rec.staleness))
    if rec.drop_time:
        with open(out / "dropped.csv", "w", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(["sim_time", "worker", "version_read", "reason"])
            writer.writerows(zip(map(repr, rec.drop_time), rec.drop_worker, rec.drop_version, rec.drop_reason))
    if rec.spans:
        with open(out / "timeline.csv", "w", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(["worker", "phase", "start", "end"])
            writer.writerows((w, PHASES[p], repr(a), repr(b)) for w, p, a, b in sorted(rec.spans, key=lambda s: (s[0], s[2])))
    summary = summarize(result)
    (out / "summary.json").write_text(summary_json(summary))
    return summary


def write_compare(summaries: list[dict], out_dir: str | Path) -> None:
    """compare.json: the list of the compared runs' summaries, each with its
    ``label`` and its ``folder`` (relative to *out_dir*); readers list only these."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "compare.json").write_text(json.dumps(summaries, indent=2) + "\n")


def _columns(path: Path, names, kinds) -> dict:
    """Columns of a CSV file with a header row; FolderError naming the file and line
    when it is missing, unreadable or a cell is not of its column's type."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise FolderError(f"{path}: not readable ({type(exc).__name__}: {exc})") from None
    body = rows[1:]
    out = {}
    for i, (name, kind) in enumerate(zip(names, kinds)):
        try:
            out[name] = np.array([kind(r[i]) for r in body], dtype=kind if kind in (int, float) else object)
        except (ValueError, IndexError, KeyError, TypeError, OverflowError):
            bad = next(n for n, r in enumerate(body, 2) if not _cell_ok(r, i, kind))
            raise FolderError(f"{path}: line {bad}: column {name!r} missing or not {getattr(kind, '__name__', 'valid')}") from None
    return out


def _cell_ok(row, i, kind) -> bool:
    try:
        kind(row[i])
        return True
    except (ValueError, IndexError, KeyError, TypeError, OverflowError):
        return False


def read_run(path: str | Path, label: str = "", group: str = "", values: dict | None = None) -> RunData:
    """Read the run folder *path*. Raises FolderError when ``summary.json`` is missing."""
    path = Path(path)
    if not (path / "summary.json").is_file():
        raise FolderError(f"{path}: no summary.json (not a run folder)")
    summary = _check_summary(_read_json(path / "summary.json"), path / "summary.json")
    curve = _columns(path / "curve.csv", CURVE, (int, float, float, float))
    updates = _columns(path / "updates.csv", UPDATES, (int, float, int, int, int))
    timeline = None
    if (path / "timeline.csv").is_file():
        index = {name: i for i, name in enumerate(PHASES)}
        cols = _columns(path / "timeline.csv", ("worker", "phase", "start", "end"), (int, index.__getitem__, float, float))
        timeline = {**cols, "phase": cols["phase"].astype(int)}
    label = label or summary.get("label", summary["algorithm"])
    return RunData(path, summary, curve, updates, timeline, label, group or label, dict(values or {}))


def from_result(result: Result, path: Path | None = None) -> RunData:
    """The same columns straight from an in-memory Result (no files)."""
    rec = result.records
    curve = {name: np.array([row[i] for row in rec.curve]) for i, name in enumerate(CURVE)}
    updates = {"version": np.array(rec.version, dtype=int), "sim_time": np.array(rec.time, dtype=float),
               "worker": np.array(rec.worker, dtype=int), "group": np.array(rec.group, dtype=int),
               "staleness": np.array(rec.staleness, dtype=int)}
    timeline = None
    if rec.spans:
        spans = sorted(rec.spans, key=lambda s: (s[0], s[2]))
        timeline = {name: np.array([s[i] for s in spans]) for i, name in enumerate(("worker", "phase", "start", "end"))}
    summary = summarize(result)
    return RunData(path, summary, curve, updates, timeline, summary["label"], summary["label"])


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
        if not isinstance(listed, list) or not all(isinstance(e, dict) and isinstance(e.get("folder", ""), str)
                                                   for e in listed):
            raise FolderError(f"{path / 'compare.json'}: expected a list of run summaries with their 'folder'")
        runs = [read_run(path / entry["folder"]) for entry in listed
                if entry.get("folder") and (path / entry["folder"] / "summary.json").is_file()]
    else:
        runs = [read_run(sub) for sub in sorted(path.iterdir()) if (sub / "summary.json").is_file()]
    if not runs:
        raise FolderError(f"{path}: no run folders (expected summary.json, compare.json or sweep.json)")
    return runs


def _sweep_runs(path: Path) -> list[RunData]:
    where = path / "sweep.json"
    plan = _read_json(where)
    if not isinstance(plan, dict) or not isinstance(plan.get("points"), list):
        raise FolderError(f"{where}: missing 'points' (a list of {{folder, values}})")
    runs = []
    for i, point in enumerate(plan["points"]):
        if not (isinstance(point, dict) and isinstance(point.get("folder"), str) and point["folder"]
                and isinstance(point.get("values"), dict)):
            raise FolderError(f"{where}: points[{i}] must be an object with 'folder' (a name) and 'values' (an object)")
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


def check_writable(out: str | Path) -> None:
    """Raise FolderError unless a run folder can be written at *out*: the path and
    its nearest existing ancestor must be folders, and that ancestor writable.
    Called before simulating, so a bad --out fails at once, not after the run."""
    out = Path(out)
    try:
        _check_writable(out)
    except (OSError, ValueError) as exc:
        if isinstance(exc, FolderError):
            raise
        raise FolderError(f"{out}: not a usable folder path ({exc})") from None


def _check_writable(out: Path) -> None:
    probe = out
    while True:
        if probe.exists():
            if not probe.is_dir():
                what = "is a file, not a folder" if probe == out else f"cannot hold a folder: {probe} is a file"
                raise FolderError(f"{out}: {what} (give --out a folder path)")
            if not os.access(probe, os.W_OK | os.X_OK):
                raise FolderError(f"{out}: cannot write into {probe} (permission denied)")
            return
        if probe.parent == probe:
            raise FolderError(f"{out}: no existing parent folder")
        probe = probe.parent


def relabel(runs: list[RunData], prefix_of) -> list[RunData]:
    """Prefix labels and groups with ``prefix_of(run)`` (to tell runs of several folders apart)."""
    return [replace(r, label=f"{prefix_of(r)}: {r.label}", group=f"{prefix_of(r)}: {r.group}") for r in runs]
