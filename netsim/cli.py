"""netsim command line: run, compare, sweep, plot, report and validate scenario files."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from .config.scenario import Scenario, load_scenario
from .errors import ScenarioError
from .results.render import compare_table, live_view, plain_line
from .results.runfolder import write_compare, write_run
from .rules import RULES
from .sim.engine import prepare, simulate
from .workload.datasets import DataNotFoundError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Emulate parameter-server SGD (SSGD, ASGD, Group SGD, ...) in heterogeneous clusters.")
out_console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

ScenarioArg = Annotated[Path, typer.Argument(help="Scenario TOML file.")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Override a scenario key: KEY=VALUE (dotted path).")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="Override run.seed.")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", help="Output folder (default: runs/<scenario>-<algorithm>).")]
LiveOpt = Annotated[bool, typer.Option("--live/--no-live", help="Live table (only on a terminal).")]
DataOpt = Annotated[Optional[Path], typer.Option("--data-dir", help="Data directory (else data.dir, else $NETSIM_DATA_DIR).")]
PlotsOpt = Annotated[bool, typer.Option("--plots", help="Also draw the figures (PNG) into OUT/plots.")]
WindowOpt = Annotated[Optional[str], typer.Option("--window", help="Timeline window START,END in simulated seconds.")]


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit with *code*."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load(path: Path, sets, seed, data_dir, algorithm=None) -> Scenario:
    try:
        return load_scenario(path, sets or [], seed=seed, algorithm=algorithm,
                             data_dir=str(data_dir) if data_dir else None)
    except ScenarioError as exc:
        fail(str(exc))


class Progress:
    """Progress callback for the engine: a rich Live table (≤ 10 refreshes per
    wall second) on a terminal, else a plain line per tenth of the horizon."""

    def __init__(self, live: Live | None, label: str | None = None):
        self.live = live
        self.label = label
        self.last = 0.0
        self.next_mark = 0.1

    def snapshot(self, sim) -> dict:
        snap = sim.snapshot()
        if self.label:
            snap["algorithm"] = self.label
        return snap

    def __call__(self, sim) -> None:
        if self.live is not None:
            now = time.perf_counter()
            if now - self.last >= 0.1:
                self.last = now
                self.live.update(live_view(self.snapshot(sim)), refresh=True)
        elif sim.env.now >= self.next_mark * sim.scenario.run.until - 1e-9:
            while self.next_mark * sim.scenario.run.until <= sim.env.now + 1e-9:
                self.next_mark += 0.1
            out_console.print(plain_line(self.snapshot(sim)), highlight=False, soft_wrap=True, markup=False)


def execute(scenario: Scenario, algorithm: str, out: Path, live: bool, prepared=None, label: str | None = None) -> dict:
    """Run one algorithm with progress output and write its folder."""
    interactive = live and out_console.is_terminal
    try:
        if interactive:
            with Live(console=out_console, auto_refresh=False, transient=True) as display:
                result = simulate(scenario, algorithm, prepared=prepared, progress=Progress(display, label))
        else:
            result = simulate(scenario, algorithm, prepared=prepared, progress=Progress(None, label))
    except DataNotFoundError as exc:
        fail(f"{scenario.path}: data.dir: {exc}")
    except ScenarioError as exc:
        fail(str(exc))
    summary = write_run(result, out)
    if result.status != "ok":
        err_console.print(f"[bold red]{escape(algorithm)}:[/] {escape(result.message)}; files so far kept in {escape(str(out))}",
                          highlight=False)
    return summary


def prepared_data(scenario: Scenario):
    try:
        return prepare(scenario)
    except DataNotFoundError as exc:
        fail(f"{scenario.path}: data.dir: {exc}")
    except ScenarioError as exc:
        fail(str(exc))


@app.command()
def run(scenario: ScenarioArg,
        algorithm: Annotated[Optional[str], typer.Option("--algorithm", "-a", help=f"Rule: {', '.join(RULES)}.")] = None,
        set_: SetOpt = None, seed: SeedOpt = None, out: OutOpt = None, live: LiveOpt = True,
        data_dir: DataOpt = None) -> None:
    """Run one scenario with one update rule; write summary.json, curve.csv, updates.csv."""
    sc = load(scenario, set_, seed, data_dir, algorithm)
    out = out or Path("runs") / f"{sc.name}-{sc.run.algorithm}"
    summary = execute(sc, sc.run.algorithm, out, live, prepared_data(sc))
    out_console.print(compare_table([summary], title=f"{sc.name} (seed {sc.run.seed})"))
    out_console.print(f"wrote {out}/summary.json, curve.csv, updates.csv", highlight=False)
    if summary["status"] != "ok":
        raise typer.Exit(1)


@app.command()
def compare(scenario: ScenarioArg,
            algorithms: Annotated[str, typer.Option("--algorithms", help="Comma-separated rules, e.g. ssgd,asgd,gsgd.")] = "",
            groupings: Annotated[str, typer.Option("--groupings", help="GSGD with each grouping, e.g. auto,hand,equal:4,kmeans:2.")] = "",
            weightings: Annotated[str, typer.Option("--weightings", help="GSGD with each group weighting, e.g. none,inverse_rate,fedat.")] = "",
            set_: SetOpt = None, seed: SeedOpt = None, out: OutOpt = None, live: LiveOpt = True,
            data_dir: DataOpt = None, plots: PlotsOpt = False, window: WindowOpt = None) -> None:
    """Run several rules on the same shards, initial model and time draws; print one table."""
    window_range = parse_window_opt(window)
    sc = load(scenario, set_, seed, data_dir)
    grouping_list = [g.strip() for g in groupings.split(",") if g.strip()]
    weighting_list = [g.strip() for g in weightings.split(",") if g.strip()]
    names = [a.strip() for a in algorithms.split(",") if a.strip()] or (
        [] if grouping_list or weighting_list else list(sc.rules))
    for name in names:
        if name not in sc.rules:
            fail(f"{sc.path}: --algorithms: {name!r} has no [algorithms.{name}] table "
                 f"(configured: {', '.join(sc.rules)}; known rules: {', '.join(RULES)})")
    if (grouping_list or weighting_list) and "gsgd" not in sc.rules:
        fail(f"{sc.path}: --{'groupings' if grouping_list else 'weightings'}: needs an [algorithms.gsgd] table")
    variants = [(name, name, sc.with_algorithm(name)) for name in names]
    for g in grouping_list:
        variant = load(scenario, (set_ or []) + [f'algorithms.gsgd.grouping="{g}"'], seed, data_dir, "gsgd")
        variants.append((f"gsgd[{g}]", "gsgd-" + g.replace(":", "-"), variant))
    for g in weighting_list:
        variant = load(scenario, (set_ or []) + [f'algorithms.gsgd.group_weighting="{g}"'], seed, data_dir, "gsgd")
        variants.append((f"gsgd[{g}]", f"gsgd-{g}", variant))
    out = out or Path("runs") / f"{sc.name}-compare"
    prepared = prepared_data(sc)
    summaries = []
    for label, folder, variant in variants:
        summary = execute(variant, variant.run.algorithm, out / folder, live, prepared, label)
        summary["label"] = label
        summaries.append(summary)
        write_compare(summaries, out)
    out_console.print(compare_table(summaries, title=f"{sc.name}: seed {sc.run.seed}, T = {sc.run.until:g} s"))
    out_console.print(f"wrote {out}/compare.json and one folder per algorithm", highlight=False)
    if plots:
        draw([out], None, window_range)


def parse_window_opt(text: str | None):
    """``--window START,END`` → (start, end) s, or None; one-line error, exit 2."""
    if text is None:
        return None
    from .results.timeline import parse_window
    try:
        return parse_window(text)
    except ValueError as exc:
        fail(str(exc))


def draw(folders: list[Path], out: Path | None, window) -> list[Path]:
    """Draw every figure of *folders*; print where they went."""
    from .results.plots import plot_folders
    from .results.runfolder import FolderError
    try:
        paths = plot_folders(folders, out, window)
    except FolderError as exc:
        fail(str(exc))
    folder = paths[0].parent if paths else out
    out_console.print(f"wrote {len(paths)} PNGs to {folder}: {', '.join(p.name for p in paths)}", highlight=False)
    return paths


FoldersArg = Annotated[list[Path], typer.Argument(help="Run, compare or sweep folders.")]


@app.command()
def plot(folders: FoldersArg,
         out: Annotated[Optional[Path], typer.Option("--out", help="Folder for the PNGs (default: FOLDER/plots).")] = None,
         window: WindowOpt = None) -> None:
    """Draw loss/accuracy curves, worker timeline, staleness histogram and update rates as PNGs."""
    draw(folders, out, parse_window_opt(window))


@app.command()
def report(folder: Annotated[Path, typer.Argument(help="Run, compare or sweep folder.")],
           format_: Annotated[str, typer.Option("--format", help="md (PNG files beside it) or html (one self-contained file).")] = "md",
           out: Annotated[Optional[Path], typer.Option("--out", help="Report file (default: FOLDER/report.md|html).")] = None,
           window: WindowOpt = None) -> None:
    """Write a readable-on-its-own report: tables and figures of a run, compare or sweep folder."""
    from .results.report import write_report
    from .results.runfolder import FolderError
    window_range = parse_window_opt(window)
    try:
        path = write_report(folder, fmt=format_, out=out, window=window_range)
    except (FolderError, ValueError) as exc:
        fail(str(exc))
    out_console.print(f"wrote {path} (figures in {folder / 'plots'})", highlight=False)


class SweepProgress:
    """``on_done`` callback of a sweep: a rich progress bar (runs done / total, ETA)
    on a terminal, else one plain line per finished run."""

    def __init__(self, progress, total: int):
        self.progress = progress
        self.task = progress.add_task("sweep", total=total) if progress is not None else None
        self.start = time.perf_counter()
        self.first = None

    def __call__(self, done: int, total: int, folder: str, summary, error) -> None:
        if self.first is None:
            self.first = done - 1  # runs already finished (resume): not counted in the ETA
            if self.progress is not None:
                self.progress.reset(self.task, completed=self.first)
        status = f"{type(error).__name__}" if error is not None else summary["status"]
        if self.progress is not None:
            self.progress.update(self.task, completed=done, description=f"sweep ({folder} {status})")
            return
        elapsed = time.perf_counter() - self.start
        eta = elapsed / (done - self.first) * (total - done)
        out_console.print(f"sweep: {done}/{total} runs done ({folder} {status}), elapsed {elapsed:.0f} s, "
                          f"eta {eta:.0f} s", highlight=False)


def sweep_table(header: list[str], rows: list[list[str]], title: str) -> Table:
    table = Table(title=title)
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


@app.command()
def sweep(scenario: ScenarioArg,
          grid: Annotated[Optional[list[str]], typer.Option("--grid", help="KEY=V1,V2,... (TOML values; see README).")] = None,
          seeds: Annotated[int, typer.Option("--seeds", help="Seeds per point: run.seed, run.seed+1, ...")] = 1,
          set_: SetOpt = None, out: Annotated[Optional[Path], typer.Option("--out", help="Sweep folder (default: runs/<scenario>-sweep).")] = None,
          workers: Annotated[Optional[int], typer.Option("--workers", help="Local processes (default: CPUs; 1: this process).")] = None,
          scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Dask scheduler address (tcp://host:8786).")] = None,
          resume: Annotated[bool, typer.Option("--resume", help="Skip points whose folder holds a summary.json.")] = False,
          live: LiveOpt = True, data_dir: DataOpt = None, plots: PlotsOpt = False) -> None:
    """Run the cartesian product of --grid values × --seeds, one folder per run; write sweep.csv and mean/CI tables."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from .results.tables import aggregate_rows
    from .sweeps.executors import ExecutorError
    from .sweeps.runner import SweepError, plan_sweep, run_sweep
    if workers is not None and workers < 1:
        fail(f"--workers: {workers!r} is not allowed (must be >= 1)")
    try:
        plan = plan_sweep(scenario, grid or [], seeds=seeds, sets=set_ or [],
                          data_dir=str(data_dir) if data_dir else None)
    except ScenarioError as exc:
        fail(str(exc))
    except DataNotFoundError as exc:
        fail(f"{scenario}: data.dir: {exc}")
    out = out or Path("runs") / f"{plan.name}-sweep"
    where = f"Dask scheduler {scheduler}" if scheduler else f"{workers or 'all'} local worker(s)"
    out_console.print(f"sweep {plan.name}: {len(plan.tasks)} run(s) into {out} on {where}", highlight=False)
    bar = None
    if live and out_console.is_terminal:
        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("eta"), TimeRemainingColumn(), console=out_console, transient=True)
    try:
        if bar is not None:
            with bar:
                outcome = run_sweep(plan, out, workers=workers, scheduler=scheduler, resume=resume,
                                    on_done=SweepProgress(bar, len(plan.tasks)))
        else:
            outcome = run_sweep(plan, out, workers=workers, scheduler=scheduler, resume=resume,
                                on_done=SweepProgress(None, len(plan.tasks)))
    except (SweepError, ExecutorError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        err_console.print(f"interrupted: finished runs are kept in {out}; run again with --resume to finish the rest",
                          highlight=False)
        raise typer.Exit(130)
    keys = [k for k in plan.keys if k != "run.seed"]
    out_console.print(sweep_table(*aggregate_rows(outcome.table, keys), title=f"{plan.name}: mean ± 95 % CI over seeds"))
    out_console.print(f"{outcome.executed} runs executed, {outcome.skipped} already finished; "
                      f"wrote {out}/sweep.csv, sweep_summary.csv", highlight=False)
    if plots and outcome.rows:
        draw([out], None, None)
    for folder, message in outcome.failures:
        err_console.print(f"[bold red]{escape(str(folder))}:[/] {escape(message)}", highlight=False, soft_wrap=True)
    if outcome.failures:
        raise typer.Exit(1)


@app.command()
def group(scenario: ScenarioArg, set_: SetOpt = None, seed: SeedOpt = None,
          rounds: Annotated[Optional[int], typer.Option("--rounds", help="Probe rounds (default: probe_rounds).")] = None,
          ) -> None:
    """Measure the workers, cluster them, and rank candidate groupings with the advisor."""
    from .sim.engine import advise
    sc = load(scenario, set_, seed, None)
    if rounds is not None and rounds < 1:
        fail(f"--rounds: {rounds} is not allowed (>= 1)")
    info = advise(sc, rounds)
    m, chosen = info["measurement"], info["grouping"]
    group_of = {w: k for k, g in enumerate(chosen.groups) for w in g}
    classes = [wc.name for wc in sc.workers for _ in range(wc.count)]
    hosts = list(sc.network.worker_hosts) if sc.network else [""] * sc.n_workers
    table = Table(title=f"{sc.name}: measured over {m.iteration.shape[1]} probe rounds "
                        f"({m.duration:.4g} s of simulated time)")
    for col in ("worker", "class", "host", "iteration (s)", "compute (s)", "comm (s)", "RTT (ms)", "group"):
        table.add_column(col, justify="left" if col in ("class", "host") else "right")
    for w in range(sc.n_workers):
        table.add_row(str(w), classes[w], str(hosts[w]), f"{m.iteration[w].mean():.4g}",
                      f"{m.compute[w].mean():.4g}", f"{m.comm[w].mean():.4g}", f"{m.rtt[w] * 1e3:.4g}",
                      str(group_of[w]))
    out_console.print(table)
    auto = info["auto"]
    crit = Table(title="silhouette per K (auto)")
    crit.add_column("K", justify="right")
    crit.add_column("silhouette", justify="right")
    for k, v in auto.criterion.items():
        crit.add_row(str(k), f"{v:.4f}" + ("  ←" if k == auto.k else ""))
    out_console.print(crit)
    out_console.print(f"chosen ({chosen.method}): K = {chosen.k}, groups {[list(g) for g in chosen.groups]} — "
                      f"{chosen.reason}", highlight=False, soft_wrap=True)
    ranking = Table(title="advisor ranking (predicted; best first)")
    for col in ("grouping", "K", "updates/s", "mean staleness", "progress/s", "groups"):
        ranking.add_column(col, justify="left" if col in ("grouping", "groups") else "right")
    for p in info["ranking"]:
        ranking.add_row(p.name, str(len(p.groups)), f"{p.update_rate:.4g}", f"{p.mean_staleness:.3g}",
                        f"{p.progress:.4g}", _short_groups(p.groups))
    out_console.print(ranking)


def _short_groups(groups, limit: int = 60) -> str:
    text = " ".join("[" + ",".join(map(str, g)) + "]" for g in groups)
    return text if len(text) <= limit else text[:limit - 1] + "…"


topology_app = typer.Typer(no_args_is_help=True, help="Inspect network topologies.")
app.add_typer(topology_app, name="topology")


@topology_app.command("list")
def topology_list() -> None:
    """List the topology presets (topologies/*.toml)."""
    from .config.network_plan import REPO_TOPOLOGIES
    from .net.topology_io import list_presets
    seen = {}
    for directory in (Path.cwd() / "topologies", REPO_TOPOLOGIES):
        if directory.is_dir():
            for name in list_presets(str(directory)):
                seen.setdefault(name, directory / f"{name}.toml")
    table = Table(title="topology presets")
    table.add_column("name")
    table.add_column("file")
    for name, path in sorted(seen.items()):
        table.add_row(name, str(path))
    out_console.print(table)


@topology_app.command("show")
def topology_show(name: Annotated[str, typer.Argument(
        help="Preset name, .toml/.graphml file, or topohub:KEY (e.g. topohub:topozoo/Abilene, topohub:sndlib/polska).")]) -> None:
    """Hosts, switches, links, diameter (hops and latency) and bisection bandwidth."""
    from .config.network_plan import load_named_topology
    from .net.topology import TopologyError
    from .net.topology_stats import describe
    try:
        graph = load_named_topology(name, Path.cwd())
    except (TopologyError, FileNotFoundError) as exc:
        fail(f"{name}: {exc}")
    info = describe(graph)
    table = Table(title=f"topology {name}", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    lat = info["diameter_latency_s"]
    bis = info["bisection_bandwidth_bps"]
    rows = [("hosts", info["hosts"]), ("switches", info["switches"]), ("links", info["links"]),
            ("node roles", ", ".join(f"{r} {n}" for r, n in info["roles"].items())),
            ("connected", info["connected"]), ("diameter (hops)", info["diameter_hops"]),
            ("diameter (latency)", "-" if lat is None else f"{lat * 1e3:.6g} ms"),
            ("bisection bandwidth", "-" if bis is None else f"{bis / 1e9:.6g} Gbit/s")]
    for key, value in rows:
        table.add_row(key, str(value))
    out_console.print(table)


@app.command()
def validate(scenario: ScenarioArg, set_: SetOpt = None) -> None:
    """Check a scenario file without running it."""
    sc = load(scenario, set_, None, None)
    out_console.print(f"{sc.path}: ok — {sc.n_workers} workers in {len(sc.workers)} classes, "
                      f"data {sc.data.source}, model {sc.model.name}, algorithms {', '.join(sc.rules)}",
                      highlight=False)


if __name__ == "__main__":
    app()
