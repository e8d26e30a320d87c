"""A worker: pull the model, compute a minibatch gradient, push it; repeat."""
from __future__ import annotations

import numpy as np
import simpy

from .rules.base import Push

__all__ = ["WorkerState", "worker_process", "BatchSampler"]

IDLE, COMM, COMPUTE = 0, 1, 2


class WorkerState:
    """Mutable state of one worker, shared between its process and the PS.

    Time spent (s) is accumulated per phase: ``spent[IDLE]``, ``spent[COMM]``,
    ``spent[COMPUTE]``; ``phase``/``since`` say what it is doing now.
    """
    __slots__ = ("wid", "wake", "released", "process", "interruptible", "phase", "since",
                 "spent", "pushed", "applied", "dropped", "slowdown")

    def __init__(self, wid: int):
        self.wid = wid
        self.wake = None
        self.released = False
        self.process = None
        self.interruptible = False
        self.phase = IDLE
        self.since = 0.0
        self.spent = [0.0, 0.0, 0.0]
        self.pushed = 0
        self.applied = 0
        self.dropped = 0
        self.slowdown = 1.0

    def enter(self, phase: int, now: float) -> None:
        """Close the current phase at *now* and start *phase*."""
        self.spent[self.phase] += now - self.since
        self.phase = phase
        self.since = now


class BatchSampler:
    """Minibatches from one worker's shard: epochs of a fresh random order.

    Parameters
    ----------
    shard : ndarray of int, shape (n,), row indices owned by the worker.
    batch_size : int (clipped to n).
    rng : numpy Generator of this worker's batch stream.
    """

    def __init__(self, shard: np.ndarray, batch_size: int, rng: np.random.Generator):
        self.shard = shard
        self.size = min(batch_size, len(shard))
        self.rng = rng
        self.order = shard[:0]
        self.pos = 0

    def next(self) -> np.ndarray:
        """Row indices of the next minibatch, ndarray (batch_size,)."""
        if self.pos + self.size > len(self.order):
            self.order = self.shard[self.rng.permutation(len(self.shard))]
            self.pos = 0
        start = self.pos
        self.pos = start + self.size
        return self.order[start:self.pos]


def worker_process(env, st: WorkerState, ps, comm, gradient, X, y, sampler: BatchSampler, draws):
    """SimPy process of worker ``st.wid``.

    Waits until the PS sends it a model, pulls it (``comm.pull``), computes for a
    drawn time (scaled by ``st.slowdown``), evaluates ``gradient(w, X_b, y_b)``,
    pushes it (``comm.push``) and hands it to ``ps.receive``. A preemption during
    the pull or the computation discards the work and restarts on the current model.
    """
    wid = st.wid
    timeout = env.timeout
    while True:
        if st.released:
            st.released = False
            w, version = ps.w, ps.version
        else:
            st.wake = env.event()
            w, version = yield st.wake
            st.wake = None
        try:
            st.interruptible = True
            event = comm.pull(wid)
            if event is not None:
                st.enter(COMM, env.now)
                yield event
            st.enter(COMPUTE, env.now)
            yield timeout(next(draws) * st.slowdown)
        except simpy.Interrupt:
            st.interruptible = False
            st.enter(IDLE, env.now)
            st.released = True
            continue
        st.interruptible = False
        rows = sampler.next()
        grad = gradient(w, X[rows], y[rows])
        event = comm.push(wid)
        if event is not None:
            st.enter(COMM, env.now)
            yield event
        st.enter(IDLE, env.now)
        ps.receive(Push(wid, grad, version, env.now, len(rows)))
