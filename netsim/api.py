"""The one front door: load, run, compare, sweep, group, plot and report in a few calls.

The command line is a thin layer over these functions: each ``netsim`` command
parses its options, calls one function here and renders what it returns.

>>> import netsim
>>> sc = netsim.load("scenarios/quickstart.toml", {"run.until": 50})   # doctest: +SKIP
>>> cmp = netsim.compare(sc, ["ssgd", "asgd"], groupings=["auto"])      # doctest: +SKIP
>>> cmp.to_pandas()         # one row per run (pandas)                    # doctest: +SKIP
>>> cmp["gsgd[auto]"].curve_frame()                                       # doctest: +SKIP

Results convert to pandas DataFrames when pandas is installed
(``pip install 'netsim[pandas]'``); everything else works without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config.network_plan import SHIPPED_TOPOLOGIES, load_named_topology
from .config.scenario import Scenario
from .net.topology_io import list_presets
from .net.topology_stats import describe
from .presets import list_scenarios
from .results.atomic import written
from .results.model_file import load_model
from .results.progress import resolve as resolve_progress
from .results.runfolder import (
    FolderError,
    OutputError,
    RunData,
    claim,
    find_runs,
    folder_name,
    latest_folder,
    read_run,
    unique_folder,
)
from .rules import RULES
from .signals import held, sigterm_interrupts
from .sim.engine import (
    RunInterrupted,
    data_bytes,
    free_cycles,
    prepare,
)
from .sweeps.runner import SweepError, SweepFailed, SweepOutcome, plan_sweep, run_sweep
from .tuning.options import RaceOptions
from .workflows.advice import advise_info, check_rounds, quick_dict
from .workflows.compare import Comparison, Variant, run_variants, variants
from .workflows.dask_compare import ClusterFailed, run_variants_dask
from .workflows.options import (
    CompareOptions,
    Inputs,
    PredictOptions,
    RealOptions,
    RunOptions,
    SweepOptions,
    options_of,
)
from .workflows.real import Prediction, calibrate, predict, real
from .workflows.rerun import Rerun, rerun
from .workflows.runs import (
    Overrides,
    PathArg,
    Progress,
    Run,
    Runs,
    default_out,
    load,
    override_list,
    run_into,
)
from .workflows.runs import frame as _frame
from .workflows.runs import old_name as _old_name
from .workflows.runs import scenario_of as _scenario

if TYPE_CHECKING:
    import pandas as pd

    from .tuning.race import Recommendation

__all__ = [
    "RULES",
    "version",
    "load",
    "load_model",
    "run",
    "real",
    "predict",
    "calibrate",
    "Prediction",
    "rerun",
    "default_out",
    "Rerun",
    "Runs",
    "init",
    "keys",
    "json_schema",
    "scenarios",
    "scenario_description",
    "export_trace",
    "export_tensorboard",
    "figures",
    "compare",
    "sweep",
    "group",
    "recommend",
    "plot",
    "write_report",
    "open_run",
    "open_runs",
    "topologies",
    "topology",
    "variants",
    "Run",
    "Comparison",
    "Sweep",
    "Variant",
    "Inputs",
    "RunOptions",
    "CompareOptions",
    "SweepOptions",
    "RealOptions",
    "PredictOptions",
    "RaceOptions",
    "RunInterrupted",
    "OutputError",
    "ClusterFailed",
    "FolderError",
    "SweepError",
    "SweepFailed",
    "exit_status",
    "claim",
]

EXIT_STATUS = {"ok": 0, "diverged": 1, "stalled": 1, "failed": 1, "interrupted": 130}
"""Process exit status for a run's status (docs/CLI.md, "Exit status"); bad input is 2."""


def exit_status(statuses: Iterable[str]) -> int:
    """The exit status of a command whose runs ended with *statuses*: 130 when one was
    interrupted, else 1 when one did not end ``ok``, else 0.

    >>> exit_status(["ok", "ok"]), exit_status(["ok", "diverged"]), exit_status(["stalled", "interrupted"])
    (0, 1, 130)
    """
    codes = [EXIT_STATUS.get(s, 1) for s in statuses]
    return 130 if 130 in codes else max(codes, default=0)


