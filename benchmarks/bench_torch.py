"""Emulator overhead and memory with PyTorch models: the paper CNN scenario vs a bare torch loop.

**Speed.** For SSGD, ASGD and GSGD on ``scenarios/paper_cnn.toml`` (MNIST, 10 classes, 16
workers of three speeds, evaluation off) with three networks -- LeNet-5 (61,706 parameters),
an MLP 784-1024-512-10 (1,333,770) and a CNN (conv 32, conv 64, dense 320; 1,025,866) -- in
float32, this prints the emulator's time against a **bare torch replay loop**
(``torch_replay``): every applied gradient of the emulated run is computed again by a plain
``nn.Module`` forward and backward (its parameters loaded with ``vector_to_parameters``) on the
same worker's same minibatch (the worker's own batch stream) at the model version it read in
the emulation (update − 1 − staleness, from the run's records), summed in the same order,
averaged and scaled by the same learning rate, in float32. The loop's final model is checked
bit-identical to the emulator's, so it provably does the same arithmetic; emulator / loop is
what the emulation costs on top of the learning.

The machine is shared, so the two are interleaved, ``--reps`` times (default 3): medians and
the min-max range of the per-repetition ratios, for wall-clock time and CPU time, with the
load average. The emulator runs in a child process with the scenario's settings (large
blocks in memory maps of their own, ``model.mmap_threshold``, a setting of the whole
process); the bare loop in this one, with the C library's allocator as it is by default. torch runs on the scenario's threads (one by
default) in both. The two evaluations every run makes (t = 0 and the end) are left out
(``bench_core._NoEvaluation``).

**Memory** (``--memory``). An MLP of 5,008,510 parameters (784-6300-10) on MNIST under ASGD,
SSGD and GSGD with 2, 8 and 16 workers, each in a fresh process: the peak resident set during
the run (``VmHWM``, reset once the run is built: data, module, initial model and the
evaluation subsets loaded, the allocator's free memory given back) above the resident set
then (the baseline), in float32 model copies, against the goal of workers + 4 (workers + 6
with ``--optimizer adam`` or ``adamw``: the server's two moment vectors); and how many model-sized vectors the run made
(:class:`netsim.workload.buffers.Buffers`: the most alive at once).

Usage: python benchmarks/bench_torch.py [--data-dir DIR] [--reps N] [--models lenet5,mlp,cnn]
[--rules ssgd,asgd,gsgd] [--memory [--optimizer sgd|adam|adamw]] (MNIST and PyTorch; default data ../shared/data)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import ctypes
import gc
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_core import _emulate, _fmt, _NoEvaluation, release_plan, schedule

from netsim.config.scenario import load_scenario
from netsim.rng import Streams
from netsim.sim.engine import Simulation, prepare
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
            torch.nn.utils.vector_to_parameters(torch.from_numpy(models[read]), params)
            x = torch.from_numpy(X[rows]).view(len(rows), *model.input_shape)
            loss = torch.nn.functional.cross_entropy(module(x), torch.from_numpy(y[rows]))
            g = torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, params)]).numpy()
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


NETWORKS = {
    "lenet5": ([], 600.0),
    "mlp": (["model.name='mlp'", "model.hidden=[1024, 512]"], 60.0),
    "cnn": (["model.name='cnn'", "model.channels=[32, 64]", "model.hidden=[320]"], 60.0),
    "mlp5": (["model.name='mlp'", "model.hidden=[6300]"], 20.0),
}
"""Network → (overrides of paper_cnn.toml, default horizon T: about 5,200 gradients at T = 600).
``mlp5`` (784-6300-10, 5,008,510 parameters, the memory benchmark's network) is not in the
default list: its 20 MB layer gradients are where large blocks in memory maps of their own
cost most."""


def _scenario(data_dir: str, net: str, until: float | None, extra=()):
    overrides, horizon = NETWORKS[net]
    return load_scenario(
        ROOT / "scenarios" / "paper_cnn.toml",
        [
            "run.eval_every=0",
            f"run.until={until or horizon}",
            "model.master_dtype='float32'",  # the scenario's server keeps float64
            *overrides,
            *extra,
        ],
        data_dir=data_dir,
    )


_CHILD: dict = {}


def emulate_child(data_dir: str, net: str, until: float | None, name: str, extra=()):
    """In the emulator's process: (wall s, CPU s, schedule, final model, updates) of one run
    of rule *name* on network *net* with the scenario's settings and overrides *extra*."""
    if net not in _CHILD:
        sc = _scenario(data_dir, net, until, extra)
        _CHILD[net] = (sc, prepare(sc))
    sc, prep = _CHILD[net]
    result, wall, cpu = _emulate(sc, name, prep)
    return wall, cpu, schedule(result), result.final_w, result.updates


def main(
    data_dir: str, reps: int, until: float | None, nets: list[str], rules: list[str], extra=()
) -> None:
    print(
        f"{reps} interleaved repetitions, median [min-max of per-repetition ratios]; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {_load()} at the start"
    )
    child = concurrent.futures.ProcessPoolExecutor(1, multiprocessing.get_context("spawn"))
    for net in nets:
        sc = _scenario(data_dir, net, until, ["model.mmap_threshold=0"])  # the bare loop's
        prep = prepare(sc)
        print(
            f"paper_cnn with {net}: {prep.w0.size:,} parameters (master {prep.w0.dtype}, "
            f"{sc.model.dtype} passes, {sc.model.threads} thread), {sc.n_workers} workers, "
            f"batch {sc.run.batch_size}, T = {sc.run.until:g}, evaluation off",
            flush=True,
        )
        for name in rules:
            emu, bare = [], []
            for _ in range(reps):
                wall, cpu, sched, final_w, updates = child.submit(
                    emulate_child, data_dir, net, until, name, tuple(extra)
                ).result()
                emu.append((wall, cpu))
                b_wall, b_cpu, w = torch_replay(prep, sched, sc, sc.rule(name).lr)
                if not np.array_equal(w, final_w):
                    raise SystemExit(
                        f"{net} {name}: the bare loop's final model differs from the emulator's"
                    )
                bare.append((b_wall, b_cpu))
            grads = sum(len(items) for _, items in sched)
            print(
                f"  {name:5s} updates {updates:5d}  gradients {grads:5d}  (bare loop's "
                f"final model bit-identical; load average now {_load()})"
            )
            for k, clock in enumerate(("wall", "CPU ")):
                e, t = [x[k] for x in emu], [x[k] for x in bare]
                print(
                    f"        {clock}: emulator {statistics.median(e):.2f} s  bare torch loop "
                    f"{statistics.median(t):.2f} s  emulator/bare {_fmt([a / b for a, b in zip(e, t)])}  "
                    "(goal <= 1.25)",
                    flush=True,
                )
    child.shutdown()


MOMENTS = {"adam": 2, "adamw": 2}
"""Model-sized vectors the server optimizer keeps beyond SGD's (Adam's two moments)."""

MEMORY_NET = NETWORKS["mlp5"][0]
"""784-6300-10: 5,008,510 parameters."""


def _status(field: str) -> int:
    """Bytes of *field* (``VmRSS``, ``VmHWM``) of this process (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"/proc/self/status has no {field}")


def _trim() -> None:
    """Give the allocator's free memory back to the system (glibc's ``malloc_trim``)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its free memory stays in the baseline
        pass


