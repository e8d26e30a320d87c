"""Emulator overhead: the paper scenario vs the fastest honest bare numpy loop.

For SSGD, ASGD and GSGD on the paper scenario (MNIST odd/even, 16 workers, T = 600,
evaluation off) this prints the emulator's wall time and two references:

* **old bare loop**: the loop this script used to ship (``plain_loop``): as many model
  updates of as many gradients, each worker's minibatches in turn, a new array per
  minibatch, per gradient and per update;
* **tuned loop** (``replay_loop``): the real limit. It replays exactly the emulated run:
  every applied gradient is computed from the same worker's same minibatch (the
  worker's own batch stream) at the same model version it was computed on in the
  emulation (version read = update − 1 − staleness, from the run's records), summed in
  the same order with the same learning rate. The script checks that the final model
  is bit-identical to the emulator's, so the loop provably does the same arithmetic.

Why the tuned loop is the limit: it does only what any implementation must do: for
every gradient, gather the minibatch rows (b x d), two matrix-vector products and the
link function (the model's own ``residual``), and one vector update per model update,
with all d-sized and (b, d) buffers preallocated (rows gathered with ``take(out=)``, the
products written with ``dot(out=)``, models kept in a ring of preallocated arrays) and
no simulation, no events, no records. The emulator must do the same arithmetic (it
produces the same bits) plus scheduling, so emulator / tuned is its overhead.

Timing: the machine is shared, so emulator, old loop and tuned loop are run side by
side in one process, interleaved, ``--reps`` times (default 5); medians and the
min-max range of the per-repetition ratios are printed. The two evaluations the
emulator always makes (t = 0 and the end) are timed separately and subtracted.
Then simulated updates per wall second for 1,000 ASGD workers on digits.

Usage: python benchmarks/bench_core.py [--data-dir DIR] [--reps N] [--rules ssgd,asgd,gsgd]
(MNIST; default ../shared/data)
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from netsim.config.scenario import load_scenario
from netsim.rng import Streams
from netsim.sim.engine import prepare, simulate
from netsim.sim.worker import BatchSampler

ROOT = Path(__file__).resolve().parents[1]


def plain_loop(prep, n_workers: int, batch: int, updates: int, group_size: int, lr: float, seed: int) -> float:
    """The previously shipped bare loop: wall seconds for *updates* updates of *group_size* gradients."""
    X, y, gradient = prep.dataset.X_train, prep.dataset.y_train, prep.model.gradient
    streams = Streams(seed)
    samplers = [BatchSampler(prep.shards[i], batch, streams.rng("batch", i)) for i in range(n_workers)]
    w = prep.w0
    start = time.perf_counter()
    k = 0
    for _ in range(updates):
        grads = []
        for _ in range(group_size):
            rows = samplers[k % n_workers].next()
            grads.append(gradient(w, X[rows], y[rows]))
            k += 1
        g = grads[0].copy()
        for other in grads[1:]:
            g += other
        if group_size > 1:
            g /= group_size
        w = w - lr * g
    return time.perf_counter() - start


def schedule(result) -> list[tuple[int, list[tuple[int, int]]]]:
    """Per update, in order: (number of gradients, [(worker, version read)] in worker id order)."""
    rec = result.records
    out: list[tuple[int, list[tuple[int, int]]]] = []
    current, items = 0, []
    for version, worker, stale in zip(rec.version, rec.worker, rec.staleness):
        if version != current:
            if items:
                out.append((len(items), sorted(items, key=lambda it: it[0])))
            current, items = version, []
        items.append((worker, version - 1 - stale))
    if items:
        out.append((len(items), sorted(items, key=lambda it: it[0])))
    return out


def replay_loop(prep, sched, n_workers: int, batch: int, lr: float, seed: int, max_stale: int):
    """The tuned loop: (wall seconds, final model). Same minibatches, models and order as the run."""
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    residual, l2 = model.residual, model.l2
    streams = Streams(seed)
    samplers = [BatchSampler(prep.shards[i], batch, streams.rng("batch", i)) for i in range(n_workers)]
    d = prep.w0.size
    ring = np.empty((max_stale + 2, d))  # models by version modulo the ring size
    ring[0] = prep.w0
    size = samplers[0].size
    xb = np.empty((size, X.shape[1]))
    g, acc, reg = np.empty(d), np.empty(d), np.empty(d)
    g2, acc2 = g.reshape(X.shape[1], -1), acc.reshape(X.shape[1], -1)
    n_ring = len(ring)
    version = 0
    start = time.perf_counter()
    for count, items in sched:
        first = True
        for worker, read in items:
            w = ring[read % n_ring]
            rows = samplers[worker].next()
            X.take(rows, axis=0, out=xb, mode="clip")
            r = residual(w, xb, y[rows])
            out, out2 = (acc, acc2) if first else (g, g2)
            np.dot(xb.T, r, out=out2 if r.ndim == 2 else out)
            if l2:
                np.multiply(w, l2, out=reg)
                out += reg
            if not first:
                acc += g
            first = False
        if count > 1:
            acc /= count
        acc *= lr
        np.subtract(ring[version % n_ring], acc, out=ring[(version + 1) % n_ring])
        version += 1
    wall = time.perf_counter() - start
    return wall, ring[version % n_ring].copy()


def _eval_cost(result, prep) -> float:
    """The run still evaluates at t=0 and at the end: time those evaluations."""
    ds, model = prep.dataset, prep.model
    start = time.perf_counter()
    for _ in range(len(result.curve)):
        model.loss(prep.w0, ds.X_train, ds.y_train)
        model.accuracy(prep.w0, ds.X_test, ds.y_test)
    return time.perf_counter() - start


def paper(data_dir: str, reps: int, rules: list[str]) -> None:
    sc = load_scenario(ROOT / "scenarios" / "gsgd_paper.toml", ["run.eval_every=0"], data_dir=data_dir)
    prep = prepare(sc)
    print(f"paper scenario (MNIST odd/even, {sc.n_workers} workers, T = {sc.run.until:g}), evaluation off; "
          f"{reps} interleaved repetitions, median [min-max of per-repetition ratios]")
    for name in rules:
        lr = sc.rule(name).lr
        emu, old, tuned = [], [], []
        sched = max_stale = None
        for _ in range(reps):
            result = simulate(sc, name, prepared=prep)
            emu.append(result.wall_s - _eval_cost(result, prep))
            if sched is None:
                sched = schedule(result)
                max_stale = max(result.records.staleness)
            grads = len(result.records.staleness)
            group = max(1, round(grads / max(1, result.updates)))
            old.append(plain_loop(prep, sc.n_workers, sc.run.batch_size, result.updates, group, 0.01, sc.run.seed))
            wall, w_final = replay_loop(prep, sched, sc.n_workers, sc.run.batch_size, lr, sc.run.seed, max_stale)
            if not np.array_equal(w_final, result.final_w):
                raise SystemExit(f"{name}: the tuned loop's final model differs from the emulator's")
            tuned.append(wall)
        r_old = [e / o for e, o in zip(emu, old)]
        r_tuned = [e / t for e, t in zip(emu, tuned)]
        print(f"  {name:5s} updates {result.updates:5d}  gradients {grads:5d}  emulator {statistics.median(emu):.3f} s  "
              f"old bare {statistics.median(old):.3f} s  tuned {statistics.median(tuned):.3f} s  "
              f"emulator/old {statistics.median(r_old):.2f} [{min(r_old):.2f}-{max(r_old):.2f}]  "
              f"emulator/tuned {statistics.median(r_tuned):.2f} [{min(r_tuned):.2f}-{max(r_tuned):.2f}]  "
              f"(goal <= 1.25; tuned final model bit-identical)", flush=True)


def scale() -> None:
    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml",
                       ["run.eval_every=0", "run.until=200", "run.batch_size=1", 'run.algorithm="asgd"',
                        'workers=[{name="w", count=1000, compute={dist="exponential", mean=10.0}}]',
                        'algorithms={asgd={lr=0.05}}'])
    result = simulate(sc, "asgd")
    print(f"1,000 ASGD workers, exponential times, digits: {result.updates} updates in {result.wall_s:.2f} s "
          f"= {result.updates / result.wall_s:,.0f} simulated updates per wall second")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rules", default="ssgd,asgd,gsgd")
    args = parser.parse_args()
    if (Path(args.data_dir) / "mnist").exists():
        paper(args.data_dir, args.reps, args.rules.split(","))
    else:
        print(f"MNIST not found under {args.data_dir}: paper scenario skipped")
    scale()
