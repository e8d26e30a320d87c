"""Tasks on a Dask cluster, their results taken as they finish (sweeps and comparisons).

:func:`dask_results` calls ``fn(item)`` on the cluster's workers for every item and yields
``(index, value, error)`` in completion order: *value* is what ``fn`` returned, *error*
the exception it raised (then *value* is None). ``fn`` must be a module-level function
and the items picklable; workers need netsim installed and the data at the same paths.
Results come back to the client, so no file system needs to be shared.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

from .dask_pool import cluster_workers

if TYPE_CHECKING:
    from distributed import Client, Future

__all__ = ["dask_results", "cluster_workers", "Outcome"]

Outcome = tuple[int, Any, BaseException | None]


def dask_results(
    fn: Callable, items: list, client: Client, one_each: Sequence[str] | None = None
) -> Generator[Outcome, None, None]:
    """``fn(item)`` for every item on the cluster of *client*, in completion order.

    Without *one_each* every task is submitted at once and the scheduler places them.
    With *one_each* (worker addresses, :func:`cluster_workers`) at most one task is in
    flight on each of those workers: the next item goes to the worker that finished one
    (anywhere, should that worker leave), so a worker's tasks run one after another.
    Task keys start with ``netsim-run``. When the consumer stops early (an interrupt),
    the tasks not finished are cancelled (one already running on a worker runs to its end).
    """
    from distributed import as_completed

    token = uuid.uuid4().hex[:12]
    queue = list(range(len(items)))
    index: dict[Future, int] = {}
    home: dict[Future, str | None] = {}

    def submit(worker: str | None) -> Future:
        i = queue.pop(0)
        future = client.submit(
            fn,
            items[i],
            key=f"netsim-run-{token}-{i}",
            pure=False,
            workers=None if worker is None else [worker],
            allow_other_workers=worker is not None,
        )
        index[future], home[future] = i, worker
        return future

    if one_each:
        first = [submit(w) for w in list(one_each)[: len(items)]]
    else:
        first = [submit(None) for _ in range(len(items))]
    finished = as_completed(first, loop=client.loop)
    try:
        for future in finished:
            try:
                value, error = future.result(), None
            except Exception as exc:  # the task's own error, or a lost/cancelled task
                value, error = None, exc
            future.release()
            if one_each and queue:  # before the caller handles this one: no worker waits
                finished.add(submit(home[future]))
            yield index[future], value, error
    finally:
        client.cancel([f for f in index if not f.done()])
