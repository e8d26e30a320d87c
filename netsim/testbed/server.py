"""The real parameter server (rank 0): the scenario's rule applied to pushes as they arrive.

:class:`RealServer` is the emulator's :class:`~netsim.sim.server.ParameterServer` on a real
clock: the same steps, records, momentum and divergence check, with ``send`` a real message
and rule timers checked by the serving loop. :func:`serve` is the process's body: the
rendezvous, the clock probes, the loop, then the run folder.
"""

from __future__ import annotations

import heapq
import itertools
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..results.runfolder import RunWriter, write_atomic
from ..rng import Streams
from ..rules.base import Push
from ..sim.evaluation import DIVERGENCE_FACTOR, divergence_limit, evaluation_sets
from ..sim.outcome import group_snapshots, worker_stats
from ..sim.records import Recorder, Result, Snapshot, class_accuracy
from ..sim.server import ParameterServer
from ..sim.summary import run_extras
from ..sim.worker import COMM, COMPUTE, IDLE, WorkerState
from ..workload.replayed import GRADIENT_COLUMNS, GRADIENTS_FILE
from .measured import (
    SERVER_COLUMNS,
    SERVER_FILE,
    UPDATE_COLUMNS,
    Iteration,
    bounded_stamps,
    contention,
    cpu_share,
    gradient_rows,
    overhead_seconds,
    pace,
    pace_failure,
    server_rows,
    update_rows,
)
from .msgpool import Pool, touched
from .node import RealSpec, connect
from .preflight import typical_cycles
from .snapshots import Snapshots, time_snapshots
from .wire import HEADER, MODEL, PING, PONG, STOP, P, model_message, offset

__all__ = ["RealServer", "serve", "UPDATES_FILE", "PROBES", "PROGRESS_EVERY_S"]

UPDATES_FILE = "measured_updates.csv"
PROBES = 5
"""Clock probes per worker before training (the shortest round trip sets the offset)."""
PROGRESS_EVERY_S = 0.2
"""Real seconds between two progress snapshots sent to the launcher."""
STOP_WAIT_S = 2.0
"""Longest real wait for the stop messages to leave before the folder is written."""


class _Clock:
    """The server's clock in scenario time units: ``now`` = (monotonic − *t0*) / *scale*."""

    def __init__(self, t0: float, scale: float) -> None:
        self.t0, self.scale = t0, scale

    @property
    def now(self) -> float:
        return (time.monotonic() - self.t0) / self.scale

    def units(self, stamp: float) -> float:
        """A ``time.monotonic()`` stamp of this process (s) in units since *t0*."""
        return (stamp - self.t0) / self.scale


class _Stop:
    """The run's end, as the server's ``stop`` event: ``triggered`` once ``succeed`` is called."""

    def __init__(self) -> None:
        self.triggered = False
        self.value: str | None = None

    def succeed(self, value=None) -> None:
        if not self.triggered:
            self.triggered, self.value = True, value

    def fail(self) -> None:
        """End the run as failed, whatever ended it before."""
        self.triggered, self.value = True, "failed"


