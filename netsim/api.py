"""The one front door: load, run, compare, sweep, group, plot and report in a few calls.

The command line is a thin layer over these functions: each ``netsim`` command
parses its options, calls one function here and renders what it returns.

>>> import netsim
>>> sc = netsim.load("scenarios/quickstart.toml", {"run.until": 50})   # doctest: +SKIP
>>> cmp = netsim.compare(sc, ["ssgd", "asgd"], groupings=["auto"])      # doctest: +SKIP
>>> cmp.frame()             # one row per run (pandas)                    # doctest: +SKIP
>>> cmp["gsgd[auto]"].curve_frame()                                       # doctest: +SKIP

Results convert to pandas DataFrames when pandas is installed
(``pip install 'netsim[pandas]'``); everything else works without it.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .config.grid import toml_value
from .config.network_plan import REPO_TOPOLOGIES, load_named_topology
from .config.scenario import MAX_GRADIENTS, Scenario, load_scenario
from .errors import ScenarioError
from .net.topology_io import list_presets
from .net.topology_stats import describe
from .results.runfolder import (
    PHASES,
    OutputError,
    RunData,
    RunWriter,
    claim,
    find_runs,
    from_result,
    read_run,
    write_compare,
)
from .results.tables import summary_fields
from .rules import RULES
from .sim.engine import RunInterrupted, Simulation, advise, prepare
from .sim.records import Result
from .sweeps.runner import SweepError, SweepFailed, SweepOutcome, plan_sweep, run_sweep

__all__ = ["RULES", "load", "run", "compare", "sweep", "group", "recommend", "plot", "write_report", "open_run", "open_runs",
           "topologies", "topology", "variants", "Run", "Comparison", "Sweep", "Variant",
           "RunInterrupted", "OutputError", "SweepError", "SweepFailed", "exit_status", "claim"]

EXIT_STATUS = {"ok": 0, "diverged": 1, "stalled": 1, "failed": 1, "interrupted": 130}
"""Process exit status for a run's status (README, "Exit status"); bad input is 2."""


def exit_status(statuses) -> int:
    """The exit status of a command whose runs ended with *statuses*: 130 when one was
    interrupted, else 1 when one did not end ``ok``, else 0.

    >>> exit_status(["ok", "ok"]), exit_status(["ok", "diverged"]), exit_status(["stalled", "interrupted"])
    (0, 1, 130)
    """
    codes = [EXIT_STATUS.get(s, 1) for s in statuses]
    return 130 if 130 in codes else max(codes, default=0)


@contextmanager
def _interruptible():
    """While a run goes, SIGTERM acts as Ctrl-C does (KeyboardInterrupt), so the run
    ends with status ``interrupted`` and its files written (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def _sheltered():
    """Ignore SIGINT and SIGTERM while the last files of an interrupted run are written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


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


def _scenario(scenario) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else load(scenario)


class Run:
    """One run: ``summary`` (the summary.json dict), columns ``curve``, ``updates``
    and ``timeline`` (dicts of ndarrays), ``label``, ``path`` (its folder or None)
    and, for a run made in this session, ``result`` (the :class:`netsim.sim.records.Result`)."""

    def __init__(self, data: RunData, result: Result | None = None):
        self.data = data
        self.result = result

    summary = property(lambda self: self.data.summary)
    curve = property(lambda self: self.data.curve)
    updates = property(lambda self: self.data.updates)
    timeline = property(lambda self: self.data.timeline)
    path = property(lambda self: self.data.path)
    label = property(lambda self: self.data.label)
    status = property(lambda self: self.data.summary["status"])

    def curve_frame(self):
        """DataFrame: update, sim_time (s), loss, test_accuracy — one row per evaluation."""
        return _frame(self.curve)

    def updates_frame(self):
        """DataFrame: version, sim_time (s), worker, group, staleness — one row per applied gradient."""
        return _frame(self.updates)

    def timeline_frame(self):
        """DataFrame: worker, phase (idle|comm|compute|down), start, end (s); empty without a timeline."""
        tl = self.timeline or {"worker": [], "phase": [], "start": [], "end": []}
        return _frame({**tl, "phase": [PHASES[p] for p in tl["phase"]]})

    def __repr__(self) -> str:
        s = self.summary
        loss = "-" if s["final_loss"] is None else f"{s['final_loss']:.5f}"
        return (f"<Run {s['scenario']} {self.label} seed={s['seed']}: {s['updates']} updates, "
                f"loss {loss}, status {s['status']}>")