def memory_child(
    data_dir: str, rule: str, n_workers: int, updates: int, optimizer: str = "sgd"
) -> None:
    """One run in this process; prints 'copies baseline_bytes peak_bytes n_params'."""
    workers = (
        f"workers=[{{name='a', count={n_workers // 2}, compute={{dist='exponential', mean=1.0}}}}, "
        f"{{name='b', count={n_workers - n_workers // 2}, compute=2.0}}]"
    )
    sc = _scenario(
        data_dir,
        "lenet5",
        1e9,
        [
            *MEMORY_NET,
            workers,
            f"run.max_updates={updates}",
            "algorithms.gsgd.groups=[['a'], ['b']]",
            f"algorithms.{rule}.optimizer='{optimizer}'",
        ],
    )
    prep = prepare(sc)
    sim = Simulation(sc, rule, replace(prep, model=_NoEvaluation(prep.model)))
    gc.collect()
    _trim()  # free heap memory (the check's pass left some) is not counted in the baseline
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    base = _status("VmRSS")
    result = sim.run()
    peak = _status("VmHWM")
    d = prep.w0.size
    print(
        f"{(peak - base) / (d * prep.w0.itemsize):.2f} {base} {peak} {d} {result.updates} "
        f"{sim.model.vectors.made}"
    )


def memory(data_dir: str, rules: list[str], updates: int, optimizer: str = "sgd") -> None:
    print(
        f"peak resident set above the baseline, in float32 model copies; "
        f"{platform.processor() or platform.machine()}, load average {_load()}; "
        f"server optimizer {optimizer} (allowance workers + {4 + MOMENTS.get(optimizer, 0)})"
    )
    for rule in rules:
        for n in (2, 8, 16):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--data-dir",
                    data_dir,
                    "--memory-child",
                    f"{rule},{n}",
                    "--updates",
                    str(updates),
                    "--optimizer",
                    optimizer,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode:
                raise SystemExit(out.stderr.strip().splitlines()[-1])
            copies, base, peak, d, done, made = out.stdout.split()
            print(
                f"  {rule:5s} {n:2d} workers: {float(copies):5.2f} copies (goal <= {n + 4 + MOMENTS.get(optimizer, 0)}) "
                f"above a baseline of {int(base) / 1e6:.0f} MB; peak {int(peak) / 1e6:.0f} MB; "
                f"{int(d):,} parameters, {done} updates, {made} vectors made",
                flush=True,
            )


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--until", type=float, default=None)
    parser.add_argument("--models", default="lenet5,mlp,cnn")
    parser.add_argument("--rules", default="ssgd,asgd,gsgd")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--optimizer", default="sgd", choices=("sgd", "adam", "adamw"))
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="scenario override for the emulated runs (speed), e.g. model.mmap_threshold=0",
    )
    parser.add_argument("--memory-child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("bench_torch needs PyTorch: pip install torch==2.13.0") from None
    if not (Path(args.data_dir) / "mnist").exists():
        raise SystemExit(f"MNIST not found under {args.data_dir}")
    if args.memory_child:
        rule, n = args.memory_child.split(",")
        memory_child(args.data_dir, rule, int(n), args.updates, args.optimizer)
    elif args.memory:
        memory(args.data_dir, args.rules.split(","), args.updates, args.optimizer)
    else:
        main(
            args.data_dir,
            args.reps,
            args.until,
            args.models.split(","),
            args.rules.split(","),
            args.set,
        )