class RealServer(ParameterServer):
    """A :class:`ParameterServer` whose clock is real and whose ``send`` is a message.

    *transmit(wid)* sends worker *wid* the current model. A worker is *busy* from the send
    of a model to the service of its push; a ``send`` to a busy worker releases it, as in
    the emulator: it gets the model current when its push has been served. Rule timers
    (``call_later``) are kept in a heap the serving loop fires (:meth:`fire_timers`).
    """

    def __init__(self, clock, w0, rule, states, recorder, max_updates, on_update, transmit) -> None:
        self.end = _Stop()
        """The run's end (the server's ``stop``), which the serving loop and signals also set."""
        stop: Any = self.end  # an event as far as ParameterServer goes: triggered, value, succeed
        super().__init__(clock, w0, rule, states, recorder, stop, max_updates, on_update)
        self.lean = (
            True  # a real server cannot pre-empt or inspect a worker (preflight refuses such rules)
        )
        self.transmit = transmit
        self.busy = [False] * len(states)
        self.timers: list = []
        self._seq = itertools.count()
        self.aggregated_s = self.aggregated_cpu_s = 0.0
        """Real seconds, and CPU seconds of the serving thread, spent averaging several
        gradients into one update (:meth:`mean`)."""

    def mean(self, pushes, consume=False):
        """The parent's mean, its real and CPU seconds added to :attr:`aggregated_s` and
        :attr:`aggregated_cpu_s`."""
        start, cpu = time.perf_counter(), time.thread_time()
        out = super().mean(pushes, consume)
        self.aggregated_s += time.perf_counter() - start
        self.aggregated_cpu_s += time.thread_time() - cpu
        return out

    def send(self, workers) -> None:
        for wid in workers:
            st = self.workers[wid]
            if self.busy[wid]:
                st.released = True
            else:
                self.busy[wid], st.released = True, False
                self.transmit(wid)

    def serve_push(self, push: Push) -> None:
        """Hand *push* to the rule; its sender then gets the model if a send released it."""
        wid = push.worker
        self.busy[wid] = False
        self.receive(push)
        st = self.workers[wid]
        if st.released:
            st.released = False
            if not self.busy[wid]:
                self.busy[wid] = True
                self.transmit(wid)

    def call_later(self, delay: float, callback) -> None:
        heapq.heappush(self.timers, (self.now + delay, next(self._seq), callback))

    def next_timer(self) -> float:
        """When the next rule timer is due (units; inf: none)."""
        return self.timers[0][0] if self.timers else float("inf")

    def fire_timers(self) -> None:
        """Call every rule timer due by now, in due order."""
        while self.timers and self.timers[0][0] <= self.now and not self.stop.triggered:
            _, _, callback = heapq.heappop(self.timers)
            callback()


def _receive_loop(group, inbox: queue.SimpleQueue, pool: Pool) -> None:
    """Thread: every message from any worker, with its arrival stamp, into *inbox* (each in a
    buffer of *pool*, back there when the message is no longer used)."""
    import torch
    import torch.distributed as dist

    try:
        while True:
            buf = pool.take()
            dist.recv(torch.from_numpy(buf), group=group)
            inbox.put((time.monotonic(), pool.lend(buf)))
    except Exception as exc:  # the connection to a worker broke: the loop reports it
        inbox.put((time.monotonic(), exc))


def _clock_offsets(spec: RealSpec, up, down) -> list[float]:
    """Each worker's clock minus the server's (s), from :data:`PROBES` probes each."""
    import torch
    import torch.distributed as dist

    d, out = spec.d, []
    answer = torch.empty(HEADER + d, dtype=torch.float64)
    for wid in range(spec.scenario.n_workers):
        probes = []
        for _ in range(PROBES):
            sent = time.monotonic()
            dist.send(torch.from_numpy(model_message(PING, 0, sent, None, d)), wid + 1, group=down)
            dist.recv(answer, src=wid + 1, group=up)
            probes.append((sent, float(answer[2]), time.monotonic()))
        out.append(offset(probes))
    return out


def serve(spec: RealSpec, control, out: Path, meta: dict, overwrite: bool) -> None:
    """The parameter server's whole run: rendezvous, probes, the rule in real time until
    ``run.until`` × scale (or ``max_updates``, divergence, a stop or a failure from the
    launcher on *control*), then the run folder *out*. Sends ("progress", Snapshot) and
    finally ("done", summary) on *control*."""
    session = _Session(spec, control, out, meta, overwrite)
    session.ps.rule.start(session.ps)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            session.loop()
    except Exception as exc:  # the run ends failed, its rows kept
        if session.stop.value == "interrupted":  # the launcher ended the workers (a second signal)
            pass
        elif isinstance(exc, RuntimeError) and "Connection closed" in str(exc):
            session.failure = _lost(control, exc)  # a worker is gone: the launcher says which
        else:
            session.failure = f"the parameter server failed: {type(exc).__name__}: {exc}"
        if session.stop.value != "interrupted":
            session.stop.fail()
    session.finish()


