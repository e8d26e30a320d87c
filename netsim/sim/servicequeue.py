"""A parameter server that takes time: one thread serving a FIFO queue (docs/SERVER.md).

Without a ``[server]`` table the server answers every push in zero simulated time
(:class:`~netsim.sim.server.ParameterServer` calls the rule at the push's arrival). With
one, :func:`install` puts a :class:`ServiceQueue` in front of the rule. Each *job* is a push
that arrived, a rule timer that fired, or model messages the rule asked for outside a job
(the initial models, a worker back from a crash), or a copy of the model kept for an
evaluation (``snapshot_time``: busy that long, nothing else; it goes ahead of the jobs
waiting, as a server copies its model when it is done with the job in hand). The server
serves one job at a time, otherwise in arrival order:

1. a push costs its *intake* (``gradient_time + gradient_time_per_param · d``);
2. the job is handed to the rule at the end of the intake (a timer or a send at the start of
   its service): the rule reads the server as it is then, and what it answers takes effect
   at once (the model changes, the update is recorded at that instant);
3. the gradients the rule averaged into one update of several (a synchronous round's
   mean) cost an *average* each (``average_time + average_time_per_param · d``), then each
   update it made costs an *apply* (``apply_time + apply_time_per_param · d``);
4. the model messages it released go out ``parallel_sends`` at a time, each costing
   ``send_time + send_time_per_byte · bytes`` (and its bits on the server's own link when
   ``bandwidth`` is set): a worker's message is handed over (its pull follows, as without a
   server) when it is out. Nothing changes the model while the server is busy, so the model
   a worker receives is the one current when its message left.

The server is busy from the start of the intake to the last message out; a job that
arrives meanwhile waits. With a ``receive_time`` (or ``receive_time_per_byte``), a push is
first taken in by the server's *receiving* thread, one push at a time in arrival order,
beside the serving thread: it joins the queue above when it has been received. The times are
drawn by :mod:`netsim.workload.servertime`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..config.server import check_receive_horizon, check_server_horizon, check_snapshot_time
from ..workload.servertime import ServerCosts, draw, send_offsets

if TYPE_CHECKING:
    import simpy

    from ..config.scenario import Scenario
    from ..rules.base import Push, Rule
    from ..workload.datasets import Dataset
    from .records import Recorder

__all__ = ["ServiceQueue", "install", "check_server_model", "push_bytes", "SERVER_ROW", "BUSY"]

SERVER_ROW = -1
"""The worker id of the server's row in the timeline spans."""
BUSY = 4
"""The phase index of the server's busy spans (``PHASES[4] == "busy"``)."""

PUSH, CALL, SEND, SNAP = 0, 1, 2, 3


class Served(Protocol):
    """What the queue reads and calls of the server it stands in front of
    (:class:`~netsim.sim.server.ParameterServer`)."""

    w: np.ndarray
    version: int
    rule: Rule
    recorder: Recorder
    stop: simpy.Event
    service: ServiceQueue | None

    def serve(self, push: Push) -> None: ...

    def release(self, workers: Iterable[int]) -> None: ...


