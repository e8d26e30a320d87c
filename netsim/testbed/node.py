"""What every process of a real run shares: the run's description, its setup and the rendezvous."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..config.scenario import Scenario
from ..sim.engine import Prepared

__all__ = [
    "RealSpec",
    "setup_child",
    "setup_process",
    "connect",
    "sleep_until",
    "torchrun_rank",
    "RENDEZVOUS_S",
]

RENDEZVOUS_S = 120.0
"""Longest wait (real s) for every process to join the rendezvous."""


@dataclass(frozen=True)
class RealSpec:
    """One real run: the *scenario* with rule *algorithm* (labelled *label*), its prepared
    data and initial model, the time *scale* (real s per scenario time unit), and the
    rendezvous address (*host*, *port*: torch's TCP store, on rank 0; *host* None: the
    address torchrun gives in ``MASTER_ADDR`` and ``MASTER_PORT``), and whether the run
    must keep the scenario's pace (*paced*)."""

    scenario: Scenario
    algorithm: str
    label: str
    prepared: Prepared
    scale: float
    host: str | None
    port: int | None
    paced: bool = True
    """False: a run that cannot keep the scenario's pace goes on and says so (it measures
    the machine: its messages and its server) instead of being refused or failing."""

    @property
    def world(self) -> int:
        """Processes: the server (rank 0) and one per worker (worker w is rank w + 1)."""
        return self.scenario.n_workers + 1

    @property
    def d(self) -> int:
        """Model parameters (entries of a model or gradient message's payload)."""
        return int(self.prepared.w0.size)


def setup_child(parent: int) -> None:
    """In a forked process of the run: leave Ctrl-C to the launcher (it stops the run),
    die with the launcher (``PR_SET_PDEATHSIG``, so no process outlives a killed launcher),
    then :func:`setup_process`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the launcher still ends every process
        pass
    if os.getppid() != parent:  # the launcher died before prctl took effect
        os._exit(1)
    setup_process()


def setup_process() -> None:
    """Compute on one thread (the run's processes share the machine's cores) and keep the
    garbage collector off what the process holds already."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    import torch

    torch.set_num_threads(1)
    gc.freeze()  # what the process inherited is never scanned: a full collection takes
    # tens of ms over torch's objects, a stall of the process in the middle of a message


def connect(spec: RealSpec, rank: int) -> tuple[Any, Any]:
    """Join the run's process group as *rank*; returns (up, down): the groups pushes
    (worker → server) and models (server → worker) travel on, kept apart so the server
    receives and sends at once without the two streams waiting on each other."""
    import torch.distributed as dist

    run_s = spec.scenario.run.until * spec.scale
    dist.init_process_group(
        "gloo",
        init_method="env://" if spec.host is None else f"tcp://{spec.host}:{spec.port}",
        rank=rank,
        world_size=spec.world,
        timeout=timedelta(seconds=RENDEZVOUS_S + 2 * run_s),
    )
    up = dist.new_group(list(range(spec.world)), backend="gloo")
    return up, dist.group.WORLD


def sleep_until(deadline: float) -> None:
    """Sleep until ``time.monotonic()`` reaches *deadline* (s)."""
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(left)


def torchrun_rank() -> tuple[int, int] | None:
    """(rank, world size) when this process was started by ``torchrun`` (its ``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``), else None."""
    env = os.environ
    if not all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        return None
    return int(env["RANK"]), int(env["WORLD_SIZE"])
