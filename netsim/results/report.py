"""A report of a run, compare or sweep folder: Markdown (PNG links) or one self-contained HTML file."""

from __future__ import annotations

import base64
import html
import json
import os
from importlib import metadata
from pathlib import Path

from ..config.grid import SEED_KEY
from ..sim.summary import Summary
from .atomic import written
from .figset import one_unit
from .plots import group_names, plot_runs
from .runfolder import FolderError, RunData, find_runs
from .tables import mean_ci, mean_ci_rows, run_rows, sweep_rows
from .verdict import verdict

__all__ = ["write_report", "report_blocks", "render_markdown", "render_html", "FORMATS"]

FORMATS = ("md", "html")
CAPTIONS = {
    "loss_vs_time.png": "Training loss against simulated time: which rule gets furthest in a given time.",
    "loss_vs_updates.png": "Training loss against model updates (log scale): progress per update, staleness aside.",
    "accuracy_vs_time.png": "Test accuracy against simulated time.",
    "accuracy_vs_updates.png": "Test accuracy against model updates (log scale).",
    "timeline.png": "What each worker does over the window: compute, communicate, or wait for a model.",
    "staleness.png": "Staleness τ = v_apply − v_read of the applied gradients (share per value).",
    "update_rate.png": "Model updates per simulated second made by each group.",
}
MAX_GROUP_TABLES = 6


def _version() -> str:
    try:
        return metadata.version("netsim")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _kind(folder: Path) -> str:
    for name, kind in (
        ("summary.json", "run"),
        ("sweep.json", "sweep"),
        ("compare.json", "compare"),
    ):
        if (folder / name).is_file():
            return kind
    return "runs"


def report_blocks(
    folder: Path, runs: list[RunData], pngs: list[Path], target: float | None = None
) -> list[tuple]:
    """The report as blocks: ``("h1"|"h2"|"p", text)``, ``("table", header, rows)``,
    ``("img", path, caption)``; the verdict (:func:`netsim.results.verdict.verdict`, to
    *target* or the default) after the runs. Pure apart from reading ``sweep.json``."""
    kind, first = _kind(folder), runs[0].summary
    seeds = sorted({r.summary["seed"] for r in runs})
    blocks: list[tuple] = [
        ("h1", f"netsim report: {first['scenario']}"),
        (
            "p",
            f"{kind.capitalize()} folder `{folder}`: {len(runs)} run(s), {len(first['workers'])} workers, "
            f"seed(s) {', '.join(map(str, seeds))}, simulated horizon {first['sim_time']:g} "
            f"{first.get('time_unit', 's')}. "
            f"Written by netsim {_version()}; every figure and number below comes from the run files.",
        ),
    ]
    if kind == "sweep":
        plan = json.loads((folder / "sweep.json").read_text())
        keys = [a["key"] for a in plan["axes"] if a["key"] != SEED_KEY]
        rows = sweep_rows([(_folder_name(r), r.values, r.summary) for r in runs])
        axes_text = "; ".join(f"`{a['key']}` ∈ {len(a['values'])} values" for a in plan["axes"])
        blocks += [
            ("h2", "Mean and 95 % confidence interval over seeds"),
            (
                "p",
                f"Grid: {axes_text} ({len(plan['points'])} runs planned, {len(runs)} finished). "
                f"± is the Student-t 95 % half-width; `sweep.csv` has one row per run.",
            ),
            ("table", *mean_ci_rows(mean_ci(rows, keys), keys)),
        ]
    blocks += [
        ("h2", "Runs"),
        ("table", *run_rows([r.summary for r in runs], [r.label for r in runs])),
        *[("p", text) for text in run_notes(runs)],
        ("p", verdict(runs, target).replace("verdict:", "**Verdict**:", 1)),
    ]
    params = parameter_rows(runs)
    if params:
        blocks += [
            ("h2", "Parameters"),
            (
                "p",
                "The resolved scenario of the runs (each run folder's `scenario.toml`, overrides applied); "
                "a key whose value differs between runs lists the values.",
            ),
            ("table", ["key", "value"], params),
        ]
    served = [r for r in runs if "server" in r.summary]
    if served:
        blocks += [
            ("h2", "Server"),
            (
                "p",
                "A server that takes time (`[server]`, docs/SERVER.md): the share of the run it "
                "was busy, the jobs waiting on average, and per push served its wait in the "
                "queue and its service (time units).",
            ),
            ("table", *server_rows(served)),
        ]
    if kind != "sweep":
        for r in runs[:MAX_GROUP_TABLES]:
            blocks += [("h2", f"Groups of {r.label}"), ("table", *_group_rows(r.summary))]
    blocks.append(("h2", "Figures"))
    blocks += [("img", p, CAPTIONS.get(p.name, "")) for p in pngs]
    return blocks