class Comparison(dict):
    """Runs by label (``ssgd``, ``gsgd[auto]``, ...), plus ``path`` and the written ``plots``."""

    def __init__(self, runs: dict[str, Run], path: Path | None = None, plots: list[Path] | None = None):
        super().__init__(runs)
        self.path = path
        self.plots = plots or []

    @property
    def summaries(self) -> list[dict]:
        return [r.summary for r in self.values()]

    def frame(self):
        """DataFrame: one row per run with the summary fields (as in sweep.csv)."""
        rows = [summary_fields(r.summary) for r in self.values()]
        return _frame({k: [row[k] for row in rows] for k in rows[0]})

    def curves_frame(self):
        """DataFrame of every curve, long form, with a ``label`` column."""
        cols = {"label": []}
        for name, r in self.items():
            cols["label"] += [name] * len(r.curve["update"])
            for k, v in r.curve.items():
                cols.setdefault(k, []).extend(v.tolist())
        return _frame(cols)


class Sweep:
    """A finished (or partly finished) sweep: ``rows`` (sweep.csv), ``table``
    (mean/CI per point), ``executed``, ``skipped``, ``failures``, ``keys`` and ``path``."""

    def __init__(self, outcome: SweepOutcome):
        self.outcome = outcome
        self.path = outcome.out
        self.rows, self.table = outcome.rows, outcome.table
        self.executed, self.skipped, self.failures = outcome.executed, outcome.skipped, outcome.failures
        self.name = outcome.plan.name
        self.keys = [k for k in outcome.plan.keys if k != "run.seed"]

    def frame(self):
        """DataFrame of sweep.csv: one row per run, swept values then summary fields."""
        return _frame({k: [row[k] for row in self.rows] for k in (self.rows[0] if self.rows else {})})

    def summary_frame(self):
        """DataFrame of sweep_summary.csv: mean and 95 % CI half-width per point."""
        return _frame({k: [row[k] for row in self.table] for k in (self.table[0] if self.table else {})})

    def runs(self) -> list[Run]:
        """Every finished run, read back from its folder, in grid order."""
        return [Run(d) for d in find_runs(self.path)]


@dataclass(frozen=True)
class Variant:
    """One run of a comparison: its ``label``, ``folder`` name, scenario and rule."""
    label: str
    folder: str
    scenario: Scenario
    algorithm: str


def load(path: str | os.PathLike, overrides=None, *, seed: int | None = None, algorithm: str | None = None,
         data_dir: str | os.PathLike | None = None) -> Scenario:
    """Load and validate a scenario; *overrides* is ``{"run.until": 600}`` or
    ``["run.until=600"]`` (values are TOML, as with ``--set``). Raises ScenarioError."""
    return load_scenario(path, _overrides(overrides), seed=seed, algorithm=algorithm,
                         data_dir=str(data_dir) if data_dir is not None else None)


def run(scenario: Scenario | str | os.PathLike, algorithm: str | None = None, *, out=None, progress=None,
        label: str | None = None, prepared=None, overwrite: bool = False,
        progress_every: float | None = None) -> Run:
    """Run one rule (default ``run.algorithm``); write its folder when *out* is given.

    *progress* is called with a :class:`netsim.sim.records.Snapshot` as the run goes.
    A run that ends diverged or stalled keeps its status in ``Run.status``; nothing is raised.

    With *out*, the folder is claimed first (OutputError, code 2, when another
    process writes there, or when it holds results of another run and *overwrite*
    is false; with *overwrite* they are removed), complete rows are written as the
    run goes and ``summary.json`` atomically at the end (OutputError, code 1, on a
    full or read-only disk; complete rows stay). Ctrl-C or SIGTERM end the run: its
    files are written with status ``interrupted`` and RunInterrupted (a
    KeyboardInterrupt with ``.result`` and ``.summary``) is raised.
    """
    sc = _scenario(scenario)
    sim = Simulation(sc, algorithm, prepared if prepared is not None else prepare(sc), label)
    if out is None:
        result = sim.run(progress, progress_every)
        return Run(from_result(result), result)
    writer = RunWriter(out, overwrite=overwrite)
    try:
        with _interruptible():
            result = sim.run(progress, progress_every, sink=writer.flush)
    except RunInterrupted as stop:
        with _sheltered():
            stop.summary = writer.finish(stop.result)
        raise
    except BaseException:
        writer.close()
        raise
    summary = writer.finish(result)
    return Run(from_result(result, Path(out), summary), result)


