"""A worker: pull the model, compute a minibatch gradient, push it; repeat."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import simpy

from ..rules.base import CompactPush, Push
from ..workload.models import CompactGradient
from .records import PHASES

if TYPE_CHECKING:
    from ..net.comm import Comm

__all__ = ["WorkerState", "worker_process", "Computation", "BatchSampler", "RowGather", "Job"]

IDLE, COMM, COMPUTE, DOWN = (PHASES.index(name) for name in ("idle", "comm", "compute", "down"))


Gradient = Callable[[np.ndarray, Any, np.ndarray], np.ndarray]
"""A model's ``gradient(w (d,), X (b, n_features), y (b,))`` -> (d,)."""


class Server(Protocol):
    """What a worker reads of the parameter server and hands its pushes to."""

    w: np.ndarray
    version: int
    replicas: list[np.ndarray] | None
    replica_versions: list[int]

    def receive(self, push: Push) -> None: ...


class Wake(Protocol):
    """What wakes a waiting worker: a SimPy event, or a lean worker itself."""

    def succeed(self, value: Any, /) -> object: ...


class WorkerState:
    """Mutable state of one worker, shared between its process and the PS.

    Time spent (s) is accumulated per phase: ``spent[IDLE]``, ``spent[COMM]``,
    ``spent[COMPUTE]``; ``phase``/``since`` say what it is doing now (the phase of a
    push ends when the next one starts: at once if the worker is released, else when it
    starts waiting, idle, in the same instant). When ``spans``
    is a list, each finished phase is appended to it as (worker, phase, start, end).
    """

    __slots__ = (
        "wid",
        "wake",
        "released",
        "process",
        "phase",
        "since",
        "spent",
        "pushed",
        "applied",
        "dropped",
        "slowdown",
        "job",
        "spans",
        "revive",
        "down",
        "crashes",
    )

    def __init__(self, wid: int) -> None:
        self.wid = wid
        self.wake: Wake | None = None
        self.released = False
        self.process: simpy.Process | None = None
        self.phase = IDLE
        self.since = 0.0
        self.spent = [0.0, 0.0, 0.0, 0.0]
        self.pushed = 0
        self.applied = 0
        self.dropped = 0
        self.slowdown = 1.0
        self.spans: list[tuple[int, int, float, float]] | None = None
        self.revive: simpy.Event | None = None
        """Event a crashed worker waits on; the engine triggers it when the worker returns."""
        self.down = False
        self.crashes = 0
        """Crashes so far (tells a recovery that a later crash overtook it)."""
        self.job: Job | None = None
        """The iteration in progress (pull or computation), None otherwise; see :class:`Job`.
        Only a worker with a job can be pre-empted."""

    def ready(self, ps: Server, now: float) -> tuple[np.ndarray, int] | None:
        """The model ``(w, version)`` to start on at *now* (s) when the PS released the worker
        while it was busy (no idle time), else None: the worker waits for one, idle from the
        end of its last push."""
        if self.released:
            self.released = False
            if ps.replicas is not None:  # a rule without a PS: the worker's own model
                return ps.replicas[self.wid], ps.replica_versions[self.wid]
            return ps.w, ps.version
        if self.phase != IDLE:
            self.enter(IDLE, now)
        return None

    def enter(self, phase: int, now: float) -> None:
        """Close the current phase at *now* and start *phase*."""
        since = self.since
        self.spent[self.phase] += now - since
        if self.spans is not None and now > since:
            self.spans.append((self.wid, self.phase, since, now))
        self.phase = phase
        self.since = now


class Job:
    """One iteration of a worker as the PS may inspect it (added for ABS/LGC-style rules).

    Set when the worker takes a model, cleared when its computation ends (before
    the push) or is pre-empted. Read only through
    :meth:`netsim.sim.server.ParameterServer.reading` and ``collect``; the worker's
    own behaviour does not depend on it.

    Attributes
    ----------
    w : ndarray of shape (d,), the model read (an immutable snapshot).
    version : int, the PS version of *w*.
    start : float or None, simulated time (s) the computation began; None while pulling.
    duration : float, length (s) of the computation (0 while pulling).
    """

    __slots__ = ("w", "version", "start", "duration", "_source")

    def __init__(self, w: np.ndarray | None, version: int, source: MinibatchSource) -> None:
        self.w = w
        self.version = version
        self.start: float | None = None
        self.duration = 0.0
        self._source = source

    def rows(self) -> np.ndarray:
        """Row indices of the minibatch being computed, ndarray (batch_size,).

        They are the rows the worker will use when the computation ends
        (:meth:`BatchSampler.peek`), so a partial gradient covers a prefix of them.
        """
        return self._source.sampler.peek()

    def gradient(self, rows: np.ndarray) -> np.ndarray:
        """Mean gradient over *rows* at the model read, ndarray (d,)."""
        src = self._source
        if self.w is None:
            raise RuntimeError("the model read was let go (a compact gradient): no partial one")
        return src.gradient(self.w, src.X[rows], src.y[rows])


