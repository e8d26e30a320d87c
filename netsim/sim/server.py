"""The parameter server: model, version, and the actions a rule may take."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import simpy

from ..net.collectives import Step
from ..net.comm import exchange
from ..rules.aggregation import mean_by_worker
from ..rules.base import Push, Rule
from ..rules.blocks import block_rows, completed_blocks
from .records import Recorder
from .worker import WorkerState

if TYPE_CHECKING:
    from ..net.comm import FixedLatency, NetworkComm
    from ..rules.schedules import UpdateState
    from ..workload.buffers import Buffers
    from .servicequeue import ServiceQueue

__all__ = ["ParameterServer"]

_sum = np.add.reduce  # ``delta.sum()`` of a 1-d array, without the method wrapper
_subtract = np.subtract
_multiply = np.multiply
_SAFE_SQUARES = 1e300
"""Below this ``delta·delta``, numpy's sum of delta is finite (see :func:`finite_sum`)."""


def finite_sum(delta: np.ndarray) -> bool:
    """Whether numpy's sum of the 1-d float array *delta* is finite (no NaN, no overflow).

    The exact test is ``isfinite(delta.sum())``; ``delta·delta`` is a cheaper call. When
    it is below 1e300 (NaN is not), every ``|delta_i| < 1e150``, so every partial sum of
    the n entries is below n·1e150, finite for any array that fits in memory: the sum is
    finite. Otherwise the exact test decides, so the answer is always the exact one.

    >>> with np.errstate(over="ignore"):
    ...     [finite_sum(np.array(v)) for v in ([1.0, -2.0], [1e200, -1e200], [1e308, 1e308], [np.nan], [np.inf])]
    [True, True, False, False, False]
    """
    return True if delta.dot(delta) < _SAFE_SQUARES else math.isfinite(_sum(delta))


