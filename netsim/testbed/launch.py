"""Start a real run: check it, fork the server and the workers, watch them, end them all.

The launcher forks one process for the parameter server (rank 0, which writes the run
folder) and one per worker (rank w + 1), after the data and the initial model are
prepared, so every process shares them. It relays the server's progress, turns Ctrl-C or
SIGTERM into a stop (a second one ends the workers at once while the server writes the
folder, a third one every process), tells the server when a
worker died and why, and leaves no process behind.
"""

from __future__ import annotations

import multiprocessing.queues
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import FrameType

import numpy as np

from ..config.scenario import Scenario
from ..errors import RealRunFailed
from ..sim.engine import Prepared
from ..sim.records import Snapshot
from ..sim.worker import BatchSampler
from .node import RealSpec, setup_child
from .preflight import (
    check_pace,
    check_port,
    check_scenario,
    check_snapshots,
    check_time_scale,
    check_torch,
    check_workers,
    free_port,
    overhead_estimate,
)
from .wire import HEADER, model_message

__all__ = ["check_real", "prepare_spec", "run_real", "run_role", "gradient_seconds"]

END_GRACE_S = 5.0
"""Real seconds the workers get, beyond their longest iteration, to end after the server stops."""


def check_real(
    scenario: Scenario, algorithm: str, scale: float, host: str | None, port: int | None
) -> int | None:
    """Everything a real run refuses before any process starts (ScenarioError, exit 2);
    returns the rendezvous port (a free one when *port* is None; None when *host* is None:
    torchrun's rendezvous, checked by torchrun)."""
    check_torch()
    check_time_scale(scale)
    check_scenario(scenario, algorithm)
    check_workers(scenario.n_workers)
    if host is None:
        return None
    if port is None:
        return free_port(host)
    check_port(host, port)
    return port