class ServiceQueue:
    """The server's queue and its one thread (a SimPy process) in front of *ps*.

    Parameters
    ----------
    env : simpy.Environment
    ps : ParameterServer (its ``service`` is set to this queue).
    costs : ServerCosts, the mean times (time units).
    rng : numpy Generator of the server's stream, or None for constant service.
    """

    def __init__(
        self,
        env: simpy.Environment,
        ps: Served,
        costs: ServerCosts,
        rng: np.random.Generator | None,
    ) -> None:
        self.env = env
        self.ps = ps
        self.costs = costs
        self.rng = rng
        self.queue: deque[tuple[float, int, Any]] = deque()
        """Jobs waiting: (arrival time, kind, payload): a Push (PUSH), a callback (CALL),
        the worker ids to send a model to (SEND) or None (SNAP: a copy for an evaluation)."""
        self.outbox: list[int] | None = None
        """During a job's hand-over to the rule: the workers it sends a model to."""
        self.waiting: simpy.Event | None = None
        """The event the idle thread waits on (None while busy)."""
        self.spans: list | None = None
        """When a list: the busy periods are appended as (SERVER_ROW, BUSY, start, end)."""
        self.opened = 0.0
        """Start (time units) of the busy period in progress."""
        self.closed: tuple[float, float] | None = None
        """The last busy period ended, not recorded yet (the next may go on at once)."""
        self.busy_since: float | None = None
        self.busy_time = 0.0
        self.queue_area = 0.0
        self.queue_since = 0.0
        self.pushes = 0
        self.wait_sum = 0.0
        self.service_sum = 0.0
        self.sends = 0
        self.copies = 0
        self.averaged = 0
        """Gradients the rule averaged during the job in hand (``ParameterServer.mean``)."""
        self.inbound: deque[tuple[float, Push]] = deque()
        """Pushes waiting for the receiving thread: (arrival time, push)."""
        self.receiver: simpy.Event | None = None
        """The event the idle receiving thread waits on (None while it receives)."""
        self.receive_busy = 0.0
        self.receiving_since: float | None = None
        """Start of the receiving in progress (None when the receiving thread is idle)."""
        self.receive_wait_sum = 0.0
        self.received = 0
        ps.service = self
        env.process(self._serve())
        if costs.receive:
            env.process(self._receive())

    # -- arrivals -------------------------------------------------------------------------
    def arrive(self, push: Push) -> None:
        """A push reached the server: it joins the queue (after the receiving thread, when
        receiving takes time)."""
        if not self.costs.receive:
            self._join(PUSH, push)
            return
        self.inbound.append((self.env.now, push))
        if self.receiver is not None:
            receiver, self.receiver = self.receiver, None
            receiver.succeed()

    def later(self, callback: Callable[[], object]) -> None:
        """A rule timer fired: *callback* runs when the server gets to it."""
        self._join(CALL, callback)

    def post(self, workers: Iterable[int]) -> None:
        """The rule sends a model to *workers*: part of the job being served, or else a job
        of its own (the initial models, a worker back from a crash)."""
        if self.outbox is not None:
            self.outbox.extend(workers)
        else:
            self._join(SEND, list(workers))

    def copy(self) -> None:
        """An evaluation fell due: the server keeps a copy of its model, a job of
        ``snapshot`` time (none when that time is 0) served next, ahead of the jobs waiting.
        The evaluation itself reads the model as it is now."""
        if self.costs.snapshot:
            self._join(SNAP, None, front=True)

    def _join(
        self,
        kind: int,
        payload: Push | Callable[[], object] | list[int] | None,
        since: float | None = None,
        front: bool = False,
    ) -> None:
        """Queue a job (at the head with *front*); *since*: when it reached the server
        (default: now)."""
        now = self.env.now
        self._count_queue(now)
        job = (now if since is None else since, kind, payload)
        if front:
            self.queue.appendleft(job)
        else:
            self.queue.append(job)
        if self.waiting is not None:
            waiting, self.waiting = self.waiting, None
            waiting.succeed()

    def _count_queue(self, now: float) -> None:
        self.queue_area += len(self.queue) * (now - self.queue_since)
        self.queue_since = now

    # -- the thread -----------------------------------------------------------------------
    def _serve(self) -> Generator[simpy.Event, object, None]:
        env, ps, costs, rng = self.env, self.ps, self.costs, self.rng
        rec = ps.recorder
        while True:
            if not self.queue:
                self._idle(env.now)
                self.waiting = env.event()
                yield self.waiting
            start = env.now
            self._count_queue(start)
            arrived, kind, payload = self.queue.popleft()
            if self.busy_since is None:
                self.busy_since = start
                if self.closed is None or self.closed[1] < start:  # else: one busy period goes on
                    self._flush_span()
                    self.opened = start
            if kind == SNAP:
                yield env.timeout(draw(costs.snapshot, rng))
                self.copies += 1
                if ps.stop.triggered:
                    return
                continue
            intake = draw(costs.intake, rng) if kind == PUSH else 0.0
            if intake:
                yield env.timeout(intake)
            if ps.stop.triggered:  # the run ended (at this instant): the server stops with it
                return
            rows, version = len(rec.time), ps.version
            self.outbox = payload if kind == SEND else []
            self.averaged = 0
            if kind == PUSH:
                ps.serve(payload)
            elif kind == CALL:
                payload()
            outbox, self.outbox = self.outbox, None
            averaging = draw(self.averaged * costs.average, rng) if self.averaged else 0.0
            applies = [draw(costs.apply, rng) for _ in range(ps.version - version)]
            self._fill(rec, rows, version, start - arrived, intake + averaging, applies)
            if averaging or (applies and sum(applies)):
                yield env.timeout(averaging + sum(applies))
            if outbox and not ps.stop.triggered:
                yield from self._send(outbox)
            if ps.stop.triggered:
                return
            if kind == PUSH:
                self.pushes += 1
                self.wait_sum += start - arrived
                self.service_sum += env.now - start

    def _receive(self) -> Generator[simpy.Event, object, None]:
        """The receiving thread: each push in arrival order, one at a time, for its receive
        time; then it joins the serving queue (its wait counted from its arrival)."""
        env, rng, mean = self.env, self.rng, self.costs.receive
        while True:
            if not self.inbound:
                self.receiver = env.event()
                yield self.receiver
            arrived, push = self.inbound.popleft()
            start = self.receiving_since = env.now
            took = draw(mean, rng)
            if took:
                yield env.timeout(took)
            if self.ps.stop.triggered:
                return
            self.receiving_since = None
            self.receive_wait_sum += start - arrived
            self.receive_busy += took
            self.received += 1
            self._join(PUSH, push, since=arrived)

    def _fill(
        self,
        rec: Recorder,
        rows: int,
        version: int,
        wait: float,
        intake: float,
        applies: list[float],
    ) -> None:
        """The server columns of the gradients recorded since row *rows*: the job's queue
        *wait*, and its service (*intake*: up to the applies, its averaging included) up to
        the end of the apply of each one's update (after version *version*)."""
        waits, services = rec.server_wait, rec.server_service
        assert waits is not None and services is not None  # :func:`install` made them lists
        n = len(rec.time)
        if len(waits) < rows:  # recorded outside a job (none known): no server time
            waits.extend([0.0] * (rows - len(waits)))
            services.extend([0.0] * (rows - len(services)))
        waits.extend([wait] * (n - rows))
        ends = list(accumulate(applies, initial=intake))
        services.extend(ends[min(v - version, len(applies))] for v in rec.version[rows:n])

    def _send(self, workers: list[int]) -> Generator[simpy.Event, object, None]:
        """Model messages to *workers*, in order (see :func:`send_offsets`)."""
        env, costs = self.env, self.costs
        durations = [draw(costs.message, self.rng) for _ in workers]
        offsets = send_offsets(durations, 8.0 * costs.message_bytes, costs.slots, costs.bandwidth)
        start = env.now
        order = sorted(range(len(workers)), key=offsets.__getitem__)
        for i in order:
            out = start + offsets[i]
            if out > env.now:
                yield env.timeout(out - env.now)
            if self.ps.stop.triggered:
                return
            self.ps.release((workers[i],))
            self.sends += 1

    def _idle(self, now: float) -> None:
        """The server ran out of jobs at *now*: close the busy period."""
        if self.busy_since is None:
            return
        self.busy_time += now - self.busy_since
        self.closed = (self.opened, now)
        self.busy_since = None

    def _flush_span(self) -> None:
        """Record the busy period last ended (when recording and not empty)."""
        if self.closed is not None and self.spans is not None and self.closed[1] > self.closed[0]:
            self.spans.append((SERVER_ROW, BUSY, *self.closed))
        self.closed = None

    # -- records --------------------------------------------------------------------------
    def close_spans(self, now: float) -> None:
        """Stop recording busy periods at *now* (the timeline's end), the one in progress
        cut there."""
        if self.busy_since is not None:
            self.closed = (self.opened, now)
            self.opened = now
        self._flush_span()
        self.spans = None

    def summary(self, now: float) -> dict:
        """``summary.json``'s ``server`` at *now*: busy share (%), time-averaged queue
        length (jobs waiting, the one in service not counted), mean queue wait and mean
        service per push served (time units), model messages sent, pushes served; with a
        receiving thread, its busy share (%) and a push's mean wait for it (time units); with
        a snapshot time, the copies made for evaluations."""
        busy = self.busy_time + (now - self.busy_since if self.busy_since is not None else 0.0)
        area = self.queue_area + len(self.queue) * (now - self.queue_since)
        n = self.pushes
        out = {
            "busy_pct": 100.0 * busy / now if now > 0 else 0.0,
            "mean_queue": area / now if now > 0 else 0.0,
            "mean_wait": self.wait_sum / n if n else 0.0,
            "mean_service": self.service_sum / n if n else 0.0,
            "pushes_served": n,
            "sends": self.sends,
        }
        if self.costs.receive:
            r = self.received
            since = self.receiving_since
            receiving = self.receive_busy + (now - since if since is not None else 0.0)
            out["receive_busy_pct"] = 100.0 * receiving / now if now > 0 else 0.0
            out["mean_receive_wait"] = self.receive_wait_sum / r if r else 0.0
        if self.costs.snapshot:
            out["snapshots"] = self.copies
        return out