class ParameterServer:
    """Holds the model ``w`` (ndarray (d,)) and its integer ``version``.

    Arrivals are handed to the rule at their arrival time (the PS reacts in zero
    simulated time, as an event callback); the rule answers with actions:
    ``apply`` (one model update), ``send`` (let workers start a new iteration on
    the current model), ``drop`` and ``preempt``; two read-only queries look at
    a worker's iteration in progress: ``reading`` (the version it started from)
    and ``collect`` (its partial gradient over completed blocks). Each update makes a new array,
    so a model read by a worker is an immutable snapshot shared by version.

    Parameters
    ----------
    env : simpy.Environment
    w0 : ndarray of shape (d,), the initial model (version 0).
    rule : Rule
    workers : list of WorkerState (see :mod:`netsim.sim.worker`).
    recorder : Recorder
    stop : simpy.Event triggered when the run must end (max updates or divergence).
    max_updates : int, 0 for no limit.
    on_update : callable(ps) or None, called after every update (evaluation cadence).
    """

    def __init__(
        self,
        env: simpy.Environment,
        w0: np.ndarray,
        rule: Rule,
        workers: list[WorkerState],
        recorder: Recorder,
        stop: simpy.Event,
        max_updates: int = 0,
        on_update: Callable[[ParameterServer], object] | None = None,
    ) -> None:
        self.env = env
        self.w = w0
        self.version = 0
        self.rule = rule
        self.workers = workers
        self.recorder = recorder
        self.stop = stop
        self.max_updates = max_updates
        self.on_update = on_update
        self.diverged: str = ""
        self.optimizer: UpdateState | None = None if rule.update.trivial else rule.update.state()
        self.stalled: str = ""
        self.stalled_on: list[int] = []
        self.watch: Callable[[], object] | None = None
        """Called after every push and timer while a worker is down for good (stall detection)."""
        self.last_finite: tuple[int, np.ndarray] | None = None
        """(version, model) before the update that made the model non-finite."""
        self.replicas: list[np.ndarray] | None = None
        """Rules without a PS (:meth:`use_replicas`): each worker's own model; ``w`` is then
        their average, refreshed by :meth:`average`."""
        self.replica_versions: list[int] = []
        self.comm: FixedLatency | NetworkComm | None = None
        """The run's communication model, for worker-to-worker messages (set by the engine)."""
        self._rng: np.random.Generator | None = None
        self.service: ServiceQueue | None = None
        """The server's queue when it takes time (:mod:`netsim.sim.servicequeue`): pushes,
        timers and sends then go through it; None: the server answers at once."""
        self.lean = False
        """The workers are lean callbacks (:mod:`netsim.sim.lean`): none can be pre-empted or inspected."""
        self.vectors: Buffers | None = None
        """The run's model-sized buffers (the model's ``vectors``, set by the engine): the means
        and new models the server makes are written there; None: new arrays."""
        self.reset_groups(len(rule.groups))

    @property
    def rng(self) -> np.random.Generator:
        """The rule's random stream (peers chosen at random; set by the engine)."""
        if self._rng is None:
            raise RuntimeError("the rule's random stream is not set (the engine sets ps.rng)")
        return self._rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def reset_groups(self, n_groups: int) -> None:
        """Zero the live per-group counters (the rule's groups were (re)formed)."""
        self.group_updates = [0] * n_groups
        self.group_staleness = [0] * n_groups
        self.group_gradients = [0] * n_groups

    @property
    def now(self) -> float:
        return self.env.now

    def receive(self, push: Push) -> None:
        """A push arrived: the worker's gradient is handed to the rule (through the server's
        queue when it takes time)."""
        if self.service is not None:
            self.service.arrive(push)
            return
        self.serve(push)

    def serve(self, push: Push) -> None:
        """Hand *push* to the rule now."""
        self.workers[push.worker].pushed += 1
        self.rule.on_push(self, push)
        if self.watch is not None:
            self.watch()

    def apply(self, pushes: list[Push], lr: float, group: int, consume: bool = False) -> None:
        """``w ← w − lr · mean(gradients)``, version + 1, each gradient recorded.

        *consume*: the rule lets the pushes go (SSGD, GSGD): the mean is written into the
        first gradient (in worker order), as :meth:`apply_one` writes into its push's."""
        if len(pushes) == 1:
            grad = pushes[0].grad
            delta = _multiply(grad, lr, self._vector(grad))  # the numbers of lr * grad
            self._step_one(delta, pushes[0], group, lr / self.rule.lr, owned=True)
            return
        delta = self.mean(pushes, consume)
        delta *= lr  # a new array: scaled in place, the same numbers as lr * mean
        self.step(delta, pushes, group, lr / self.rule.lr, owned=True)

    def mean(self, pushes: list[Push], consume: bool = False) -> np.ndarray:
        """The mean of *pushes*' gradients (d,), as :meth:`apply` takes it: a new array, or
        with *consume* the first gradient in worker order, overwritten. A server that takes
        time counts the gradients averaged (its ``average_time``)."""
        if self.service is not None:
            self.service.averaged += len(pushes)
        return mean_by_worker(pushes, None if consume else self._vector(self.w), consume)

    def apply_one(self, push: Push, lr: float, group: int) -> None:
        """``apply([push], lr, group)`` without building the list (ASGD: one per gradient).

        Consumes the push: its gradient (a new array per push, see ``Model.gradient``) is
        scaled by *lr* in place and becomes the new model (the same numbers as ``lr * grad``)."""
        grad = push.grad  # read once: a compact push builds it on each access
        _multiply(grad, lr, grad)
        if self.optimizer is not None or self.stop.triggered:
            self._step_one(grad, push, group, lr / self.rule.lr, owned=True)
        else:
            self._plain_step(grad, push.worker, push.version, lr, group, self.env.now)

    def apply_solo(
        self,
        worker: int,
        grad: np.ndarray,
        read: int,
        now: float,
        samples: int,
        lr: float,
        group: int,
    ) -> None:
        """``receive(Push(worker, grad, read, now, samples))`` at *now* (s, the current time)
        for a rule whose answer to it is ``apply_one(push, lr, group)`` and ``send((worker,))``
        (``Rule.solo_step``; ASGD), in one call: the same update, records and reply. Lean
        workers use it, one call per gradient instead of about ten; *worker* is busy
        computing (it pushed), so the reply releases it (``released``)."""
        if self.optimizer is not None or self.stop.triggered or self.watch is not None:
            self.receive(Push(worker, grad, read, now, samples))
            return
        st = self.workers[worker]
        st.pushed += 1
        self._plain_step(_multiply(grad, lr, grad), worker, read, lr, group, now)
        if not st.down:
            st.released = True

    def _plain_step(
        self, delta: np.ndarray, worker: int, read: int, lr: float, group: int, now: float
    ) -> None:
        """:meth:`_step_one` of an owned *delta* (``lr · grad``, a new array) from *worker*,
        which read version *read*, at *now* (s), with no optimizer and the run going on:
        the same update and records, inlined (ASGD pays this once per gradient)."""
        before = self.version
        previous = self.w
        finite = finite_sum(delta)
        self.w = (
            _subtract(previous, delta, delta) if delta.dtype is previous.dtype else previous - delta
        )
        self.version = version = before + 1
        self.group_updates[group] += 1
        self.group_gradients[group] += 1
        stale = before - read
        self.recorder.applied_one(now, worker, group, stale, version, lr / self.rule.lr)
        self.workers[worker].applied += 1
        self.group_staleness[group] += stale
        if not finite or self.on_update is not None or self.max_updates:
            self._updated(finite, previous, version, now)

    def step(
        self,
        delta: np.ndarray,
        pushes: list[Push],
        group: int,
        scale: float = 1.0,
        owned: bool = False,
    ) -> None:
        """``w ← w − delta`` as one update crediting *pushes* (for rules with their own step).

        With a learning-rate schedule or momentum (the rule's ``update``), *delta* is
        first scaled by the schedule and passed through the momentum recurrence
        (:mod:`netsim.rules.schedules`). *scale* is the step's rate relative to the
        rule's base rate (e.g. a group weight); each gradient is recorded with weight
        ``scale / len(pushes)`` (its share of the step, for the bias metrics). *owned*: as
        in :meth:`_step_one`.
        """
        if len(pushes) == 1:
            self._step_one(delta, pushes[0], group, scale, owned)
            return
        moved = self._new_model(delta, group, len(pushes), owned, scale)
        if moved is None:
            return
        before, now, previous, finite = moved
        staleness = [before - p.version for p in pushes]
        self._credit(pushes, staleness, group, scale / (len(pushes) or 1), now)
        self._updated(finite, previous, before + 1, now)

    def _credit(
        self, pushes: Sequence[Push], staleness: list[int], group: int, weight: float, now: float
    ) -> None:
        """Record the update just made (version ``self.version``) as applying *pushes*, with
        their *staleness* and each gradient's *weight* in the step."""
        ids = [p.worker for p in pushes]
        self.recorder.applied(now, ids, group, staleness, self.version, weight)
        workers = self.workers
        for wid in ids:
            workers[wid].applied += 1
        self.group_staleness[group] += sum(staleness)

    def _step_one(
        self, delta: np.ndarray, push: Push, group: int, scale: float, owned: bool = False
    ) -> None:
        """:meth:`step` crediting the single gradient *push* (the same update and records,
        without the per-list work: ASGD and most rules' steps are one push).

        *owned*: *delta* is a new array nobody else holds (``lr * grad``), so the new model
        ``previous - delta`` may be written into it (the same numbers, one allocation fewer)."""
        moved = self._new_model(delta, group, 1, owned, scale)
        if moved is None:
            return
        before, now, previous, finite = moved
        stale = before - push.version
        self.recorder.applied_one(now, push.worker, group, stale, before + 1, scale)
        self.workers[push.worker].applied += 1
        self.group_staleness[group] += stale
        self._updated(finite, previous, before + 1, now)

    def _new_model(
        self, delta: np.ndarray, group: int, n: int, owned: bool = False, scale: float = 1.0
    ) -> tuple[int, float, np.ndarray, bool] | None:
        """The update both steps share: ``w ← w − delta`` (after the schedule, momentum or
        optimizer), version + 1, and *group*'s update and gradient (*n*) counts. Returns
        (version before, now s, the previous model, :func:`finite_sum` of the step), or None
        when the run has stopped (nothing changes). *owned*: as in :meth:`_step_one`; *scale*:
        the step's rate relative to the rule's (its rate is ``scale · rule.lr``)."""
        if self.stop.triggered:
            return None
        before = self.version
        now = self.env.now
        if self.optimizer is not None:
            delta = self.optimizer.step(
                delta, before + 1, now, self.w, scale * self.rule.lr, owned=owned
            )
            owned = self.optimizer.fresh_steps  # momentum keeps its step as the velocity
        previous = self.w
        finite = finite_sum(delta)  # before an owned delta is overwritten by the new model
        if owned and delta.dtype is previous.dtype:
            self.w = _subtract(previous, delta, delta)
        else:
            self.w = _subtract(previous, delta, self._vector(previous, delta))
        self.version = before + 1
        self.group_updates[group] += 1
        self.group_gradients[group] += n
        return before, now, previous, finite

    def _vector(self, like: np.ndarray, other: np.ndarray | None = None) -> np.ndarray | None:
        """A free model-sized buffer for the result of an operation on *like* (and *other*),
        or None (numpy makes a new array) without buffers or when the dtypes differ."""
        vectors = self.vectors
        if vectors is None or like.dtype != vectors.dtype or like.shape != (vectors.size,):
            return None
        if other is not None and other.dtype != vectors.dtype:
            return None
        return vectors.take()

    def _updated(self, finite: bool, previous: np.ndarray, version: int, now: float) -> None:
        """After update *version* (the model was *previous*) at *now* (s): stop on a non-finite
        step (*finite* is :func:`finite_sum` of it), else the update callback and the
        ``max_updates`` limit."""
        if not finite:  # NaN, or entries so large that their sum overflows
            self.last_finite = (version - 1, previous)
            self.finish(f"non-finite model at update {version}, simulated time {now:g} s")
            return
        if self.on_update is not None:
            self.on_update(self)
        if self.max_updates and version >= self.max_updates and not self.stop.triggered:
            self.stop.succeed("max_updates")

    def send(self, workers: Iterable[int]) -> None:
        """Let each worker start its next iteration on the current model: at once, or
        when the server's model messages are out (a server that takes time)."""
        if self.service is not None:
            self.service.post(workers)
            return
        self.release(workers)

    def release(self, workers: Iterable[int]) -> None:
        """Each of *workers* receives the current model now.

        A waiting worker receives ``(w, version)`` now; a busy one takes the model
        current when it becomes free; a crashed one gets nothing (the rule's
        ``on_rejoin`` sends it a model when it is back).
        """
        states, model = self.workers, None
        for wid in workers:
            st = states[wid]
            if st.down:
                continue
            wake = st.wake
            if wake is not None:  # waiting: woken once (a second send before it runs releases it)
                st.wake = None
                if self.replicas is not None:
                    wake.succeed((self.replicas[wid], self.replica_versions[wid]))
                    continue
                if model is None:  # one tuple per send (lean workers tell sends apart by it)
                    model = (self.w, self.version)
                wake.succeed(model)
            else:
                st.released = True

    def drop(self, push: Push, reason: str) -> None:
        """Discard a pushed gradient, recording why."""
        self.workers[push.worker].dropped += 1
        self.recorder.dropped(self.env.now, push.worker, push.version, reason)

    def preempt(self, worker: int) -> None:
        """Abort *worker*'s in-flight pull or computation; it restarts on the current model.

        A worker can be pre-empted while it has a ``job`` (from taking the model to the
        end of its computation); it loses the job at once, so a second preempt before
        the interrupt is delivered does nothing. With a server that takes time the worker
        waits for a model message instead (``"recall"``: sent after the update, as any send).
        """
        self._not_lean("preempt")
        st = self.workers[worker]
        if st.job is not None and st.process is not None and st.process.is_alive:
            st.process.interrupt("preempt" if self.service is None else "recall")
            st.job = None
            if self.service is not None:
                self.service.post((worker,))

    # -- read-only views of a worker's iteration in progress ----------------
    def reading(self, worker: int) -> int | None:
        """Version of the model *worker* is pulling or computing on.

        None when it is not pulling or computing (waiting for a model, pushing,
        or just pre-empted). Used for staleness-based pre-emption (ABS-style).
        """
        self._not_lean("reading")
        job = self.workers[worker].job
        return None if job is None else job.version

    def collect(self, worker: int, blocks: int, first: int = 0) -> tuple[Push, int] | None:
        """The partial gradient of *worker*'s computation in progress (LGC-style).

        The minibatch is seen as *blocks* contiguous row blocks
        (:func:`netsim.rules.blocks.block_rows`) computed one after another, each taking
        ``duration / blocks`` seconds. At ``now``, ``done`` blocks are complete
        (:func:`netsim.rules.blocks.completed_blocks`); the PS reads the mean gradient of
        blocks ``first .. done - 1`` at the model the worker read, at once and at
        no simulated cost. The worker is not disturbed: it finishes and pushes its
        whole minibatch as usual.

        Returns
        -------
        (Push, done) : a Push with ``grad`` ndarray (d,) (zeros when no new block
            is done), ``samples`` = rows in those blocks, ``version`` = the version
            read, ``sent`` = now; or None when *worker* is not computing (waiting,
            pulling, or pushing a finished gradient).
        """
        self._not_lean("collect")
        job = self.workers[worker].job
        if job is None or job.start is None:
            return None
        done = completed_blocks(self.env.now - job.start, job.duration, blocks)
        rows = job.rows()
        lo, hi = (
            block_rows(len(rows), blocks, first),
            block_rows(len(rows), blocks, max(done, first)),
        )
        grad = job.gradient(rows[lo:hi]) if hi > lo else np.zeros_like(job.w)
        return Push(worker, grad, job.version, self.env.now, hi - lo), done

    def _not_lean(self, action: str) -> None:
        if self.lean:
            raise RuntimeError(
                f"rule {self.rule.name} called {action} on lean workers: a rule that pre-empts, reads "
                "or collects a worker's iteration must set lean = False"
            )

    def call_later(self, delay: float, callback: Callable[[], object]) -> None:
        """Call ``callback()`` after *delay* simulated seconds (rule timers, e.g. group timeouts)."""

        def fire(_event: simpy.Event | None = None) -> None:
            if _event is not None and self.service is not None:
                self.service.later(fire)  # the server gets to it when it is free
                return
            callback()
            if self.watch is not None:
                self.watch()

        self.env.timeout(delay).callbacks.append(fire)

    def record_event(self, kind: str, **fields: object) -> None:
        """Add ``{"time": now, "kind": kind, **fields}`` to the run's event log."""
        self.recorder.events.append({"time": float(self.env.now), "kind": kind, **fields})

    def is_down(self, worker: int) -> bool:
        """Whether *worker* has crashed and not come back."""
        return self.workers[worker].down

    def finish(self, message: str) -> None:
        """Stop the run because training diverged."""
        self.diverged = message
        if not self.stop.triggered:
            self.stop.succeed("diverged")

    def stall(self, message: str) -> None:
        """Stop the run because no update can ever happen again."""
        self.stalled = message
        if not self.stop.triggered:
            self.stop.succeed("stalled")

    # -- rules without a parameter server ---------------------------------------------------
    # The PS object then stands for the workers' shared state: every worker's model
    # (``replicas``), the update count, the records. Messages between workers go through
    # ``comm.peers`` (see :func:`netsim.net.comm.exchange`).

    def use_replicas(self) -> None:
        """From now on each worker holds its own model, all starting from ``w``; a worker
        starts each iteration on its own (``send``), and a push's ``version`` counts the
        changes of that worker's model."""
        self.replicas = [self.w] * len(self.workers)
        self.replica_versions = [0] * len(self.workers)

    def average(self) -> np.ndarray:
        """The average of the workers' models (``w`` itself without replicas); kept in ``w``.
        Workers holding one model (the same array) count it once per worker."""
        if self.replicas is not None:
            self.w = self._common(self.replicas)
        return self.w

    def consensus_distance(self, mean: np.ndarray) -> float:
        """Mean over workers of ``||w_i - mean||²``, *mean* their :meth:`average` (0
        without replicas)."""
        if self.replicas is None:
            return 0.0
        gaps = [r - mean for r in self.replicas]
        return float(np.mean([g.dot(g) for g in gaps]))

    def exchange(
        self, workers: Iterable[int], steps: list[Step], callback: Callable[[], object]
    ) -> None:
        """Send the messages of *steps* (``(a, b, share)`` with indices into *workers*, as
        :func:`netsim.net.collectives.schedule` gives them) step after step; then call
        *callback()*."""
        if self.comm is None:
            raise RuntimeError("no communication model to exchange messages on (set by the engine)")

        def done(_event: simpy.Event) -> None:
            callback()

        exchange(self.env, self.comm, workers, steps).callbacks.append(done)

    def group_step(self, members: Sequence[int], pushes: list[Push], lr: float, group: int) -> None:
        """One update of the group *members* (worker ids) that all-reduced: each member's
        model becomes ``m − lr · mean(gradients of pushes)``, ``m`` the members' average
        model (their common one when they share it). Without replicas it is :meth:`apply`."""
        if self.replicas is None:
            self.apply(pushes, lr, group)
            return
        if self.stop.triggered:
            return
        base = self._common([self.replicas[m] for m in members])
        delta = mean_by_worker(pushes)
        delta = delta * lr if len(pushes) == 1 else _multiply(delta, lr, delta)
        finite = finite_sum(delta)
        new = base - delta
        staleness = [self.replica_versions[p.worker] - p.version for p in pushes]
        for m in members:
            self.replicas[m] = new
            self.replica_versions[m] += 1
        self._peer_update(pushes, staleness, group, finite, base)

    def local_step(self, push: Push, lr: float, group: int) -> None:
        """``w_i ← w_i − lr · g`` on the pushing worker's own model (one update)."""
        if self.stop.triggered:
            return
        wid, replicas = push.worker, self._replicas()
        delta = push.grad * lr
        finite = finite_sum(delta)
        previous = replicas[wid]
        staleness = [self.replica_versions[wid] - push.version]
        replicas[wid] = previous - delta
        self.replica_versions[wid] += 1
        self._peer_update([push], staleness, group, finite, previous)

    def average_models(self, members: Sequence[int], spread: Iterable[int] = ()) -> None:
        """The models of *members* (worker ids) and of the workers in *spread* all become
        the average of the *members*' models, at once (gossip): not an update (no gradient),
        so the version stays."""
        replicas = self._replicas()
        mean = self._common([replicas[m] for m in members])
        for m in dict.fromkeys([*members, *spread]):
            if replicas[m] is not mean:
                replicas[m] = mean
                self.replica_versions[m] += 1

    def _replicas(self) -> list[np.ndarray]:
        if self.replicas is None:
            raise RuntimeError("the workers hold no models of their own: call use_replicas first")
        return self.replicas

    @staticmethod
    def _common(models: list[np.ndarray]) -> np.ndarray:
        first = models[0]
        if all(r is first for r in models):
            return first
        total = models[0] + models[1]
        for r in models[2:]:
            total += r
        return total / len(models)

    def _peer_update(
        self,
        pushes: Sequence[Push],
        staleness: list[int],
        group: int,
        finite: bool,
        previous: np.ndarray,
    ) -> None:
        """The bookkeeping of an update of the workers' own models crediting *pushes*."""
        now = self.env.now
        self.version += 1
        self.group_updates[group] += 1
        self.group_gradients[group] += len(pushes)
        self._credit(pushes, staleness, group, 1.0 / len(pushes), now)
        self._updated(finite, previous, self.version, now)
