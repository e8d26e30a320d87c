"""Figures of run folders: curves (mean and 95 % CI band over seeds), staleness
histograms, per-group update rates; saved as PNG, PDF and/or SVG.

Matplotlib only, headless: figures are :class:`matplotlib.figure.Figure`
objects rendered by Agg, so no pyplot state and no display backend is touched.
``*_figure`` functions take :class:`netsim.results.runfolder.RunData` lists and
return a Figure; :func:`plot_runs` saves them all and returns the paths.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from ..sim.records import class_rows
from ..sim.summary import Summary
from .atomic import written
from .figset import IID_REASON, Drawn, Only, check_only, loss_targets, one_unit, skewed_runs
from .runfolder import RunData, find_runs, relabel
from .timeline import DPI, timeline_fig

__all__ = [
    "plot_runs",
    "plot_folders",
    "plot_curves",
    "plot_staleness",
    "plot_update_rate",
    "CURVE_FILES",
    "curve_figure",
    "staleness_figure",
    "update_rate_figure",
    "save",
    "FIG_FORMATS",
    "XSCALES",
    "mean_band",
    "plot_bias",
    "bias_figure",
    "labels_figure",
    "label_holders",
    "consensus_figure",
    "optional_figures",
]

CURVE_FILES = {
    ("loss", "update"): "loss_vs_updates.png",
    ("loss", "sim_time"): "loss_vs_time.png",
    ("test_accuracy", "update"): "accuracy_vs_updates.png",
    ("test_accuracy", "sim_time"): "accuracy_vs_time.png",
}
AXIS_LABEL = {
    "update": "model updates (PS versions)",
    "sim_time": "simulated time ({unit})",
    "loss": "training loss (objective with L2 term)",
    "test_accuracy": "test accuracy",
}
WHAT = {
    "loss": "training loss",
    "test_accuracy": "test accuracy",
    "update": "updates",
    "sim_time": "simulated time",
}
MAX_PANELS = 12
MAX_TIMELINES = 6
LINESTYLES = ("-", "--", ":", "-.")
"""DPI: dots per inch of PNG files unless :func:`save` is given another (shared with the timeline)."""
FIG_FORMATS = ("png", "pdf", "svg")
XSCALES = ("log", "linear")


def time_unit(runs: list[RunData]) -> str:
    """The simulated time unit of *runs* (``run.time_unit``; ``s`` by default)."""
    units = list(dict.fromkeys(r.summary.get("time_unit", "s") for r in runs))
    return "/".join(units) if units else "s"


def save(
    fig: Figure, path: str | Path, formats: str | Iterable[str] = ("png",), dpi: int | None = None
) -> list[Path]:
    """Save *fig* as ``path`` with each suffix of *formats* (png, pdf, svg); *dpi* for PNG."""
    formats = _check_formats(formats)
    path = Path(path)
    out = []
    for fmt in formats:
        target = path.with_suffix(f".{fmt}")
        written(
            target,
            partial(fig.savefig, format=fmt, dpi=dpi if fmt == "png" and dpi else "figure"),
        )
        out.append(target)
    return out


def _check_formats(formats: str | Iterable[str] | None) -> tuple[str, ...]:
    formats = (formats,) if isinstance(formats, str) else tuple(formats or ("png",))
    for fmt in formats:
        if fmt not in FIG_FORMATS:
            raise ValueError(
                f"--format: {fmt!r} is not allowed (allowed: {', '.join(FIG_FORMATS)})"
            )
    return formats


def plot_folders(
    folders: Iterable[str | os.PathLike],
    out_dir: str | Path | None = None,
    window: tuple[float, float] | None = None,
    formats: str | Iterable[str] = ("png",),
    dpi: int | None = None,
    xscale: str = "log",
    target: float | None = None,
    only: Only = None,
) -> Drawn:
    """All figures for the runs found in *folders* (run, compare or sweep folders).

    *out_dir* defaults to ``<folder>/plots`` for one folder, else ``./plots``;
    *window* (start, end) in simulated time limits the timeline (then saved as
    ``timeline_START-END``, so the full default timeline is kept); *target* and *only*
    as for :func:`plot_runs`.
    Raises :class:`netsim.results.runfolder.FolderError` for a folder without runs.
    """
    paths = [Path(f) for f in folders]
    runs = []
    for folder in paths:
        found = find_runs(folder)
        runs += relabel(found, partial(_folder_name, folder)) if len(paths) > 1 else found
    out = (
        Path(out_dir)
        if out_dir is not None
        else (paths[0] / "plots" if len(paths) == 1 else Path("plots"))
    )
    return plot_runs(runs, out, window, formats, dpi, xscale, target, only)


def _folder_name(folder: Path, run: RunData) -> str:
    return folder.name


def plot_runs(
    runs: list[RunData],
    out_dir: str | Path,
    window: tuple[float, float] | None = None,
    formats: str | Iterable[str] = ("png",),
    dpi: int | None = None,
    xscale: str = "log",
    target: float | None = None,
    only: Only = None,
) -> Drawn:
    """Write the four curve figures (the target loss drawn on the loss curves: *target*,
    else the runs' ``run.target_loss``), the timeline (runs with a timeline), ``staleness``,
    ``update_rate``, ``bias`` and ``labels`` (runs scored per label whose workers' labels
    are skewed: :mod:`netsim.results.figset`) and ``consensus`` (runs of rules without a
    PS) into *out_dir* in each of *formats*; *only*: just these figure names (e.g.
    ``("timeline",)``). Returns their paths, with ``skipped`` naming what was not drawn and why."""
    formats = _check_formats(formats)
    if xscale not in XSCALES:
        raise ValueError(f"--xscale: {xscale!r} is not allowed (allowed: {', '.join(XSCALES)})")
    wanted = check_only(only)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths, skipped = [], {}
    targets = loss_targets(runs, target)
    for (y, x), name in CURVE_FILES.items():
        if wanted is None or name[:-4] in wanted:
            fig = curve_figure(runs, y, x, xscale, targets)
            paths += save(fig, out / name, formats, dpi)
    timed = [r for r in runs if r.timeline is not None]
    if timed and (wanted is None or "timeline" in wanted):
        name = "timeline.png" if window is None else f"timeline_{window[0]:g}-{window[1]:g}.png"
        fig = timeline_figure(_first_per_group(timed)[:MAX_TIMELINES], window, _title_head(runs))
        paths += save(fig, out / name, formats, dpi)
    elif not timed:
        skipped["timeline"] = "no run recorded a timeline (run.timeline_until = 0)"
    for name, draw in (("staleness", staleness_figure), ("update_rate", update_rate_figure)):
        if wanted is None or name in wanted:
            paths += save(draw(runs), out / f"{name}.png", formats, dpi)
    for name, fig in optional_figures(runs, wanted, skipped).items():
        paths += save(fig, out / f"{name}.png", formats, dpi)
    return Drawn(
        paths, skipped if wanted is None else {k: skipped[k] for k in wanted if k in skipped}
    )


def optional_figures(
    runs: list[RunData], only: Only = None, skipped: dict[str, str] | None = None
) -> dict[str, Figure]:
    """The figures only some runs have data for, by name: ``bias`` and ``labels`` (runs
    scored per label whose workers hold skewed labels), ``consensus`` (runs whose workers
    hold their own models); *only*: just these names. The per-label figures of runs on IID
    data are left out, the reason put in *skipped* (name → why)."""
    out: dict[str, Figure] = {}
    wanted = check_only(only)
    skewed = skewed_runs(runs)
    if (wanted is None or "bias" in wanted) and any(r.bias is not None for r in skewed):
        out["bias"] = bias_figure([r for r in skewed if r.bias is not None])
    if (wanted is None or "labels" in wanted) and any(
        r.summary.get("bias", {}).get("class_accuracy") for r in skewed
    ):
        out["labels"] = labels_figure(skewed)
    if not skewed and any(r.summary.get("bias") for r in runs) and skipped is not None:
        skipped["bias"] = skipped["labels"] = IID_REASON
    if (wanted is None or "consensus" in wanted) and any(_consensus(r) is not None for r in runs):
        out["consensus"] = consensus_figure(runs)
    return out


def _colors(runs: list[RunData]) -> dict[str, tuple]:
    """One tab10 colour per group; beyond ten groups, line styles tell them apart."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {g: cmap(i % 10) for i, g in enumerate(dict.fromkeys(r.group for r in runs))}


def _dashes(runs: list[RunData]) -> dict[str, str]:
    return {
        g: LINESTYLES[(i // 10) % len(LINESTYLES)]
        for i, g in enumerate(dict.fromkeys(r.group for r in runs))
    }


def _title_head(runs: list[RunData]) -> str:
    names = list(dict.fromkeys(r.summary.get("scenario", "") for r in runs))
    seeds = sorted({r.summary["seed"] for r in runs})
    seed_text = (
        f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]} ({len(seeds)})"
    )
    workers = sorted({len(r.summary["workers"]) for r in runs})
    return f"{', '.join(names)} — {seed_text}, {'/'.join(map(str, workers))} workers"


def _mean_note(runs: list[RunData]) -> str:
    n = max(sum(1 for r in runs if r.group == g) for g in {r.group for r in runs})
    return f" (mean over {n} seeds)" if n > 1 else ""


def _first_per_group(runs: list[RunData]) -> list[RunData]:
    seen: dict[str, RunData] = {}
    for r in runs:
        seen.setdefault(r.group, r)
    return list(seen.values())[:MAX_PANELS]


def mean_band(
    curves: list[tuple[np.ndarray, np.ndarray]], level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and Student-t CI half-width of several curves ``(x, y)`` on a common grid.

    The grid is every x of any curve up to the smallest last x (where all are
    defined); each curve is linearly interpolated onto it. Returns ``(grid, mean,
    half)``; *half* is 0 for a single curve.

    >>> g, m, h = mean_band([(np.array([0., 2.]), np.array([1., 3.])), (np.array([0., 1., 2.]), np.array([3., 3., 3.]))])
    >>> g.tolist(), m.tolist()
    ([0.0, 1.0, 2.0], [2.0, 2.5, 3.0])
    """
    from scipy.stats import t as student

    end = min(float(x[-1]) for x, _ in curves)
    grid = np.unique(np.concatenate([x[x <= end] for x, _ in curves]))
    ys = np.array([np.interp(grid, x, y) for x, y in curves])
    mean = ys.mean(axis=0)
    n = len(curves)
    if n < 2:
        return grid, mean, np.zeros_like(mean)
    half = student.ppf(0.5 + level / 2, n - 1) * ys.std(axis=0, ddof=1) / np.sqrt(n)
    return grid, mean, half


def curve_figure(
    runs: list[RunData],
    y: str = "loss",
    x: str = "sim_time",
    xscale: str = "log",
    targets: tuple | list = (),
) -> Figure:
    """*y* (loss or test_accuracy) against *x* (update or sim_time): one line per
    group of runs; a group of several seeds is drawn as its mean with a shaded
    95 % CI band. *xscale* (log or linear) applies to the updates axis; *targets*: target
    losses drawn as dashed grey lines on a loss figure."""
    colors, dashes = _colors(runs), _dashes(runs)
    outside = len(colors) > 8  # a long legend goes to the right of the axes
    fig = Figure(figsize=(9.5 if outside else 7.5, 4.6), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    log = x == "update" and xscale == "log"
    banded = False
    for group, members in _by_group(runs).items():
        curves = [
            (r.curve[x].astype(float), r.curve[y].astype(float)) for r in members if len(r.curve[x])
        ]
        if not curves:
            continue
        if len(curves) == 1:
            xs, mean, half = curves[0][0], curves[0][1], None
        else:
            xs, mean, half = mean_band(curves)
            banded = True
        if log:  # log axis: start from update 1 and keep the first evaluation at x = 1
            xs = np.maximum(xs, 1)
        label = group if half is None else f"{group} (mean of {len(curves)})"
        ax.plot(
            xs,
            mean,
            color=colors[group],
            ls=dashes[group],
            label=label,
            lw=1.8,
            marker="." if len(xs) <= 40 else None,
            ms=4,
        )
        if half is not None:
            ax.fill_between(xs, mean - half, mean + half, color=colors[group], alpha=0.2, lw=0)
    if log:
        ax.set_xscale("log")
    for level in targets if y == "loss" else ():
        ax.axhline(level, color="0.35", ls=(0, (4, 3)), lw=1.0, zorder=1)
        ax.annotate(
            f"target {level:.4g}",
            (0.995, level),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            fontsize="x-small",
            color="0.3",
        )
    if y == "test_accuracy":
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(
        AXIS_LABEL[x].format(unit=time_unit(runs))
        + (", log scale (update 0 drawn at 1)" if log else "")
    )
    ax.set_ylabel(AXIS_LABEL[y])
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(
        title="shaded: 95 % CI over seeds" if banded else None,
        fontsize="small",
        **({"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)} if outside else {"loc": "best"}),
    )
    fig.suptitle(f"{WHAT[y].capitalize()} vs {WHAT[x]}\n{_title_head(runs)}", fontsize="medium")
    return fig


def _by_group(runs: list[RunData]) -> dict[str, list[RunData]]:
    out: dict[str, list[RunData]] = {}
    for r in runs:
        out.setdefault(r.group, []).append(r)
    return out


def plot_curves(
    runs: list[RunData],
    out_dir: Path,
    formats: str | Iterable[str] = ("png",),
    dpi: int | None = None,
    xscale: str = "log",
) -> list[Path]:
    """Loss and accuracy against updates and against simulated time: four figures."""
    paths = []
    for (y, x), name in CURVE_FILES.items():
        paths += save(curve_figure(runs, y, x, xscale), Path(out_dir) / name, formats, dpi)
    return paths


def timeline_figure(
    runs: list[RunData], window: tuple[float, float] | None = None, title: str = ""
) -> Figure:
    """The worker timeline figure (see :func:`netsim.results.timeline.plot_timeline`)."""
    return timeline_fig(runs, window, title)


def _panels(n: int, title: str, height: float = 2.6, sharey: bool = False) -> tuple[Figure, list]:
    n = min(n, MAX_PANELS)
    cols = min(n, 3)
    rows = -(-n // cols)
    fig = Figure(figsize=(3.6 * cols + 0.6, height * rows + 0.9), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize="medium")
    return fig, list(axes[:n])


def _pooled(runs: list[RunData]) -> dict[str, list[RunData]]:
    pooled: dict[str, list[RunData]] = {}
    for r in runs:
        pooled.setdefault(r.group, []).append(r)
    return dict(list(pooled.items())[:MAX_PANELS])


def plot_staleness(runs: list[RunData], path: Path) -> Path:
    """Save :func:`staleness_figure` as *path*."""
    return save(staleness_figure(runs), path, (Path(path).suffix.lstrip(".") or "png",))[0]


def staleness_figure(runs: list[RunData]) -> Figure:
    """Histogram of applied-gradient staleness (PS versions), one panel per group
    (seeds pooled), as a share of that group's applied gradients."""
    pooled, colors = _pooled(runs), _colors(runs)
    fig, axes = _panels(
        len(pooled),
        f"Staleness of applied gradients{_mean_note(runs).replace('mean over', 'pooled over')}\n"
        f"{_title_head(runs)}",
    )
    top = max(
        (int(r.updates["staleness"].max()) for r in runs if len(r.updates["staleness"])), default=0
    )
    for ax, (group, members) in zip(axes, pooled.items()):
        s = np.concatenate([r.updates["staleness"] for r in members])
        counts = np.bincount(s, minlength=top + 1) if len(s) else np.zeros(top + 1)
        share = counts / max(len(s), 1)
        ax.bar(np.arange(top + 1), share, width=0.9, color=colors[group])
        ax.set_title(
            f"{group}\nmean {s.mean() if len(s) else 0:.2f}, max {s.max() if len(s) else 0}",
            fontsize="small",
        )
        ax.set_xlim(-0.8, top + 0.8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("staleness τ (PS versions)", fontsize="small")
        ax.set_ylabel("share of applied gradients", fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    return fig


def group_names(summary: Summary) -> list[str]:
    """A short name per group: its worker class when it is exactly one class,
    ``id (class)`` for a lone worker, else the classes joined by ``+``."""
    cls = [w["worker_class"] for w in summary["workers"]]
    size = {c: cls.count(c) for c in cls}
    names = []
    for g in summary["groups"]:
        members = g["members"]
        kinds = list(dict.fromkeys(cls[m] for m in members))
        if len(members) == 1 and size[kinds[0]] > 1:
            names.append(f"{members[0]} ({kinds[0]})")
        else:
            names.append(
                "+".join(kinds)
                + ("" if sum(size[k] for k in kinds) == len(members) else f" ({len(members)})")
            )
    return names


def plot_update_rate(runs: list[RunData], path: Path) -> Path:
    """Save :func:`update_rate_figure` as *path*."""
    return save(update_rate_figure(runs), path, (Path(path).suffix.lstrip(".") or "png",))[0]


def update_rate_figure(runs: list[RunData]) -> Figure:
    """Model updates per simulated time unit of each group, one panel per group of
    runs (mean over seeds)."""
    pooled, colors = _pooled(runs), _colors(runs)
    unit = one_unit(time_unit(runs))
    fig, axes = _panels(
        len(pooled),
        f"Model updates per simulated {unit}, per group{_mean_note(runs)}\n{_title_head(runs)}",
        sharey=True,
    )
    for ax, (group, members) in zip(axes, pooled.items()):
        per_run = [
            [
                g["updates"] / r.summary["sim_time"] if r.summary["sim_time"] else 0.0
                for g in r.summary["groups"]
            ]
            for r in members
        ]
        if (
            len({len(x) for x in per_run}) > 1
        ):  # seeds formed different groups: show the first seed's
            per_run, members = per_run[:1], members[:1]
        rates = np.mean(per_run, axis=0)
        names = group_names(members[0].summary)
        ax.bar(np.arange(len(rates)), rates, color=colors[group])
        if len(rates) <= 24:
            ax.set_xticks(
                np.arange(len(rates)),
                names,
                rotation=45 if len(rates) > 4 else 0,
                ha="right" if len(rates) > 4 else "center",
                fontsize="x-small",
            )
        ax.set_title(f"{group}\ntotal {rates.sum():.3g} updates/{unit}", fontsize="small")
        ax.set_xlabel(f"group ({len(rates)})", fontsize="small")
        ax.set_ylabel(f"updates per simulated {unit}", fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    return fig


def plot_bias(runs: list[RunData], path: Path) -> Path:
    """Save :func:`bias_figure` as *path*."""
    return save(bias_figure(runs), path, (Path(path).suffix.lstrip(".") or "png",))[0]


def _bias_of(run: RunData) -> dict:
    """The bias.csv columns of *run* (the figure shows only runs with them)."""
    if run.bias is None:
        raise ValueError(f"{run.label}: the run has no per-label accuracy")
    return run.bias


def bias_figure(runs: list[RunData]) -> Figure:
    """Two panels against simulated time: the worst per-label test accuracy (one line per
    run), and each worker class's cumulative share of the model steps (the run's colour,
    one line style per worker class)."""
    colors, dashes = _colors(runs), _dashes(runs)
    fig = Figure(figsize=(11, 4.4), dpi=DPI, layout="constrained")
    worst, share = fig.subplots(1, 2)
    labelled = set()
    classes = list(
        dict.fromkeys(
            k[len("step_share_") :]
            for r in runs
            for k in _bias_of(r)
            if k.startswith("step_share_")
        )
    )
    for r in runs:
        bias = _bias_of(r)
        t = bias["sim_time"]
        label = None if r.group in labelled else r.group
        labelled.add(r.group)
        worst.plot(
            t,
            bias["worst_class_accuracy"],
            color=colors[r.group],
            ls=dashes[r.group],
            label=label,
            lw=1.5,
        )
        for j, name in enumerate(classes):
            if f"step_share_{name}" in bias:
                share.plot(
                    t,
                    bias[f"step_share_{name}"],
                    color=colors[r.group],
                    ls=LINESTYLES[j % len(LINESTYLES)],
                    lw=1.3,
                    label=f"{r.group}: {name}" if len(runs) <= 4 else None,
                )
    worst.set_ylabel("worst per-label test accuracy")
    share.set_ylabel("cumulative share of model steps")
    for ax in (worst, share):
        ax.set_xlabel(AXIS_LABEL["sim_time"].format(unit=time_unit(runs)))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(True, alpha=0.3)
    worst.legend(fontsize="small", loc="best")
    if len(runs) <= 4:
        share.legend(fontsize="x-small", loc="best")
    else:  # colour: the run (left panel's legend); line style: the worker class
        from matplotlib.lines import Line2D

        share.legend(
            handles=[
                Line2D([], [], color="0.3", ls=LINESTYLES[j % len(LINESTYLES)], label=name)
                for j, name in enumerate(classes)
            ],
            title="worker class",
            fontsize="x-small",
            title_fontsize="x-small",
            loc="best",
        )
    fig.suptitle(
        f"Bias: worst-label accuracy and each worker class's share of the model steps\n{_title_head(runs)}",
        fontsize="medium",
    )
    return fig


def label_holders(summary: Summary) -> list[list[str]]:
    """Per label, the worker classes holding training rows of it (class order), from
    ``data.label_histogram`` and ``workers`` of a summary (empty lists when absent)."""
    hist = summary.get("data", {}).get("label_histogram")
    if hist is None:
        return [[] for _ in summary.get("bias", {}).get("class_accuracy", [])]
    rows = class_rows(hist, [w["worker_class"] for w in summary["workers"]])
    return [[c for c, n in rows.items() if n[label] > 0] for label in range(len(hist[0]))]


def labels_figure(runs: list[RunData]) -> Figure:
    """Final test accuracy per label, one bar per run (the first of each group), each
    label annotated with the worker classes that hold it: which labels the rule neglects,
    and whose data they are."""
    runs = [r for r in _first_per_group(runs) if r.summary.get("bias", {}).get("class_accuracy")]
    colors = _colors(runs)
    accs = [r.summary["bias"]["class_accuracy"] for r in runs]
    n_labels = max(len(a) for a in accs)
    holders = label_holders(runs[0].summary)
    fig = Figure(figsize=(max(6.0, 0.75 * n_labels + 2.5), 4.4), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(runs)
    x = np.arange(n_labels)
    for k, (r, acc) in enumerate(zip(runs, accs, strict=True)):
        y = [np.nan if a is None else a for a in acc]
        ax.bar(x - 0.4 + (k + 0.5) * width, y, width, color=colors[r.group], label=r.group)
    ax.set_xticks(
        x, [f"{i}\n{', '.join(h) if h else '-'}" for i, h in enumerate(holders)], fontsize="x-small"
    )
    ax.set_xlabel("label, and the worker classes whose training data holds it")
    ax.set_ylabel("final test accuracy of the label")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(0, 1.05)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"Accuracy per label\n{_title_head(runs)}", fontsize="medium")
    return fig


def _consensus(r: RunData) -> tuple[np.ndarray, np.ndarray] | None:
    """(sim_time, consensus distance) per evaluation of a run whose workers hold their own
    models, or None."""
    values = r.summary.get("consensus_distance", {}).get("per_evaluation")
    if not values or len(values) != len(r.curve["sim_time"]):
        return None
    return r.curve["sim_time"], np.asarray(values, dtype=float)


def consensus_figure(runs: list[RunData]) -> Figure:
    """The consensus distance (mean over workers of ‖w_i − w̄‖²) against simulated time,
    one line per run whose workers hold their own models (rules without a PS)."""
    colors, dashes = _colors(runs), _dashes(runs)
    fig = Figure(figsize=(7.5, 4.4), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    for r in runs:
        found = _consensus(r)
        if found is not None:
            ax.plot(*found, color=colors[r.group], ls=dashes[r.group], lw=1.5, label=r.label)
    ax.set_yscale("symlog", linthresh=1e-8)
    ax.set_xlabel(AXIS_LABEL["sim_time"].format(unit=time_unit(runs)))
    ax.set_ylabel("consensus distance (mean ‖w_i − w̄‖²)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.suptitle(f"How far apart the workers' models are\n{_title_head(runs)}", fontsize="medium")
    return fig
