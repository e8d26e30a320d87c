"""The models a real run's server keeps for its curve, evaluated after the run.

The server copies its model at every evaluation time and goes on serving. Copying into
freshly allocated memory costs page faults: for an 8 MB model (1 M float64 values) about
5–15 ms on a loaded 2-core machine, against 0.3 ms into memory already touched. At 0.05 s
per time unit and one evaluation per unit that was 9 % of the server's time, taken from its
service of the workers (a real run then made fewer updates than the emulation of the same
server). :class:`Snapshots` allocates and touches the rows the run's time-based evaluations
need before the run starts, so a snapshot is a plain copy. Snapshots beyond them (those
taken every ``run.eval_every_updates`` updates, whose number is not known in advance) go
into fresh memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

__all__ = ["Snapshots", "time_snapshots"]


def time_snapshots(until: float, eval_every: float) -> int:
    """Models a run of *until* time units keeps with one evaluation every *eval_every*
    units (0: none): the initial one and one per evaluation time before *until*.

    >>> time_snapshots(100.0, 1.0), time_snapshots(10.0, 3.0), time_snapshots(5.0, 0.0)
    (100, 4, 1)
    """
    if not eval_every:
        return 1
    return 1 + max(0, math.ceil(until / eval_every) - 1)


class Snapshots:
    """Kept models: (update count, time (units), model (d,)) in the order taken.

    Parameters
    ----------
    w0 : ndarray (d,), the initial model (kept as the first snapshot).
    capacity : rows allocated (and touched) up front, the initial one included.
    """

    def __init__(self, w0: np.ndarray, capacity: int) -> None:
        self.rows = np.empty((max(1, capacity), w0.size), dtype=w0.dtype)
        self.rows.fill(0)  # touch every page now, not while the server serves
        self.kept: list[tuple[int, float, np.ndarray]] = []
        self.take(0, 0.0, w0)

    def take(self, version: int, at: float, w: np.ndarray) -> None:
        """Keep a copy of *w*, the model after *version* updates at time *at*."""
        n = len(self.kept)
        if n < self.rows.shape[0]:
            row = self.rows[n]
            np.copyto(row, w)
        else:
            row = w.copy()
        self.kept.append((version, at, row))

    def __iter__(self) -> Iterator[tuple[int, float, np.ndarray]]:
        return iter(self.kept)

    def __len__(self) -> int:
        return len(self.kept)