class _Session:
    """One real run's server side: the model, the workers' states and the records, the
    messages in flight, and the writer of the run folder *out* (claimed once all are connected)."""

    def __init__(self, spec: RealSpec, control, out: Path, meta: dict, overwrite: bool) -> None:
        import torch
        import torch.distributed as dist

        self.spec, self.control, self.out = spec, control, out
        self.tensor, self.isend = torch.from_numpy, dist.isend  # what transmit() sends with
        self.up, self.down = connect(spec, 0)
        self.offsets = _clock_offsets(spec, self.up, self.down)
        sc = spec.scenario
        self.writer = RunWriter(out, overwrite=overwrite, scenario=sc, meta=meta)
        self.states = [WorkerState(i) for i in range(sc.n_workers)]
        self.recorder, self.failure = Recorder(), ""
        if sc.run.timeline_until != 0:
            for st in self.states:
                st.spans = self.recorder.spans
        self.iterations: list[Iteration] = []
        self.current: list[Iteration | None] = [None] * sc.n_workers
        self.updates: list[tuple[int, float, float, int]] = []
        self.snapshots = Snapshots(
            spec.prepared.w0, time_snapshots(sc.run.until, sc.run.eval_every)
        )
        self.pending: dict[int, tuple] = {}
        self.served: list[tuple] = []
        """The server's own time (units) and its serving thread's CPU time (s):
        ("push", worker, start, end, gradients, updates, cpu, average, average cpu) per push
        served, ("send", worker, start, end, iteration, 0, cpu) per model message and
        ("snapshot", -1, start, end, 0, 0, cpu) per model kept for the curve."""
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        pool = Pool(HEADER + spec.d, sc.n_workers + 4)
        self.outgoing = [touched(HEADER + spec.d) for _ in range(sc.n_workers)]
        """Each worker's model message, written when its previous one has left."""
        threading.Thread(
            target=_receive_loop, args=(self.up, self.inbox, pool), daemon=True
        ).start()
        self.wall = time.perf_counter()
        self.clock = _Clock(time.monotonic(), spec.scale)
        run = sc.run
        self.ps = RealServer(
            self.clock,
            spec.prepared.w0,
            sc.rule(spec.algorithm),
            self.states,
            self.recorder,
            run.max_updates,
            self.on_update if run.eval_every_updates else None,
            self.transmit,
        )
        self.stop = self.ps.end

    def transmit(self, wid: int) -> None:
        """Send the current model to worker *wid* (the previous send to it finished first)."""
        ps, current, stamp, cpu = self.ps, self.current, time.monotonic(), time.thread_time()
        if wid in self.pending:
            self.pending[wid][0].wait()
        out = model_message(MODEL, ps.version, stamp, ps.w, self.spec.d, self.outgoing[wid])
        msg = self.tensor(out)
        self.pending[wid] = (self.isend(msg, wid + 1, group=self.down), msg)
        units = self.clock.units(stamp)
        previous = current[wid]
        number = previous.iteration + 1 if previous else 0
        self.served.append(
            ("send", wid, units, self.clock.now, number, 0, time.thread_time() - cpu)
        )
        it = Iteration(wid, number, ps.version, units)
        it.compute_real_s = None
        current[wid] = it
        self.iterations.append(it)
        self.states[wid].enter(COMM, max(units, self.states[wid].since))

    def on_update(self, server) -> None:
        if server.version % self.spec.scenario.run.eval_every_updates == 0:
            self.copy(server.version, server.now, server.w)

    def copy(self, version: int, at: float, w: np.ndarray) -> None:
        """Keep the model *w* (version *version*, time *at*) for the curve, timed."""
        start, cpu = self.clock.now, time.thread_time()
        self.snapshots.take(version, at, w)
        self.served.append(("snapshot", -1, start, self.clock.now, 0, 0, time.thread_time() - cpu))

    def handle(self, arrived: float, msg: np.ndarray) -> None:
        """Serve one pushed gradient *msg* that arrived at *arrived* (monotonic s)."""
        clock, ps, wid = self.clock, self.ps, int(msg[P.WORKER])
        it, off, st = self.current[wid], self.offsets[wid], self.states[wid]
        if it is None:
            raise RuntimeError(f"worker {wid} pushed before it was sent a model")
        served_stamp, cpu = time.monotonic(), time.thread_time()
        it.arrived, it.served = clock.units(arrived), clock.units(served_stamp)
        it.compute_start, it.compute_end = bounded_stamps(
            clock.units(float(msg[P.COMPUTE_START]) - off),
            clock.units(float(msg[P.COMPUTE_END]) - off),
            st.since,
            it.arrived,
        )
        it.drawn, it.load1 = float(msg[P.DRAWN]), float(msg[P.LOAD1])
        it.compute_real_s, it.wait_s = float(msg[P.COMPUTE_REAL]), float(msg[P.WAIT])
        it.compute_cpu_s = float(msg[P.COMPUTE_CPU])
        it.overrun_s = float(msg[P.OVERRUN])
        it.pull_transfer_s = max(
            0.0, float(msg[P.MODEL_RECEIVED]) - off - (clock.t0 + it.sent * self.spec.scale)
        )
        it.push_transfer_s = max(0.0, arrived - (float(msg[P.PUSH_SENT]) - off))
        it.queued = self.inbox.qsize()
        st.enter(COMPUTE, it.compute_start)
        st.enter(COMM, it.compute_end)  # the push's message, its queue and its service
        before, rows = ps.version, len(self.recorder.version)
        averaging, averaging_cpu = ps.aggregated_s, ps.aggregated_cpu_s
        ps.serve_push(Push(wid, msg[HEADER:], int(msg[P.VERSION]), it.arrived, int(msg[P.SAMPLES])))
        done, cpu = time.monotonic(), time.thread_time() - cpu
        made = ps.version - before
        aggregated = len(self.recorder.version) - rows  # the gradients its updates applied
        averaged = (ps.aggregated_s - averaging, ps.aggregated_cpu_s - averaging_cpu)
        self.served.append(
            ("push", wid, it.served, clock.units(done), aggregated, made, cpu, *averaged)
        )
        it.service_s = done - served_stamp
        if not ps.busy[wid]:  # no model came back with the service: it waits for one
            st.enter(IDLE, max(clock.units(done), st.since))
        self.updates.extend(
            (v, it.served, it.service_s, it.queued) for v in range(before + 1, ps.version + 1)
        )

    def loop(self) -> None:
        """Serve until the run ends: timers, evaluations, the launcher's messages, progress."""
        run, ps, stop, clock = self.spec.scenario.run, self.ps, self.stop, self.clock
        next_eval = run.eval_every or float("inf")
        next_progress = time.monotonic() + PROGRESS_EVERY_S
        while not stop.triggered:
            now = clock.now
            if now >= run.until:
                stop.succeed("until")
                break
            ps.fire_timers()
            if now >= next_eval:
                self.copy(ps.version, now, ps.w)
                next_eval = (int(now / run.eval_every) + 1) * run.eval_every
            self.read_control()
            if stop.triggered:
                break
            if time.monotonic() >= next_progress:
                next_progress = time.monotonic() + PROGRESS_EVERY_S
                self.control.send(("progress", _snapshot(self.spec, ps, self.states, now)))
                self.writer.flush(self.recorder)
            due = min(run.until, ps.next_timer(), next_eval)
            wait = min(max(0.0, (due - clock.now) * self.spec.scale), PROGRESS_EVERY_S)
            try:
                arrived, msg = self.inbox.get(timeout=wait)
            except queue.Empty:
                continue
            if isinstance(msg, Exception):
                self.failure = _lost(self.control, msg)
                stop.succeed("failed")
                break
            if msg[0] != PONG:
                self.handle(arrived, msg)

    def read_control(self) -> None:
        """The launcher's messages: a stop (the user's), or a failure it saw first."""
        while self.control.poll():
            kind, *args = self.control.recv()
            if kind == "stop":
                self.stop.succeed("interrupted")
            elif kind == "fail" and not self.failure:
                self.failure = args[0]
                self.stop.succeed("failed")

    def finish(self) -> None:
        """Stop the workers, evaluate the kept models, write the run folder, send the summary."""
        spec, run, stop = self.spec, self.spec.scenario.run, self.stop
        end = run.until if stop.value == "until" else min(self.clock.now, run.until)
        _stop_workers(spec)
        wall_s = time.perf_counter() - self.wall
        result = _result(spec, self.ps, self.states, self.recorder, stop, self.failure, end, wall_s)
        _evaluate(spec, self.snapshots, result)
        sc = spec.scenario
        lat = [p + q for p, q in zip(sc.pull_latencies(), sc.push_latencies())]
        over = overhead_seconds(self.iterations, lat, spec.scale, sc.server is not None)
        measured = pace(self.iterations, spec.scale, over)
        result.extra["real"] = {
            **measured,
            "backend": "gloo",
            "processes": spec.world,
            "params": spec.d,
            "message_bytes": 8 * (HEADER + spec.d),
            "server_cpu_share": cpu_share(  # (kind, worker, start, end, a, b, cpu, ...)
                ((r[3] - r[2]) * spec.scale, r[6]) for r in self.served
            ),
            "clock_offset_max_s": max((abs(o) for o in self.offsets), default=0.0),
        }
        if why := contention(result.extra["real"], spec.world, os.cpu_count()):
            result.extra["real"]["contended"] = why
        if result.status == "ok" and (
            why := pace_failure(measured, spec.scale, typical_cycles(sc))
        ):
            if spec.paced:
                result.status, result.message = "failed", why
            else:  # asked for: the run measures the machine; the summary says how far off
                result.extra["real"]["unpaced"] = why.replace("rerun with", "paced:")
        classes = spec.scenario.worker_class_names()
        rows = gradient_rows(self.iterations, classes, end)
        text = [",".join(GRADIENT_COLUMNS)] + [",".join(r) for r in rows]
        write_atomic(self.out / GRADIENTS_FILE, "\n".join(text) + "\n")
        text = [",".join(UPDATE_COLUMNS)] + [",".join(r) for r in update_rows(self.updates)]
        write_atomic(self.out / UPDATES_FILE, "\n".join(text) + "\n")
        served = server_rows(self.served, spec.scale)
        text = [",".join(SERVER_COLUMNS)] + [",".join(r) for r in served]
        write_atomic(self.out / SERVER_FILE, "\n".join(text) + "\n")
        self.control.send(("done", self.writer.finish(result)))


