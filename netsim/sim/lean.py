"""Lean workers: workers as SimPy callbacks, for runs that need no interruption.

:func:`netsim.sim.worker.worker_process` is a SimPy process: it can be pre-empted,
crash, and exposes its iteration to the PS (``st.job``). When a run needs none of
that (:func:`netsim.sim.engine.lean_blocker`),
the engine uses a :class:`LeanCrew` instead: the same iterations, drawn from the
same streams, pushed in the same order at the same simulated times, with SimPy heap
entries in the same order, so every result is bit-identical; but no generator is
resumed per event, the wake-ups one ``send`` gives are one heap entry, and the
gradients of workers that read one model and finish at one simulated instant are
evaluated together (:class:`InstantBatch`).

Why the order is the same: SimPy runs entries by (time, priority, sequence number).
A worker makes its entries where its process would (its start, urgent, at time 0;
the end of each computation, after the drawn time), so only their numbers shift, by
the entries it does not make, which keeps their order. The wake-ups of one ``send``
are consecutive entries (nothing else is scheduled inside its loop), so running
them as one entry, in the same order, changes nothing either. For the same reason the
ends of the computations one ``send`` starts with equal drawn times (a GSGD group's
or an SSGD class's, under constant times) are one entry, the first such worker's,
which pushes for the others after itself, in order: their entries would have been
due at one time, with one priority and no entry between them (a lean run schedules
nothing urgent after its start, so nothing their pushes schedule can come first).
A pull or push that takes time is an event the worker waits on as its process would: its
callback, appended where the process appends its resumption, goes on from there. Once a
worker woken by a ``send`` has started a pull (which may make entries), the later ones'
computation ends no longer join an earlier one's entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from simpy.events import NORMAL as _NORMAL
from simpy.events import URGENT as _URGENT

from ..rules.base import Push
from .worker import COMM, COMPUTE, BatchSampler, RowGather, WorkerState

if TYPE_CHECKING:
    import simpy

    from ..net.comm import Comm
    from ..workload.base import Model
    from .server import ParameterServer

__all__ = ["LeanCrew", "LeanWorker", "InstantBatch"]

STACK_BYTES = 1 << 21
"""Most bytes of minibatch rows stacked in one product. A stack is read twice (once per
product), from the caches while it is small; more, smaller stacks cost more calls. On the
paper scenario (MNIST, 200 kB of rows per minibatch; ``benchmarks/bench_core.py``) 2 MiB
was the fastest: 1 MiB and 4 MiB about 2 % slower, 256 kiB 35 % slower."""

_NO_MODEL = np.empty(0)
"""A lean worker's model while it holds none (its gradient travels, or before its first)."""
_CLOSED = (_NO_MODEL, -1)
"""The model of a :class:`_Wakes` once due (no later send is the same)."""


