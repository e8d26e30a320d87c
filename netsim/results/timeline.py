"""Worker timelines (the paper's Figs. 2 and 4): one row per worker, coloured phase spans,
and the server's busy periods when it takes time (``[server]``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .runfolder import PHASES, RunData

__all__ = [
    "plot_timeline",
    "timeline_fig",
    "parse_window",
    "default_window",
    "PHASE_COLORS",
    "MAX_ROWS",
]

PHASE_COLORS = {
    "compute": "#3a76b0",
    "comm": "#e8912d",
    "idle": "#e3e3e3",
    "down": "#b03a2e",
    "busy": "#6b4c9a",
}
UPDATE_COLOR = "#222222"
PHASE_NAMES = {
    "compute": "compute",
    "comm": "communication (pull / push)",
    "idle": "idle (waiting for a model)",
    "down": "down (crashed)",
    "busy": "server busy ([server])",
}
SERVER_ROW = -1
"""The timeline's worker id of the server's busy spans (a server that takes time)."""
DPI = 150
"""Dots per inch of PNG figures unless another is asked for."""
MAX_ROWS = 48
"""At most this many worker rows per panel (evenly spaced ids beyond)."""
ITERATIONS_SHOWN = 8
MAX_COUNT_LABELS = 40


def parse_window(text: str) -> tuple[float, float]:
    """``"START,END"`` in simulated seconds → (start, end).

    Raises ValueError with a one-line reason unless 0 <= START < END, both finite.
    """
    try:
        values = [float(p) for p in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 2 or not (np.isfinite(values).all() and 0 <= values[0] < values[1]):
        raise ValueError(
            f"--window: expected START,END in simulated seconds with 0 <= START < END, got {text!r}"
        )
    return values[0], values[1]


def _spans(run: RunData) -> dict:
    """The timeline columns of *run* (the figure shows only runs with one)."""
    if run.timeline is None:
        raise ValueError(f"{run.label}: the run has no timeline")
    return run.timeline


def default_window(runs: list[RunData]) -> tuple[float, float]:
    """From 0 to about ITERATIONS_SHOWN iterations of the slowest worker (median
    compute span), capped at the recorded horizon."""
    ends, slowest = [], 0.0
    for r in runs:
        tl = _spans(r)
        ends.append(float(tl["end"].max()) if len(tl["end"]) else r.summary["sim_time"])
        computing = tl["phase"] == PHASES.index("compute")
        for w in np.unique(tl["worker"][computing]):
            spans = computing & (tl["worker"] == w)
            slowest = max(slowest, float(np.median(tl["end"][spans] - tl["start"][spans])))
    horizon = max(ends, default=0.0) or 1.0
    if slowest <= 0:
        return 0.0, horizon
    end = ITERATIONS_SHOWN * slowest
    nice = float(f"{end:.2g}")  # two significant digits: 32.86 → 33
    return 0.0, min(horizon, max(nice, end))


def _rows(n_workers: int) -> np.ndarray:
    if n_workers <= MAX_ROWS:
        return np.arange(n_workers)
    return np.unique(np.linspace(0, n_workers - 1, MAX_ROWS).round().astype(int))


def _panel(ax: Axes, run: RunData, window: tuple[float, float]) -> None:
    tl, (a, b) = _spans(run), window
    classes = [w["worker_class"] for w in run.summary["workers"]]
    shown = _rows(len(classes))
    row_of = {int(w): i for i, w in enumerate(shown)}
    server = bool((tl["worker"] == SERVER_ROW).any())
    if server:  # the server's busy periods, on a row above the updates
        row_of[SERVER_ROW] = -2
    keep = (tl["end"] > a) & (tl["start"] < b) & np.isin(tl["worker"], list(row_of))
    for code, phase in enumerate(PHASES):
        sel = keep & (tl["phase"] == code)
        for w in np.unique(tl["worker"][sel]):
            spans = sel & (tl["worker"] == w)
            starts = np.maximum(tl["start"][spans], a)
            widths = np.minimum(tl["end"][spans], b) - starts
            ax.broken_barh(
                list(zip(starts, widths)),
                (row_of[int(w)] - 0.4, 0.8),
                facecolors=PHASE_COLORS[phase],
                edgecolor="white" if phase == "compute" else "none",
                linewidth=0.6,
            )
    versions = run.updates["version"]
    first = np.r_[True, versions[1:] != versions[:-1]] if len(versions) else np.zeros(0, bool)
    times, counts = np.unique(run.updates["sim_time"][first], return_counts=True)
    inside = (times >= a) & (times <= b)
    ax.vlines(times[inside], -1.4, -0.6, color=UPDATE_COLOR, linewidth=0.8)
    if inside.sum() <= MAX_COUNT_LABELS:  # several updates at one instant: say how many
        for t, n in zip(times[inside], counts[inside]):
            if n > 1:
                ax.text(
                    t,
                    -1.0,
                    f" ×{n}",
                    fontsize=6,
                    va="center",
                    ha="left",
                    color=UPDATE_COLOR,
                    clip_on=True,
                )
    ax.set_ylim(len(shown) - 0.5, -2.5 if server else -1.5)
    ax.set_xlim(a, b)
    step = max(1, len(shown) // 24)
    ticks = np.arange(0, len(shown), step)
    ax.set_yticks(
        np.r_[[-2] if server else [], -1, ticks],
        ["PS busy"] * server + ["PS update"] + [f"{shown[i]} {classes[shown[i]]}" for i in ticks],
        fontsize="x-small",
    )
    ax.set_ylabel(
        "worker" + (f" ({len(shown)} of {len(classes)})" if len(shown) < len(classes) else ""),
        fontsize="small",
    )
    ax.set_title(
        f"{run.label}: {run.summary['updates']} updates in {run.summary['sim_time']:g} "
        f"{run.summary.get('time_unit', 's')}",
        fontsize="small",
        loc="left",
    )


def plot_timeline(
    runs: list[RunData],
    path: str | Path,
    window: tuple[float, float] | None = None,
    title: str = "",
) -> Path:
    """Save :func:`timeline_fig` as *path*; returns *path*."""
    from .atomic import written

    fig, fmt = timeline_fig(runs, window, title), Path(path).suffix[1:] or "png"
    return written(path, lambda tmp: fig.savefig(tmp, format=fmt))


def timeline_fig(
    runs: list[RunData], window: tuple[float, float] | None = None, title: str = ""
) -> Figure:
    """One panel per run (all with a timeline), rows = workers, spans coloured by
    phase, within *window* (start, end) of simulated time (default: :func:`default_window`).
    Spans cut by the window are clipped; boundaries between consecutive computations
    show as thin white lines. Returns the Figure."""
    window = window or default_window(runs)
    n_rows = max(len(_rows(len(r.summary["workers"]))) for r in runs)
    height = 0.9 + len(runs) * (0.35 + 0.17 * n_rows)
    fig = Figure(figsize=(9, min(height, 30)), dpi=DPI, layout="constrained")
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False).ravel()
    for ax, run in zip(axes, runs):
        _panel(ax, run, window)
    unit = "/".join(dict.fromkeys(r.summary.get("time_unit", "s") for r in runs))
    axes[-1].set_xlabel(f"simulated time ({unit})")
    shown = ["compute", "comm", "idle"] + [
        p
        for p in ("down", "busy")
        if any((_spans(r)["phase"] == PHASES.index(p)).any() for r in runs)
    ]
    handles: list[Artist] = [Patch(facecolor=PHASE_COLORS[p], label=PHASE_NAMES[p]) for p in shown]
    handles.append(
        Line2D([], [], color=UPDATE_COLOR, linewidth=0.8, label="model update at the PS")
    )
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles),
        fontsize="small",
        frameon=False,
    )
    head = f"Worker timeline, t = {window[0]:g}–{window[1]:g} {unit}"
    fig.suptitle(f"{head}\n{title}" if title else head, fontsize="medium")
    return fig