class MinibatchSource:
    """What a worker computes from, fixed for the whole run: its batch sampler, the
    model's ``gradient(w, X, y)`` and the training arrays *X* (n, d) and *y* (n,)."""

    __slots__ = ("sampler", "gradient", "X", "y")

    def __init__(self, sampler: BatchSampler, gradient: Gradient, X: Any, y: np.ndarray) -> None:
        self.sampler = sampler
        self.gradient = gradient
        self.X = X
        self.y = y


class BatchSampler:
    """Minibatches from one worker's shard: epochs of a fresh random order.

    Parameters
    ----------
    shard : ndarray of int, shape (n,), row indices owned by the worker.
    batch_size : int (clipped to n).
    rng : numpy Generator of this worker's batch stream.
    """

    def __init__(self, shard: np.ndarray, batch_size: int, rng: np.random.Generator) -> None:
        self.shard = shard
        self.size = min(batch_size, len(shard))
        self.rng = rng
        self.order = shard[:0]
        self.pos = 0

    def _refill(self) -> None:
        if self.pos + self.size > len(self.order):
            self.order = self.shard[self.rng.permutation(len(self.shard))]
            self.pos = 0

    def peek(self) -> np.ndarray:
        """The rows the next :meth:`next` will return, without consuming them.

        Draws from the generator exactly when :meth:`next` would, so peeking
        never changes the sequence of minibatches.
        """
        self._refill()
        return self.order[self.pos : self.pos + self.size]

    def next(self) -> np.ndarray:
        """Row indices of the next minibatch, ndarray (batch_size,)."""
        start = self.pos
        end = start + self.size
        if end > len(self.order):
            self._refill()
            start, end = 0, self.size
        self.pos = end
        return self.order[start:end]


class RowGather:
    """``X[rows]`` written into a reused scratch buffer (one per minibatch size).

    Gathering a minibatch (b, d) into the same preallocated array every time avoids a
    new allocation per gradient and keeps the destination in cache; the values are
    those of ``X[rows]``. The buffer is overwritten by the next call, so the caller
    must be done with it before (gradients and residuals are new arrays, so a worker
    is done with it when its gradient is computed; SimPy runs one worker at a time).
    Sparse *X* falls back to ``X[rows]``.
    """

    __slots__ = ("X", "buffers")

    def __init__(self, X: Any) -> None:  # ndarray (n, d) or a scipy sparse matrix
        self.X = X
        self.buffers: dict[int, np.ndarray] | None = (
            {} if isinstance(X, np.ndarray) and X.ndim == 2 else None
        )

    def __call__(self, rows: np.ndarray) -> Any:
        buffers = self.buffers
        if buffers is None:
            return self.X[rows]
        n = len(rows)
        buf = buffers.get(n)
        if buf is None:
            buf = buffers[n] = np.empty((n, self.X.shape[1]), dtype=self.X.dtype)
        return self.X.take(
            rows, 0, buf, "clip"
        )  # axis 0 into buf, positional (cheaper than keywords)


class Computation:
    """What every worker computes with, fixed for the run: the model's ``gradient(w, X, y)``,
    the training arrays *X* (n, d) and *y* (n,), the shared :class:`RowGather` of *X*, and
    for compact gradients ``residual`` (else None) and ``late`` (see :func:`worker_process`)."""

    __slots__ = ("gradient", "X", "y", "compact")

    def __init__(
        self,
        gradient: Gradient,
        X: Any,
        y: np.ndarray,
        residual: Callable[[np.ndarray, Any, np.ndarray], np.ndarray] | None = None,
        gather: RowGather | None = None,
        late: bool = False,
    ) -> None:
        self.gradient, self.X, self.y = gradient, X, y
        self.compact = (residual, gather or RowGather(X), late)


