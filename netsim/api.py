"""The notebook API: load, override, run, compare, sweep, plot and report in a few calls.

>>> import netsim
>>> sc = netsim.load("scenarios/quickstart.toml", {"run.until": 50})   # doctest: +SKIP
>>> cmp = netsim.compare(sc, ["ssgd", "asgd", "gsgd"])                   # doctest: +SKIP
>>> cmp.frame()             # one row per rule (pandas)                   # doctest: +SKIP
>>> cmp["gsgd"].curve_frame()                                             # doctest: +SKIP

Results convert to pandas DataFrames when pandas is installed
(``pip install 'netsim[pandas]'``); everything else works without it.
"""
from __future__ import annotations

import os
from pathlib import Path

from .config.grid import toml_value
from .config.scenario import Scenario, load_scenario
from .results.runfolder import (
    PHASES,
    RunData,
    find_runs,
    from_result,
    read_run,
    write_compare,
    write_run,
)
from .results.tables import summary_fields
from .sim.engine import prepare, simulate
from .sim.records import Result
from .sweeps.runner import SweepOutcome, plan_sweep, run_sweep

__all__ = ["load", "run", "compare", "sweep", "plot", "write_report", "open_run", "open_runs",
           "Run", "Comparison", "Sweep"]


def _frame(columns: dict):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("DataFrames need pandas: pip install 'netsim[pandas]'") from None
    return pd.DataFrame(columns)


def _overrides(overrides) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{key}={toml_value(value)}" for key, value in overrides.items()]
    return list(overrides)


class Run:
    """One run: ``summary`` (the summary.json dict), columns ``curve``, ``updates``
    and ``timeline`` (dicts of ndarrays), ``path`` (its folder or None) and, for a
    run made in this session, ``result`` (the :class:`netsim.metrics.Result`)."""

    def __init__(self, data: RunData, result: Result | None = None):
        self.data = data
        self.result = result

    summary = property(lambda self: self.data.summary)
    curve = property(lambda self: self.data.curve)
    updates = property(lambda self: self.data.updates)
    timeline = property(lambda self: self.data.timeline)
    path = property(lambda self: self.data.path)
    label = property(lambda self: self.data.label)

    def curve_frame(self):
        """DataFrame: update, sim_time (s), loss, test_accuracy — one row per evaluation."""
        return _frame(self.curve)

    def updates_frame(self):
        """DataFrame: version, sim_time (s), worker, group, staleness — one row per applied gradient."""
        return _frame(self.updates)

    def timeline_frame(self):
        """DataFrame: worker, phase (idle|comm|compute), start, end (s); empty without a timeline."""
        tl = self.timeline or {"worker": [], "phase": [], "start": [], "end": []}
        return _frame({**tl, "phase": [PHASES[p] for p in tl["phase"]]})

    def __repr__(self) -> str:
        s = self.summary
        return (f"<Run {s['scenario']} {s['algorithm']} seed={s['seed']}: {s['updates']} updates, "
                f"loss {s['final_loss']:.5f}, status {s['status']}>")


class Comparison(dict):
    """Runs by algorithm name (a dict), plus ``path`` and the written ``plots``."""

    def __init__(self, runs: dict[str, Run], path: Path | None = None, plots: list[Path] | None = None):
        super().__init__(runs)
        self.path = path
        self.plots = plots or []

    def frame(self):
        """DataFrame: one row per algorithm with the summary fields (as in sweep.csv)."""
        rows = [summary_fields(r.summary) for r in self.values()]
        return _frame({k: [row[k] for row in rows] for k in rows[0]})

    def curves_frame(self):
        """DataFrame of every curve, long form, with an ``algorithm`` column."""
        cols = {"algorithm": []}
        for name, r in self.items():
            cols["algorithm"] += [name] * len(r.curve["update"])
            for k, v in r.curve.items():
                cols.setdefault(k, []).extend(v.tolist())
        return _frame(cols)


