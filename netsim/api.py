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

import json
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .config.grid import toml_value
from .config.network_plan import SHIPPED_TOPOLOGIES, load_named_topology
from .config.scenario import MAX_GRADIENTS, Scenario, load_scenario
from .errors import ScenarioError
from .net.topology_io import list_presets
from .net.topology_stats import describe
from .presets import list_scenarios
from .results.atomic import written
from .results.model_file import load_model
from .results.progress import LineProgress
from .results.progress import resolve as resolve_progress
from .results.provenance import differences, run_meta
from .results.runfolder import (
    PHASES,
    FolderError,
    OutputError,
    RunData,
    RunWriter,
    check_writable,
    claim,
    find_runs,
    folder_name,
    from_result,
    latest_folder,
    read_run,
    unique_folder,
    write_compare,
)
from .rules import GROUPING_RULE, RULES
from .signals import held, stoppable
from .sim.engine import (
    Prepared,
    RunInterrupted,
    Simulation,
    data_bytes,
    free_cycles,
    prepare,
)
from .sim.records import Result
from .sim.summary import Summary, flat
from .sweeps.runner import SweepError, SweepFailed, SweepOutcome, plan_sweep, run_sweep
from .tuning.advise import advise
from .tuning.race import decide

if TYPE_CHECKING:
    import pandas as pd

    from .sim.records import Snapshot
    from .tuning.race import Recommendation

PathArg = Union[str, "os.PathLike[str]"]
"""A file or folder: a string or a path."""
Overrides = Union[Mapping[str, Any], Sequence[str], None]
"""``--set`` overrides: ``{"run.until": 50}`` or ``["run.until=50"]``."""
Progress = Union["Callable[[Snapshot], None]", bool, str, None]
"""A snapshot callback, True (a line on stderr), ``"auto"`` (that, in Jupyter only) or None."""