def variants(scenario: Scenario, algorithms=None, groupings=None, weightings=None) -> list[Variant]:
    """The runs a comparison makes: every rule of *algorithms* (default: all
    configured, unless *groupings* or *weightings* are given), then GSGD once per
    grouping of *groupings* (``auto``, ``hand``, ``kmeans:K``, ``equal:K``), labelled
    ``gsgd[auto]``, ..., then GSGD once per group weighting of *weightings*
    (``none``, ``inverse_rate``, ``fedat``), labelled ``gsgd[fedat]``, ...

    Raises ScenarioError for a rule without its ``[algorithms.X]`` table.
    """
    groupings = list(groupings or [])
    weightings = list(weightings or [])
    names = list(algorithms) if algorithms else ([] if groupings or weightings else list(scenario.rules))
    out = [Variant(name, name, scenario.with_algorithm(name), name) for name in names]
    for option, values in (("--groupings", groupings), ("--weightings", weightings)):
        if values and "gsgd" not in scenario.rules:
            raise ScenarioError(option, "needs an [algorithms.gsgd] table", scenario.path)
    for g in groupings:
        variant = scenario.with_overrides([f"algorithms.gsgd.grouping={toml_value(g)}",
                                           'run.algorithm="gsgd"'])
        out.append(Variant(f"gsgd[{g}]", "gsgd-" + g.replace(":", "-"), variant, "gsgd"))
    for g in weightings:
        variant = scenario.with_overrides([f"algorithms.gsgd.group_weighting={toml_value(g)}",
                                           'run.algorithm="gsgd"'])
        out.append(Variant(f"gsgd[{g}]", f"gsgd-{g}", variant, "gsgd"))
    labels = [v.label for v in out]
    for v in out:
        if labels.count(v.label) > 1:
            raise ScenarioError("--algorithms", f"{v.label!r} is asked for twice", scenario.path)
    return out


def compare(scenario: Scenario | str | os.PathLike, algorithms=None, *, groupings=None, weightings=None, out=None,
            plots: bool = False, window: tuple[float, float] | None = None, progress=None,
            on_run=None, overwrite: bool = False) -> Comparison:
    """Every rule in *algorithms*, GSGD with every grouping in *groupings* and with every
    group weighting in *weightings* (see :func:`variants`) on the same data, shards,
    initial model and time draws.

    With *out*: one folder per run and ``compare.json`` (rewritten after each run,
    so finished runs are listed even if a later one fails); *plots* then also
    draws the figures into ``out/plots``. *progress* gets each run's snapshots;
    *on_run(label, run)* is called as each run finishes. *out* is claimed as in
    :func:`run`; an interrupted run is listed in compare.json and RunInterrupted raised.
    """
    if plots and out is None:
        raise ValueError("plots=True needs an out folder")
    sc = _scenario(scenario)
    plan = variants(sc, algorithms, groupings, weightings)
    prepared = prepare(sc)
    runs, summaries = {}, []
    held = claim(out, overwrite=overwrite) if out is not None else None
    try:
        for v in plan:
            folder = Path(out) / v.folder if out is not None else None
            try:
                done = run(v.scenario, v.algorithm, out=folder, progress=progress, label=v.label,
                           prepared=prepared)
            except RunInterrupted as stop:
                if folder is not None and hasattr(stop, "summary"):
                    write_compare(summaries + [{**stop.summary, "folder": v.folder}], out)
                raise
            if folder is not None:
                summaries.append({**done.summary, "folder": v.folder})
                write_compare(summaries, out)
            runs[v.label] = done
            if on_run is not None:
                on_run(v.label, runs[v.label])
    finally:
        if held is not None:
            held.release()
    if out is None:
        return Comparison(runs)
    return Comparison(runs, Path(out), plot(out, window=window) if plots else [])


