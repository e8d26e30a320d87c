"""The race's pilots on a Dask cluster: one actor per Dask worker, each keeping its paused pilots.

:class:`DaskStickyPool` has :class:`~netsim.tuning.pool.StickyPool`'s ``run`` (the same
placement: a pilot's tasks go to the actor where it first ran, the others longest first to
the least loaded), with Dask actors in place of forked processes. Each actor receives
``work`` once (the pilots' scenario, data and initial model) and runs with every native
thread pool limited to one thread, as the pool's processes do, so the outcomes, and the
pick, are those of a local race. Workers need netsim installed and the data at the same
paths.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError
from .pool import StickyPool

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["DaskStickyPool", "SchedulerError", "cluster_workers"]


class SchedulerError(ScenarioError):
    """The Dask scheduler cannot be used (``distributed`` missing, unreachable, no workers):
    a ScenarioError of ``--scheduler`` (one line, exit status 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("--scheduler", message)


class _Host:
    """A Dask actor holding ``work`` and the state it keeps between calls (paused pilots)."""

    def __init__(self, work: Callable) -> None:
        from threadpoolctl import threadpool_limits

        self.work = work
        self.limits = threadpool_limits(1)

    def run(self, batch: list) -> list:
        return [self.work(task) for task in batch]


class _CancelRaceFilter(logging.Filter):
    """Drops the traceback of a race in ``distributed.utils.sync``: an interrupt that lands
    before the waited call has started schedules a ``cancel`` that reads a variable not yet
    set, and tornado logs the NameError. Nothing is lost (there was nothing to cancel), so
    an interrupted run ends on its one-line summary, not on that traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, NameError):
            return True
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        frame = tb.tb_frame if tb is not None else None
        return not (
            frame is not None
            and frame.f_code.co_name == "cancel"
            and frame.f_globals.get("__name__") == "distributed.utils"
        )


_CANCEL_RACE = _CancelRaceFilter()


def quiet_cancel_race() -> None:
    """Install :class:`_CancelRaceFilter` on tornado's callback logger (once)."""
    logger = logging.getLogger("tornado.application")
    if _CANCEL_RACE not in logger.filters:
        logger.addFilter(_CANCEL_RACE)


def connect(
    scheduler: str | Client, error: type[Exception] = SchedulerError, option: str = ""
) -> tuple[Client, bool]:
    """(``distributed.Client``, whether the caller owns it and must close it) for an address
    or a Client (returned as is). Raises *error* when ``distributed`` is missing or the
    scheduler cannot be reached within ``netsim-scheduler-timeout`` of Dask's configuration
    (default 10 s; ``DASK_NETSIM_SCHEDULER_TIMEOUT=2s``), its message led by *option* (the
    flag the user gave), if any."""
    try:
        import dask.config
        from distributed import Client
    except ImportError:
        lead = f"{option} " if option else ""
        raise error(f"{lead}needs the 'distributed' package: pip install 'netsim[dask]'") from None
    quiet_cancel_race()
    if isinstance(scheduler, Client):
        return scheduler, False
    try:
        timeout = dask.config.get("netsim-scheduler-timeout", "10s")
        return Client(scheduler, timeout=timeout, set_as_default=False), True
    except (OSError, TimeoutError, ValueError) as exc:
        lead = f"{option}: " if option else ""
        raise error(f"{lead}cannot reach a Dask scheduler at {scheduler!r}: {exc}") from None


def cluster_workers(client: Client, scheduler: object) -> list[str]:
    """The addresses of the workers of *client*'s cluster (at *scheduler*), sorted.

    Raises SchedulerError (``--scheduler``, exit status 2) when it has none."""
    workers = sorted(client.scheduler_info().get("workers", {}))
    if not workers:
        raise SchedulerError(f"the Dask cluster at {scheduler!r} has no worker")
    return workers


class DaskStickyPool(StickyPool):
    """``work(task)`` over batches of tasks on one actor per worker of the Dask cluster at
    *scheduler* (an address ``tcp://host:8786`` or a ``distributed.Client``)."""

    def __init__(self, work: Callable, scheduler: str | Client) -> None:
        super().__init__(work, 1)
        self.client, self._own = connect(scheduler)
        try:
            workers = cluster_workers(self.client, scheduler)
        except SchedulerError:
            self.close()
            raise
        self.jobs = len(workers)
        with self.client.as_current():  # actors reach their workers through this client
            self.hosts: list[Any] = [  # actor proxies of _Host: a call returns a future
                self.client.submit(_Host, work, workers=[w], actor=True, pure=False).result()
                for w in workers
            ]

    def run(
        self,
        tasks: Sequence,
        keys: Sequence[Hashable | None],
        costs: Sequence[float],
        moved: Sequence[float] | None = None,
    ) -> list:
        """Outcomes of ``work(task)`` for every task, in task order (as ``StickyPool.run``)."""
        where = self.assign(keys, costs, moved)
        batches = {p: [j for j in range(len(tasks)) if where[j] == p] for p in range(self.jobs)}
        out: list = [None] * len(tasks)
        with self.client.as_current():
            pending = {
                p: self.hosts[p].run([tasks[j] for j in js]) for p, js in batches.items() if js
            }
            for p, future in pending.items():
                for j, value in zip(batches[p], future.result()):
                    out[j] = value
        return out

    def close(self, kill: bool = False) -> None:
        """Let the actors go (their pilots with them); close a client this pool opened."""
        self.hosts = []
        if getattr(self, "_own", False):
            self.client.close()
            self._own = False
