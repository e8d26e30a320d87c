"""Emulator overhead: the paper scenario vs a bare numpy loop doing the same gradients.

Prints, per rule, the wall time of the emulated run (evaluation off) and of a
plain loop computing exactly the same number of minibatch gradients and model
updates with no simulation, and their ratio (target ≤ 1.25). Then simulated
updates per wall second for 1,000 ASGD workers with exponential times on digits.

Usage: python benchmarks/bench_core.py [--data-dir DIR]  (MNIST; default ../shared/data)
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


def bare_loop(prep, n_workers: int, batch: int, updates: int, group_size: int, lr: float, seed: int) -> float:
    """Wall seconds for *updates* model updates of *group_size* gradients each, no simulation."""
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


def paper(data_dir: str) -> None:
    sc = load_scenario(ROOT / "scenarios" / "gsgd_paper.toml", ["run.eval_every=0"], data_dir=data_dir)
    prep = prepare(sc)
    print(f"paper scenario (MNIST odd/even, {sc.n_workers} workers, T = {sc.run.until:g}), evaluation off")
    for name in ("ssgd", "asgd", "gsgd"):
        best_emu = best_bare = float("inf")
        for _ in range(3):
            result = simulate(sc, name, prepared=prep)
            best_emu = min(best_emu, result.wall_s - _eval_cost(result, prep))
            grads = len(result.records.staleness)
            group = max(1, round(grads / max(1, result.updates)))
            best_bare = min(best_bare, bare_loop(prep, sc.n_workers, sc.run.batch_size, result.updates, group,
                                                 0.01, sc.run.seed))
        print(f"  {name:5s} updates {result.updates:5d}  gradients {grads:5d}  emulator {best_emu:.3f} s  "
              f"bare {best_bare:.3f} s  ratio {best_emu / best_bare:.2f}")


def _eval_cost(result, prep) -> float:
    """The run still evaluates at t=0 and at the end: subtract those two evaluations."""
    ds, model = prep.dataset, prep.model
    start = time.perf_counter()
    for _ in range(len(result.curve)):
        model.loss(prep.w0, ds.X_train, ds.y_train)
        model.accuracy(prep.w0, ds.X_test, ds.y_test)
    return time.perf_counter() - start


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
    args = parser.parse_args()
    if (Path(args.data_dir) / "mnist").exists() or Path(args.data_dir).exists():
        paper(args.data_dir)
    scale()