class Sweep:
    """A finished (or partly finished) sweep: ``rows`` (sweep.csv), ``table``
    (mean/CI per point), ``executed``, ``skipped``, ``failures``, ``keys`` and ``path``."""

    def __init__(self, outcome: SweepOutcome):
        self.outcome = outcome
        self.path = outcome.out
        self.rows, self.table = outcome.rows, outcome.table
        self.executed, self.skipped, self.failures = (
            outcome.executed,
            outcome.skipped,
            outcome.failures,
        )
        self.name = outcome.plan.name
        self.keys = [k for k in outcome.plan.keys if k != "run.seed"]

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame of sweep.csv: one row per run, swept values then summary fields."""
        return _frame(
            {k: [row[k] for row in self.rows] for k in (self.rows[0] if self.rows else {})}
        )

    frame = _old_name("frame", "to_pandas")
    to_frame = _old_name("to_frame", "to_pandas")

    def summary_frame(self) -> "pd.DataFrame":
        """DataFrame of sweep_summary.csv: mean and 95 % CI half-width per point."""
        return _frame(
            {k: [row[k] for row in self.table] for k in (self.table[0] if self.table else {})}
        )

    def runs(self) -> list[Run]:
        """Every finished run, read back from its folder, in grid order."""
        return [Run(d) for d in find_runs(self.path)]


def version() -> str:
    """The netsim version (installed metadata, else the source tree's)."""
    from .results.provenance import netsim_version

    return netsim_version()


def run(
    scenario: Scenario | PathArg,
    algorithm: str | None = None,
    *,
    out: PathArg | None = None,
    progress: Progress = "auto",
    options: RunOptions | None = None,
    **fields: Any,
) -> Run:
    """Run one rule (default ``run.algorithm``); write its folder when *out* is given.

    *scenario* is a loaded Scenario, a file or a preset name. *options*: a
    :class:`~netsim.workflows.options.RunOptions`, or its fields as keywords (*fields*):
    ``overrides``, ``seed`` and ``data_dir`` (the CLI's ``--set``, ``--seed`` and
    ``--data-dir``), ``label``, ``overwrite``, ``progress_every``, ``prepared``. The folder
    also gets the resolved ``scenario.toml`` and ``meta.json`` (see :func:`rerun`).

    *progress* is called with a :class:`netsim.sim.records.Snapshot` as the run goes; True
    prints a progress line on stderr, ``"auto"`` (the default) does so inside a Jupyter
    notebook only, None is silent. A run that ends diverged or stalled keeps its status in ``Run.status``; nothing is raised.

    With *out*, the folder is claimed first (OutputError, code 2, when another
    process writes there, or when it holds results of another run and ``overwrite``
    is false; with ``overwrite`` they are removed), complete rows are written as the
    run goes and ``summary.json`` atomically at the end (OutputError, code 1, on a
    full or read-only disk; complete rows stay). Ctrl-C or SIGTERM end the run: its
    files are written with status ``interrupted`` and RunInterrupted (a
    KeyboardInterrupt with ``.result`` and ``.summary``) is raised.
    """
    opts = options_of(RunOptions, options, fields)
    callback = resolve_progress(progress)
    sc = opts.scenario(scenario)
    if algorithm is not None:
        sc = sc.with_algorithm(algorithm)
    where = Path(out) if out is not None else None
    return run_into(
        sc, where, callback, opts.label, opts.prepared, opts.overwrite, opts.progress_every
    )


def compare(
    scenario: Scenario | PathArg,
    algorithms: Sequence[str] | str | None = None,
    *,
    groupings: Sequence[str] | str | None = None,
    weightings: Sequence[str] | str | None = None,
    out: PathArg | None = None,
    progress: Progress = "auto",
    options: CompareOptions | None = None,
    **fields: Any,
) -> Comparison:
    """Every rule in *algorithms*, GSGD with every grouping in *groupings* and with every
    group weighting in *weightings* (see :func:`variants`) on the same data, shards,
    initial model and time draws.

    *options*: a :class:`~netsim.workflows.options.CompareOptions`, or its fields as
    keywords (*fields*): ``overrides``, ``seed``, ``data_dir`` (as in :func:`run`),
    ``plots``, ``window``, ``on_run``, ``overwrite``, ``scheduler``.
    With *out*: one folder per run and ``compare.json`` (rewritten after each run,
    so finished runs are listed even if a later one fails); ``plots`` then also
    draws the figures into ``out/plots``. *progress* gets each run's snapshots (True,
    ``"auto"``: a line per run on stderr, as in :func:`run`, with the run's place
    ``[k/n]``); ``on_run(label, run)`` is called as each run finishes. *out* is claimed as in
    :func:`run`; an interrupted run is listed in compare.json and RunInterrupted raised.

    ``scheduler``: a Dask scheduler address or ``distributed.Client``: the runs go on its
    workers (:mod:`netsim.workflows.dask_compare`; the same runs and files), ``on_run`` is
    called in the order they finish, no snapshots reach *progress*, and an interrupt
    raises KeyboardInterrupt at once (unfinished runs are left out).
    """
    opts = options_of(CompareOptions, options, fields)
    if opts.plots and out is None:
        raise ValueError("plots=True needs an out folder")
    scheduler = opts.scheduler
    if scheduler is not None and callable(progress):
        raise ValueError("a compare on a scheduler gives no snapshots: follow it with on_run")
    callback = resolve_progress(progress) if scheduler is None else None
    sc = opts.scenario(scenario)
    plan = variants(sc, algorithms, groupings, weightings)
    where = Path(out) if out is not None else None
    # here, a signal stops the run going and takes effect once compare.json says so
    with held() if scheduler is None else sigterm_interrupts():
        if scheduler is None:
            cmp = run_variants(sc, plan, where, callback, opts.on_run, opts.overwrite)
        else:
            cmp = run_variants_dask(sc, plan, where, scheduler, opts.on_run, opts.overwrite)
        if opts.plots and where is not None:
            cmp.plots = plot(where, window=opts.window)
        return cmp


def sweep(
    scenario: Scenario | PathArg,
    grid: Mapping[str, Sequence[Any]] | Sequence[str],
    *,
    out: PathArg | None = None,
    seeds: int = 1,
    options: SweepOptions | None = None,
    **fields: Any,
) -> Sweep:
    """Run the cartesian product of *grid* × *seeds* into *out* (default
    ``runs/<scenario>-sweep``, numbered ``-2``, ... if taken; with ``resume`` the
    last of them; see :mod:`netsim.sweeps.runner`).

    *scenario* is a loaded Scenario, a file or a preset name. *grid* is
    ``{"algorithm": ["ssgd", "gsgd"], "run.batch_size": [8, 16]}`` or a list of
    ``"KEY=V1,V2"`` strings. *options*: a :class:`~netsim.workflows.options.SweepOptions`,
    or its fields as keywords (*fields*): ``overrides``, ``data_dir`` (as in :func:`run`);
    ``scheduler``: a Dask scheduler address or ``distributed.Client``, otherwise ``jobs``
    local processes (default: the usable CPUs; 1: this process; ``workers`` is its old
    name). Every point is validated before anything runs (ScenarioError). *out* is claimed
    as in :func:`run` (``resume`` keeps its finished runs; ``overwrite``); ``on_plan(plan,
    out)`` is called then, before the first run, and ``on_done`` as each run ends. Raises
    SweepFailed (a SweepError) when every run of the sweep failed (raised an error).
    """
    opts = options_of(SweepOptions, options, fields)
    on_plan = opts.on_plan
    plan = plan_sweep(
        scenario,
        grid,
        seeds=seeds,
        sets=override_list(opts.overrides),
        data_dir=str(opts.data_dir) if opts.data_dir is not None else None,
    )
    if out is None:
        base = Path("runs") / f"{folder_name(plan.name)}-sweep"
        out = latest_folder(base) if opts.resume else unique_folder(base)
    out = Path(out)
    with sigterm_interrupts():
        outcome = run_sweep(
            plan,
            out,
            workers=opts.processes,
            scheduler=opts.scheduler,
            resume=opts.resume,
            on_done=opts.on_done,
            overwrite=opts.overwrite,
            on_start=None if on_plan is None else lambda: on_plan(plan, out),
        )
    if outcome.failures and not outcome.executed and not outcome.skipped:
        folder, message = outcome.failures[0]
        hint = ""
        if any(
            w in message
            for w in ("BrokenProcessPool", "bootstrapping", "freeze_support", "__main__")
        ):
            hint = (
                " (a script that calls netsim.sweep with local processes must guard its code with "
                '`if __name__ == "__main__":`, or pass jobs=1)'
            )
        raise SweepFailed(
            f"{out}: every run of the sweep failed ({len(outcome.failures)}); {folder}: {message}{hint}"
        )
    return Sweep(outcome)


def recommendation_dict(rec: "Recommendation", classes: list[str] | None = None) -> dict:
    """What ``netsim group --json`` prints: the race's record (:meth:`Recommendation.as_dict`)
    with plain names and shapes (``one group (SSGD)``, ``8 × 2``) beside the internal ones."""
    from .results.groupout import recommendation_dict as as_dict

    return as_dict(rec, classes)


def group(
    scenario: Scenario | PathArg,
    rounds: int | None = None,
    *,
    quick: bool = False,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
    **race: Any,
) -> dict:
    """The grouping and η ``netsim group`` recommends, as the dict ``netsim group --json``
    prints: the race of pilot emulations (:func:`recommend`; *race* takes its keywords:
    ``verify``, ``options`` and the :class:`RaceOptions` fields ``lrs``, ``budget_s``,
    ``target``, ``alike``, ``jobs``, ...), or with
    *quick* the closed-form advisor (what ``netsim group --quick --json`` prints).
    E.g. ``netsim.group("quickstart")["recommended"]``; :func:`recommend` returns the
    :class:`~netsim.tuning.race.Recommendation` object itself.
    """
    sc = _scenario(scenario, overrides, seed, data_dir)
    if quick:
        if race:
            raise TypeError(f"group(quick=True) takes none of {', '.join(sorted(race))}")
        return quick_dict(advise_info(sc, rounds))
    return recommendation_dict(recommend(sc, rounds=rounds, **race), sc.worker_class_names())


def recommend(
    scenario: Scenario | PathArg,
    *,
    verify: int = 0,
    rounds: int | None = None,
    on_rung: Callable[[int, int, int], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    options: RaceOptions | None = None,
    **fields: Any,
) -> "Recommendation":
    """The (grouping, η) predicted to reach the target loss first, from pilot emulations.

    Returns a :class:`netsim.tuning.race.Recommendation` (``name``, ``groups``, ``lr``,
    ``target``, ``reason``, ``ranking()`` of every candidate with its predicted time to
    target and interval, ``as_dict()``). *options*: the race's settings, a
    :class:`~netsim.tuning.options.RaceOptions` or its fields as keywords (*fields*), e.g.
    ``lrs``: the η grid (default: 5 values ×3 apart around the scenario's GSGD η, widened
    after the first rung where the best η is at its top or every η is unstable; a grid
    given is kept to); ``budget_s``, ``target``; ``alike`` > 0: do not race groupings whose
    timing is within a factor e**alike of an earlier candidate's (cheaper, see
    docs/GROUPING.md); ``jobs``: processes the pilots and the *verify* runs are spread over
    (default: the CPUs this process may use, where forking is safe; the result is the same
    for any value); ``scheduler``: a Dask scheduler's address (or a ``distributed.Client``)
    whose workers run the pilots (the same pick). *verify* > 0 runs that many top
    candidates in full and fills ``verified`` (predicted vs emulated). *rounds*: probe
    rounds of the measurement (default: GSGD's ``probe_rounds``). *on_rung(rung, rungs,
    candidates)* is called before each rung of the race (0-based), for progress, and
    *on_progress(share)* just before it (and at the end) with the share (0..1) of the race's
    planned work done, for an estimate of the time left.
    Raises RecommendError (ScenarioError for *rounds*; ScenarioError of ``--scheduler``
    when the scheduler cannot be reached).
    """
    from .rng import Streams
    from .sim.measurement import measure
    from .tuning.race import recommend as race
    from .tuning.race import verify as check

    sc = _scenario(scenario)
    check_rounds(sc, rounds)
    options = options_of(RaceOptions, options, fields)
    prepared = prepare(sc)
    m = None
    if rounds is not None:
        m = measure(sc, prepared.w0.size, rounds, Streams(sc.run.seed))
    rec = race(sc, prepared, options, measurement=m, on_rung=on_rung, on_progress=on_progress)
    if verify:
        check(sc, rec, prepared, verify, jobs=options.jobs)
    size = data_bytes(prepared.dataset)
    del prepared
    free_cycles(size)  # the data, held by the finished pilots' reference cycles
    return rec


def topologies(base: str | os.PathLike | None = None) -> dict[str, Path]:
    """Topology presets by name: those in ``<base>/topologies`` (default: the
    working directory) and those shipped with netsim."""
    base = Path.cwd() if base is None else Path(base)
    seen: dict[str, Path] = {}
    for directory in (base / "topologies", SHIPPED_TOPOLOGIES):
        if directory is not None and directory.is_dir():
            for name in list_presets(str(directory)):
                seen.setdefault(name, directory / f"{name}.toml")
    return dict(sorted(seen.items()))


def topology(name: str, base: str | os.PathLike | None = None) -> dict:
    """Figures of a topology (hosts, switches, links, diameter, bisection bandwidth),
    named by preset, file or ``topohub:KEY``. Raises TopologyError or FileNotFoundError."""
    return describe(load_named_topology(name, Path.cwd() if base is None else Path(base)))


def plot(
    *folders: PathArg,
    out: PathArg | None = None,
    window: tuple[float, float] | None = None,
    format: str | Sequence[str] = ("png",),
    dpi: int | None = None,
    xscale: str = "log",
    target: float | None = None,
    only: Sequence[str] | str | None = None,
) -> list[Path]:
    """Draw every figure for run, compare or sweep *folders* into *out* (default
    ``<folder>/plots``) in each of *format* (``png``, ``pdf``, ``svg``; a list or
    ``"png,pdf"``) at *dpi* (PNG); *xscale* ``log`` or ``linear`` for the updates
    axis; *target*: the loss drawn as a line on the loss curves (default
    ``run.target_loss`` when set); *only*: just these figures (``"timeline"``, ...).
    Returns the file paths (a list whose ``skipped`` maps each figure not drawn to why,
    e.g. ``bias`` and ``labels`` on IID data). Raises FolderError for a folder without runs,
    ValueError for an unknown format, scale or figure. For Figure objects see :func:`figures`."""
    from .results.plots import plot_folders  # matplotlib is imported only when drawing

    formats = [f.strip() for f in format.split(",")] if isinstance(format, str) else list(format)
    if dpi is not None and not 10 <= dpi <= 1200:
        raise ValueError(f"dpi must be in 10..1200, got {dpi!r}")
    where = None if out is None else Path(out)
    return plot_folders(folders, where, window, formats, dpi, xscale, target, only)


def figures(
    source: Any,
    *,
    window: tuple[float, float] | None = None,
    xscale: str = "log",
    target: float | None = None,
) -> dict:
    """The figures of *source* (a folder, Run, Comparison or list of runs) as
    matplotlib Figures by name (``loss_vs_time``, ..., ``timeline``, ``staleness``,
    ``update_rate``, ``bias`` and ``labels`` with per-label accuracy of skewed data), to
    restyle or save as you like; *target* as for :func:`plot`."""
    from .results import plots
    from .results.figset import loss_targets

    runs = _runs_of(source)
    out = {
        name.removesuffix(".png"): plots.curve_figure(
            runs, y, x, xscale, loss_targets(runs, target)
        )
        for (y, x), name in plots.CURVE_FILES.items()
    }
    timed = [r for r in runs if r.timeline is not None]
    if timed:
        out["timeline"] = plots.timeline_figure(timed[: plots.MAX_TIMELINES], window)
    out["staleness"] = plots.staleness_figure(runs)
    out["update_rate"] = plots.update_rate_figure(runs)
    out.update(plots.optional_figures(runs))
    return out


def write_report(
    folder: PathArg,
    *,
    format: str | None = None,
    out: PathArg | None = None,
    window: tuple[float, float] | None = None,
    fmt: str | None = None,
    target: float | None = None,
) -> Path:
    """Write ``folder/report.md`` (*format* ``md``) or a self-contained ``report.html``
    (``html``) with parameters, tables, the verdict (to *target*, see :func:`verdict`) and
    figures; *fmt* is the old name of *format*."""
    from .results.report import write_report as write

    if format is not None and fmt is not None and format != fmt:
        raise ValueError("give format= only; fmt= is its old name")
    return write(
        Path(folder),
        fmt=format or fmt or "md",
        out=None if out is None else Path(out),
        window=window,
        target=target,
    )


def verdict(source: Any, target: float | None = None) -> str:
    """The line that closes ``netsim compare``, ``sweep`` and ``report``: which run reached
    the target loss first and which ended lowest, by how much, and with seeds whether the
    95 % intervals separate. *source*: a :class:`Comparison`, :class:`Sweep`, :class:`Run`,
    list of runs or a folder; *target*: the loss (default: the runs' ``run.target_loss``,
    else half way from the initial loss to the best final loss,
    :func:`netsim.results.verdict.default_target`)."""
    from .results.verdict import verdict as line

    return line(_runs_of(source), target)


def open_run(folder: str | os.PathLike) -> Run:
    """Read a run folder back."""
    return Run(read_run(Path(folder)))


def open_runs(folder: str | os.PathLike) -> Runs:
    """Read every run of a run, compare or sweep folder back (a compare folder: the runs its
    compare.json lists), as a :class:`Runs` list (``.to_pandas()``: one row per run)."""
    return Runs(Run(d) for d in find_runs(Path(folder)))


def scenarios(base: str | os.PathLike | None = None) -> dict[str, Path]:
    """Scenario presets by name: ``<base>/scenarios`` (default: the working directory), then those shipped with netsim."""
    return list_scenarios(None if base is None else Path(base))


def scenario_description(path: str | os.PathLike) -> str:
    """A scenario file's ``description`` ('' when it has none or cannot be read)."""
    import tomllib

    try:
        value = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("description", "")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    return value if isinstance(value, str) else ""


def init(name: str, *, out: PathArg | None = None, overwrite: bool = False) -> Path:
    """Write a commented scenario to start from into *out* (default ``NAME.toml``: a *name*
    with a folder, such as ``scenarios/mine``, is written into that folder).

    Raises FileExistsError rather than overwrite a file unless *overwrite*; ValueError
    for a name that is not a plain word (letters, digits, ``_``, ``-``).
    """
    from .config.template import scenario_template

    given = Path(name)
    stem = given.name.removesuffix(".toml")
    if not stem or not all(c.isalnum() or c in "_-" for c in stem):
        raise ValueError(f"NAME: {name!r} is not allowed (letters, digits, _ and - only)")
    path = Path(out) if out is not None else given.parent / f"{stem}.toml"
    if path.is_dir():
        path = path / f"{stem}.toml"
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (choose another NAME or --out, or pass --overwrite)")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = scenario_template(stem, str(path))
    return written(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def keys() -> list:
    """Every scenario key: a list of :class:`netsim.config.schema.KeySpec` (key, type,
    default, allowed, unit)."""
    from .config.schema import scenario_keys

    return scenario_keys()


def json_schema() -> dict:
    """A JSON Schema of scenario files, for editors."""
    from .config.schema import json_schema as schema

    return schema()


def _export_path(source: Any, out: PathArg | None, name: str, refusal: str) -> Path:
    """*out*, or ``<folder>/<name>`` when *source* is a folder; ValueError for runs made in memory."""
    if out is not None:
        return Path(out)
    if isinstance(source, (str, os.PathLike)):
        return Path(source) / name
    raise ValueError(refusal)


def _runs_of(source: Any) -> list[RunData]:
    if isinstance(source, Run):
        return [source.data]
    if isinstance(source, (Comparison, dict)):
        return [r.data for r in source.values()]
    if isinstance(source, (list, tuple)):
        return [r.data if isinstance(r, Run) else r for r in source]
    if isinstance(source, Sweep):
        return find_runs(source.path)
    return find_runs(source)


def export_trace(source: Any, out: PathArg | None = None) -> Path:
    """Write the worker timelines of *source* (a run/compare/sweep folder, a Run, a
    Comparison or a list of runs) as a Chrome/Perfetto trace JSON (see
    :mod:`netsim.results.trace`) to *out* (default ``<folder>/trace.json``); return its path.
    Open it at ui.perfetto.dev or chrome://tracing."""
    from .results.trace import write_trace

    return write_trace(
        _runs_of(source),
        _export_path(
            source, out, "trace.json", "out: give a file for a trace of runs made in memory"
        ),
    )


def export_tensorboard(source: Any, out: PathArg | None = None) -> list[Path]:
    """Write the loss and accuracy curves of *source* as TensorBoard event files into
    *out* (default ``<folder>/tensorboard``), one subfolder per run; needs tensorboardX
    (``pip install 'netsim[tensorboard]'``). Open with ``tensorboard --logdir OUT``."""
    from .results.trace import write_tensorboard

    return write_tensorboard(
        _runs_of(source),
        _export_path(source, out, "tensorboard", "out: give a folder for runs made in memory"),
    )