def _stop_workers(spec: RealSpec) -> None:
    """Tell every worker to end (after its push in progress), and give the messages up to
    :data:`STOP_WAIT_S` to leave; a worker that is gone is skipped (the launcher ends it)."""
    import torch
    import torch.distributed as dist

    sends = []
    for wid in range(spec.scenario.n_workers):
        msg = torch.from_numpy(model_message(STOP, 0, time.monotonic(), None, spec.d))
        try:
            sends.append((dist.isend(msg, wid + 1), msg))  # the world group: models' way
        except RuntimeError:
            continue
    stopped = time.monotonic()
    while time.monotonic() - stopped < STOP_WAIT_S:
        try:
            if all(w is None or w.is_completed() for w, _ in sends):
                return
        except RuntimeError:
            return
        time.sleep(0.005)


def _lost(control, exc: Exception) -> str:
    """The failure message when a worker's connection broke: the launcher's (which worker
    died and how) when it comes within a second, else the transport's error."""
    if control.poll(1.0):
        kind, *args = control.recv()
        if kind == "fail":
            return args[0]
    return f"lost the connection to a worker: {exc}"


def _snapshot(spec: RealSpec, ps: RealServer, states, now: float) -> Snapshot:
    run = spec.scenario.run
    groups = group_snapshots(ps.rule.groups, states, ps, now)
    return Snapshot(
        spec.label,
        spec.algorithm,
        now,
        run.until,
        ps.version,
        run.max_updates,
        None,
        None,
        None,
        None,
        groups,
        after=True,
    )