def _folder_name(run: RunData) -> str:
    if run.path is None:
        raise ValueError(f"{run.label}: a sweep's run has a folder")
    return run.path.name


def server_rows(runs: list[RunData]) -> tuple[list[str], list[list[str]]]:
    """The ``server`` record of each of *runs* (all with one) as a table; with a receiving
    thread in any, its busy share and mean wait too ("-" for the runs without)."""
    header = ["run", "busy %", "mean queue", "mean wait", "mean service", "pushes", "sends"]
    receiving = any("receive_busy_pct" in r.summary["server"] for r in runs)
    if receiving:
        header += ["receiving busy %", "receive wait"]
    rows = []
    for r in runs:
        s = r.summary["server"]
        row = [
            r.label,
            f"{s['busy_pct']:.1f}",
            f"{s['mean_queue']:.3g}",
            f"{s['mean_wait']:.4g}",
            f"{s['mean_service']:.4g}",
            str(s["pushes_served"]),
            str(s["sends"]),
        ]
        if receiving:
            busy, wait = s.get("receive_busy_pct"), s.get("mean_receive_wait")
            row += ["-" if busy is None else f"{busy:.1f}", "-" if wait is None else f"{wait:.4g}"]
        rows.append(row)
    return header, rows


MAX_NOTES = 20
"""Runs whose status message or warning the report quotes (the rest are counted)."""


def run_notes(runs: list[RunData]) -> list[str]:
    """One line per run that did not end ok (its status and message) or ended with a
    ``warning`` (its loss ended above its start), the first :data:`MAX_NOTES`."""
    notes = []
    for r in runs:
        s = r.summary
        if s["status"] != "ok" and s.get("message"):
            notes.append(f"{r.label}: {s['status']}: {s['message']}")
        elif s.get("warning"):
            notes.append(f"{r.label}: {s['warning']}")
    more = len(notes) - MAX_NOTES
    return notes[:MAX_NOTES] + ([f"... and {more} more runs with a note"] if more > 0 else [])


