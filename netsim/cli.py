"""netsim command line: run, compare, sweep, group, plot, report and validate scenario files.

Each command parses its options, calls one function of :mod:`netsim.api` and
renders the result with :mod:`netsim.results.render`; nothing else happens here.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from . import api
from .errors import ScenarioError, one_line
from .results import render

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
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace the results of another run already in --out.")]


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit with *code*."""
    err_console.print(f"[bold red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load(path: Path, sets, seed, data_dir, algorithm=None):
    try:
        return api.load(path, sets or [], seed=seed, algorithm=algorithm, data_dir=data_dir)
    except ScenarioError as exc:
        fail(str(exc))


class Progress:
    """Progress callback: a rich Live table (≤ 10 refreshes per wall second) on a
    terminal, else a plain line per tenth of the run."""

    def __init__(self, live: Live | None):
        self.live = live
        self.last = 0.0
        self.next_mark = 0.1

    def __call__(self, snap) -> None:
        if self.live is not None:
            now = time.perf_counter()
            if now - self.last >= 0.1:
                self.last = now
                self.live.update(render.live_view(snap), refresh=True)
        elif snap.fraction >= self.next_mark - 1e-9:
            self.next_mark = (int(snap.fraction * 10 + 1e-9) + 1) / 10
            out_console.print(render.plain_line(snap), highlight=False, soft_wrap=True, markup=False)


def with_progress(live: bool, call):
    """Run ``call(progress)`` under a live display on a terminal, else with plain lines."""
    if live and out_console.is_terminal:
        with Live(console=out_console, auto_refresh=False, transient=True) as display:
            return call(Progress(display))
    return call(Progress(None))


def check_out(out: Path) -> None:
    """Fail (exit 2) before simulating when *out* cannot hold the run's files."""
    from .results.runfolder import FolderError, check_writable
    try:
        check_writable(out)
    except FolderError as exc:
        fail(f"--out: {exc}")


def interrupted(stop, out) -> None:
    """One line for a run ended by Ctrl-C or SIGTERM, then exit status 130."""
    err_console.print(f"{escape(stop.result.label)}: {escape(stop.result.message)}; what it recorded is in "
                      f"{escape(str(out))} (status interrupted)", highlight=False, soft_wrap=True)
    raise typer.Exit(130)


def report_status(summary: dict, out: Path | None) -> None:
    if summary["status"] != "ok":
        where = f"; files so far kept in {out}" if out is not None else ""
        err_console.print(f"[bold red]{escape(summary['label'])}:[/] {escape(summary['message'])}{escape(where)}",
                          highlight=False)


@app.command()
def run(scenario: ScenarioArg,
        algorithm: Annotated[Optional[str], typer.Option("--algorithm", "-a", help=f"Rule: {', '.join(api.RULES)}.")] = None,
        set_: SetOpt = None, seed: SeedOpt = None, out: OutOpt = None, live: LiveOpt = True,
        data_dir: DataOpt = None, overwrite: OverwriteOpt = False) -> None:
    """Run one scenario with one update rule; write summary.json, curve.csv, updates.csv."""
    sc = load(scenario, set_, seed, data_dir, algorithm)
    out = out or Path("runs") / f"{sc.name}-{sc.run.algorithm}"
    check_out(out)
    try:
        result = with_progress(live, lambda progress: api.run(sc, out=out, progress=progress, overwrite=overwrite))
    except ScenarioError as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    except api.RunInterrupted as stop:
        interrupted(stop, out)
    except KeyboardInterrupt:
        fail("interrupted before the run started", 130)
    report_status(result.summary, out)
    out_console.print(render.compare_table([result.summary], title=f"{sc.name} (seed {sc.run.seed})"))
    out_console.print(f"wrote {out}/summary.json, curve.csv, updates.csv", highlight=False)
    raise typer.Exit(api.exit_status([result.status]))


def split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@app.command()
def compare(scenario: ScenarioArg,
            algorithms: Annotated[str, typer.Option("--algorithms", help="Comma-separated rules, e.g. ssgd,asgd,gsgd.")] = "",
            groupings: Annotated[str, typer.Option("--groupings", help="GSGD with each grouping, e.g. auto,hand,equal:4,kmeans:2.")] = "",
            weightings: Annotated[str, typer.Option("--weightings", help="GSGD with each group weighting, e.g. none,inverse_rate,fedat.")] = "",
            set_: SetOpt = None, seed: SeedOpt = None, out: OutOpt = None, live: LiveOpt = True,
            data_dir: DataOpt = None, plots: PlotsOpt = False, window: WindowOpt = None,
            overwrite: OverwriteOpt = False) -> None:
    """Run several rules on the same shards, initial model and time draws; print one table."""
    window_range = parse_window_opt(window)
    sc = load(scenario, set_, seed, data_dir)
    names = split(algorithms)
    for name in names:
        if name not in sc.rules:
            fail(f"{sc.path}: --algorithms: {name!r} has no [algorithms.{name}] table "
                 f"(configured: {', '.join(sc.rules)}; known rules: {', '.join(api.RULES)})")
    out = out or Path("runs") / f"{sc.name}-compare"
    check_out(out)
    try:
        api.variants(sc, names, split(groupings), split(weightings))
        cmp = with_progress(live, lambda progress: api.compare(
            sc, names, groupings=split(groupings), weightings=split(weightings), out=out, progress=progress,
            overwrite=overwrite,
            on_run=lambda label, r: report_status(r.summary, r.path)))
    except ScenarioError as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    except api.RunInterrupted as stop:
        interrupted(stop, out)
    except KeyboardInterrupt:
        fail("interrupted before the run started", 130)
    out_console.print(render.compare_table(cmp.summaries, title=f"{sc.name}: seed {sc.run.seed}, T = {sc.run.until:g}"))
    out_console.print(f"wrote {out}/compare.json and one folder per run", highlight=False)
    if plots:
        draw([out], None, window_range)
    raise typer.Exit(api.exit_status([r.status for r in cmp.values()]))


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
    from .results.runfolder import FolderError
    try:
        paths = api.plot(*folders, out=out, window=window)
    except FolderError as exc:
        fail(str(exc))
    except (OSError, KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:  # a malformed folder
        fail(f"{', '.join(map(str, folders))}: cannot plot ({type(exc).__name__}: {exc})")
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
    from .results.runfolder import FolderError
    window_range = parse_window_opt(window)
    try:
        path = api.write_report(folder, fmt=format_, out=out, window=window_range)
    except (FolderError, ValueError) as exc:
        fail(str(exc))
    except (OSError, KeyError, TypeError, IndexError, AttributeError) as exc:  # a malformed folder
        fail(f"{folder}: cannot write the report ({type(exc).__name__}: {exc})")
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
                self.progress.update(self.task, completed=self.first)
        status = f"{type(error).__name__}" if error is not None else summary["status"]
        if self.progress is not None:
            self.progress.update(self.task, completed=done, description=f"sweep ({folder} {status})")
            return
        elapsed = time.perf_counter() - self.start
        eta = elapsed / (done - self.first) * (total - done)
        out_console.print(f"sweep: {done}/{total} runs done ({folder} {status}), elapsed {elapsed:.0f} s, "
                          f"eta {eta:.0f} s", highlight=False)


@app.command()
def sweep(scenario: ScenarioArg,
          grid: Annotated[Optional[list[str]], typer.Option("--grid", help="KEY=V1,V2,... (TOML values; see README).")] = None,
          seeds: Annotated[int, typer.Option("--seeds", help="Seeds per point: run.seed, run.seed+1, ...")] = 1,
          set_: SetOpt = None, out: Annotated[Optional[Path], typer.Option("--out", help="Sweep folder (default: runs/<scenario>-sweep).")] = None,
          workers: Annotated[Optional[int], typer.Option("--workers", help="Local processes (default: CPUs; 1: this process).")] = None,
          scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Dask scheduler address (tcp://host:8786).")] = None,
          resume: Annotated[bool, typer.Option("--resume", help="Skip points whose folder holds a summary.json.")] = False,
          live: LiveOpt = True, data_dir: DataOpt = None, plots: PlotsOpt = False,
          overwrite: OverwriteOpt = False) -> None:
    """Run the cartesian product of --grid values × --seeds, one folder per run; write sweep.csv and mean/CI tables."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    from .sweeps.executors import ExecutorError
    from .sweeps.runner import SweepError, SweepFailed
    if workers is not None and workers < 1:
        fail(f"--workers: {workers!r} is not allowed (must be >= 1)")
    bar = None
    if live and out_console.is_terminal:
        bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=out_console, transient=True)
    state = {}

    def on_plan(plan, where):
        check_out(Path(where))
        where_text = f"Dask scheduler {scheduler}" if scheduler else f"{workers or 'all'} local worker(s)"
        out_console.print(f"sweep {plan.name}: {len(plan.tasks)} run(s) into {where} on {where_text}", highlight=False)
        state["out"] = where
        state["progress"] = SweepProgress(bar, len(plan.tasks))

    def go():
        return api.sweep(scenario, grid or [], out=out, seeds=seeds, overrides=set_ or [], data_dir=data_dir,
                         workers=workers, scheduler=scheduler, resume=resume, on_plan=on_plan,
                         on_done=lambda *args: state["progress"](*args), overwrite=overwrite)
    try:
        if bar is not None:
            with bar:
                outcome = go()
        else:
            outcome = go()
    except SweepFailed as exc:
        fail(str(exc), 1)
    except (ScenarioError, SweepError, ExecutorError) as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    except KeyboardInterrupt:
        err_console.print(f"interrupted: finished runs are kept in {state.get('out', out)}; run again with --resume "
                          "to finish the rest", highlight=False)
        raise typer.Exit(130)
    out_console.print(render.sweep_table(outcome.table, outcome.keys, f"{outcome.name}: mean ± 95 % CI over seeds"))
    out_console.print(f"{outcome.executed} runs executed, {outcome.skipped} already finished; "
                      f"wrote {outcome.path}/sweep.csv, sweep_summary.csv", highlight=False)
    if plots and outcome.rows:
        draw([outcome.path], None, None)
    for folder, message in outcome.failures:
        err_console.print(f"[bold red]{escape(str(folder))}:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(max(1 if outcome.failures else 0, api.exit_status([row["status"] for row in outcome.rows])))


@app.command()
def group(scenario: ScenarioArg, set_: SetOpt = None, seed: SeedOpt = None, data_dir: DataOpt = None,
          rounds: Annotated[Optional[int], typer.Option("--rounds", help="Probe rounds (default: probe_rounds).")] = None,
          lrs: Annotated[str, typer.Option("--lrs", help="η grid, comma-separated (default: 5 values ×3 apart around GSGD's η).")] = "",
          verify: Annotated[int, typer.Option("--verify", help="Run the top N candidates in full; print predicted vs emulated.")] = 0,
          budget: Annotated[Optional[float], typer.Option("--budget", help="Cap on the pilots' simulated seconds.")] = None,
          target: Annotated[Optional[float], typer.Option("--target", help="Target loss (default: run.target_loss, else from the pilots).")] = None,
          ) -> None:
    """Recommend the grouping and learning rate that reach a target loss first (pilot emulations)."""
    from .sim.recommend import RecommendError
    sc = load(scenario, set_, seed, data_dir)
    try:
        grid = [float(x) for x in lrs.split(",") if x.strip()] or None
    except ValueError:
        fail(f"--lrs: {lrs!r} is not a comma-separated list of numbers")
    if verify < 0:
        fail(f"--verify: {verify} is not allowed (>= 0)")
    try:
        rec = api.recommend(sc, lrs=grid, verify=verify, budget_s=budget, target=target, rounds=rounds)
    except RecommendError as exc:
        fail(f"{sc.path}: {exc}")
    except ScenarioError as exc:
        fail(str(exc))
    hosts = list(sc.network.worker_hosts) if sc.network else None
    for renderable in render.recommendation_tables(rec, sc.name, sc.worker_class_names(), hosts):
        out_console.print(renderable)


topology_app = typer.Typer(no_args_is_help=True, help="Inspect network topologies.")
app.add_typer(topology_app, name="topology")


@topology_app.command("list")
def topology_list() -> None:
    """List the topology presets (./topologies and those shipped with netsim)."""
    out_console.print(render.topology_list_table(api.topologies()))


@topology_app.command("show")
def topology_show(name: Annotated[str, typer.Argument(
        help="Preset name, .toml/.graphml file, or topohub:KEY (e.g. topohub:topozoo/Abilene, topohub:sndlib/polska).")]) -> None:
    """Hosts, switches, links, diameter (hops and latency) and bisection bandwidth."""
    from .net.topology import TopologyError
    try:
        info = api.topology(name)
    except (TopologyError, FileNotFoundError) as exc:
        fail(f"{name}: {exc}")
    out_console.print(render.topology_table(name, info))


@app.command()
def validate(scenario: ScenarioArg, set_: SetOpt = None, data_dir: DataOpt = None) -> None:
    """Check a scenario file without running it (MNIST/LIBSVM files are read and checked too)."""
    sc = load(scenario, set_, None, data_dir)
    from .sim.engine import check_data
    try:
        check_data(sc)
    except ScenarioError as exc:
        fail(str(exc))
    out_console.print(f"{sc.path}: ok — {sc.n_workers} workers in {len(sc.workers)} classes, "
                      f"data {sc.data.source}, model {sc.model.name}, algorithms {', '.join(sc.rules)}",
                      highlight=False)


if __name__ == "__main__":
    app()
