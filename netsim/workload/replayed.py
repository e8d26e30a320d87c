"""Per-iteration times a real run measured, read back from its folder for a ``replay`` time model.

A real run (``netsim real``) writes ``measured_gradients.csv``: one row per iteration of
every worker, in scenario time units (real seconds / the run's time scale). This module
names its columns and reads one worker class's times out of it, so that an emulation can
replay the cluster the real run saw (:class:`netsim.workload.timemodels.Replay`).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

__all__ = [
    "GRADIENT_COLUMNS",
    "OPTIONAL_COLUMNS",
    "MEASURES",
    "GRADIENTS_FILE",
    "read_measured_times",
]

GRADIENTS_FILE = "measured_gradients.csv"
GRADIENT_COLUMNS = (
    "worker",  # worker id
    "worker_class",  # its class name
    "iteration",  # 0, 1, ... per worker
    "version_read",  # model version the gradient was computed on
    "sent",  # the PS sent the model (units)
    "compute_start",  # the worker started computing (units, on the PS clock)
    "compute_end",  # it finished computing and waiting (units)
    "arrived",  # the push reached the PS (units); empty: never pushed
    "served",  # the PS handed it to the rule (units); empty: never served
    "drawn",  # the compute time drawn from the scenario's time model (units)
    "compute_real_s",  # real time of the gradient computation (s)
    "wait_s",  # real time waited after it to fill the drawn time (s)
    "overrun_s",  # real time the computation took beyond the drawn time (s, 0 when it fit)
    "cycle",  # served - sent (units); an iteration not served: a lower bound (see complete)
    "complete",  # 1: served; 0: still in flight at the end (cycle is a lower bound)
    "load1",  # the machine's 1-minute load average when the worker pushed
    "pull_transfer_s",  # real s the model message took (without the injected pull latency)
    "push_transfer_s",  # real s the gradient message took (without the injected push latency)
    "service_s",  # real s the PS spent on the push (the rule, the step, the replies)
    "queued",  # pushes waiting at the PS when this one was served
    "compute_cpu_s",  # CPU s the worker's thread spent on the gradient (below compute_real_s:
    # the worker waited for a core); absent from folders an earlier netsim wrote
)
OPTIONAL_COLUMNS = frozenset({"compute_cpu_s"})
"""Columns of :data:`GRADIENT_COLUMNS` a reader does without."""
MEASURES = ("cycle", "compute")
"""What a replay reads of each iteration: ``cycle``, from the model's send to the push's
service at the PS (pull, compute, wait, push and queueing: in netsim's worker model a
worker reads the model at its send, so only this sum sets the schedule; replay it with no
latencies), or ``compute``, the worker's compute plus wait alone (replay it with the
transfer latencies of your own choosing)."""


def read_measured_times(
    folder: str | Path, worker_class: str, measure: str = "cycle"
) -> tuple[tuple[float, ...], ...]:
    """The times (units) of every iteration of each worker of *worker_class*, in worker id
    then iteration order, read from the real run *folder*'s :data:`GRADIENTS_FILE`.

    ``cycle``: the completed iterations, then the last one in flight, made to end one unit
    after the real run's end (its sent time + cycle), so a replay never finishes it within the
    real run's horizon; ``compute``: completed
    computations only. Raises ValueError with a message naming what is missing.
    """
    path = Path(folder) / GRADIENTS_FILE
    if not path.is_file():
        raise ValueError(
            f"{folder} holds no {GRADIENTS_FILE} (a folder written by `netsim real` does)"
        )
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path} cannot be read: {exc}") from None
    if rows and (lacking := set(GRADIENT_COLUMNS) - OPTIONAL_COLUMNS - set(rows[0])):
        raise ValueError(f"{path} lacks columns {sorted(lacking)}")
    per_worker: dict[int, list[tuple[int, float]]] = {}
    classes = set()
    for i, row in enumerate(rows, start=2):
        classes.add(row["worker_class"])
        if row["worker_class"] != worker_class:
            continue
        try:
            wid, it = int(row["worker"]), int(row["iteration"])
            complete = row["complete"] == "1"
            if measure == "cycle":
                value = float(row["cycle"]) + (0.0 if complete else float(row["sent"]) + 1.0)
            elif complete or row["compute_end"]:
                value = float(row["compute_end"]) - float(row["compute_start"])
            else:
                per_worker.setdefault(wid, [])
                continue
        except (KeyError, ValueError):
            raise ValueError(f"{path}: line {i} is malformed") from None
        if not (math.isfinite(value) and value > 0):
            value = 1e-12  # a time model's times are > 0; a zero-length step stays one
        per_worker.setdefault(wid, []).append((it, value))
    if not per_worker:
        have = ", ".join(sorted(classes)) or "none"
        raise ValueError(f"{path} has no worker of class {worker_class!r} (classes: {have})")
    times = tuple(tuple(v for _, v in sorted(per_worker[w])) for w in sorted(per_worker))
    if not all(times):
        empty = [w for w in sorted(per_worker) if not per_worker[w]]
        raise ValueError(f"{path}: workers {empty} of class {worker_class!r} have no {measure}")
    return times
