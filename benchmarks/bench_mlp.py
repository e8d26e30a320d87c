"""Emulator overhead with the MLP: noniid_speed_skew (784-128-10 on MNIST, batch 32) vs a bare numpy loop.

Run with ``OPENBLAS_NUM_THREADS=1`` on a shared machine: threaded BLAS on tiny
(32-row) products can be many times slower than one thread when cores are busy.

For each rule, the emulated run (evaluation off) against a plain loop computing
the same number of MLP minibatch gradients and model updates with no
simulation; prints both wall times and their ratio (target ≤ 1.25). The two
evaluations every run still makes (start and end) are subtracted from the
emulator's time.

Usage: python benchmarks/bench_mlp.py [--data-dir DIR] [--until T]  (MNIST; default ../shared/data)
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from netsim.config.scenario import load_scenario
from netsim.rng import Streams
from netsim.sim.engine import prepare, simulate
from netsim.sim.worker import BatchSampler

ROOT = Path(__file__).resolve().parents[1]


def bare_mlp_loop(prep, n_workers: int, batch: int, updates: int, group_size: int, lr: float, seed: int) -> float:
    """Wall seconds for *updates* updates of *group_size* MLP gradients each (mean, then ``w − lr·g``)."""
    X, y, gradient = prep.dataset.X_train, prep.dataset.y_train, prep.model.gradient
    streams = Streams(seed)
    samplers = [BatchSampler(prep.shards[i], batch, streams.rng("batch", i)) for i in range(n_workers)]
    w = prep.w0
    start = time.perf_counter()
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
    return time.perf_counter() - start


def eval_cost(n_evaluations: int, prep) -> float:
    ds, model = prep.dataset, prep.model
    start = time.perf_counter()
    for _ in range(n_evaluations):
        model.loss(prep.w0, ds.X_train, ds.y_train)
        model.predict(prep.w0, ds.X_test)
    return time.perf_counter() - start


def main(data_dir: str, until: float, repeats: int) -> None:
    overrides = ['model.name="mlp"', "run.eval_every=0", f"run.until={until}"]
    sc = load_scenario(ROOT / "scenarios" / "noniid_speed_skew.toml", overrides, data_dir=data_dir)
    prep = prepare(sc)
    print(f"noniid_speed_skew: MLP {prep.w0.size:,} parameters, {sc.n_workers} workers, batch {sc.run.batch_size}, "
          f"T = {sc.run.until:g}, evaluation off")
    for name in ("ssgd", "asgd", "gsgd"):
        best_emu = best_bare = float("inf")
        for _ in range(repeats):
            result = simulate(sc, name, prepared=prep)
            best_emu = min(best_emu, result.wall_s - eval_cost(len(result.curve), prep))
            grads = len(result.records.staleness)
            group = max(1, round(grads / max(1, result.updates)))
            best_bare = min(best_bare, bare_mlp_loop(prep, sc.n_workers, sc.run.batch_size, result.updates, group,
                                                     sc.rule(name).lr, sc.run.seed))
        print(f"  {name:5s} updates {result.updates:5d}  gradients {grads:5d}  emulator {best_emu:.3f} s  "
              f"bare {best_bare:.3f} s  ratio {best_emu / best_bare:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--until", type=float, default=200.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    main(args.data_dir, args.until, args.repeats)