def install(
    env: simpy.Environment,
    ps: Served,
    scenario: Scenario,
    rng: np.random.Generator,
) -> ServiceQueue | None:
    """The server's queue for *scenario*'s ``[server]`` table (None without one, or under a
    rule without a server: the server takes no time). The model has ``ps.w.size``
    parameters; a model message and a push are :func:`push_bytes` each (the ``[network]``'s
    payload or else the model's own bytes). *rng*: the server's stream (drawn from only
    with exponential service). Raises ScenarioError when one update would outlast the run."""
    spec = scenario.server
    if spec is None or ps.rule.peer:
        return None
    n_params = ps.w.size
    check_server_horizon(spec, n_params, scenario.run.until, scenario.path)
    size = push_bytes(scenario, n_params, ps.w.dtype)  # a push's, and a model message's
    check_receive_horizon(spec, size, scenario.run.until, scenario.path)
    check_snapshot_time(spec, n_params, scenario.run.eval_every, scenario.path)
    costs = ServerCosts(
        intake=spec.intake(n_params),
        apply=spec.apply(n_params),
        message=spec.message(size),
        message_bytes=size,
        slots=spec.parallel_sends,
        bandwidth=spec.bandwidth,
        receive=spec.receiving(size),
        snapshot=spec.snapshot(n_params),
        average=spec.average(n_params),
    )
    ps.recorder.server_wait, ps.recorder.server_service = [], []
    return ServiceQueue(env, ps, costs, rng if spec.service == "exponential" else None)


