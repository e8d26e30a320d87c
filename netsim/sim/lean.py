"""The lean worker: a worker as a SimPy callback, for runs that need no interruption.

:func:`netsim.sim.worker.worker_process` is a SimPy process: it can be pre-empted,
crash, wait for transfers that take time, and exposes its iteration to the PS
(``st.job``). When a run needs none of that (:func:`netsim.sim.engine.lean_reason`),
the engine uses :class:`LeanWorker` instead: the same iterations, drawn from the
same streams, pushed in the same order at the same simulated times, scheduled as
the same SimPy heap entries in the same order, so every result is bit-identical,
but without a generator to resume per event; and the gradients of the computations
that end at one simulated instant are evaluated together (:class:`InstantBatch`).
"""
from __future__ import annotations

import numpy as np

from ..rules.base import Push
from .worker import COMPUTE, IDLE

__all__ = ["LeanWorker", "InstantBatch"]

STACK_BYTES = 1 << 20
"""Most bytes of minibatch rows stacked in one product (about a core's L2 cache): a
larger stack is read back from slower memory, which costs more than the calls it saves."""

_URGENT, _NORMAL = 0, 1
"""SimPy's event priorities (``simpy.events.URGENT``, ``NORMAL``)."""


class LeanWorker:
    """Worker ``st.wid`` driven by callbacks: wait for a model, compute, push; repeat.

    The object is its own SimPy event: :meth:`_at` schedules it, and SimPy calls its
    one callback when its time comes. It is also the PS's wake-up handle: while the
    worker waits, ``st.wake`` is this object, and the PS's ``send`` calls
    :meth:`succeed` with ``(w, version)`` as it would on a process's wake event.

    Each heap entry is made where the process would make its own: the start at
    creation (the process's initialisation, urgent, at time 0), the wake-up when the
    PS sends a model (at once), the end of the computation (after the drawn time, s).
    The worker's phase times (``st.enter``), push count and the pushes themselves
    are those of the process, call by call.

    Parameters
    ----------
    env : simpy.Environment
    st : WorkerState
    ps : ParameterServer
    sampler : BatchSampler of the worker's shard.
    draws : iterator of compute times (s).
    batch : InstantBatch, shared by all workers.
    """
    __slots__ = ("env", "st", "ps", "sampler", "draw", "batch", "w", "version", "grad",
                 "callbacks", "_ok", "_value")

    def __init__(self, env, st, ps, sampler, draws, batch: "InstantBatch"):
        self.env = env
        self.st = st
        self.ps = ps
        self.sampler = sampler
        self.draw = draws.__next__
        self.batch = batch
        self.w = None
        self.version = 0
        self.grad = None
        """The gradient of the computation in progress once evaluated (by :class:`InstantBatch`)."""
        self._ok = True  # what SimPy reads of a processed event
        self._value = None
        self._at(LeanWorker._start, 0.0, _URGENT)

    def _at(self, callback, delay: float, priority: int = _NORMAL) -> None:
        """Have SimPy call ``callback(self)`` after *delay* s (the heap entry a process's event makes)."""
        self.callbacks = (callback,)
        self.env.schedule(self, priority, delay)

    def succeed(self, model) -> None:
        """The PS sends *model* ``(w, version)``: start computing on it at this instant."""
        self.w, self.version = model
        self._at(LeanWorker._compute, 0.0)

    def _start(self) -> None:
        """First iteration: the model the rule sent at the start, else wait for one."""
        self._next(self.env.now)

    def _next(self, now: float) -> None:
        st = self.st
        if st.released:  # the PS sent a model while the worker was busy: no idle time
            st.released = False
            ps = self.ps
            self.w, self.version = ps.w, ps.version
            self._compute()
        else:
            if st.phase != IDLE:
                st.enter(IDLE, now)
            st.wake = self

    def _compute(self) -> None:
        now = self.env.now
        self.st.enter(COMPUTE, now)
        duration = self.draw()
        self.batch.register(self, now + duration)  # the time SimPy computes for the entry below
        self._at(LeanWorker._push, duration)

    def _push(self) -> None:
        """The computation ended: the gradient of the next minibatch at the model read, pushed at once."""
        now = self.env.now
        grad = self.grad
        if grad is None:
            self.batch.evaluate(now)
            grad = self.grad
        self.grad = None
        self.ps.receive(Push(self.st.wid, grad, self.version, now, self.sampler.size))
        self._next(now)


class InstantBatch:
    """The gradients of the lean workers' computations that end at one simulated instant,
    evaluated together.

    Each worker registers the end of its computation (s); when the first of those
    ending at an instant ends, all of them are evaluated at once: each worker draws its
    next minibatch from its own sampler (the rows it would draw alone: one draw per
    computation, in order) and ``model.gradients`` computes them with one stacked product
    per step, bit for bit the gradients of ``model.gradient`` one by one, at the model each
    worker read. A gradient does not depend on what the PS does in between, so
    evaluating it early changes nothing but the number of numpy calls.
    Computations with minibatches of different sizes, models that do not stack
    (``model.stacked`` false) and sparse data are evaluated one by one.

    Parameters
    ----------
    model : Model
    y : ndarray (n,), training labels.
    gather : RowGather of the training rows X (n, d).
    """

    def __init__(self, model, y: np.ndarray, gather):
        self.model = model
        self.y = y
        self.gather = gather
        self.stacked = model.stacked and gather.buffers is not None
        self.ending: dict[float, list[LeanWorker]] = {}
        """End time (s) → the workers whose computation ends then, not yet evaluated."""

    def register(self, worker: LeanWorker, at: float) -> None:
        """*worker*'s computation ends at *at* (s)."""
        ending = self.ending.get(at)
        if ending is None:
            self.ending[at] = [worker]
        else:
            ending.append(worker)

    def evaluate(self, now: float) -> None:
        """Set ``grad`` of every worker whose computation ends at *now* (s)."""
        workers = self.ending.pop(now)
        rows = [wk.sampler.next() for wk in workers]
        k, b = len(rows), len(rows[0])
        model, y, gather = self.model, self.y, self.gather
        if k == 1 or not self.stacked or any(len(r) != b for r in rows):
            for wk, r in zip(workers, rows):
                wk.grad = model.gradient(wk.w, gather(r), y[r])
            return
        cap = max(1, STACK_BYTES // (b * gather.X.shape[1] * gather.X.itemsize))
        for lo in range(0, k, cap):
            part, prow = workers[lo:lo + cap], rows[lo:lo + cap]
            n = len(part)
            every = np.concatenate(prow)
            w = part[0].w
            W = w[None] if all(wk.w is w for wk in part) else np.stack([wk.w for wk in part])
            G = model.gradients(W, gather(every).reshape(n, b, -1), y[every].reshape(n, b))
            for wk, g in zip(part, G):
                wk.grad = g
