"""A comparison on a Dask cluster (``netsim compare --scheduler``): the variants run on the
cluster's workers, their files are written here.

Each worker runs one variant at a time (:func:`~netsim.tuning.dask_tasks.dask_results`
with one task in flight per worker) and prepares the comparison's data, shards and initial
model once, on its first variant, as :func:`~netsim.workflows.compare.run_variants` does once
for all; it sends back the run's Result and ``meta.json``. This process writes each run's
folder with the writers of a local comparison, and ``compare.json`` (the finished runs, in
the plan's order) as each run finishes, so the files are those of a local comparison
(wall-clock fields aside). Workers need netsim installed and the data at the same paths.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.scenario import Scenario
from ..errors import ScenarioError
from ..results.provenance import run_meta
from ..results.runfolder import (
    CompareEntry,
    OutputError,
    claim,
    from_result,
    write_compare,
    write_run,
)
from ..signals import held
from ..sim.engine import Prepared, Simulation, data_bytes, free_cycles, prepare
from ..sim.records import Result
from ..tuning.dask_pool import connect
from ..tuning.dask_tasks import cluster_workers, dask_results
from ..tuning.race import decide
from .compare import Comparison, Variant
from .runs import Run

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["run_variants_dask", "run_on_worker", "VariantJob", "ClusterFailed", "as_failure"]


class ClusterFailed(RuntimeError):
    """A run of a comparison on Dask failed there (a worker lost, the task cancelled, an
    error in the run): one line naming the run and the error."""


def as_failure(error: BaseException, label: str) -> BaseException:
    """What a comparison raises for *error*, which run *label* raised on a worker: a
    scenario or output error as it is (exit status 2), anything else as ClusterFailed."""
    if isinstance(error, (ScenarioError, OutputError)):
        return error
    return ClusterFailed(f"{label}: failed on the Dask cluster: {type(error).__name__}: {error}")


@dataclass(frozen=True)
class VariantJob:
    """One variant sent to a worker: the comparison's *token* (a worker prepares the data
    once per token), its scenario *base* (whose data every variant shares) and the variant."""

    token: str
    base: Scenario
    variant: Variant


_PREPARED: dict[str, Prepared] = {}
"""This worker process's prepared data, by comparison token (the latest one only)."""
_LOCK = threading.Lock()
PREPARATIONS = [0]
"""How many times this process prepared a comparison's data (tests read it on workers)."""


def run_on_worker(job: VariantJob) -> tuple[Result, dict]:
    """Run *job*'s variant (on a Dask worker) on the comparison's data, prepared on this
    worker's first variant; (its Result, its ``meta.json`` dict)."""
    started = datetime.now(timezone.utc)
    v = job.variant
    sc = v.scenario.with_algorithm(v.algorithm)
    with _LOCK:  # one variant at a time in a process: they share one prepared data set
        prepared = _PREPARED.get(job.token)
        if prepared is None:
            _forget(None)
            prepared = _PREPARED[job.token] = prepare(job.base)
            PREPARATIONS[0] += 1
        result = Simulation(sc, None, prepared, v.label, decide=decide).run()
        meta = run_meta(sc, prepared.dataset.source, started, v.label)
    return result, meta


def _forget(token: str | None) -> None:
    """Drop this process's prepared data of comparison *token* (None: of any)."""
    for key in list(_PREPARED):  # a copy: a variant's thread may add one meanwhile
        if token is None or key == token:
            prepared = _PREPARED.pop(key, None)
            if prepared is not None:
                size = data_bytes(prepared.dataset)
                del prepared
                free_cycles(size)


def run_variants_dask(
    sc: Scenario,
    plan: Sequence[Variant],
    out: Path | None,
    scheduler: str | Client,
    on_run: Callable[[str, Run], None] | None = None,
    overwrite: bool = False,
) -> Comparison:
    """Run every variant of *plan* (:func:`~netsim.workflows.compare.variants` of *sc*) on
    the Dask cluster at *scheduler* (an address or a ``distributed.Client``), as
    :func:`~netsim.workflows.compare.run_variants` does here: the same runs, folders and
    ``compare.json``; *on_run(label, run)* as each run finishes (in the order they finish).

    Raises SchedulerError (``--scheduler``) when ``distributed`` is missing, the scheduler
    cannot be reached or has no worker; when a run fails on the cluster, its error as
    :func:`as_failure` gives it (the runs not finished are cancelled). An interrupt
    (KeyboardInterrupt) leaves the finished runs' folders whole and listed in
    compare.json, the others absent."""
    client, own = connect(scheduler)
    token = uuid.uuid4().hex
    try:
        workers = cluster_workers(client, scheduler)
        claimed = claim(out, overwrite=overwrite) if out is not None else None
        try:
            jobs = [VariantJob(token, sc, v) for v in plan]
            runs = _gather(client, workers, jobs, out, on_run, overwrite)
        finally:
            if claimed is not None:
                claimed.release()
        return Comparison({v.label: runs[k] for k, v in enumerate(plan)}, out)
    finally:
        _release(client, token, own)


def _gather(
    client: Client,
    workers: list[str],
    jobs: list[VariantJob],
    out: Path | None,
    on_run: Callable[[str, Run], None] | None,
    overwrite: bool = False,
) -> dict[int, Run]:
    """The runs of *jobs* by plan index, each written into ``out/<folder>`` (and
    compare.json rewritten) as it arrives."""
    runs: dict[int, Run] = {}
    entries: dict[int, CompareEntry] = {}
    with closing(dask_results(run_on_worker, jobs, client, workers)) as arriving:
        for k, value, error in arriving:
            v = jobs[k].variant
            if error is not None:
                raise as_failure(error, v.label) from error
            result, meta = value
            with held():  # a signal takes effect once the run's folder and compare.json are whole
                runs[k] = _keep(result, {**meta, "command": list(sys.argv)}, v, out, overwrite)
                if out is not None:
                    entries[k] = {**runs[k].summary, "folder": v.folder}
                    write_compare([entries[j] for j in sorted(entries)], out)
            if on_run is not None:
                on_run(v.label, runs[k])
    return runs


def _keep(result: Result, meta: dict, v: Variant, out: Path | None, overwrite: bool) -> Run:
    """The Run of *result*, its folder ``out/<v.folder>`` written (when *out* is given)."""
    if out is None:
        return Run(from_result(result), result)
    folder = out / v.folder
    sc = v.scenario.with_algorithm(v.algorithm)
    summary = write_run(result, folder, overwrite=overwrite, scenario=sc, meta=meta)
    return Run(from_result(result, folder, summary), result)


def _release(client: Any, token: str, own: bool) -> None:
    """Let the workers drop the comparison's data; close *client* when it is ours."""
    try:
        client.run(_forget, token, on_error="ignore")
    except Exception:  # a worker gone, or the client broken by an interrupt: nothing to free
        pass
    finally:
        if own:
            client.close()
