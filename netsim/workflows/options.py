"""The settings of the front door's workflows, one frozen value per verb.

Each of :func:`netsim.run`, :func:`~netsim.compare`, :func:`~netsim.sweep`,
:func:`~netsim.real` and :func:`~netsim.predict` names its main arguments and takes the
rest as one of these values, given whole (``options=RunOptions(seed=7)``) or field by field
as keywords (``seed=7``), which :func:`options_of` turns into one (keywords win over the
value's fields). :class:`Inputs` are the changes made to a scenario before it runs: the
command line's ``--set``, ``--seed`` and ``--data-dir``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..config.scenario import Scenario
from .runs import Overrides, PathArg, scenario_of

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from ..sim.engine import Prepared
    from .runs import Run

__all__ = [
    "Inputs",
    "RunOptions",
    "CompareOptions",
    "SweepOptions",
    "RealOptions",
    "PredictOptions",
    "options_of",
]

T = TypeVar("T", bound="DataclassInstance")


def options_of(kind: type[T], options: T | None, fields: dict[str, Any]) -> T:
    """*options* (default: *kind*'s defaults) with the keyword *fields* put in (TypeError
    naming the class for a field it does not have)."""
    base = options if options is not None else kind()
    return replace(base, **fields) if fields else base


@dataclass(frozen=True)
class Inputs:
    """Changes to a scenario before it runs: *overrides* (``--set``: ``{"run.until": 50}`` or
    ``["run.until=50"]``), *seed* (``--seed``: ``run.seed``), *data_dir* (``--data-dir``)."""

    overrides: Overrides = None
    seed: int | None = None
    data_dir: PathArg | None = None

    def scenario(self, scenario: Scenario | PathArg) -> Scenario:
        """*scenario* (a Scenario, a file or a preset name) loaded, with these changes."""
        return scenario_of(scenario, self.overrides, self.seed, self.data_dir)


@dataclass(frozen=True)
class RunOptions(Inputs):
    """How :func:`netsim.run` runs, beyond the scenario's :class:`Inputs`.

    label : the run's name in its folder and tables (default: the rule).
    overwrite : replace the results of another run in ``out``.
    progress_every : simulated seconds between two progress snapshots (None: the default).
    prepared : data, shards and initial model already loaded for this scenario (reused).
    """

    label: str | None = None
    overwrite: bool = False
    progress_every: float | None = None
    prepared: Prepared | None = None


@dataclass(frozen=True)
class CompareOptions(Inputs):
    """How :func:`netsim.compare` runs, beyond the scenario's :class:`Inputs`.

    plots, window : draw the figures into ``out/plots`` (needs ``out``), the timeline over
        *window* (simulated seconds, start and end).
    on_run : ``on_run(label, run)`` is called as each run finishes.
    overwrite : replace the results of other runs in ``out``.
    scheduler : a Dask scheduler's address or ``distributed.Client`` whose workers run the
        variants (None: this process; :mod:`netsim.workflows.dask_compare`).
    """

    plots: bool = False
    window: tuple[float, float] | None = None
    on_run: Callable[[str, Run], None] | None = None
    overwrite: bool = False
    scheduler: Any = None


@dataclass(frozen=True)
class SweepOptions:
    """How :func:`netsim.sweep` runs.

    overrides, data_dir : as in :class:`Inputs`, applied to every point.
    jobs, scheduler : local processes (None: the usable CPUs; 1: this process; *workers* is
        its old name), or a Dask scheduler address or ``distributed.Client``.
    resume, overwrite : keep the finished runs of ``out``; replace another sweep's results.
    on_done, on_plan : called as each run ends; ``on_plan(plan, out)`` before the first run.
    """

    overrides: Overrides = None
    data_dir: PathArg | None = None
    jobs: int | None = None
    scheduler: Any = None
    resume: bool = False
    overwrite: bool = False
    on_done: Callable[..., None] | None = None
    on_plan: Callable[..., None] | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.jobs is not None and self.workers is not None and self.jobs != self.workers:
            raise ValueError("give jobs= (local processes) only; workers= is its old name")

    @property
    def processes(self) -> int | None:
        """The local processes asked for, by either name (None: the usable CPUs)."""
        return self.jobs if self.jobs is not None else self.workers


@dataclass(frozen=True)
class RealOptions(Inputs):
    """How :func:`netsim.real` runs, beyond the scenario's :class:`Inputs`.

    label, overwrite : as in :class:`RunOptions`.
    host, port : the rendezvous of the processes (*port* None: a free one on *host*).
    paced : False: run a time scale the machine cannot keep to anyway (``real.unpaced``).
    """

    label: str | None = None
    overwrite: bool = False
    host: str = "127.0.0.1"
    port: int | None = None
    paced: bool = True


@dataclass(frozen=True)
class PredictOptions:
    """How :func:`netsim.predict` emulates a real run.

    seeds : emulations per variant (the run's seed, then the next ones).
    calibrate_from : real run folders the ``calibrated`` variant is fitted to (default:
        the predicted one).
    plots : draw the first seed's figures into ``out/plots``.
    data_dir : as in :class:`Inputs`.
    """

    seeds: int = 3
    calibrate_from: Sequence[PathArg] | None = None
    plots: bool = True
    data_dir: PathArg | None = None