def _result(spec, ps, states, recorder, stop, failure: str, end: float, wall_s: float) -> Result:
    sc = spec.scenario
    for st in states:  # an iteration in flight at the end: its phase runs to the end
        if st.since > end:
            st.since = end
    stats = worker_stats(states, sc.worker_class_names(), ps.rule.group_index(), end)
    if sc.run.timeline_until > 0:
        cut = sc.run.timeline_until
        recorder.spans[:] = [(w, p, a, min(b, cut)) for w, p, a, b in recorder.spans if a < cut]
    status = {"interrupted": "interrupted", "failed": "failed", "diverged": "diverged"}.get(
        stop.value, "ok"
    )
    message = {
        "interrupted": f"interrupted at time {end:g} (of {sc.run.until:g})",
        "failed": failure,
        "diverged": ps.diverged,
    }.get(stop.value, "")
    prep = spec.prepared
    data = prep.data_summary(sc.data, sc.run.batch_size)
    ended = {"diverged_at": {"update": ps.version, "sim_time": end}} if ps.diverged else {}
    extra = run_extras(sc, data, ps.rule, ps.rule.grouping_record(), ended)
    return Result(
        scenario=sc.name,
        algorithm=spec.algorithm,
        label=spec.label,
        seed=sc.run.seed,
        sim_time=end,
        updates=ps.version,
        groups=[list(g) for g in ps.rule.groups],
        workers=stats,
        records=recorder,
        status=status,
        message=message,
        wall_s=wall_s,
        final_w=ps.last_finite[1] if ps.diverged and ps.last_finite else ps.w,
        extra=extra,
    )