def gradient_seconds(scenario: Scenario, prepared: Prepared, repeats: int = 5) -> float:
    """Median real time (s) of one minibatch gradient on this machine, on one thread."""
    from threadpoolctl import threadpool_limits

    sampler = BatchSampler(prepared.shards[0], scenario.run.batch_size, np.random.default_rng(0))
    X, y, w = prepared.dataset.X_train, prepared.dataset.y_train, prepared.w0
    times = []
    with threadpool_limits(1):
        for _ in range(repeats):
            rows = sampler.next()
            start = time.perf_counter()
            prepared.model.gradient(w, X[rows], y[rows])
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def server_seconds(w0: np.ndarray, repeats: int = 5) -> float:
    """Median real time (s) of the server's own work on one push here: a step on a model
    like *w0* and one model message built (a lower bound of its service)."""
    g, times = np.ones_like(w0), []
    for _ in range(repeats):
        start = time.perf_counter()
        w = w0 - 0.1 * g
        model_message(0.0, 0, 0.0, w, w.size)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _child(
    role: int, spec: RealSpec, parent: int, args: tuple, errors: multiprocessing.queues.SimpleQueue
) -> None:
    """A forked process's body: the server (role 0) or worker role − 1; never returns."""
    code = 0
    try:
        setup_child(parent)
        if role == 0:
            from .server import serve

            serve(spec, *args)
        else:
            from .worker import work

            work(spec, role - 1)
    except BaseException as exc:  # reported to the launcher, which names the process
        code = 1
        try:
            errors.put((role, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        except Exception:
            pass
    finally:
        os._exit(code)


def _describe(rank: int, exitcode: int | None, errors: dict, spec: RealSpec) -> str:
    """Which process failed and why, for the run's message."""
    if rank == 0:
        who = "the parameter server"
    else:
        wid = rank - 1
        who = f"worker {wid} (class {spec.scenario.worker_class_names()[wid]}, rank {rank})"
    if rank in errors:
        return f"{who} failed: {errors[rank]}"
    if exitcode is not None and exitcode < 0:
        return f"{who} died: killed by {signal.Signals(-exitcode).name}"
    return f"{who} ended early (exit status {exitcode})"


@contextmanager
def _stoppable(flag: list) -> Iterator[None]:
    """Ctrl-C and SIGTERM add to *flag*; a third one raises KeyboardInterrupt (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if len(flag) >= 2:
            raise KeyboardInterrupt
        flag.append(signum)

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def run_real(
    spec_args: dict,
    out: Path,
    meta: dict,
    *,
    overwrite: bool = False,
    progress: Callable[[Snapshot], object] | None = None,
) -> dict:
    """Run a real training (*spec_args*: the fields of :class:`RealSpec`) into *out*;
    returns its summary. *progress(snapshot)* is called as it goes. Raises RealRunFailed
    when the server process died before writing the summary (the rows it flushed stay). A
    signal that came too late to stop the run is sent again once every process has ended."""
    import multiprocessing as mp

    spec = RealSpec(**spec_args)
    ctx = mp.get_context("fork")
    errors_q = ctx.SimpleQueue()
    ours, theirs = ctx.Pipe()
    parent = os.getpid()
    procs = {}
    flag: list = []
    summary = None
    errors: dict[int, str] = {}
    try:
        with _stoppable(flag):
            for rank in range(spec.world):
                args = (theirs, out, meta, overwrite) if rank == 0 else ()
                p = ctx.Process(
                    target=_child, args=(rank, spec, parent, args, errors_q), daemon=False
                )
                p.start()
                procs[rank] = p
            theirs.close()
            watching = {p.sentinel: rank for rank, p in procs.items()}
            stop_sent = fail_sent = False
            listening = [ours]
            while summary is None:
                stop_sent = _pass_stop(flag, stop_sent, ours, procs)
                ready = wait([*listening, *watching], timeout=0.25)
                _drain(errors_q, errors)
                for obj in ready:
                    if obj is ours:
                        try:
                            kind, payload = ours.recv()
                        except (EOFError, OSError):  # the server is gone: its sentinel says how
                            listening = []
                            continue
                        if kind == "progress" and progress is not None:
                            progress(payload)
                        elif kind == "done":
                            summary = payload
                    elif isinstance(obj, int):  # a child's sentinel: it ended
                        rank = watching.pop(obj)
                        procs[rank].join()
                        code = procs[rank].exitcode
                        if rank == 0 and summary is None:
                            _drain(errors_q, errors)
                            kind, payload = _last_word(ours)
                            if kind == "done":
                                summary = payload
                                break
                            raise RealRunFailed(
                                _describe(0, code, errors, spec)
                                + f"; the rows it recorded are in {out}"
                            )
                        if rank and code != 0 and not fail_sent and summary is None and not flag:
                            fail_sent = True
                            time.sleep(0.05)  # its error report may still be on its way
                            _drain(errors_q, errors)
                            _send(ours, ("fail", _describe(rank, code, errors, spec)))
            deadline = time.monotonic() + END_GRACE_S + 2 * _longest(spec) * spec.scale
            for p in procs.values():
                p.join(max(0.0, deadline - time.monotonic()))
    finally:
        _end_all(procs)
        ours.close()
    if flag and (summary or {}).get("status") != "interrupted":
        signal.raise_signal(flag[0])  # the run ended before the stop reached it: it acts now
    return summary


def _last_word(ours: Connection) -> tuple[str, object]:
    """The server's last message if one waits in the pipe, else ("", None) (poll() is also
    true when the pipe has ended)."""
    try:
        return ours.recv() if ours.poll() else ("", None)
    except (EOFError, OSError):
        return "", None


def _pass_stop(flag: list, stop_sent: bool, ours: Connection, procs: dict) -> bool:
    """After a first signal (*flag*), tell the server to stop (once); after a second, end the
    workers now (the server still writes the folder). Returns whether the stop was sent."""
    if flag and not stop_sent:
        _send(ours, ("stop",))
    if len(flag) > 1:
        _end_all({r: p for r, p in procs.items() if r})
    return stop_sent or bool(flag)


def _drain(errors_q: multiprocessing.queues.SimpleQueue, errors: dict[int, str]) -> None:
    """Move the error reports waiting in *errors_q* into *errors* (rank → first line)."""
    while not errors_q.empty():
        rank, line, _ = errors_q.get()
        errors.setdefault(rank, line)


def _longest(spec: RealSpec) -> float:
    """The longest typical iteration of a worker class (scenario time units)."""
    return max(wc.typical_step() for wc in spec.scenario.workers)


def _send(conn: Connection, message: tuple) -> None:
    try:
        conn.send(message)
    except (BrokenPipeError, OSError):  # the server is gone; the sentinel says so
        pass


def _end_all(procs: dict) -> None:
    """Terminate, then kill, every process still running; reap them all."""
    alive = [p for p in procs.values() if p.is_alive()]
    for p in alive:
        p.terminate()
    deadline = time.monotonic() + 2.0
    for p in alive:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs.values():
        if p.is_alive():
            p.kill()
            p.join()


def prepare_spec(
    scenario: Scenario,
    algorithm: str,
    scale: float,
    label: str,
    prepared: Prepared,
    host: str | None,
    port: int | None,
    paced: bool = True,
) -> dict:
    """The fields of the run's :class:`RealSpec`, after checking the machine keeps the pace
    (*paced* False: only that the cores keep the workers' gradients)."""
    service_s, d, load = server_seconds(prepared.w0), prepared.w0.size, os.getloadavg()[0]
    check_snapshots(scenario, d)
    check_pace(
        scenario,
        scale,
        gradient_seconds(scenario, prepared),
        os.cpu_count(),
        (lambda s: overhead_estimate(scenario, s, service_s, 8 * (HEADER + d), load))
        if paced
        else None,
    )
    return dict(
        scenario=scenario,
        algorithm=algorithm,
        label=label,
        prepared=prepared,
        scale=scale,
        host=host,
        port=port,
        paced=paced,
    )


class _Local:
    """The server's control channel when torchrun started it (no launcher): progress goes to
    *progress*, the summary is kept, and Ctrl-C or SIGTERM (*flag* set) asks it to stop."""

    def __init__(self, progress: Callable[[Snapshot], object] | None, flag: list) -> None:
        self.progress, self.flag, self.told = progress, flag, False
        self.summary: dict | None = None

    def poll(self, timeout: float = 0.0) -> bool:
        if not self.flag or self.told:
            time.sleep(timeout)
            return False
        return True

    def recv(self) -> tuple[str]:
        self.told = True
        return ("stop",)

    def send(self, message: tuple) -> None:
        kind, payload = message
        if kind == "progress" and self.progress is not None:
            self.progress(payload)
        elif kind == "done":
            self.summary = payload


def run_role(
    spec_args: dict,
    rank: int,
    out: Path,
    meta: dict,
    *,
    overwrite: bool = False,
    progress: Callable[[Snapshot], object] | None = None,
) -> dict | None:
    """This process's part of a real run started by torchrun (one process per rank, on
    one machine or many): rank 0 serves and writes *out* (returns the summary), rank
    w + 1 is worker w (returns None when the server says stop)."""
    from .node import setup_process

    spec = RealSpec(**spec_args)
    setup_process()
    if rank:
        from .worker import work

        work(spec, rank - 1)
        return None
    from .server import serve

    flag: list = []
    local = _Local(progress, flag)
    with _stoppable(flag):
        serve(spec, local, out, meta, overwrite)
    return local.summary