def push_bytes(scenario: Scenario, n_params: int, dtype: str | np.dtype) -> float:
    """Bytes of one push (and of one model message) of a model of *n_params* values of
    *dtype*: the ``[network]``'s payload (what its transfers carry), or else the model's own
    bytes."""
    plan = scenario.network
    if plan is not None:
        return float(plan.payload_bytes(n_params))
    return float(n_params * np.dtype(dtype).itemsize)


def check_server_model(
    scenario: Scenario,
    load: Callable[[Scenario, np.random.Generator], Dataset],
    memo: dict | None = None,
) -> None:
    """``validate``'s (and a sweep's) :func:`check_server_horizon` and
    :func:`check_receive_horizon` of *scenario*, before any run: the model's parameter count
    from the data's features (numpy models; a torch network is counted when the run is
    built, still before anything is written), a push of the ``[network]``'s payload or
    else the model's own bytes in ``model.master_dtype``. *memo* keeps each data spec's
    (features, classes) across the points of a sweep; *load* (scenario, rng) -> dataset
    reads the data (the engine's ``load_checked``)."""
    spec = scenario.server
    if spec is None:
        return
    until, path = scenario.run.until, scenario.path
    if not spec.receive_time_per_byte:  # the push's size does not matter
        check_receive_horizon(spec, 0.0, until, path)
    if not spec.snapshot_time_per_param:  # nor the model's
        check_snapshot_time(spec, 0, scenario.run.eval_every, path)
    if not (
        spec.gradient_time_per_param
        or spec.apply_time_per_param
        or spec.receive_time_per_byte
        or spec.snapshot_time_per_param
    ):
        return
    from ..rng import Streams
    from ..workload.backends import BACKENDS

    family = BACKENDS[scenario.model.backend]
    if not family.params_known:
        return  # counted when the model is built

    key = ("server: features, classes", scenario.data)
    if memo is not None and key in memo:
        features, classes = memo[key]
    else:
        dataset = load(scenario, Streams(scenario.run.seed).rng("data"))
        features, classes = dataset.X_train.shape[1], dataset.n_classes
        if memo is not None:
            memo[key] = (features, classes)
    d = family.n_params(scenario.model, features, classes)
    check_server_horizon(spec, d, until, path)
    check_snapshot_time(spec, d, scenario.run.eval_every, path)
    if spec.receive_time_per_byte:
        push = push_bytes(scenario, d, scenario.model.master_dtype)
        check_receive_horizon(spec, push, until, path)