class _Entry:
    """A reusable SimPy heap entry: SimPy calls ``callbacks[0](self)`` when it is due
    (all SimPy reads of a processed event are ``callbacks`` and ``_ok``); SimPy's type hints ask
    for an Event, hence the ``type: ignore`` where one is scheduled."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self) -> None:
        self.callbacks: tuple[Callable[[Any], None], ...] | None = None  # called with the entry
        self._ok = True
        self._value = None


class LeanCrew:
    """The lean workers of one run and what they share.

    Parameters
    ----------
    env : simpy.Environment
    ps : ParameterServer
    model : Model (its ``gradient`` and ``gradients``).
    y : ndarray (n,), training labels.
    gather : RowGather of the training rows X (n, d).
    """

    def __init__(
        self,
        env: simpy.Environment,
        ps: ParameterServer,
        model: Model,
        y: np.ndarray,
        gather: RowGather,
        comm: Comm | None = None,
    ) -> None:
        self.env = env
        self.ps = ps
        self.comm = comm
        """The run's communication model when transfers may take time (its ``instant``,
        ``pull`` and ``push``), else None."""
        self.instants = InstantBatch(model, y, gather)
        self.wakes: _Wakes | None = None
        """The wake-ups of the ``send`` in progress (one heap entry), until it is due."""

    def add(self, st: WorkerState, sampler: BatchSampler, draws: Iterator[float]) -> LeanWorker:
        """Worker ``st.wid`` with its minibatch *sampler* and compute-time iterator *draws* (s)."""
        self.instants.sizes.add(sampler.size)
        return LeanWorker(self, st, sampler, draws)


class _Wakes(_Entry):
    """The workers one ``send`` woke, in order, and the model ``(w, version)`` it sent."""

    __slots__ = ("model", "workers")

    def __init__(self, model: tuple[np.ndarray, int], worker: LeanWorker) -> None:
        super().__init__()
        self.model = model
        self.workers = [worker]
        self.callbacks = (_Wakes._due,)

    def _due(self) -> None:
        model, self.model = self.model, _CLOSED  # closed: a later send makes its own entry
        now = self.workers[0].env.now
        heads: dict | None = {}
        for worker in self.workers:
            worker.w, worker.version = model
            if worker._begin(now, heads):
                heads = None  # entries made since: a later end no longer follows an earlier one


class LeanWorker(_Entry):
    """Worker ``st.wid`` driven by callbacks: wait for a model, compute, push; repeat.

    The object is its own SimPy heap entry (for its start and the end of each
    computation). It is also the PS's wake-up handle: while the worker waits,
    ``st.wake`` is this object, and the PS's ``send`` calls :meth:`succeed` with
    ``(w, version)`` as it would on a process's wake event. The worker's phase times
    (``st.enter``), push count and pushes are those of the process, call by call.

    Parameters
    ----------
    crew : LeanCrew
    st : WorkerState
    sampler : BatchSampler of the worker's shard.
    draws : iterator of compute times (s).
    """

    __slots__ = (
        "crew",
        "env",
        "st",
        "sampler",
        "draw",
        "w",
        "version",
        "grad",
        "ps",
        "wid",
        "ending",
        "pushed",
        "step",
        "followers",
        "link",
        "held",
    )

    def __init__(
        self, crew: LeanCrew, st: WorkerState, sampler: BatchSampler, draws: Iterator[float]
    ) -> None:
        super().__init__()
        self.crew = crew
        self.env = crew.env
        self.ps = crew.ps
        self.st = st
        self.wid = st.wid
        self.sampler = sampler
        self.draw = draws.__next__
        self.ending = None if getattr(crew.ps.rule, "solo", False) else crew.instants.ending
        """Where the end of each computation is registered for stacking (``InstantBatch.ending``),
        None for a ``solo`` rule (ASGD)."""
        self.w = _NO_MODEL
        self.version = 0
        self.grad: np.ndarray | None = None
        """The gradient of the computation in progress once evaluated (by :class:`InstantBatch`)."""
        self.pushed = _PUSH if self.ending is not None else _PUSH_SOLO
        """The callback that ends a computation: with or without the stacking bookkeeping."""
        self.step: tuple | None = None
        """A solo rule's ``solo_step`` for this worker, (η, group) or () (none), once known."""
        self.link: Comm | None = (
            None if crew.comm is None or crew.comm.instant[st.wid] else crew.comm
        )
        """The communication model when this worker's pull and push may take time (it waits
        for each transfer's event), else None (no transfer)."""
        self.held: np.ndarray | None = None
        """The gradient being pushed, while its transfer is under way."""
        self.followers: list | None = None
        """The workers whose computations, started by the same ``send`` with the same drawn
        time, end in this worker's entry (they push after it, in order), or None."""
        self.callbacks = (LeanWorker._start,)
        # as SimPy initialises a process (an int 0 keeps time 0 an int)
        self.env.schedule(self, _URGENT, 0)  # type: ignore[arg-type]  # an _Entry, not an Event

    def succeed(self, model: tuple[np.ndarray, int]) -> None:
        """The PS sends *model* ``(w, version)``: start computing on it at this instant
        (after the entries already due now), with the others the same ``send`` woke."""
        crew = self.crew
        wakes = crew.wakes
        if wakes is not None and wakes.model is model:  # the same send: one entry
            wakes.workers.append(self)
        else:
            crew.wakes = wakes = _Wakes(model, self)
            self.env.schedule(wakes, _NORMAL, 0)  # type: ignore[arg-type]  # an _Entry, not an Event

    def _start(self) -> None:
        """First iteration: the model the rule sent at the start, else wait for one."""
        self._next(self.env.now)

    def _next(self, now: float) -> None:
        model = self.st.ready(self.ps, now)
        if model is None:
            self.st.wake = self
        else:
            self.w, self.version = model
            self._begin(now)

    def _begin(self, now: float, heads: dict | None = None) -> bool:
        """Start an iteration on the model read: pull it, then compute on it when it has
        arrived; False when the pull takes no time (the computation starts now, with
        *heads* as in :meth:`_compute`, no entry made before it)."""
        event = None if self.link is None else self.link.pull(self.wid)
        if event is None:
            self._compute(now, heads)
            return False
        self.st.enter(COMM, now)
        event.callbacks.append(self._pulled)
        return True

    def _pulled(self, _event: simpy.Event) -> None:
        self._compute(self.env.now)

    def _compute(self, now: float, heads: dict | None = None) -> None:
        """Start computing at *now* (s) on the model read.

        *heads*: {drawn time s: worker} of the computations the ``send`` in progress has
        started so far; one with the same drawn time ends in that worker's entry."""
        self.st.enter(COMPUTE, now)
        duration = self.draw()
        ending = self.ending
        if ending is not None:  # the end of this computation, for stacking
            key = (now + duration, self.version)  # the time SimPy computes for the entry below
            same = ending.get(key)
            if same is None:
                ending[key] = [self]
            else:
                same.append(self)
        if heads is not None:
            head = heads.get(duration)
            if head is not None:
                if head.followers is None:
                    head.followers = [self]
                    head.callbacks = _PUSH_ALL
                else:
                    head.followers.append(self)
                return
            heads[duration] = self
        self.callbacks = self.pushed
        self.env.schedule(self, _NORMAL, duration)  # type: ignore[arg-type]  # an _Entry, not an Event

    def _push_all(self) -> None:
        """The end of this worker's computation and of its followers': each pushes, in order."""
        followers, self.followers = self.followers, None
        self.callbacks = self.pushed  # the entry is the worker's again for its next computation
        self.pushed[0](self)
        for worker in followers or ():
            worker.pushed[0](worker)

    def _push(self) -> None:
        """The computation ended: the gradient of the next minibatch at the model read, pushed at once."""
        now = self.env.now
        grad = self.grad
        if grad is None:
            grad = self.crew.instants.gradient(self, now)
        self.grad = None
        if self.link is not None and self._send(self.link, grad, now, self._pushed):
            return
        self.ps.receive(Push(self.wid, grad, self.version, now, self.sampler.size))
        self._next(now)

    def _send(
        self, link: Comm, grad: np.ndarray, now: float, then: Callable[[simpy.Event], None]
    ) -> bool:
        """Push *grad* (d,) over *link*; *then(event)* takes over when it has arrived. False
        when the push takes no time."""
        event = link.push(self.wid)
        if event is None:
            return False
        self.st.enter(COMM, now)
        self.held = grad
        self.w = _NO_MODEL  # the model read is not needed while its gradient travels
        event.callbacks.append(then)
        return True

    def _pushed(self, _event: simpy.Event) -> None:
        """The gradient pushed has arrived: the PS takes it."""
        now = self.env.now
        grad, self.held = cast(np.ndarray, self.held), None  # held while it travelled
        self.ps.receive(Push(self.wid, grad, self.version, now, self.sampler.size))
        self._next(now)

    def _push_solo(self) -> None:
        """:meth:`_push` for a ``solo`` rule: the gradient is always evaluated alone; with
        the rule's ``solo_step`` (ASGD) the PS takes it in one call (``apply_solo``)."""
        now = self.env.now
        sampler = self.sampler
        rows = sampler.next()
        instants = self.crew.instants
        grad = instants.one(self.w, instants.gather(rows), instants.y[rows])
        if self.link is not None and self._send(self.link, grad, now, self._solo_pushed):
            return
        self._apply_solo(grad, now)

    def _solo_pushed(self, _event: simpy.Event) -> None:
        grad, self.held = cast(np.ndarray, self.held), None  # held while it travelled
        self._apply_solo(grad, self.env.now)

    def _apply_solo(self, grad: np.ndarray, now: float) -> None:
        """A ``solo`` rule's PS takes *grad*, pushed by now (s); the next iteration starts."""
        sampler = self.sampler
        ps = self.ps
        step = self.step
        if step is None:  # first push: the rule has started (solo_step needs its groups)
            self.step = step = ps.rule.solo_step(self.wid) or ()
        if step:
            ps.apply_solo(self.wid, grad, self.version, now, sampler.size, step[0], step[1])
        else:
            ps.receive(Push(self.wid, grad, self.version, now, sampler.size))
        st = self.st
        if (
            not st.released
        ):  # not sent the new model (a solo rule's stop, or a crash): the general way
            self._next(now)
            return
        st.released = False  # _next and _compute for the usual case, inlined (once per gradient)
        self.w, self.version = ps.w, ps.version
        if self.link is not None:
            self._begin(now)
            return
        st.enter(COMPUTE, now)
        self.callbacks = _PUSH_SOLO
        self.env.schedule(self, _NORMAL, self.draw())  # type: ignore[arg-type]  # an _Entry, not an Event


