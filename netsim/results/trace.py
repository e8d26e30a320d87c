"""Worker timelines as Chrome / Perfetto trace JSON, and curves as TensorBoard event files.

The trace (the "Trace Event Format" that ui.perfetto.dev and chrome://tracing
open) has one process per run, one track (thread) per worker plus one for the
parameter server; each timeline span becomes a complete event (``ph = "X"``)
named ``compute``, ``comm``, ``idle`` or ``down`` (and ``busy`` on the PS track: the
server's busy periods, when it takes time); each model update an instant event on the PS track, and each recorded scenario event (regroup, crash, ...)
an instant event across the run. One simulated time unit is drawn as one second
(timestamps are in microseconds, as the format requires).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .atomic import written
from .runfolder import PHASES, RunData

__all__ = ["chrome_trace", "write_trace", "write_tensorboard", "US"]

US = 1e6
"""Trace microseconds per simulated time unit."""


def _meta(kind: str, pid: int, tid: int, **args: object) -> dict:
    """A Chrome-trace metadata event *kind* (process or thread name, sort index)."""
    return {"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": args}


def _run_events(run: RunData, pid: int) -> list[dict]:
    s = run.summary
    classes = [w["worker_class"] for w in s["workers"]]
    events = [
        _meta("process_name", pid, 0, name=f"{s['scenario']} {run.label} (seed {s['seed']})"),
        _meta("process_sort_index", pid, 0, sort_index=pid),
        _meta("thread_name", pid, 0, name="parameter server"),
    ]
    for w, cls in enumerate(classes):
        events.append(_meta("thread_name", pid, w + 1, name=f"worker {w} ({cls})"))
        events.append(_meta("thread_sort_index", pid, w + 1, sort_index=w + 1))
    events += _phase_events(run, pid, s.get("time_unit", "s"))
    events += _update_events(run, pid)
    for e in s.get("events", []):
        if "time" in e:
            events.append(
                {
                    "name": str(e.get("kind", "event")),
                    "cat": "event",
                    "ph": "i",
                    "s": "p",
                    "pid": pid,
                    "tid": 0,
                    "ts": float(e["time"]) * US,
                    "args": {k: v for k, v in e.items() if k not in ("time",)},
                }
            )
    return events


def _phase_events(run: RunData, pid: int, unit: str) -> list[dict]:
    """One complete event per timeline span (compute, communication, idle, down)."""
    tl = run.timeline
    if tl is None:
        return []
    return [
        {
            "name": PHASES[int(p)],
            "cat": "phase",
            "ph": "X",
            "pid": pid,
            "tid": int(w) + 1,
            "ts": float(a) * US,
            "dur": float(b - a) * US,
            "args": {"start": float(a), "end": float(b), "unit": unit},
        }
        for w, p, a, b in zip(tl["worker"], tl["phase"], tl["start"], tl["end"])
    ]


def _update_events(run: RunData, pid: int) -> list[dict]:
    """One instant event per model update, with the gradients it applied."""
    up = run.updates
    if not len(up["version"]):
        return []
    versions = up["version"]
    starts = np.flatnonzero(np.r_[True, versions[1:] != versions[:-1]])
    ends = np.r_[starts[1:], len(versions)]
    return [
        {
            "name": "update",
            "cat": "update",
            "ph": "i",
            "s": "t",
            "pid": pid,
            "tid": 0,
            "ts": float(up["sim_time"][i]) * US,
            "args": {
                "version": int(versions[i]),
                "workers": up["worker"][i:j].tolist(),
                "group": int(up["group"][i]),
                "staleness": up["staleness"][i:j].tolist(),
            },
        }
        for i, j in zip(starts, ends)
    ]


def chrome_trace(runs: list[RunData]) -> dict:
    """The trace of *runs* (one process each) as a JSON-ready dict."""
    events = []
    for pid, run in enumerate(runs, start=1):
        events += _run_events(run, pid)
    units = sorted({r.summary.get("time_unit", "s") for r in runs})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "netsim",
            "time_unit": ", ".join(units),
            "note": "one simulated time unit is drawn as one second",
        },
    }


def write_trace(runs: list[RunData], path: str | Path) -> Path:
    """Write :func:`chrome_trace` of *runs* to *path* (``.json``); return *path*."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(chrome_trace(runs), separators=(",", ":")) + "\n"
    return written(path, lambda tmp: tmp.write_text(text))


def write_tensorboard(runs: list[RunData], logdir: str | Path) -> list[Path]:
    """Loss and test accuracy of each run as TensorBoard scalars (step = model updates,
    wall time = simulated time) in ``logdir/<label>``; needs the optional ``tensorboardX``.

    Raises ImportError with the install command when tensorboardX is missing.
    """
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ImportError(
            "TensorBoard export needs tensorboardX: pip install 'netsim[tensorboard]'"
        ) from None
    out = []
    for run in runs:
        folder = Path(logdir) / run.label.replace("/", "_").replace(" ", "_")
        with SummaryWriter(logdir=str(folder)) as writer:
            for u, t, loss, acc in zip(
                run.curve["update"],
                run.curve["sim_time"],
                run.curve["loss"],
                run.curve["test_accuracy"],
            ):
                writer.add_scalar("loss", float(loss), int(u), walltime=float(t))
                writer.add_scalar("test_accuracy", float(acc), int(u), walltime=float(t))
        out.append(folder)
    return out
