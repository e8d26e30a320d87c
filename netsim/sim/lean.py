"""The lean worker: a worker as a SimPy callback, for runs that need no interruption.

:func:`netsim.sim.worker.worker_process` is a SimPy process: it can be pre-empted,
crash, wait for transfers that take time, and exposes its iteration to the PS
(``st.job``). When a run needs none of that (:func:`netsim.sim.engine.lean_reason`),
the engine uses :class:`LeanWorker` instead: the same iterations, drawn from the
same streams, pushed in the same order at the same simulated times, scheduled as
the same SimPy heap entries in the same order, so every result is bit-identical,
but without a generator to resume per event.
"""
from __future__ import annotations

from ..rules.base import Push
from .worker import COMPUTE, IDLE

__all__ = ["LeanWorker"]

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
    gradient : callable ``gradient(w, X_b, y_b)`` → ndarray (d,)
    y : ndarray (n,), training labels.
    sampler : BatchSampler of the worker's shard.
    draws : iterator of compute times (s).
    gather : RowGather of the training rows X (n, d).
    """
    __slots__ = ("env", "st", "ps", "gradient", "y", "sampler", "draw", "gather", "w", "version",
                 "callbacks", "_ok", "_value")

    def __init__(self, env, st, ps, gradient, y, sampler, draws, gather):
        self.env = env
        self.st = st
        self.ps = ps
        self.gradient = gradient
        self.y = y
        self.sampler = sampler
        self.draw = draws.__next__
        self.gather = gather
        self.w = None
        self.version = 0
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
        self.st.enter(COMPUTE, self.env.now)
        self._at(LeanWorker._push, self.draw())

    def _push(self) -> None:
        """The computation ended: the gradient of the next minibatch at the model read, pushed at once."""
        rows = self.sampler.next()
        grad = self.gradient(self.w, self.gather(rows), self.y[rows])
        now = self.env.now
        self.ps.receive(Push(self.st.wid, grad, self.version, now, self.sampler.size))
        self._next(now)