__all__ = [
    "RULES",
    "version",
    "load",
    "load_model",
    "run",
    "real",
    "predict",
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
    "RunInterrupted",
    "OutputError",
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


@contextmanager
def _naming(out: Path) -> Iterator[None]:
    """An interrupt (KeyboardInterrupt) leaving the block gets ``folder`` = *out*: the folder
    a command chose itself, for the caller to say what it holds."""
    try:
        yield
    except KeyboardInterrupt as exc:
        exc.folder = out  # type: ignore[attr-defined]
        raise


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does (main thread only): a sweep stopped
    by a job supervisor ends its pool and exits like one stopped from the terminal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _frame(columns: dict) -> "pd.DataFrame":
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("DataFrames need pandas: pip install 'netsim[pandas]'") from None
    return pd.DataFrame(columns)


def _overrides(overrides: Overrides) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{key}={toml_value(value)}" for key, value in overrides.items()]
    return list(overrides)


def _scenario(
    scenario: Scenario | PathArg,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
) -> Scenario:
    """A loaded Scenario (a file or preset name is loaded) with the CLI's options applied:
    *overrides* (``--set``), *seed* (``--seed``), *data_dir* (``--data-dir``)."""
    if not isinstance(scenario, Scenario):
        return load(scenario, overrides, seed=seed, data_dir=data_dir)
    extra = _overrides(overrides) + ([f"run.seed={seed}"] if seed is not None else [])
    if data_dir is not None:
        extra.append(f"data.dir={toml_value(str(Path(data_dir).resolve()))}")
    return scenario.with_overrides(extra) if extra else scenario


def _old_name(old: str, new: str) -> Callable[..., Any]:
    """A method kept under its old name *old*: it warns (DeprecationWarning) and calls *new*."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        import warnings

        warnings.warn(f"{old}() is now {new}()", DeprecationWarning, stacklevel=2)
        return getattr(self, new)(*args, **kwargs)

    method.__name__ = old
    method.__doc__ = f"Old name of :meth:`{new}` (deprecated)."
    return method


class Run:
    """One run: ``summary`` (its :class:`~netsim.sim.summary.Summary`, as in summary.json), columns ``curve``, ``updates``
    and ``timeline`` (dicts of ndarrays), ``label``, ``path`` (its folder or None)
    and, for a run made in this session, ``result`` (the :class:`netsim.sim.records.Result`)."""

    def __init__(self, data: RunData, result: Result | None = None):
        self.data = data
        self.result = result

    @property
    def summary(self) -> Summary:
        return self.data.summary

    curve = property(lambda self: self.data.curve)
    updates = property(lambda self: self.data.updates)
    timeline = property(lambda self: self.data.timeline)
    path = property(lambda self: self.data.path)
    label = property(lambda self: self.data.label)
    status = property(lambda self: self.data.summary["status"])

    def curve_frame(self) -> "pd.DataFrame":
        """DataFrame: update, sim_time (s), loss, test_accuracy — one row per evaluation."""
        return _frame(self.curve)

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame of the curve (as :meth:`curve_frame`); ``updates_frame`` and ``timeline_frame`` give the rest."""
        return self.curve_frame()

    to_frame = _old_name("to_frame", "to_pandas")

    def updates_frame(self) -> "pd.DataFrame":
        """DataFrame: version, sim_time (s), worker, group, staleness — one row per applied gradient
        (and server_wait, server_service with a ``[server]``: docs/SERVER.md)."""
        return _frame(self.updates)

    def timeline_frame(self) -> "pd.DataFrame":
        """DataFrame: worker, phase (idle|comm|compute|down; busy on the server's row, worker -1,
        with a ``[server]``), start, end (s); empty without a timeline."""
        tl = self.timeline or {"worker": [], "phase": [], "start": [], "end": []}
        return _frame({**tl, "phase": [PHASES[p] for p in tl["phase"]]})

    def __repr__(self) -> str:
        s = self.summary
        loss = "-" if s["final_loss"] is None else f"{s['final_loss']:.5f}"
        return (
            f"<Run {s['scenario']} {self.label} seed={s['seed']}: {s['updates']} updates, "
            f"loss {loss}, status {s['status']}>"
        )


class Comparison(dict):
    """Runs by label (``ssgd``, ``gsgd[auto]``, ...), plus ``path`` and the written ``plots``."""

    def __init__(
        self, runs: dict[str, Run], path: Path | None = None, plots: list[Path] | None = None
    ):
        super().__init__(runs)
        self.path = path
        self.plots = plots or []

    @property
    def summaries(self) -> list[Summary]:
        return [r.summary for r in self.values()]

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame: one row per run with the summary fields (as in sweep.csv)."""
        return _summary_frame(self.values())

    frame = _old_name("frame", "to_pandas")
    to_frame = _old_name("to_frame", "to_pandas")

    def curves_frame(self) -> "pd.DataFrame":
        """DataFrame of every curve, long form, with a ``label`` column."""
        cols: dict[str, list] = {"label": []}
        for name, r in self.items():
            cols["label"] += [name] * len(r.curve["update"])
            for k, v in r.curve.items():
                cols.setdefault(k, []).extend(v.tolist())
        return _frame(cols)


def _summary_frame(runs: Iterable["Run"]) -> "pd.DataFrame":
    rows = [flat(r.summary) for r in runs]
    return _frame({k: [row[k] for row in rows] for k in (rows[0] if rows else {})})


class Runs(list):
    """The runs read back from a folder (a list of :class:`Run`), with ``to_pandas()``."""

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame: one row per run with the summary fields (as in sweep.csv)."""
        return _summary_frame(self)

    frame = _old_name("frame", "to_pandas")
    to_frame = _old_name("to_frame", "to_pandas")


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


@dataclass(frozen=True)
class Variant:
    """One run of a comparison: its ``label``, ``folder`` name, scenario and rule."""

    label: str
    folder: str
    scenario: Scenario
    algorithm: str


def version() -> str:
    """The netsim version (installed metadata, else the source tree's)."""
    from .results.provenance import netsim_version

    return netsim_version()


def load(
    path: PathArg,
    overrides: Overrides = None,
    *,
    seed: int | None = None,
    algorithm: str | None = None,
    data_dir: PathArg | None = None,
) -> Scenario:
    """Load and validate a scenario; *overrides* is ``{"run.until": 600}`` or
    ``["run.until=600"]`` (values are TOML, as with ``--set``). Raises ScenarioError."""
    return load_scenario(
        path,
        _overrides(overrides),
        seed=seed,
        algorithm=algorithm,
        data_dir=str(data_dir) if data_dir is not None else None,
    )


def run(
    scenario: Scenario | PathArg,
    algorithm: str | None = None,
    *,
    out: PathArg | None = None,
    progress: Progress = "auto",
    label: str | None = None,
    prepared: Prepared | None = None,
    overwrite: bool = False,
    progress_every: float | None = None,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
) -> Run:
    """Run one rule (default ``run.algorithm``); write its folder when *out* is given.

    *scenario* is a loaded Scenario, a file or a preset name; *overrides*, *seed*
    and *data_dir* are the CLI's ``--set``, ``--seed`` and ``--data-dir``. The folder
    also gets the resolved ``scenario.toml`` and ``meta.json`` (see :func:`rerun`).

    *progress* is called with a :class:`netsim.sim.records.Snapshot` as the run goes; True
    prints a progress line on stderr, ``"auto"`` (the default) does so inside a Jupyter
    notebook only, None is silent. A run that ends diverged or stalled keeps its status in ``Run.status``; nothing is raised.

    With *out*, the folder is claimed first (OutputError, code 2, when another
    process writes there, or when it holds results of another run and *overwrite*
    is false; with *overwrite* they are removed), complete rows are written as the
    run goes and ``summary.json`` atomically at the end (OutputError, code 1, on a
    full or read-only disk; complete rows stay). Ctrl-C or SIGTERM end the run: its
    files are written with status ``interrupted`` and RunInterrupted (a
    KeyboardInterrupt with ``.result`` and ``.summary``) is raised.
    """
    progress = resolve_progress(progress)
    sc = _scenario(scenario, overrides, seed, data_dir)
    if algorithm is not None:
        sc = sc.with_algorithm(algorithm)
    started = datetime.now(timezone.utc)
    own = prepared is None  # data loaded here is freed before returning (free_cycles)
    prepared = prepared if prepared is not None else prepare(sc)
    sim = Simulation(sc, None, prepared, label, decide=decide)
    if out is None:
        with held(), stoppable(sim):
            result = sim.run(progress, progress_every)
        done = Run(from_result(result), result)
    else:
        meta = run_meta(sc, prepared.dataset.source, started, label or sc.run.algorithm)
        with held():  # from the claim to summary.json: a signal stops the run, never the writing
            writer = RunWriter(Path(out), overwrite=overwrite, scenario=sc, meta=meta)
            try:
                with stoppable(sim):
                    result = sim.run(progress, progress_every, sink=writer.flush)
            except RunInterrupted as stop:
                stop.summary = writer.finish(stop.result)
                raise
            except BaseException:
                writer.close()
                raise
            done = Run(from_result(result, Path(out), writer.finish(result)), result)
    if own:
        size = data_bytes(prepared.dataset)
        del sim, prepared
        free_cycles(size)
    return done


def real(
    scenario: Scenario | PathArg,
    algorithm: str | None = None,
    *,
    time_scale: float,
    out: PathArg | None = None,
    progress: Progress = None,
    label: str | None = None,
    overwrite: bool = False,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    paced: bool = True,
) -> Run | None:
    """Train *scenario* for real with rule *algorithm*: one parameter-server process and one
    process per worker over ``torch.distributed`` (gloo), each scenario time unit lasting
    *time_scale* real seconds (docs/VALIDATION.md). Writes the run folder *out* (default
    ``runs/<scenario>-real-<rule>``, numbered) as an emulated run does, plus
    ``measured_gradients.csv`` and ``measured_updates.csv``; returns the Run.

    Refused before any process starts (ScenarioError): torch missing, a rule or feature
    emulated only, a time scale ≤ 0 or too small for this machine, more workers than it
    can run, a port in use (*port* None: a free one on *host*). *paced* False: a time scale
    whose messages and service the machine cannot fit into the scenario's times is run
    anyway, ending ``ok`` with ``real.unpaced`` saying how far it fell behind (the run then
    measures this machine's messages and server: hold it against a calibrated prediction,
    ``netsim predict``). A run stopped by Ctrl-C or
    SIGTERM, or whose worker died, ends every process and keeps its folder with status
    ``interrupted`` or ``failed``; nothing is raised for them (see ``Run.status``).

    Under ``torchrun`` (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` set),
    this process plays its rank only: rank 0 serves and writes the folder, rank w + 1 is
    worker w (it returns None); the world size must be the workers + 1."""
    from .testbed.launch import check_real, prepare_spec, run_real, run_role
    from .testbed.node import torchrun_rank

    sc = _scenario(scenario, overrides, seed, data_dir)
    algorithm = algorithm or sc.run.algorithm
    sc = sc.with_algorithm(algorithm)
    role = torchrun_rank()
    rendezvous: str | None = host
    if role is None:
        port = check_real(sc, algorithm, time_scale, host, port)
    else:  # started by torchrun: its rendezvous (env://), one process per rank
        rendezvous, port = None, check_real(sc, algorithm, time_scale, None, None)
        if role[1] != sc.n_workers + 1:
            raise ScenarioError(
                "torchrun",
                f"--nproc-per-node × --nnodes is {role[1]}; the scenario needs "
                f"{sc.n_workers + 1} processes (the server and one per worker)",
                sc.path,
            )
    folder = Path(out) if out is not None else default_out(sc, f"real-{algorithm}")
    if role is None or role[0] == 0:
        check_writable(folder)
    started = datetime.now(timezone.utc)
    prepared = prepare(sc)
    spec = prepare_spec(
        sc, algorithm, time_scale, label or algorithm, prepared, rendezvous, port, paced
    )
    meta = run_meta(sc, prepared.dataset.source, started, label or algorithm)
    meta["real"] = {"time_scale": time_scale, "host": rendezvous, "port": port}
    if role is not None:
        if run_role(spec, role[0], folder, meta, overwrite=overwrite, progress=progress) is None:
            return None  # a worker's process: the run's folder is rank 0's
    else:
        run_real(spec, folder, meta, overwrite=overwrite, progress=progress)
    return Run(read_run(folder))


class Prediction:
    """netsim's predictions of a real run (:func:`predict`): ``real`` (its Run), ``runs``
    (variant → its emulated Runs, one per seed), ``target`` (the loss of the time-to-target
    row), ``n`` (the N of the time-of-update-N row), ``rows`` (one dict per figure:
    ``metric``, ``label``, ``real``, then per variant its mean over the seeds, ``<variant>_ci``
    the half-width of its 95 % interval and ``<variant>_gap`` the relative error of the
    mean), ``calibration`` (the fit's quality and notes, or None), ``path`` and ``plots``."""

    def __init__(
        self, real: Run, runs: dict, target: float, rows: list, path: Path, plots: list[Path]
    ):
        self.real, self.runs, self.target = real, runs, target
        self.rows, self.path, self.plots = rows, path, plots
        self.n = 0
        self.calibration: dict | None = None
        self.skipped = ""
        """Why a variant of the default set was left out ('' : none was)."""

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame: one row per compared figure (see ``rows``)."""
        return _frame({k: [r.get(k) for r in self.rows] for k in self.rows[0]})


def _checked_variants(variants: Sequence[str], seeds: int) -> list[str]:
    """predict's *variants* as a list, each one known and *seeds* at least 1 (ScenarioError)."""
    from .testbed.predict import VARIANTS

    for v in variants:
        if v not in VARIANTS:
            raise ScenarioError(
                "--variants", f"{v!r} is not allowed (allowed: {', '.join(VARIANTS)})"
            )
    if seeds < 1:
        raise ScenarioError("--seeds", f"{seeds} is not allowed (emulations per variant, >= 1)")
    return list(variants)


def _prediction_fit(
    variants: list[str], chosen: bool, sources: Sequence[PathArg], scale: float
) -> tuple[dict | None, str]:
    """The calibration of predict's ``calibrated`` variant (None when not asked for) and why
    it was left out ('' : it was not): a run that cannot be fitted drops the variant from
    the default set (*chosen* False: neither the variants nor *sources* given), else FolderError."""
    if "calibrated" not in variants:
        return None, ""
    try:
        return calibrate(list(sources), time_scale=scale), ""
    except FolderError as exc:
        if chosen:
            raise
        variants.remove("calibrated")  # the default set: the others still compare
        return None, f"calibrated variant left out: {exc}"


def _emulate_seeds(
    scenario: Scenario, variant: str, seeds: int, out: Path, progress: Progress
) -> list[Run]:
    """*scenario* emulated with *seeds* seeds (its own, then the next ones) into
    ``out/<variant>`` and ``out/<variant>-seed<k>``."""
    return [
        run(
            scenario,
            out=out / (variant if k == 0 else f"{variant}-seed{k}"),
            progress=progress,
            label=variant,
            overwrite=True,
            seed=scenario.run.seed + k,
        )
        for k in range(seeds)
    ]


def predict(
    folder: PathArg,
    *,
    out: PathArg | None = None,
    variants: Sequence[str] | None = None,
    target: float | None = None,
    progress: Progress = "auto",
    plots: bool = True,
    data_dir: PathArg | None = None,
    seeds: int = 3,
    calibrate_from: Sequence[PathArg] | None = None,
) -> Prediction:
    """Emulate the scenario of the real run in *folder* (``netsim real``'s) as netsim would
    predict it, in each of *variants* (default all of ``scenario``, ``calibrated``,
    ``replayed``: :mod:`netsim.testbed.predict`), each with *seeds* seeds (the run's seed,
    then the next ones), into *out* (default ``<folder>-predict``, numbered), and compare:
    updates, gradients applied, staleness per update, idle %, final loss, the time to
    *target* (default ``run.target_loss``, else half way from the real run's initial to its
    final loss) and the time of update N (half the real run's updates). ``calibrated`` fits
    the real runs in *calibrate_from* (default this one; others: held out). With *plots*,
    the figures of the first seed's runs in ``out/plots``. Raises FolderError for a folder
    that is not a real run's, or one that cannot be calibrated from when ``calibrated`` or
    *calibrate_from* was asked for (with the default variants it is left out, ``skipped``
    says why)."""
    from .results.plots import plot_runs
    from .testbed.predict import (
        VARIANTS,
        compare_rows,
        default_target,
        half_updates,
        metrics,
        variant_scenario,
    )

    folder = Path(folder)
    real_run = Run(read_run(folder))
    if "real" not in real_run.summary:
        raise FolderError(f"{folder}: not a real run's folder (netsim real writes one)")
    sc = load(folder / "scenario.toml", data_dir=data_dir)
    chosen = variants is not None or bool(calibrate_from)  # asked for: a failed fit is an error
    variants = _checked_variants(variants or VARIANTS, seeds)
    scale = float(real_run.summary["real"]["time_scale"])
    fit, skipped = _prediction_fit(variants, chosen, calibrate_from or [folder], scale)
    target = target or sc.run.target_loss or default_target([real_run.curve])
    n = half_updates([real_run.summary])
    out = (
        Path(out) if out is not None else unique_folder(folder.with_name(folder.name + "-predict"))
    )
    with (
        _naming(out),
        held(),
    ):  # a signal stops the emulation going; it acts once the figures are drawn
        cal = fit["calibration"] if fit is not None else None
        runs = {
            v: _emulate_seeds(variant_scenario(sc, folder, v, cal, scale), v, seeds, out, progress)
            for v in variants
        }

        def figures(r: Run) -> dict:
            return metrics(r.summary, r.curve, r.updates, target, n)

        rows = compare_rows(
            [figures(real_run)], {v: [figures(r) for r in rs] for v, rs in runs.items()}
        )
        paths = []
        if plots:
            values = {"real": real_run, **{v: rs[0] for v, rs in runs.items()}}
            data = [replace(r.data, label=name, group=name) for name, r in values.items()]
            paths = plot_runs(data, out / "plots")
        pred = Prediction(real_run, runs, target, rows, out, paths)
        pred.n, pred.skipped = n, skipped
        if fit is not None:
            pred.calibration = {
                k: fit[k] for k in ("server", "latencies", "quality", "notes", "scale")
            }
        return pred


def calibrate(folders: PathArg | Sequence[PathArg], *, time_scale: float | None = None) -> dict:
    """Fit the ``[server]`` keys and per-class latencies to the real runs in *folders* (one
    folder or several; several of different model sizes also give the per-parameter parts):
    :func:`netsim.testbed.calibrate_io.calibrate_folders`'s dict, in the units of
    *time_scale* (default: the first run's scale). Raises FolderError naming the folder or
    file that cannot be fitted (not a real run, too few updates)."""
    from .testbed.calibrate_io import NotCalibratable, calibrate_folders

    if isinstance(folders, (str, os.PathLike)):
        folders = [folders]
    if time_scale is not None:
        from .testbed.preflight import check_time_scale

        check_time_scale(time_scale)
    try:
        return calibrate_folders([Path(f) for f in folders], time_scale)
    except NotCalibratable as exc:
        raise FolderError(str(exc)) from None


def default_out(scenario: Scenario, kind: str | None = None, *, resume: bool = False) -> Path:
    """The default output folder of a command: ``runs/<scenario>-<kind>`` (*kind*
    defaults to the scenario's algorithm), numbered ``-2``, ``-3``, ... so nothing
    is overwritten; with *resume*, the last folder of that series."""
    base = Path("runs") / f"{folder_name(scenario.name)}-{kind or scenario.run.algorithm}"
    return latest_folder(base) if resume else unique_folder(base)


def rerun(
    folder: PathArg,
    *,
    out: PathArg | None = None,
    progress: Progress = "auto",
    data_dir: PathArg | None = None,
) -> "Rerun":
    """Run the scenario a run folder recorded (its ``scenario.toml``, overrides applied)
    again, with the same rule and label, into *out* (default ``<folder>-rerun``, numbered; for a
    run inside a compare or sweep folder, ``<that folder>-<run>-rerun`` beside it).

    Returns a :class:`Rerun`: the new ``run`` and the files that ``differ`` from the
    original (empty when reproduced byte for byte, wall times aside). An original that
    did not end (interrupted, or killed before writing ``summary.json``) is rerun but not
    compared: ``Rerun.not_compared`` says why.
    Raises FolderError when *folder* holds no ``scenario.toml``.
    """
    folder = Path(folder)
    if not (folder / "scenario.toml").is_file():
        raise FolderError(
            f"{folder}: no scenario.toml (not a run folder, or one written before run folders "
            "recorded their scenario; run it again with netsim run)"
        )
    try:
        summary = (
            json.loads((folder / "summary.json").read_text())
            if (folder / "summary.json").is_file()
            else None
        )
        meta = (
            json.loads((folder / "meta.json").read_text())
            if (folder / "meta.json").is_file()
            else {}
        )
        algorithm = summary["algorithm"] if summary is not None else None
        label = summary.get("label") if summary is not None else meta.get("label")
        overrides = tuple(meta.get("overrides", [])) if meta else None
    except (ValueError, OSError, KeyError, TypeError, AttributeError) as exc:
        raise FolderError(
            f"{folder}: summary.json or meta.json is not a run's ({type(exc).__name__}: {exc})"
        ) from None
    sc = load(folder / "scenario.toml", data_dir=data_dir)
    sc = replace(sc, overrides=overrides) if overrides is not None else sc
    home = folder.resolve()  # "." and "sub/.." have no name of their own
    if out is None:  # beside the original; a run of a compare or sweep folder: beside that folder
        parent = home.parent
        grouped = (parent / "compare.json").is_file() or (parent / "sweep.json").is_file()
        base = (
            parent.with_name(f"{parent.name}-{home.name}-rerun")
            if grouped
            else home.with_name(home.name + "-rerun")
        )
        out = unique_folder(base)
    out = Path(out)
    with _naming(out):
        new = run(sc, algorithm, out=out, progress=progress, label=label)
    if summary is None:
        why = "the original has no summary.json (it was stopped before it ended, e.g. killed)"
    elif summary.get("status") == "interrupted":
        why = (
            f"the original was interrupted at simulated time {summary.get('sim_time', 0):g}, "
            "where the rerun went on to the end"
        )
    else:
        return Rerun(new, folder, differences(folder, out))
    return Rerun(new, folder, [], not_compared=why)


@dataclass(frozen=True)
class Rerun:
    """A rerun: the new ``run``, the ``original`` folder and the files that ``differ``
    (names); ``not_compared``: why the two were not compared ('' : they were)."""

    run: "Run"
    original: Path
    differ: list
    not_compared: str = ""

    @property
    def identical(self) -> bool:
        return not self.differ and not self.not_compared


def variants(
    scenario: Scenario,
    algorithms: Sequence[str] | str | None = None,
    groupings: Sequence[str] | str | None = None,
    weightings: Sequence[str] | str | None = None,
) -> list[Variant]:
    """The runs a comparison makes: every rule of *algorithms* (default: all
    configured, unless *groupings* or *weightings* are given), then GSGD once per
    grouping of *groupings* (``auto``, ``hand``, ``kmeans:K``, ``equal:K``), labelled
    ``gsgd[auto]``, ..., then GSGD once per group weighting of *weightings*
    (``none``, ``inverse_rate``, ``fedat``), labelled ``gsgd[fedat]``, ... (not the
    scenario's own weighting when plain ``gsgd`` runs too: that run is the same).

    Raises ScenarioError for a rule without its ``[algorithms.X]`` table.
    """
    algorithms, groupings, weightings = (_names(x) for x in (algorithms, groupings, weightings))
    names = (
        list(algorithms)
        if algorithms
        else ([] if groupings or weightings else list(scenario.rules))
    )
    out = [Variant(name, name, scenario.with_algorithm(name), name) for name in names]
    rule = GROUPING_RULE
    for option, values in (("--groupings", groupings), ("--weightings", weightings)):
        if values and rule not in scenario.rules:
            raise ScenarioError(option, f"needs an [algorithms.{rule}] table", scenario.path)
    for g in groupings:
        variant = scenario.with_overrides(
            [f"algorithms.{rule}.grouping={toml_value(g)}", f'run.algorithm="{rule}"']
        )
        out.append(Variant(f"{rule}[{g}]", f"{rule}-" + g.replace(":", "-"), variant, rule))
    for g in weightings:
        variant = scenario.with_overrides(
            [f"algorithms.{rule}.group_weighting={toml_value(g)}", f'run.algorithm="{rule}"']
        )
        if rule in names and variant.rules[rule].grouping == scenario.rules[rule].grouping:
            continue  # the scenario's own weighting: the plain run of the rule is this one
        out.append(Variant(f"{rule}[{g}]", f"{rule}-{g}", variant, rule))
    labels = [v.label for v in out]
    for v in out:
        if labels.count(v.label) > 1:
            raise ScenarioError("--algorithms", f"{v.label!r} is asked for twice", scenario.path)
    return out


def _names(value: Sequence[str] | str | None) -> list[str]:
    """A list of names from a list or a comma-separated string (``"ssgd,asgd"``).

    >>> _names("ssgd, asgd"), _names(["gsgd"]), _names(None)
    (['ssgd', 'asgd'], ['gsgd'], [])
    """
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    return list(value or [])


def compare(
    scenario: Scenario | PathArg,
    algorithms: Sequence[str] | str | None = None,
    *,
    groupings: Sequence[str] | str | None = None,
    weightings: Sequence[str] | str | None = None,
    out: PathArg | None = None,
    plots: bool = False,
    window: tuple[float, float] | None = None,
    progress: Progress = "auto",
    on_run: Callable[[str, Run], None] | None = None,
    overwrite: bool = False,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
) -> Comparison:
    """Every rule in *algorithms*, GSGD with every grouping in *groupings* and with every
    group weighting in *weightings* (see :func:`variants`) on the same data, shards,
    initial model and time draws.

    With *out*: one folder per run and ``compare.json`` (rewritten after each run,
    so finished runs are listed even if a later one fails); *plots* then also
    draws the figures into ``out/plots``. *progress* gets each run's snapshots (True,
    ``"auto"``: a line per run on stderr, as in :func:`run`, with the run's place
    ``[k/n]``); *on_run(label, run)* is called as each run finishes. *out* is claimed as in
    :func:`run`; an interrupted run is listed in compare.json and RunInterrupted raised.
    """
    if plots and out is None:
        raise ValueError("plots=True needs an out folder")
    progress = resolve_progress(progress)
    sc = _scenario(scenario, overrides, seed, data_dir)
    plan = variants(sc, algorithms, groupings, weightings)
    prepared = prepare(sc)
    runs: dict[str, Run] = {}
    summaries: list[dict] = []
    with held():  # a signal stops the run going, and takes effect once compare.json says so
        claimed = claim(Path(out), overwrite=overwrite) if out is not None else None
        try:
            for k, v in enumerate(plan):
                if isinstance(progress, LineProgress):
                    progress.position = f"[{k + 1}/{len(plan)}]"
                folder = Path(out) / v.folder if out is not None else None
                try:
                    done = run(
                        v.scenario,
                        v.algorithm,
                        out=folder,
                        progress=progress,
                        label=v.label,
                        prepared=prepared,
                    )
                except RunInterrupted as stop:
                    if out is not None and stop.summary is not None:
                        write_compare(summaries + [{**stop.summary, "folder": v.folder}], Path(out))
                    raise
                if out is not None:
                    summaries.append({**done.summary, "folder": v.folder})
                    write_compare(summaries, Path(out))
                runs[v.label] = done
                if on_run is not None:
                    on_run(v.label, runs[v.label])
        finally:
            if claimed is not None:
                claimed.release()
        size = data_bytes(prepared.dataset)
        del prepared
        free_cycles(size)  # the runs' data, loaded once above
        if out is None:
            return Comparison(runs)
        return Comparison(runs, Path(out), plot(out, window=window) if plots else [])


def sweep(
    scenario: Scenario | PathArg,
    grid: Mapping[str, Sequence[Any]] | Sequence[str],
    *,
    out: PathArg | None = None,
    seeds: int = 1,
    overrides: Overrides = None,
    data_dir: PathArg | None = None,
    jobs: int | None = None,
    scheduler: Any = None,
    resume: bool = False,
    on_done: Callable[..., None] | None = None,
    on_plan: Callable[..., None] | None = None,
    overwrite: bool = False,
    workers: int | None = None,
) -> Sweep:
    """Run the cartesian product of *grid* × *seeds* into *out* (default
    ``runs/<scenario>-sweep``, numbered ``-2``, ... if taken; with *resume* the
    last of them; see :mod:`netsim.sweeps.runner`).

    *scenario* is a loaded Scenario, a file or a preset name. *grid* is
    ``{"algorithm": ["ssgd", "gsgd"], "run.batch_size": [8, 16]}`` or a list of
    ``"KEY=V1,V2"`` strings. *scheduler*: a Dask scheduler address or
    ``distributed.Client``; otherwise *jobs* local processes (default: the usable
    CPUs; 1: this process; *workers* is its old name). Every point is validated
    before anything runs (ScenarioError). *out* is claimed as in :func:`run` (*resume*
    keeps its finished runs); *on_plan(plan, out)* is called then, before the first run. Raises
    SweepFailed (a SweepError) when every run of the sweep failed (raised an error).
    """
    if jobs is not None and workers is not None and jobs != workers:
        raise ValueError("give jobs= (local processes) only; workers= is its old name")
    jobs = jobs if jobs is not None else workers
    plan = plan_sweep(
        scenario,
        grid,
        seeds=seeds,
        sets=_overrides(overrides),
        data_dir=str(data_dir) if data_dir is not None else None,
    )
    if out is None:
        base = Path("runs") / f"{folder_name(plan.name)}-sweep"
        out = latest_folder(base) if resume else unique_folder(base)
    out = Path(out)
    with _sigterm_interrupts():
        outcome = run_sweep(
            plan,
            out,
            workers=jobs,
            scheduler=scheduler,
            resume=resume,
            on_done=on_done,
            overwrite=overwrite,
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


def advise_info(
    scenario: Scenario | PathArg,
    rounds: int | None = None,
    *,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
) -> dict:
    """The closed-form advisor's evidence: measure the workers, cluster them and rank
    candidate groupings (see :func:`netsim.tuning.advise.advise`); also ``classes`` and
    ``hosts`` per worker (the tables of ``netsim group --quick``)."""
    sc = _scenario(scenario, overrides, seed, data_dir)
    _check_rounds(sc, rounds)
    info = advise(sc, rounds)
    info["classes"] = sc.worker_class_names()
    info["hosts"] = list(sc.network.worker_hosts) if sc.network else [""] * sc.n_workers
    return info


def _check_rounds(sc: Scenario, rounds: int | None) -> None:
    most = max(1, int(MAX_GRADIENTS // sc.n_workers))
    if rounds is not None and not 1 <= rounds <= most:
        raise ScenarioError(
            "--rounds",
            f"{rounds!r} is not allowed (1..{most}: at most {MAX_GRADIENTS:.0e} "
            "probe iterations over all workers)",
            sc.path,
        )


def quick_dict(info: dict) -> dict:
    """What ``netsim group --quick --json`` prints, from :func:`advise_info`'s *info*: the
    chosen clustering, η_sync and the advisor's ranking."""
    chosen = info["grouping"]
    return {
        "method": "quick",
        "chosen": {
            "method": chosen.method,
            "k": chosen.k,
            "groups": [list(g) for g in chosen.groups],
            "reason": chosen.reason,
        },
        "lr_sync": info["lr_sync"],
        "ranking": [p.as_dict() for p in info["ranking"]],
    }


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
    prints: the race of pilot emulations (:func:`recommend`; *race* takes its options:
    ``lrs``, ``verify``, ``budget_s``, ``target``, ``alike``, ``jobs``), or with
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
    lrs: Sequence[float] | None = None,
    verify: int = 0,
    budget_s: float | None = None,
    target: float | None = None,
    rounds: int | None = None,
    alike: float = 0.0,
    jobs: int | None = None,
    on_rung: Callable[[int, int, int], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    scheduler: Any = None,
) -> "Recommendation":
    """The (grouping, η) predicted to reach the target loss first, from pilot emulations.

    Returns a :class:`netsim.tuning.race.Recommendation` (``name``, ``groups``, ``lr``,
    ``target``, ``reason``, ``ranking()`` of every candidate with its predicted time to
    target and interval, ``as_dict()``). *lrs*: the η grid (default: 5 values ×3 apart
    around the scenario's GSGD η, widened after the first rung where the best η is at its
    top or every η is unstable; a grid given is kept to). *verify* > 0 runs that many top candidates in full and
    fills ``verified`` (predicted vs emulated). *rounds*: probe rounds of the measurement
    (default: GSGD's ``probe_rounds``). *alike* > 0: do not race groupings whose timing is
    within a factor e**alike of an earlier candidate's (cheaper, see docs/GROUPING.md).
    *jobs*: processes the pilots and the *verify* runs are spread over (default: the CPUs
    this process may use, where forking is safe; the result is the same for any value). *on_rung(rung, rungs,
    candidates)* is called before each rung of the race (0-based), for progress, and
    *on_progress(share)* just before it (and at the end) with the share (0..1) of the race's
    planned work done, for an estimate of the time left. *scheduler*: a Dask scheduler's
    address (or a ``distributed.Client``) whose workers run the pilots (the same pick).
    Raises RecommendError (ScenarioError for *rounds*; ScenarioError of ``--scheduler``
    when the scheduler cannot be reached).
    """
    from .rng import Streams
    from .sim.measurement import measure
    from .tuning.race import recommend as race
    from .tuning.race import verify as check

    sc = _scenario(scenario)
    _check_rounds(sc, rounds)
    prepared = prepare(sc)
    m = None
    if rounds is not None:
        m = measure(sc, prepared.w0.size, rounds, Streams(sc.run.seed))
    rec = race(
        sc,
        prepared,
        lrs=lrs,
        budget_s=budget_s,
        target=target,
        measurement=m,
        alike=alike,
        jobs=jobs,
        on_rung=on_rung,
        on_progress=on_progress,
        scheduler=scheduler,
    )
    if verify:
        check(sc, rec, prepared, verify, jobs=jobs)
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
) -> list[Path]:
    """Draw every figure for run, compare or sweep *folders* into *out* (default
    ``<folder>/plots``) in each of *format* (``png``, ``pdf``, ``svg``; a list or
    ``"png,pdf"``) at *dpi* (PNG); *xscale* ``log`` or ``linear`` for the updates
    axis; return the file paths. Raises FolderError for a folder without runs,
    ValueError for an unknown format or scale. For Figure objects see :func:`figures`."""
    from .results.plots import plot_folders  # matplotlib is imported only when drawing

    formats = [f.strip() for f in format.split(",")] if isinstance(format, str) else list(format)
    if dpi is not None and not 10 <= dpi <= 1200:
        raise ValueError(f"dpi must be in 10..1200, got {dpi!r}")
    return plot_folders(
        folders, None if out is None else Path(out), window, formats=formats, dpi=dpi, xscale=xscale
    )


def figures(source: Any, *, window: tuple[float, float] | None = None, xscale: str = "log") -> dict:
    """The figures of *source* (a folder, Run, Comparison or list of runs) as
    matplotlib Figures by name (``loss_vs_time``, ..., ``timeline``, ``staleness``,
    ``update_rate``, ``bias`` and ``labels`` with per-label accuracy), to restyle or save as
    you like."""
    from .results import plots

    runs = _runs_of(source)
    out = {
        name.removesuffix(".png"): plots.curve_figure(runs, y, x, xscale)
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
