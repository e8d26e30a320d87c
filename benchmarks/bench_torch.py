"""Emulator overhead with a PyTorch model: the paper CNN scenario vs a bare torch loop.

For SSGD, ASGD and GSGD on ``scenarios/paper_cnn.toml`` (LeNet-5 on MNIST, 10 classes, 16
workers of three speeds, T = 600, evaluation off) this prints the emulator's time against a
**bare torch replay loop** (``torch_replay``): every applied gradient of the emulated run is
computed again by a plain ``nn.Module`` forward and backward (its parameters loaded with
``vector_to_parameters``) on the same worker's same minibatch (the worker's own batch
stream) at the model version it read in the emulation (update − 1 − staleness, from the
run's records), summed in the same order, averaged and scaled by the same learning rate.
The loop's final model is checked bit-identical to the emulator's, so it provably does the
same arithmetic; emulator / loop is what the emulation costs on top of the learning.

The machine is shared, so the two are run in one process, interleaved, ``--reps`` times
(default 3): medians and the min-max range of the per-repetition ratios, for wall-clock
time and CPU time. torch runs on the scenario's threads (one by default) in both. The two
evaluations every run makes (t = 0 and the end) are left out (``bench_core._NoEvaluation``).

Usage: python benchmarks/bench_torch.py [--data-dir DIR] [--reps N] [--until T]
(MNIST and PyTorch; default data ../shared/data)
"""

from __future__ import annotations

import argparse
import copy
import platform
import statistics
import time
from pathlib import Path

import numpy as np
from bench_core import _emulate, _fmt, release_plan, schedule

from netsim.config.scenario import load_scenario
from netsim.rng import Streams
from netsim.sim.engine import prepare
from netsim.sim.worker import BatchSampler

ROOT = Path(__file__).resolve().parents[1]


def torch_replay(prep, sched, sc, lr: float):
    """(wall s, CPU s, final model (n_params,)) of the bare loop replaying schedule *sched*."""
    import torch

    model = prep.model
    module = copy.deepcopy(model.module).train()
    params = list(module.parameters())
    X, y = prep.dataset.X_train, prep.dataset.y_train
    streams = Streams(sc.run.seed)
    samplers = [
        BatchSampler(prep.shards[i], sc.run.batch_size, streams.rng("batch", i))
        for i in range(sc.n_workers)
    ]
    plan = release_plan(sched)
    models = {0: prep.w0.copy()}
    version = 0
    start, cpu = time.perf_counter(), time.process_time()
    for count, items in sched:
        total = None
        for worker, read in items:
            rows = samplers[worker].next()
            torch.nn.utils.vector_to_parameters(
                torch.tensor(models[read], dtype=model.dtype), params
            )
            x = torch.tensor(X[rows], dtype=model.dtype).view(len(rows), *model.input_shape)
            loss = torch.nn.functional.cross_entropy(module(x), torch.tensor(y[rows]))
            g = (
                torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, params)])
                .to(torch.float64)
                .numpy()
            )
            if total is None:
                total = g
            else:
                total += g
        if count > 1:
            total /= count
        total *= lr
        models[version + 1] = models[version] - total
        for done in plan[version]:
            models.pop(done)
        version += 1
    return time.perf_counter() - start, time.process_time() - cpu, models[version]


def main(data_dir: str, reps: int, until: float, rules: list[str]) -> None:
    sc = load_scenario(
        ROOT / "scenarios" / "paper_cnn.toml",
        ["run.eval_every=0", f"run.until={until}"],
        data_dir=data_dir,
    )
    prep = prepare(sc)
    print(
        f"paper_cnn: LeNet-5 {prep.w0.size:,} parameters ({sc.model.dtype}, {sc.model.threads} thread), "
        f"{sc.n_workers} workers, batch {sc.run.batch_size}, T = {sc.run.until:g}, evaluation off; "
        f"{reps} interleaved repetitions, median [min-max of per-repetition ratios]; "
        f"{platform.processor() or platform.machine()}, load average {', '.join(f'{x:.1f}' for x in _load())}"
    )
    for name in rules:
        emu, bare = [], []
        for _ in range(reps):
            result, wall, cpu = _emulate(sc, name, prep)
            emu.append((wall, cpu))
            sched = schedule(result)
            b_wall, b_cpu, w = torch_replay(prep, sched, sc, sc.rule(name).lr)
            if not np.array_equal(w, result.final_w):
                raise SystemExit(f"{name}: the bare loop's final model differs from the emulator's")
            bare.append((b_wall, b_cpu))
        grads = len(result.records.staleness)
        print(
            f"  {name:5s} updates {result.updates:5d}  gradients {grads:5d}  (bare loop's final model "
            "bit-identical)"
        )
        for k, clock in enumerate(("wall", "CPU ")):
            e, t = [x[k] for x in emu], [x[k] for x in bare]
            print(
                f"        {clock}: emulator {statistics.median(e):.2f} s  bare torch loop "
                f"{statistics.median(t):.2f} s  emulator/bare {_fmt([a / b for a, b in zip(e, t)])}  "
                "(goal <= 1.25)",
                flush=True,
            )


def _load() -> tuple[float, ...]:
    import os

    return os.getloadavg()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--until", type=float, default=600.0)
    parser.add_argument("--rules", default="ssgd,asgd,gsgd")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("bench_torch needs PyTorch: pip install torch==2.13.0") from None
    if not (Path(args.data_dir) / "mnist").exists():
        raise SystemExit(f"MNIST not found under {args.data_dir}")
    main(args.data_dir, args.reps, args.until, args.rules.split(","))