class Sweep:
    """A finished (or partly finished) sweep: ``rows`` (sweep.csv), ``table``
    (mean/CI per point), ``executed``, ``skipped``, ``failures`` and ``path``."""

    def __init__(self, outcome: SweepOutcome):
        self.outcome = outcome
        self.path = outcome.out
        self.rows, self.table = outcome.rows, outcome.table
        self.executed, self.skipped, self.failures = outcome.executed, outcome.skipped, outcome.failures

    def frame(self):
        """DataFrame of sweep.csv: one row per run, swept values then summary fields."""
        return _frame({k: [row[k] for row in self.rows] for k in (self.rows[0] if self.rows else {})})

    def summary_frame(self):
        """DataFrame of sweep_summary.csv: mean and 95 % CI half-width per point."""
        return _frame({k: [row[k] for row in self.table] for k in (self.table[0] if self.table else {})})

    def runs(self) -> list[Run]:
        """Every finished run, read back from its folder, in grid order."""
        return [Run(d) for d in find_runs(self.path)]


def load(path: str | os.PathLike, overrides=None, *, seed: int | None = None, algorithm: str | None = None,
         data_dir: str | os.PathLike | None = None) -> Scenario:
    """Load and validate a scenario; *overrides* is ``{"run.until": 600}`` or
    ``["run.until=600"]`` (values are TOML, as with ``--set``). Raises ScenarioError."""
    return load_scenario(path, _overrides(overrides), seed=seed, algorithm=algorithm,
                         data_dir=str(data_dir) if data_dir is not None else None)


def run(scenario: Scenario | str | os.PathLike, algorithm: str | None = None, *, out=None, progress=None) -> Run:
    """Run one rule (default ``run.algorithm``); write its folder when *out* is given."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    result = simulate(sc, algorithm, progress=progress)
    if out is not None:
        write_run(result, out)
    return Run(from_result(result, Path(out) if out is not None else None), result)


def compare(scenario: Scenario | str | os.PathLike, algorithms=None, *, out=None, plots: bool = False,
            window: tuple[float, float] | None = None) -> Comparison:
    """Every rule in *algorithms* (default: all configured) on the same data, shards,
    initial model and time draws. With *out*: one folder per rule and compare.json;
    *plots* then also draws the figures into ``out/plots``."""
    if plots and out is None:
        raise ValueError("plots=True needs an out folder")
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    names = list(algorithms or sc.rules)
    prepared = prepare(sc)
    runs, summaries = {}, []
    for name in names:
        result = simulate(sc.with_algorithm(name), name, prepared=prepared)
        folder = Path(out) / name if out is not None else None
        if folder is not None:
            summaries.append(write_run(result, folder))
        runs[name] = Run(from_result(result, folder), result)
    if out is None:
        return Comparison(runs)
    write_compare(summaries, out)
    return Comparison(runs, Path(out), plot(out, window=window) if plots else [])


def sweep(scenario: str | os.PathLike, grid, *, out, seeds: int = 1, overrides=None, data_dir=None,
          workers: int | None = None, scheduler=None, resume: bool = False, on_done=None) -> Sweep:
    """Run the cartesian product of *grid* × *seeds* into *out* (see :mod:`netsim.sweeps`).

    *grid* is ``{"algorithms.gsgd.groups": [[["fast"], ["slow"]], [["fast", "slow"]]], "algorithm": ["ssgd", "gsgd"]}``
    or a list of ``"KEY=V1,V2"`` strings. *scheduler*: a Dask scheduler address or
    ``distributed.Client``; otherwise *workers* local processes. Every point is
    validated before anything runs (ScenarioError).
    """
    plan = plan_sweep(scenario, grid, seeds=seeds, sets=_overrides(overrides),
                      data_dir=str(data_dir) if data_dir is not None else None)
    return Sweep(run_sweep(plan, out, workers=workers, scheduler=scheduler, resume=resume, on_done=on_done))


def plot(*folders, out=None, window: tuple[float, float] | None = None) -> list[Path]:
    """Draw every figure for run, compare or sweep *folders* into *out* (default
    ``<folder>/plots``); return the PNG paths. Raises FolderError for a folder without runs."""
    from .results.plots import plot_folders  # matplotlib is imported only when drawing
    return plot_folders(folders, out, window)


def write_report(folder: str | os.PathLike, *, fmt: str = "md", out=None,
                 window: tuple[float, float] | None = None) -> Path:
    """Write ``folder/report.md`` (or ``.html``, self-contained) with tables and figures."""
    from .results.report import write_report as write
    return write(folder, fmt=fmt, out=out, window=window)


def open_run(folder: str | os.PathLike) -> Run:
    """Read a run folder back."""
    return Run(read_run(folder))


def open_runs(folder: str | os.PathLike) -> list[Run]:
    """Read every run of a run, compare or sweep folder back."""
    return [Run(d) for d in find_runs(folder)]
