"""Parameter sweeps: plan and validate every point, run them locally or on Dask, resume, tables.

A sweep folder holds ``sweep.json`` (the plan: scenario, overrides, axes and
one entry per point), one run folder per point (``p000``, ``p001``, ... in
grid order), ``sweep.csv`` (one row per run) and ``sweep_summary.csv`` (mean
and 95 % CI per point, seeds pooled). A point's folder appears only once its
run has finished (written aside, then renamed), so ``--resume`` skips every
folder holding a ``summary.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.grid import (
    KEY_ALIASES,
    MAX_RUNS,
    SEED_KEY,
    Axis,
    Point,
    expand,
    parse_axis,
    seed_axis,
    toml_value,
)
from ..config.scenario import Scenario, load_scenario
from ..errors import ScenarioError
from ..results.provenance import run_meta
from ..results.runfolder import LOCK, OutputError, claim, strict_json, write_atomic, write_run
from ..results.tables import mean_ci, sweep_rows, to_csv
from ..sim.engine import check_data, data_bytes, free_cycles, prepare, simulate
from ..sim.summary import Summary
from ..tuning.race import decide
from ..workload.datasets import DataNotFoundError
from .executors import connect, dask_results, default_workers, local_results

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "Plan",
    "Task",
    "SweepOutcome",
    "SweepError",
    "SweepFailed",
    "plan_sweep",
    "run_sweep",
    "run_task",
    "to_axes",
]


class SweepError(ValueError):
    """The sweep folder cannot be used as asked (e.g. resuming another grid)."""


class SweepFailed(SweepError):
    """Every run of a sweep failed (raised an error)."""


@dataclass(frozen=True)
class Task:
    """One run of the sweep: its folder name, swept values and validated scenario."""

    folder: str
    values: dict
    scenario: Scenario


@dataclass(frozen=True)
class Plan:
    """A validated sweep: every point's scenario was loaded before anything runs."""

    scenario_path: str
    name: str
    sets: tuple
    data_dir: str | None
    axes: tuple
    tasks: tuple
    sha256: str

    @property
    def keys(self) -> list[str]:
        return [a.key for a in self.axes]

    def record(self) -> dict:
        """The content of ``sweep.json``."""
        return {
            "scenario": self.scenario_path,
            "scenario_sha256": self.sha256,
            "name": self.name,
            "sets": list(self.sets),
            "data_dir": self.data_dir,
            "axes": [{"key": a.key, "values": list(a.values)} for a in self.axes],
            "points": [{"folder": t.folder, "values": t.values} for t in self.tasks],
        }


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did: runs *executed* now, *skipped* (already finished),
    *failures* ``[(folder, message)]``, and the sweep.csv *rows* and mean/CI *table*."""

    out: Path
    plan: Plan
    executed: int = 0
    skipped: int = 0
    failures: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    table: list = field(default_factory=list)


def to_axes(grid: Mapping[str, Any] | Iterable[str | Axis]) -> list[Axis]:
    """Axes from ``["KEY=V1,V2", ...]``, ``{key: [values]}`` or Axis objects."""
    if isinstance(grid, Mapping):
        axes = []
        for key, values in grid.items():
            if (
                isinstance(values, (str, bytes))
                or not hasattr(values, "__iter__")
                or not len(values)
            ):
                raise ScenarioError(
                    f"grid {key}", f"expected a non-empty list of values, got {values!r}"
                )
            axes.append(Axis(KEY_ALIASES.get(key, key), tuple(values)))
        return axes
    return [g if isinstance(g, Axis) else parse_axis(g) for g in grid]


def _point_scenario(base: Scenario, point: Point, parsed: dict) -> Scenario:
    """*base* with *point*'s overrides; a last ``run.seed`` (``--seeds``) set by
    :meth:`~netsim.config.scenario.Scenario.with_seed` on the other keys' scenario, which
    *parsed* keeps for the next seeds (the same scenario as all overrides parsed at once).

    A point's other keys are the user's own ``KEY=VALUE`` overrides, of any section: they
    go through :meth:`~netsim.config.scenario.Scenario.with_overrides`, parsing the
    scenario again, since any key may change what the other sections allow (compare's
    variants, which set one rule's keys only, are made by replace:
    :meth:`~netsim.config.scenario.Scenario.with_rule_keys`)."""
    overrides = point.overrides()
    key, seed = point.values[-1] if point.values else ("", None)
    if key != SEED_KEY or isinstance(seed, bool) or not isinstance(seed, int):
        return base.with_overrides(overrides)
    others = tuple(overrides[:-1])
    if others not in parsed:
        parsed[others] = base.with_overrides(list(others)) if others else base
    return parsed[others].with_seed(seed)


def plan_sweep(
    scenario: Scenario | str | os.PathLike,
    grid: Mapping[str, Any] | Iterable[str | Axis],
    *,
    seeds: int = 1,
    sets: Iterable[str] = (),
    data_dir: str | None = None,
) -> Plan:
    """Expand *grid* (see :func:`to_axes`) × *seeds* and validate every point.

    ``seeds`` > 1 adds a last axis ``run.seed`` = s, s+1, ... from the scenario's
    seed. Raises ScenarioError naming the point and key of the first bad value,
    and :class:`netsim.workload.datasets.DataNotFoundError` when a point's data is missing.
    """
    if isinstance(scenario, Scenario):
        path, sets = Path(scenario.path), tuple(sets)
        base = scenario.with_overrides(sets)
        if data_dir is not None:
            base = base.with_overrides([f"data.dir={toml_value(str(Path(data_dir).resolve()))}"])
    else:
        path = Path(scenario)
        sets = tuple(sets)
        base = load_scenario(path, list(sets), data_dir=data_dir)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_RUNS:
        raise ScenarioError("--seeds", f"{seeds!r} is not allowed (1..{MAX_RUNS})", str(path))
    axes = to_axes(grid)
    if not axes and seeds == 1:
        raise ScenarioError(
            "--grid",
            "nothing to sweep: give --grid KEY=V1,V2,... and/or --seeds N (one run: netsim run)",
            str(path),
        )
    if seeds > 1:
        if SEED_KEY in [a.key for a in axes]:
            raise ScenarioError(
                "--seeds", f"{SEED_KEY} is already swept by --grid; drop --seeds", str(path)
            )
        axes.append(seed_axis(base.run.seed, seeds))
    points = expand(axes)
    width = max(3, len(str(len(points) - 1)))
    tasks = []
    parsed: dict[tuple[str, ...], Scenario] = {}  # a point's other keys, parsed once for its seeds
    for point in points:
        try:
            sc = _point_scenario(base, point, parsed)
        except ScenarioError as exc:
            raise ScenarioError(exc.key, f"{exc.message} {_at(point)}", exc.file) from None
        tasks.append(Task(f"p{point.index:0{width}d}", point.as_dict(), sc))
    labels: dict = {}
    for point, task in zip(points, tasks):
        try:  # missing files, and partitions leaving a worker without rows, are found before anything runs
            check_data(task.scenario, labels)
        except ScenarioError as exc:
            exc.file = exc.file or str(path)
            if len(points) > 1 and not isinstance(exc, DataNotFoundError):
                exc.message = f"{exc.message} {_at(point)}"
            raise
    sha = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    return Plan(
        str(path.resolve()),
        base.name,
        sets,
        str(Path(data_dir).resolve()) if data_dir else None,
        tuple(axes),
        tuple(tasks),
        sha,
    )


def _at(point: Point) -> str:
    """Where in the grid an error arose: ``(grid point 4: run.until=-1, run.seed=2)``."""
    return f"(grid point {point.index}: {', '.join(point.overrides())})"


def run_task(scenario: Scenario) -> dict[str, bytes]:
    """Run one point (in whatever process executes it) and return its run folder
    as ``{file name: bytes}``, so no file system needs to be shared."""
    started = datetime.now(timezone.utc)
    prepared = prepare(scenario)
    result = simulate(scenario, prepared=prepared, decide=decide)
    with tempfile.TemporaryDirectory(prefix="netsim-") as tmp:
        write_run(
            result,
            tmp,
            scenario=scenario,
            meta=run_meta(scenario, prepared.dataset.source, started, result.label),
        )
        files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.name != LOCK}
    size = data_bytes(prepared.dataset)
    del prepared, result
    free_cycles(size)  # a worker process runs many points: free this one's data now
    return files


def _store(out: Path, folder: str, files: dict[str, bytes]) -> None:
    try:
        _place(out, folder, files)
    except OSError as exc:
        raise OutputError(
            f"{out / folder}: cannot write: {exc.strerror or exc}; finished points are kept"
        ) from None


def _place(out: Path, folder: str, files: dict[str, bytes]) -> None:
    partial, final = out / f".{folder}.partial", out / folder
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    for name, data in files.items():
        (partial / name).write_bytes(data)
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)


def finished(folder: Path) -> bool:
    """A point is finished when its folder holds a summary.json."""
    return (folder / "summary.json").is_file()


def run_sweep(
    plan: Plan,
    out: str | os.PathLike,
    *,
    workers: int | None = None,
    scheduler: str | Client | None = None,
    resume: bool = False,
    on_done: Callable | None = None,
    overwrite: bool = False,
    on_start: Callable | None = None,
) -> SweepOutcome:
    """Run every point of *plan* into *out* and write sweep.csv and sweep_summary.csv.

    Runs execute locally in *workers* processes (default: the usable CPUs; 1 =
    in this process), or on the Dask cluster at *scheduler* (an address or a
    ``distributed.Client``). With *resume*, finished points are skipped; the plan
    must then equal the one in ``out/sweep.json``. ``on_done(done, total, folder,
    summary, error)`` is called after each run (summary None on error), ``on_start()``
    once the folder is claimed and checked, before the first run.
    A run that raises is reported in ``failures``; the others go on.
    The folder is claimed first (:func:`netsim.results.runfolder.claim`): another
    process writing there, or results there without *resume* or *overwrite*, raise
    OutputError; *resume* reuses only a folder holding a sweep (its ``sweep.json``).
    """
    resumable = (
        resume and (Path(out) / "sweep.json").is_file()
    )  # a sweep's folder, not a run's or a compare's
    try:
        held = claim(out, overwrite=overwrite and not resume, reuse=resumable)
    except OutputError as exc:
        if (Path(out) / "sweep.json").is_file() and not resume and "holds the results" in str(exc):
            raise OutputError(
                f"{out}: holds an earlier sweep; pass --resume to finish it, --overwrite "
                "to replace it, or choose another --out",
                exc.code,
            ) from None
        raise
    try:
        client, own = connect(scheduler) if scheduler is not None else (None, False)
        try:
            return _run(plan, Path(out), workers, client, resume, on_done, on_start)
        finally:
            if own and client is not None:
                client.close()
    finally:
        held.release()


def _run(
    plan: Plan,
    out: Path,
    workers: int | None,
    client: Client | None,
    resume: bool,
    on_done: Callable | None,
    on_start: Callable | None,
) -> SweepOutcome:
    out.mkdir(parents=True, exist_ok=True)
    record = json.loads(json.dumps(plan.record(), default=str))
    if (
        resume
        and (out / "sweep.json").is_file()
        and json.loads((out / "sweep.json").read_text()) != record
    ):
        raise SweepError(
            f"{out}/sweep.json holds another sweep (scenario, --set or --grid differ); "
            f"drop --resume to start over or choose another --out"
        )
    write_atomic(out / "sweep.json", strict_json(record, indent=2, default=str) + "\n")
    if on_start is not None:
        on_start()
    todo = [t for t in plan.tasks if not (resume and finished(out / t.folder))]
    outcome = SweepOutcome(out, plan, skipped=len(plan.tasks) - len(todo))
    results: Iterator[tuple[int, Any, BaseException | None]]
    if client is not None:
        results = dask_results(run_task, [t.scenario for t in todo], client)
    else:
        results = local_results(run_task, [t.scenario for t in todo], workers or default_workers())
    for i, files, error in results:
        task = todo[i]
        summary: Summary | None = None
        if error is None:
            _store(out, task.folder, files)
            summary = json.loads(files["summary.json"])
            outcome.executed += 1
        else:
            outcome.failures.append((task.folder, f"{type(error).__name__}: {error}"))
        if on_done is not None:
            on_done(
                outcome.skipped + outcome.executed + len(outcome.failures),
                len(plan.tasks),
                task.folder,
                summary,
                error,
            )
    outcome.rows, outcome.table = write_tables(plan, out)
    return outcome


def write_tables(plan: Plan, out: Path) -> tuple[list[dict], list[dict]]:
    """sweep.csv (finished runs in grid order) and sweep_summary.csv (per point, seeds pooled)."""
    points: list[tuple[str, dict, Summary]] = [
        (t.folder, t.values, json.loads((out / t.folder / "summary.json").read_text()))
        for t in plan.tasks
        if finished(out / t.folder)
    ]
    rows = sweep_rows(points)
    table = mean_ci(rows, [k for k in plan.keys if k != SEED_KEY])
    write_atomic(out / "sweep.csv", to_csv(rows))
    write_atomic(out / "sweep_summary.csv", to_csv(table))
    return rows, table