def _flatten(node: object, prefix: str = "") -> dict:
    out = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        for i, v in enumerate(node):
            out.update(_flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = node
    return out


def _text(value: object, limit: int = 80) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parameter_rows(runs: list[RunData]) -> list[list[str]]:
    """``[key, value]`` rows of the runs' ``scenario.toml`` files (keys in file order;
    values that differ between runs joined with `` | ``; of the ``[algorithms.X]`` tables
    only those of the rules that ran); empty when no run has one."""
    import tomllib

    flats = []
    for r in runs:
        path = None if r.path is None else Path(r.path) / "scenario.toml"
        if path is not None and path.is_file():
            try:
                flats.append(_flatten(tomllib.loads(path.read_text(encoding="utf-8"))))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise FolderError(f"{path}: not a readable scenario ({exc})") from None
    if not flats:
        return []
    ran = {str(r.summary.get("algorithm", "")) for r in runs}
    keys = [
        k
        for k in dict.fromkeys(k for flat in flats for k in flat)
        if not k.startswith("algorithms.") or k.split(".")[1] in ran
    ]
    rows = []
    for key in keys:
        values = list(dict.fromkeys(_text(flat.get(key, "-")) for flat in flats))
        rows.append([key, values[0] if len(values) == 1 else " | ".join(values)])
    return rows


def _group_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    names, t = group_names(summary), summary["sim_time"] or 1.0
    per = f"updates / {one_unit(summary.get('time_unit', 's'))}"
    header = ["group", "workers", "members", "updates", per, "mean staleness"]
    rows = [
        [
            str(g["id"]),
            names[k],
            str(len(g["members"])),
            str(g["updates"]),
            f"{g['updates'] / t:.3g}",
            f"{g['mean_staleness']:.2f}",
        ]
        for k, g in enumerate(summary["groups"][:32])
    ]
    if len(summary["groups"]) > 32:
        rows.append([f"… {len(summary['groups']) - 32} more", "", "", "", "", ""])
    return header, rows


def render_markdown(blocks: list[tuple], base: Path) -> str:
    """Markdown text; images are linked relative to *base* (the report's folder)."""
    out = []
    for block in blocks:
        if block[0] in ("h1", "h2"):
            out.append(("# " if block[0] == "h1" else "## ") + block[1])
        elif block[0] == "p":
            out.append(block[1])
        elif block[0] == "table":
            header, rows = block[1], block[2]
            cells = [header, ["---"] + ["---:"] * (len(header) - 1)] + rows
            out.append(
                "\n".join(
                    "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells
                )
            )
        elif block[0] == "img":
            path = Path(block[1])
            link = Path(os.path.relpath(path.resolve(), Path(base).resolve())).as_posix()
            out.append(f"![{path.stem}]({link})" + (f"\n\n*{block[2]}*" if block[2] else ""))
    return "\n\n".join(out) + "\n"


STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}td,th{border:1px solid #ccc;padding:3px 8px;"
    "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}"
    "figure{margin:1.5em 0}figcaption{color:#555;font-style:italic}code{background:#f3f3f3}"
)


def render_html(blocks: list[tuple]) -> str:
    """One HTML file with every PNG embedded (base64), readable on its own."""
    esc = html.escape
    out = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(blocks[0][1])}</title>"
        f"<style>{STYLE}</style></head><body>"
    ]
    for block in blocks:
        if block[0] in ("h1", "h2"):
            out.append(f"<{block[0]}>{esc(block[1])}</{block[0]}>")
        elif block[0] == "p":
            parts = esc(block[1]).split("`")
            out.append(
                "<p>"
                + "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
                + "</p>"
            )
        elif block[0] == "table":
            head = "".join(f"<th>{esc(h)}</th>" for h in block[1])
            body = "".join(
                "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in block[2]
            )
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif block[0] == "img":
            data = base64.b64encode(Path(block[1]).read_bytes()).decode("ascii")
            out.append(
                f"<figure><img alt='{esc(Path(block[1]).stem)}' src='data:image/png;base64,{data}'>"
                f"<figcaption>{esc(block[2])}</figcaption></figure>"
            )
    out.append("</body></html>\n")
    return "\n".join(out)


def write_report(
    folder: str | Path,
    *,
    fmt: str = "md",
    out: str | Path | None = None,
    window: tuple[float, float] | None = None,
    target: float | None = None,
) -> Path:
    """Draw the figures into ``<report>_figures`` beside the report (so ``plots/``,
    drawn by ``netsim plot``, is never redrawn) and write ``folder/report.md`` (or
    ``report.html``, or *out*). Returns the report's path.

    Raises :class:`netsim.results.runfolder.FolderError` for a folder without runs and
    ValueError for an unknown *fmt*.
    """
    if fmt not in FORMATS:
        raise ValueError(f"--format: {fmt!r} is not allowed (allowed: {', '.join(FORMATS)})")
    folder = Path(folder)
    runs = find_runs(folder)
    path = Path(out) if out is not None else folder / f"report.{fmt}"
    pngs = plot_runs(runs, path.parent / f"{path.stem}_figures", window, target=target)
    blocks = report_blocks(folder, runs, pngs, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_markdown(blocks, path.parent) if fmt == "md" else render_html(blocks)
    return written(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