def sweep(scenario: Scenario | str | os.PathLike, grid, *, out=None, seeds: int = 1, overrides=None,
          data_dir=None, workers: int | None = None, scheduler=None, resume: bool = False, on_done=None,
          on_plan=None, overwrite: bool = False) -> Sweep:
    """Run the cartesian product of *grid* × *seeds* into *out* (default
    ``runs/<scenario>-sweep``; see :mod:`netsim.sweeps.runner`).

    *scenario* is a loaded Scenario or a file. *grid* is ``{"algorithm": ["ssgd",
    "gsgd"], "run.batch_size": [8, 16]}`` or a list of ``"KEY=V1,V2"`` strings.
    *scheduler*: a Dask scheduler address or ``distributed.Client``; otherwise
    *workers* local processes. Every point is validated before anything runs
    (ScenarioError); *on_plan(plan, out)* is called then. *out* is claimed as in
    :func:`run` (*resume* keeps its finished runs). Raises SweepFailed (a
    SweepError) when every run of the sweep failed (raised an error).
    """
    plan = plan_sweep(scenario, grid, seeds=seeds, sets=_overrides(overrides),
                      data_dir=str(data_dir) if data_dir is not None else None)
    out = Path(out) if out is not None else Path("runs") / f"{plan.name}-sweep"
    if on_plan is not None:
        on_plan(plan, out)
    outcome = run_sweep(plan, out, workers=workers, scheduler=scheduler, resume=resume, on_done=on_done,
                        overwrite=overwrite)
    if outcome.failures and not outcome.executed and not outcome.skipped:
        folder, message = outcome.failures[0]
        raise SweepFailed(f"{out}: every run of the sweep failed ({len(outcome.failures)}); {folder}: {message}")
    return Sweep(outcome)


def group(scenario: Scenario | str | os.PathLike, rounds: int | None = None) -> dict:
    """Measure the workers, cluster them and rank candidate groupings (see
    :func:`netsim.sim.engine.advise`); also ``classes`` and ``hosts`` per worker."""
    sc = _scenario(scenario)
    most = max(1, int(MAX_GRADIENTS // sc.n_workers))
    if rounds is not None and not 1 <= rounds <= most:
        raise ScenarioError("--rounds", f"{rounds!r} is not allowed (1..{most}: at most {MAX_GRADIENTS:.0e} "
                            "probe iterations over all workers)", sc.path)
    info = advise(sc, rounds)
    info["classes"] = sc.worker_class_names()
    info["hosts"] = list(sc.network.worker_hosts) if sc.network else [""] * sc.n_workers
    return info


def recommend(scenario: Scenario | str | os.PathLike, *, lrs=None, verify: int = 0, budget_s: float | None = None,
              target: float | None = None, rounds: int | None = None):
    """The (grouping, η) predicted to reach the target loss first, from pilot emulations.

    Returns a :class:`netsim.sim.recommend.Recommendation` (``name``, ``groups``, ``lr``,
    ``target``, ``reason``, ``ranking()`` of every candidate with its predicted time to
    target and interval, ``as_dict()``). *lrs*: the η grid (default: 5 values ×3 apart
    around the scenario's GSGD η). *verify* > 0 runs that many top candidates in full and
    fills ``verified`` (predicted vs emulated). *rounds*: probe rounds of the measurement
    (default: GSGD's ``probe_rounds``). Raises RecommendError (ScenarioError for *rounds*).
    """
    from .rng import Streams
    from .sim.measurement import measure
    from .sim.recommend import recommend as race
    from .sim.recommend import verify as check
    sc = _scenario(scenario)
    most = max(1, int(MAX_GRADIENTS // sc.n_workers))
    if rounds is not None and not 1 <= rounds <= most:
        raise ScenarioError("--rounds", f"{rounds!r} is not allowed (1..{most}: at most {MAX_GRADIENTS:.0e} "
                            "probe iterations over all workers)", sc.path)
    prepared = prepare(sc)
    m = None
    if rounds is not None:
        m = measure(sc, prepared.w0.size, rounds, Streams(sc.run.seed))
    rec = race(sc, prepared, lrs=lrs, budget_s=budget_s, target=target, measurement=m)
    if verify:
        check(sc, rec, prepared, verify)
    return rec


def topologies(base: str | os.PathLike | None = None) -> dict[str, Path]:
    """Topology presets by name: those in ``<base>/topologies`` (default: the
    working directory) and those shipped with netsim."""
    base = Path.cwd() if base is None else Path(base)
    seen: dict[str, Path] = {}
    for directory in (base / "topologies", REPO_TOPOLOGIES):
        if directory.is_dir():
            for name in list_presets(str(directory)):
                seen.setdefault(name, directory / f"{name}.toml")
    return dict(sorted(seen.items()))


def topology(name: str, base: str | os.PathLike | None = None) -> dict:
    """Figures of a topology (hosts, switches, links, diameter, bisection bandwidth),
    named by preset, file or ``topohub:KEY``. Raises TopologyError or FileNotFoundError."""
    return describe(load_named_topology(name, Path.cwd() if base is None else Path(base)))


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
    """Read every run of a run, compare or sweep folder back (a compare folder: the runs its compare.json lists)."""
    return [Run(d) for d in find_runs(folder)]
