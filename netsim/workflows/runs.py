"""One run from Python: the :class:`Run` handle and its DataFrames, and a run made into
its folder (claimed, rows written as it goes, summary.json at the end)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..config.grid import toml_value
from ..config.scenario import Scenario, load_scenario
from ..results.provenance import run_meta
from ..results.runfolder import (
    PHASES,
    RunData,
    RunWriter,
    folder_name,
    from_result,
    latest_folder,
    unique_folder,
)
from ..signals import held, stoppable
from ..sim.engine import Prepared, RunInterrupted, Simulation, data_bytes, free_cycles, prepare
from ..sim.records import Result
from ..sim.summary import Summary, flat
from ..tuning.race import decide

if TYPE_CHECKING:
    import pandas as pd

    from ..sim.records import Snapshot

__all__ = [
    "Run",
    "Runs",
    "run_into",
    "load",
    "scenario_of",
    "override_list",
    "default_out",
    "naming",
    "frame",
    "summary_frame",
    "old_name",
    "PathArg",
    "Overrides",
    "Progress",
]

PathArg = Union[str, "os.PathLike[str]"]
"""A file or folder: a string or a path."""
Overrides = Union[Mapping[str, Any], Sequence[str], None]
"""``--set`` overrides: ``{"run.until": 50}`` or ``["run.until=50"]``."""
Progress = Union["Callable[[Snapshot], None]", bool, str, None]
"""A snapshot callback, True (a line on stderr), ``"auto"`` (that, in Jupyter only) or None."""


def frame(columns: dict) -> "pd.DataFrame":
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("DataFrames need pandas: pip install 'netsim[pandas]'") from None
    return pd.DataFrame(columns)


def old_name(old: str, new: str) -> Callable[..., Any]:
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
        return frame(self.curve)

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame of the curve (as :meth:`curve_frame`); ``updates_frame`` and ``timeline_frame`` give the rest."""
        return self.curve_frame()

    to_frame = old_name("to_frame", "to_pandas")

    def updates_frame(self) -> "pd.DataFrame":
        """DataFrame: version, sim_time (s), worker, group, staleness — one row per applied gradient
        (and server_wait, server_service with a ``[server]``: docs/SERVER.md)."""
        return frame(self.updates)

    def timeline_frame(self) -> "pd.DataFrame":
        """DataFrame: worker, phase (idle|comm|compute|down; busy on the server's row, worker -1,
        with a ``[server]``), start, end (s); empty without a timeline."""
        tl = self.timeline or {"worker": [], "phase": [], "start": [], "end": []}
        return frame({**tl, "phase": [PHASES[p] for p in tl["phase"]]})

    def __repr__(self) -> str:
        s = self.summary
        loss = "-" if s["final_loss"] is None else f"{s['final_loss']:.5f}"
        return (
            f"<Run {s['scenario']} {self.label} seed={s['seed']}: {s['updates']} updates, "
            f"loss {loss}, status {s['status']}>"
        )


def summary_frame(runs: Iterable["Run"]) -> "pd.DataFrame":
    rows = [flat(r.summary) for r in runs]
    return frame({k: [row[k] for row in rows] for k in (rows[0] if rows else {})})


class Runs(list):
    """The runs read back from a folder (a list of :class:`Run`), with ``to_pandas()``."""

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame: one row per run with the summary fields (as in sweep.csv)."""
        return summary_frame(self)

    frame = old_name("frame", "to_pandas")
    to_frame = old_name("to_frame", "to_pandas")


def run_into(
    sc: Scenario,
    out: Path | None,
    progress: Callable[[Snapshot], object] | None,
    label: str | None = None,
    prepared: Prepared | None = None,
    overwrite: bool = False,
    progress_every: float | None = None,
) -> Run:
    """Run *sc* with its ``run.algorithm`` into the folder *out* (None: no files), as
    :func:`netsim.api.run` describes; *progress* a snapshot callback or None. Data loaded
    here (no *prepared*) is freed before it returns."""
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
            writer = RunWriter(out, overwrite=overwrite, scenario=sc, meta=meta)
            try:
                with stoppable(sim):
                    result = sim.run(progress, progress_every, sink=writer.flush)
            except RunInterrupted as stop:
                stop.summary = writer.finish(stop.result)
                raise
            except BaseException:
                writer.close()
                raise
            done = Run(from_result(result, out, writer.finish(result)), result)
    if own:
        size = data_bytes(prepared.dataset)
        del sim, prepared
        free_cycles(size)
    return done


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
        override_list(overrides),
        seed=seed,
        algorithm=algorithm,
        data_dir=str(data_dir) if data_dir is not None else None,
    )


def override_list(overrides: Overrides) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{key}={toml_value(value)}" for key, value in overrides.items()]
    return list(overrides)


def scenario_of(
    scenario: Scenario | PathArg,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
) -> Scenario:
    """A loaded Scenario (a file or preset name is loaded) with the CLI's options applied:
    *overrides* (``--set``), *seed* (``--seed``), *data_dir* (``--data-dir``)."""
    if not isinstance(scenario, Scenario):
        return load(scenario, overrides, seed=seed, data_dir=data_dir)
    if seed is not None and not overrides and data_dir is None:
        return scenario.with_seed(seed)  # the same scenario, its other sections not parsed again
    extra = override_list(overrides) + ([f"run.seed={seed}"] if seed is not None else [])
    if data_dir is not None:
        extra.append(f"data.dir={toml_value(str(Path(data_dir).resolve()))}")
    return scenario.with_overrides(extra) if extra else scenario


def default_out(scenario: Scenario, kind: str | None = None, *, resume: bool = False) -> Path:
    """The default output folder of a command: ``runs/<scenario>-<kind>`` (*kind*
    defaults to the scenario's algorithm), numbered ``-2``, ``-3``, ... so nothing
    is overwritten; with *resume*, the last folder of that series."""
    base = Path("runs") / f"{folder_name(scenario.name)}-{kind or scenario.run.algorithm}"
    return latest_folder(base) if resume else unique_folder(base)


@contextmanager
def naming(out: Path) -> Iterator[None]:
    """An interrupt (KeyboardInterrupt) leaving the block gets ``folder`` = *out*: the folder
    a command chose itself, for the caller to say what it holds."""
    try:
        yield
    except KeyboardInterrupt as exc:
        exc.folder = out  # type: ignore[attr-defined]
        raise
