"""A real run (``netsim real``), netsim's predictions held against it (``netsim predict``)
and the calibration fitted to it (``netsim calibrate``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.scenario import Scenario
from ..errors import ScenarioError
from ..results.progress import resolve as resolve_progress
from ..results.provenance import run_meta
from ..results.runfolder import FolderError, check_writable, read_run, unique_folder
from ..signals import held
from ..sim.engine import prepare
from . import runs as one_run
from .options import PredictOptions, RealOptions, options_of
from .runs import PathArg, Progress, Run, default_out, frame, load, naming, scenario_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["real", "predict", "Prediction", "calibrate"]


def real(
    scenario: Scenario | PathArg,
    algorithm: str | None = None,
    *,
    time_scale: float,
    out: PathArg | None = None,
    progress: Progress = None,
    options: RealOptions | None = None,
    **fields: Any,
) -> Run | None:
    """Train *scenario* for real with rule *algorithm*: one parameter-server process and one
    process per worker over ``torch.distributed`` (gloo), each scenario time unit lasting
    *time_scale* real seconds (docs/VALIDATION.md). Writes the run folder *out* (default
    ``runs/<scenario>-real-<rule>``, numbered) as an emulated run does, plus
    ``measured_gradients.csv`` and ``measured_updates.csv``; returns the Run. *options*: a
    :class:`~netsim.workflows.options.RealOptions`, or its fields as keywords (*fields*):
    ``overrides``, ``seed``, ``data_dir``, ``label``, ``overwrite``, ``host``, ``port``,
    ``paced``.

    Refused before any process starts (ScenarioError): torch missing, a rule or feature
    emulated only, a time scale ≤ 0 or too small for this machine, more workers than it
    can run, a port in use (``port`` None: a free one on ``host``). ``paced`` False: a time scale
    whose messages and service the machine cannot fit into the scenario's times is run
    anyway, ending ``ok`` with ``real.unpaced`` saying how far it fell behind (the run then
    measures this machine's messages and server: hold it against a calibrated prediction,
    ``netsim predict``). A run stopped by Ctrl-C or
    SIGTERM, or whose worker died, ends every process and keeps its folder with status
    ``interrupted`` or ``failed``; nothing is raised for them (see ``Run.status``).

    Under ``torchrun`` (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` set),
    this process plays its rank only: rank 0 serves and writes the folder, rank w + 1 is
    worker w (it returns None); the world size must be the workers + 1."""
    from ..testbed.launch import check_real, prepare_spec, run_real, run_role
    from ..testbed.node import torchrun_rank

    opts = options_of(RealOptions, options, fields)
    label = opts.label
    sc = opts.scenario(scenario)
    algorithm = algorithm or sc.run.algorithm
    sc = sc.with_algorithm(algorithm)
    role = torchrun_rank()
    rendezvous: str | None = opts.host
    if role is None:
        port = check_real(sc, algorithm, time_scale, opts.host, opts.port)
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
        sc, algorithm, time_scale, label or algorithm, prepared, rendezvous, port, opts.paced
    )
    meta = run_meta(sc, prepared.dataset.source, started, label or algorithm)
    meta["real"] = {"time_scale": time_scale, "host": rendezvous, "port": port}
    callback = resolve_progress(progress)
    if role is not None:
        if (
            run_role(spec, role[0], folder, meta, overwrite=opts.overwrite, progress=callback)
            is None
        ):
            return None  # a worker's process: the run's folder is rank 0's
    else:
        run_real(spec, folder, meta, overwrite=opts.overwrite, progress=callback)
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
        return frame({k: [r.get(k) for r in self.rows] for k in self.rows[0]})


def _checked_variants(variants: Sequence[str], seeds: int) -> list[str]:
    """predict's *variants* as a list, each one known and *seeds* at least 1 (ScenarioError)."""
    from ..testbed.predict import VARIANTS

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
        one_run.run_into(
            scenario_of(scenario, seed=scenario.run.seed + k),
            out / (variant if k == 0 else f"{variant}-seed{k}"),
            resolve_progress(progress),
            variant,
            overwrite=True,
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
    options: PredictOptions | None = None,
    **fields: Any,
) -> Prediction:
    """Emulate the scenario of the real run in *folder* (``netsim real``'s) as netsim would
    predict it, in each of *variants* (default all of ``scenario``, ``calibrated``,
    ``replayed``: :mod:`netsim.testbed.predict`), each with ``seeds`` seeds (the run's seed,
    then the next ones), into *out* (default ``<folder>-predict``, numbered), and compare:
    updates, gradients applied, staleness per update, idle %, final loss, the time to
    *target* (default ``run.target_loss``, else half way from the real run's initial to its
    final loss) and the time of update N (half the real run's updates). ``calibrated`` fits
    the real runs in ``calibrate_from`` (default this one; others: held out). With ``plots``,
    the figures of the first seed's runs in ``out/plots``. *options*: a
    :class:`~netsim.workflows.options.PredictOptions`, or its fields as keywords (*fields*):
    ``seeds``, ``calibrate_from``, ``plots``, ``data_dir``. Raises FolderError for a folder
    that is not a real run's, or one that cannot be calibrated from when ``calibrated`` or
    ``calibrate_from`` was asked for (with the default variants it is left out, ``skipped``
    says why)."""
    from ..results.plots import plot_runs
    from ..testbed.predict import (
        VARIANTS,
        compare_rows,
        default_target,
        half_updates,
        metrics,
        variant_scenario,
    )

    opts = options_of(PredictOptions, options, fields)
    seeds, calibrate_from = opts.seeds, opts.calibrate_from
    folder = Path(folder)
    real_run = Run(read_run(folder))
    if "real" not in real_run.summary:
        raise FolderError(f"{folder}: not a real run's folder (netsim real writes one)")
    sc = load(folder / "scenario.toml", data_dir=opts.data_dir)
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
        naming(out),
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
        paths: list[Path] = []
        if opts.plots:
            values = {"real": real_run, **{v: rs[0] for v, rs in runs.items()}}
            data = [replace(r.data, label=name, group=name) for name, r in values.items()]
            paths = plot_runs(data, out / "plots")
        pred = Prediction(real_run, runs, target, rows, out, paths)
        pred.n, pred.skipped = n, skipped
        if fit is not None:
            pred.calibration = {
                k: fit[k] for k in ("server", "overhead", "quality", "notes", "scale")
            }
        return pred


def calibrate(
    folders: PathArg | Sequence[PathArg],
    *,
    time_scale: float | None = None,
    receiving: bool = False,
    cpu: bool = False,
) -> dict:
    """Fit the ``[server]`` keys and per-class overheads to the real runs in *folders* (one
    folder or several; several of different model sizes also give the per-parameter parts):
    :func:`netsim.testbed.calibrate_io.calibrate_folders`'s dict, in the units of
    *time_scale* (default: the first run's scale). *receiving*: fit the server's receiving
    thread too (``receive_time``; docs/VALIDATION.md says when it helps). *cpu*: fit the
    server's costs from its serving thread's CPU time (a server with cores of its own).
    Raises FolderError naming the folder or file that cannot be fitted (not a real run, too
    few updates, no CPU times for *cpu*)."""
    from ..testbed.calibrate_io import NotCalibratable, calibrate_folders

    if isinstance(folders, (str, os.PathLike)):
        folders = [folders]
    if time_scale is not None:
        from ..testbed.preflight import check_time_scale

        check_time_scale(time_scale)
    try:
        return calibrate_folders([Path(f) for f in folders], time_scale, receiving, cpu)
    except NotCalibratable as exc:
        raise FolderError(str(exc)) from None
