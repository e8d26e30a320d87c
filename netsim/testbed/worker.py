"""A real worker: receive the model, compute its real gradient, fill its drawn time, push."""

from __future__ import annotations

import os
import time

import numpy as np

from ..rng import Streams
from ..sim.worker import BatchSampler
from .msgpool import touched
from .node import RealSpec, connect, sleep_until
from .wire import HEADER, MODEL, PING, PONG, PUSH, STOP, P, push_message

__all__ = ["work", "warm_up", "COMPUTE_STREAM", "BATCH_STREAM"]

COMPUTE_STREAM, BATCH_STREAM = "real-compute", "real-batch"
"""The streams a real worker draws its compute times and minibatches from (per worker, of
the scenario seed): not the emulation's ``compute`` and ``batch``, so a real run and its
emulation of the same seed are two independent samples of the scenario."""


def work(spec: RealSpec, wid: int) -> None:
    """Worker *wid* (rank wid + 1) until the server says stop (or the launcher ends it).

    Each iteration: receive the model (a message), hold it for the class's pull latency ×
    scale (a delay injected on the message), compute the gradient on the next minibatch of
    the worker's own stream, wait out the rest of the compute time drawn from its own stream
    × scale (no wait when the gradient took longer), hold the push for the push latency ×
    scale, and send it. The samplers and time models are the emulation's; their streams
    are :data:`COMPUTE_STREAM` and :data:`BATCH_STREAM`, independent of the emulation's.
    Before it connects, the worker computes one gradient it throws away (:func:`warm_up`).
    """
    import torch
    import torch.distributed as dist

    sc, scale, d = spec.scenario, spec.scale, spec.d
    prep = spec.prepared
    X, y, gradient = prep.dataset.X_train, prep.dataset.y_train, prep.model.gradient
    warm_up(spec, wid)
    up, down = connect(spec, wid + 1)
    _, wc, member = sc.worker_slots()[wid]
    streams = Streams(sc.run.seed)
    draws = wc.draws(streams, wid, member, COMPUTE_STREAM)
    sampler = BatchSampler(prep.shards[wid], sc.run.batch_size, streams.rng(BATCH_STREAM, wid))
    prep.model.start_run(sc.run.seed)
    pull_s, push_s = wc.pull_latency * scale, wc.push_latency * scale
    inbox = torch.from_numpy(touched(HEADER + d))
    w, outbox = touched(d), touched(HEADER + d)  # the model computed on, the push sent
    header = outbox[:HEADER]
    header[0], header[P.WORKER] = PUSH, wid
    iteration = 0
    while True:
        dist.recv(inbox, src=0, group=down)
        received = time.monotonic()
        msg = inbox.numpy()
        if msg[0] == STOP:
            return
        if msg[0] == PING:
            answer = np.zeros(HEADER)
            answer[0], answer[1], answer[2] = PONG, wid, received
            dist.send(torch.from_numpy(push_message(answer, None, d)), dst=0, group=up)
            continue
        assert msg[0] == MODEL, msg[0]
        version = int(msg[1])
        w[:] = msg[HEADER:]
        sleep_until(received + pull_s)
        start = time.monotonic()
        rows = sampler.next()
        cpu = time.thread_time()
        grad = gradient(w, X[rows], y[rows])
        computed, cpu = time.monotonic(), time.thread_time() - cpu
        drawn = next(draws)
        sleep_until(start + drawn * scale)
        end = time.monotonic()
        sleep_until(end + push_s)
        header[P.VERSION], header[P.ITERATION], header[P.SAMPLES] = version, iteration, len(rows)
        header[P.MODEL_RECEIVED], header[P.COMPUTE_START] = received, start
        header[P.COMPUTE_END] = end
        header[P.COMPUTE_REAL], header[P.COMPUTE_CPU] = computed - start, cpu
        header[P.WAIT] = end - computed
        header[P.OVERRUN] = max(0.0, (computed - start) - drawn * scale)
        header[P.DRAWN], header[P.LOAD1] = drawn, os.getloadavg()[0]
        header[P.PULL_DELAY] = start - received
        header[P.PUSH_SENT] = sent = time.monotonic()
        header[P.PUSH_DELAY] = sent - end
        outbox[HEADER:] = grad
        dist.send(torch.from_numpy(outbox), dst=0, group=up)
        del grad  # copied into the push; freed now, its memory serves the next gradient
        # (held on, the next would take fresh pages: ~1,000 page faults, 3x its CPU time)
        iteration += 1


def warm_up(spec: RealSpec, wid: int) -> None:
    """One gradient of worker *wid*, at the initial model on the first rows of its shard,
    thrown away before the server's clock starts: a process's first pass pays one-time
    costs (the libraries' thread pools and caches, its first allocations: 5 to 20 times a
    later pass, measured) that are not training, and that all workers paying at once at the
    start would add to the run's first units. No stream is drawn from, and the model's own
    draws and buffers restart after it (``start_run``)."""
    prep = spec.prepared
    rows = prep.shards[wid][: spec.scenario.run.batch_size]
    w = np.asarray(prep.w0, dtype=np.float64)  # as a model message carries it
    prep.model.gradient(w, prep.dataset.X_train[rows], prep.dataset.y_train[rows])
