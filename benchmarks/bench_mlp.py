"""Emulator overhead with the MLP: noniid_speed_skew (784-128-10 on MNIST, batch 32) vs two bare numpy loops.

Run with ``OPENBLAS_NUM_THREADS=1`` on a shared machine: threaded BLAS on tiny
(32-row) products can be many times slower than one thread when cores are busy.

For SSGD, ASGD and GSGD (evaluation off) this prints the emulator's time and, timed in
the same process with the repetitions interleaved, the two references of
``bench_core.py``:

* **old bare loop** (``bare_mlp_loop``): as many model updates of as many MLP gradients,
  each worker's minibatches in turn, a new array per minibatch, gradient and update;
* **tuned loop** (``bench_core.replay_loop``): the run replayed exactly, every gradient
  computed from the same worker's same minibatch at the model version it read in the
  emulation, summed in the same order into preallocated buffers; its final model is
  checked bit-identical to the emulator's. The MLP's gradient is its own ``gradient``
  (back-propagation writing into one new vector), which any implementation must run.

Medians over ``--reps`` repetitions (default 5) and the min-max range of the ratios, in
wall-clock and CPU time; target ≤ 1.25. The emulator runs on the model with its loss and
predictions stubbed (``bench_core._NoEvaluation``), so the two evaluations every run makes
are left out exactly.

Usage: python benchmarks/bench_mlp.py [--data-dir DIR] [--until T] [--reps N]
(MNIST; default ../shared/data)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench_core import _emulate, print_ratios, replay_checked, schedule

from netsim.config.scenario import load_scenario
from netsim.rng import Streams
from netsim.sim.engine import prepare
from netsim.sim.worker import BatchSampler

ROOT = Path(__file__).resolve().parents[1]


def bare_mlp_loop(
    prep, n_workers: int, batch: int, updates: int, group_size: int, lr: float, seed: int
):
    """(wall s, CPU s) for *updates* updates of *group_size* MLP gradients each (mean, then ``w − lr·g``)."""
    X, y, gradient = prep.dataset.X_train, prep.dataset.y_train, prep.model.gradient
    streams = Streams(seed)
    samplers = [
        BatchSampler(prep.shards[i], batch, streams.rng("batch", i)) for i in range(n_workers)
    ]
    w = prep.w0
    start, cpu = time.perf_counter(), time.process_time()
    k = 0
    for _ in range(updates):
        g = None
        for _ in range(group_size):
            rows = samplers[k % n_workers].next()
            grad = gradient(w, X[rows], y[rows])
            g = grad if g is None else g + grad
            k += 1
        if group_size > 1:
            g /= group_size
        w = w - lr * g
    return time.perf_counter() - start, time.process_time() - cpu


def main(data_dir: str, until: float, reps: int) -> None:
    overrides = ['model.name="mlp"', "run.eval_every=0", f"run.until={until}"]
    sc = load_scenario(ROOT / "scenarios" / "noniid_speed_skew.toml", overrides, data_dir=data_dir)
    prep = prepare(sc)
    print(
        f"noniid_speed_skew: MLP {prep.w0.size:,} parameters, {sc.n_workers} workers, batch {sc.run.batch_size}, "
        f"T = {sc.run.until:g}, evaluation off; {reps} interleaved repetitions, median [min-max of ratios]"
    )
    for name in ("ssgd", "asgd", "gsgd"):
        lr = sc.rule(name).lr
        emu, old, tuned = [], [], []
        sched = None
        for _ in range(reps):
            result, wall, cpu = _emulate(sc, name, prep)
            emu.append((wall, cpu))
            if sched is None:
                sched = schedule(result)
            grads = len(result.records.staleness)
            group = max(1, round(grads / max(1, result.updates)))
            old.append(
                bare_mlp_loop(
                    prep, sc.n_workers, sc.run.batch_size, result.updates, group, lr, sc.run.seed
                )
            )
            tuned.append(replay_checked(prep, sched, sc, name, result))
        print(
            f"  {name:5s} updates {result.updates:5d}  gradients {grads:5d}  (tuned final model bit-identical)"
        )
        print_ratios(emu, old, tuned)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--until", type=float, default=200.0)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    main(args.data_dir, args.until, args.reps)