def worker_process(
    env: simpy.Environment,
    st: WorkerState,
    ps: Server,
    comm: Comm,
    how: Computation,
    sampler: BatchSampler,
    draws: Iterator[float],
) -> Generator[simpy.Event, Any, None]:
    """SimPy process of worker ``st.wid``.

    Waits for a model from the PS, pulls it (``comm.pull``), computes for a drawn time
    (× ``st.slowdown``), evaluates ``gradient(w, X_b, y_b)``, pushes it (``comm.push``) and
    hands it to ``ps.receive``. A preemption during the pull or the computation discards
    the work (:func:`_interrupted`); a crash also loses any model sent, and the worker is
    down until ``st.revive`` fires (:func:`_down`). ``st.job`` describes the iteration from
    taking the model to the end of the computation (read-only for the PS).

    *how* is the run's :class:`Computation`. With its *residual* (``model.residual``; L2 = 0) the push is a
    :class:`~netsim.rules.base.CompactPush`: the minibatch factor is evaluated once the model
    has arrived and the model is let go (same numbers, b·(1 + classes) values held instead of
    two d-vectors); with *late* too (the rule's ``reads_current``) it is evaluated when the
    computation ends. *gather* (:class:`RowGather` of *X*, shared by all workers) collects rows.
    """
    wid, timeout, size = st.wid, env.timeout, sampler.size  # size: rows of every minibatch
    gradient, X, y, residual, gather, late = how.gradient, how.X, how.y, *how.compact
    source = MinibatchSource(sampler, gradient, X, y)
    pull, push, receive = comm.pull, comm.push, ps.receive
    enter, next_draw = st.enter, draws.__next__
    instant = comm.instant[wid]  # no transfer ever takes time: pull and push are skipped
    job = Job(None, 0, source)  # reused: the PS reads it only through st.job, at once
    while True:
        try:
            if st.down:  # inside the try: a crash at the instant of return is handled too
                yield from _down(env, st)
                continue
            model = st.ready(ps, env.now)
            if model is None:
                st.wake = env.event()
                model = yield st.wake
                st.wake = None
            w, version = model
            model = None  # the tuple holds the snapshot too: only w may keep it (compact gradients let it go)
            if not instant:
                job.w, job.version, job.start, job.duration = w, version, None, 0.0
                st.job = job
                event = pull(wid)
                if event is not None:
                    enter(COMM, env.now)
                    yield event
            now = env.now
            enter(COMPUTE, now)
            duration = next_draw() * st.slowdown
            job.w, job.version, job.start, job.duration = w, version, now, duration
            st.job = job
            if residual is not None and not late:
                rows = sampler.peek()
                factor = residual(w, gather(rows), y[rows])
                w = job.w = None
            yield timeout(duration)
            st.job = None
            rows = sampler.next()
            if residual is None:
                grad = gradient(w, gather(rows), y[rows])
                w = job.w = None  # not held while the gradient travels (one copy per worker)
            elif late:
                factor = residual(w, gather(rows), y[rows])
            if not instant:
                event = push(wid)
                if event is not None:
                    enter(COMM, env.now)
                    yield event
            now = env.now
            receive(
                Push(wid, grad, version, now, size)
                if residual is None
                else CompactPush(wid, CompactGradient(X, rows, factor), version, now, size)
            )
        except simpy.Interrupt as interrupt:
            _interrupted(st, interrupt.cause, env.now)


def _down(env: simpy.Environment, st: WorkerState) -> Generator[simpy.Event, Any, None]:
    """A crashed worker's wait (SimPy sub-process) until ``st.revive`` fires."""
    st.enter(DOWN, env.now)
    st.revive = env.event()
    yield st.revive
    st.revive = None
    st.enter(IDLE, env.now)


def _interrupted(st: WorkerState, cause: object, now: float) -> None:
    """Drop the iteration in progress: a pre-emption keeps the model it was sent, a
    ``"crash"`` loses it (the rule sends one when the worker returns), a ``"recall"`` (a
    pre-emption by a server that takes time) waits for the model message it is sent."""
    st.job = st.wake = st.revive = None
    if cause != "recall":  # a recall's message may already be out (released): it is kept
        st.released = cause != "crash"
    if not st.down:
        st.enter(IDLE, now)
