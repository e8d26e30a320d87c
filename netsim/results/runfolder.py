"""Run folders, written and read in one place: one run, a ``compare`` folder or a ``sweep`` folder.

A run folder holds ``summary.json``, ``curve.csv``, ``updates.csv`` and maybe
``timeline.csv`` and ``dropped.csv`` (see README, "Output files"). Columns are
returned as numpy arrays keyed by their CSV header names.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..config.grid import SEED_KEY, format_value
from ..sim.records import PHASES, Result, summarize

__all__ = ["write_run", "unique_folder", "latest_folder", "write_compare", "summary_json", "RunData", "FolderError", "read_run", "find_runs", "from_result", "short_label", "relabel", "PHASES"]

CURVE = ("update", "sim_time", "loss", "test_accuracy")
UPDATES = ("version", "sim_time", "worker", "group", "staleness")


class FolderError(ValueError):
    """A folder is missing or holds no run; the message names it."""


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


def write_run(result: Result, out_dir: str | Path, scenario=None, meta: dict | None = None) -> dict:
    """Write summary.json, curve.csv, updates.csv, and dropped.csv / timeline.csv when
    there is something to put in them, into *out_dir*; with *scenario* (the Scenario
    that ran) also its resolved ``scenario.toml``, with *meta* ``meta.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if scenario is not None:
        (out / "scenario.toml").write_text(scenario.to_toml())
    if meta is not None:
        (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
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


def unique_folder(base: str | Path) -> Path:
    """*base* when it does not exist or is empty, else the first free ``base-2``, ``base-3``, ...

    The default output folder of a command, so that no result is overwritten silently.
    """
    base = Path(base)
    candidate, n = base, 1
    while candidate.exists() and (not candidate.is_dir() or any(candidate.iterdir())):
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def latest_folder(base: str | Path) -> Path:
    """The last existing folder of the ``base``, ``base-2``, ... series (``base`` if none exists)."""
    base = Path(base)
    found, n = base, 1
    while True:
        n += 1
        nxt = base.with_name(f"{base.name}-{n}")
        if not nxt.exists():
            return found
        found = nxt


def write_compare(summaries: list[dict], out_dir: str | Path) -> None:
    """compare.json: the list of the compared runs' summaries, each with its
    ``label`` and its ``folder`` (relative to *out_dir*); readers list only these."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "compare.json").write_text(json.dumps(summaries, indent=2) + "\n")


def _columns(path: Path, names, kinds) -> dict:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    body = rows[1:]
    return {name: np.array([kind(r[i]) for r in body], dtype=kind) for i, (name, kind) in enumerate(zip(names, kinds))}


def read_run(path: str | Path, label: str = "", group: str = "", values: dict | None = None) -> RunData:
    """Read the run folder *path*. Raises FolderError when ``summary.json`` is missing."""
    path = Path(path)
    if not (path / "summary.json").is_file():
        raise FolderError(f"{path}: no summary.json (not a run folder)")
    summary = json.loads((path / "summary.json").read_text())
    curve = _columns(path / "curve.csv", CURVE, (int, float, float, float))
    updates = _columns(path / "updates.csv", UPDATES, (int, float, int, int, int))
    timeline = None
    if (path / "timeline.csv").is_file():
        with open(path / "timeline.csv", newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        index = {name: i for i, name in enumerate(PHASES)}
        timeline = {"worker": np.array([int(r[0]) for r in rows], dtype=int),
                    "phase": np.array([index[r[1]] for r in rows], dtype=int),
                    "start": np.array([float(r[2]) for r in rows]),
                    "end": np.array([float(r[3]) for r in rows])}
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
        listed = json.loads((path / "compare.json").read_text())
        runs = [read_run(path / entry["folder"]) for entry in listed
                if (path / entry.get("folder", "") / "summary.json").is_file()]
    else:
        runs = [read_run(sub) for sub in sorted(path.iterdir()) if (sub / "summary.json").is_file()]
    if not runs:
        raise FolderError(f"{path}: no run folders (expected summary.json, compare.json or sweep.json)")
    return runs


def _sweep_runs(path: Path) -> list[RunData]:
    plan = json.loads((path / "sweep.json").read_text())
    runs = []
    for point in plan["points"]:
        folder = path / point["folder"]
        if not (folder / "summary.json").is_file():
            continue  # not run yet (interrupted sweep)
        values = point["values"]
        group = short_label(values) or plan.get("name", "run")
        seed = values.get(SEED_KEY)
        label = group if seed is None else f"{group} (seed {seed})"
        runs.append(read_run(folder, label=label, group=group, values=values))
    if not runs:
        raise FolderError(f"{path}: the sweep has no finished run yet")
    return runs


def relabel(runs: list[RunData], prefix_of) -> list[RunData]:
    """Prefix labels and groups with ``prefix_of(run)`` (to tell runs of several folders apart)."""
    return [replace(r, label=f"{prefix_of(r)}: {r.label}", group=f"{prefix_of(r)}: {r.group}") for r in runs]