def _evaluate(spec: RealSpec, snapshots, result: Result) -> None:
    """The curve of a real run, evaluated after it (an evaluation would have stalled the
    server): the models kept at each evaluation time, then the final one. A loss above
    :data:`DIVERGENCE_FACTOR` × the initial one ends the curve and marks the run diverged."""
    sc, prep = spec.scenario, spec.prepared
    model, ds = prep.model, prep.dataset
    train, test = evaluation_sets(ds, sc.run.eval_rows, Streams(sc.run.seed).rng("eval"))
    rec = result.records
    final = (result.updates, result.sim_time, result.final_w)
    for version, at, w in [*snapshots, final]:
        if rec.curve and rec.curve[-1][0] == version and rec.curve[-1][1] == at:
            continue
        loss = float(model.loss(w, *train))
        pred = model.predict(w, test[0])
        rec.curve.append((version, float(at), loss, float(np.mean(pred == test[1]))))
        rec.class_accuracy.append(class_accuracy(pred, test[1], ds.n_classes))
        if not np.isfinite(loss) or loss > divergence_limit(rec.curve[0][2]):
            if result.status == "ok":
                result.status = "diverged"
                result.message = (
                    f"loss {loss:.3g} at update {version}, time {at:g}, above "
                    f"{DIVERGENCE_FACTOR:.0e} × the initial loss {rec.curve[0][2]:.3g}"
                )
                result.extra["diverged_at"] = {"update": version, "sim_time": float(at)}
            break
