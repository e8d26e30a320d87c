"""netsim command line: run, compare and validate scenario files."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from netsim.datasets import DataNotFoundError
from netsim.engine import prepare, simulate
from netsim.errors import ScenarioError
from netsim.report import compare_table, live_view, plain_line, write_compare, write_run
from netsim.rules import RULES
from netsim.scenario import Scenario, load_scenario

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


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit with *code*."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
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

    def __init__(self, live: Live | None):
        self.live = live
        self.last = 0.0
        self.next_mark = 0.1

    def __call__(self, sim) -> None:
        if self.live is not None:
            now = time.perf_counter()
            if now - self.last >= 0.1:
                self.last = now
                self.live.update(live_view(sim.snapshot()), refresh=True)
        elif sim.env.now >= self.next_mark * sim.scenario.run.until:
            self.next_mark += 0.1
            out_console.print(plain_line(sim.snapshot()), highlight=False, soft_wrap=True)


def execute(scenario: Scenario, algorithm: str, out: Path, live: bool, prepared=None) -> dict:
    """Run one algorithm with progress output and write its folder."""
    interactive = live and out_console.is_terminal
    try:
        if interactive:
            with Live(console=out_console, auto_refresh=False, transient=True) as display:
                result = simulate(scenario, algorithm, prepared=prepared, progress=Progress(display))
        else:
            result = simulate(scenario, algorithm, prepared=prepared, progress=Progress(None))
    except DataNotFoundError as exc:
        fail(f"{scenario.path}: data.dir: {exc}")
    summary = write_run(result, out)
    if result.status != "ok":
        err_console.print(f"[bold red]{algorithm}:[/] {result.message}; files so far kept in {out}", highlight=False)
    return summary


def prepared_data(scenario: Scenario):
    try:
        return prepare(scenario)
    except DataNotFoundError as exc:
        fail(f"{scenario.path}: data.dir: {exc}")


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
            set_: SetOpt = None, seed: SeedOpt = None, out: OutOpt = None, live: LiveOpt = True,
            data_dir: DataOpt = None) -> None:
    """Run several rules on the same shards, initial model and time draws; print one table."""
    sc = load(scenario, set_, seed, data_dir)
    names = [a.strip() for a in algorithms.split(",") if a.strip()] or list(sc.rules)
    for name in names:
        if name not in sc.rules:
            fail(f"{sc.path}: --algorithms: {name!r} has no [algorithms.{name}] table "
                 f"(configured: {', '.join(sc.rules)}; known rules: {', '.join(RULES)})")
    out = out or Path("runs") / f"{sc.name}-compare"
    prepared = prepared_data(sc)
    summaries = []
    for name in names:
        summaries.append(execute(sc.with_algorithm(name), name, out / name, live, prepared))
        write_compare(summaries, out)
    out_console.print(compare_table(summaries, title=f"{sc.name}: seed {sc.run.seed}, T = {sc.run.until:g} s"))
    out_console.print(f"wrote {out}/compare.json and one folder per algorithm", highlight=False)


topology_app = typer.Typer(no_args_is_help=True, help="Inspect network topologies.")
app.add_typer(topology_app, name="topology")


@topology_app.command("list")
def topology_list() -> None:
    """List the topology presets (topologies/*.toml)."""
    from netsim.netplan import REPO_TOPOLOGIES
    from netsim.topoio import list_presets
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
    from netsim.netplan import load_named_topology
    from netsim.topology import TopologyError
    from netsim.topostats import describe
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