_PUSH = (LeanWorker._push,)
_PUSH_SOLO = (LeanWorker._push_solo,)
_PUSH_ALL = (LeanWorker._push_all,)


class InstantBatch:
    """The gradients of the lean workers' computations that end at one simulated instant,
    evaluated together.

    Each worker registers the end of its computation (s) in ``ending``; when the first of those
    ending at an instant asks for its gradient, the workers among them that read one
    model (an SSGD round, a GSGD group) are evaluated at once: each draws its next
    minibatch from its own sampler (the rows it would draw alone: one draw per
    computation, in order) and ``model.gradients`` computes theirs with one stacked
    product per step, bit for bit the gradients of ``model.gradient`` one by one. A
    gradient does not depend on what the PS does in between, so evaluating it early
    changes nothing but the number of numpy calls. A worker alone on its model (ASGD:
    copying the models into a stack costs more than the calls it saves), minibatches of
    different sizes, models that do not stack (``model.stacked`` false) and sparse data
    are evaluated one by one, each when its worker pushes.

    Parameters
    ----------
    model : Model
    y : ndarray (n,), training labels.
    gather : RowGather of the training rows X (n, d).
    """

    def __init__(self, model: Model, y: np.ndarray, gather: RowGather) -> None:
        self.one = model.gradient
        """The model's ``gradient(w, X, y)``: one minibatch."""
        self.many = model.gradients
        """The model's ``gradients(W, Xs, Ys)``: a stack of minibatches."""
        self.y = y
        self.gather = gather
        self.X = gather.X
        self.stacked = model.stacked and gather.buffers is not None
        self.row_bytes = self.X.shape[1] * self.X.itemsize if self.stacked else 0
        self.rows: np.ndarray | None = None
        """Scratch (m, n_features) for a stack's rows, grown to the largest stack (at most
        about :data:`STACK_BYTES` plus one minibatch), reused."""
        self.sizes: set[int] = set()
        """The minibatch sizes of the workers (one size: every stack is of one size)."""
        self.ending: dict[tuple[float, int], list[LeanWorker]] = {}
        """(end time s, model version read) → the workers whose computation ends then on
        that model, not yet evaluated (each worker adds itself as it starts computing)."""

    def gradient(self, worker: LeanWorker, now: float) -> np.ndarray:
        """The gradient of *worker*'s computation, which ends at *now* (s), ndarray (d,).

        The first worker to ask among those that read its model and end now has all
        their gradients evaluated in stacks (each gets its ``grad``); a worker alone
        (or not stackable) computes its own."""
        if self.ending:
            same = self.ending.pop((now, worker.version), None)
            if same is not None and len(same) > 1 and self.stacked:
                self._stacks(same)
                return cast(np.ndarray, worker.grad)  # set by _stacks
        rows = worker.sampler.next()
        return self.one(worker.w, self.gather(rows), self.y[rows])

    def _stacks(self, workers: list) -> None:
        """Evaluate the gradients of *workers* (two or more, on one model) in as few
        stacks as fit in :data:`STACK_BYTES`, as even as can be."""
        rows = [wk.sampler.next() for wk in workers]
        if len(self.sizes) > 1 and any(
            len(r) != len(rows[0]) for r in rows
        ):  # sizes differ: no stack
            for wk, r in zip(workers, rows):
                wk.grad = self.one(wk.w, self.gather(r), self.y[r])
            return
        k = len(rows)
        stacks = min(k, -(-k * len(rows[0]) * self.row_bytes // STACK_BYTES))
        for i in range(stacks):
            lo, hi = i * k // stacks, (i + 1) * k // stacks
            self._stack(workers[lo:hi], rows[lo:hi])

    def _stack(self, workers: list, rows: list) -> None:
        """One stacked evaluation of the gradients of *workers* (all on one model) on their
        minibatches *rows* (as many, of one size)."""
        k, b = len(rows), len(rows[0])
        every = np.concatenate(rows)
        n = k * b
        scratch = self.rows
        if scratch is None or len(scratch) < n:
            self.rows = scratch = np.empty((n, self.X.shape[1]), dtype=self.X.dtype)
        Xs = self.X.take(every, 0, scratch[:n], "clip").reshape(k, b, -1)
        G = self.many(workers[0].w[None], Xs, self.y[every].reshape(k, b))
        for wk, g in zip(workers, G):
            wk.grad = g
