"""Emulator overhead: the paper scenario vs the fastest honest bare numpy loop.

For SSGD, ASGD and GSGD on the paper scenario (MNIST odd/even, 16 workers, T = 600,
evaluation off) this prints the emulator's time and two references:

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
products written with ``dot(out=)``, each new model written into the buffer of the
version last let go) and no simulation, no events, no records. The emulator must do the same arithmetic (it
produces the same bits) plus scheduling, so emulator / tuned is its overhead.

Timing: the machine is shared, so emulator, old loop and tuned loop are run side by
side in one process, interleaved, ``--reps`` times (default 5); medians and the
min-max range of the per-repetition ratios are printed, for wall-clock time and for the
process's CPU time (``time.process_time``), which leaves out the time spent waiting for a
core while other programs run and so is the steadier figure on a loaded machine (memory
bandwidth is still shared: the tuned loop's own time varies by ±30 % between runs there).
BLAS runs with its default threads, the same for all three. The two evaluations the
emulator always makes (t = 0 and the end) are left out (``_NoEvaluation``).

The emulator runs as any user's run of this scenario does: on lean workers
(:mod:`netsim.sim.lean`: SimPy callbacks instead of processes; the gradients of the
workers that read one model and finish at one instant, an SSGD round's or a GSGD group's,
stacked into one product per step), since the paper scenario has no event, transfer time
or rule that interrupts workers. A line per rule
gives the general path too (the worker processes, forced with ``lean=False``), timed in
the same repetitions: the same results, for comparison.
A last line per rule times SimPy alone on the run's schedule (``event_floor``): one
timeout per gradient, nothing else; tuned + floor is about the least a SimPy-based
emulator can cost. Then the emulator's own CPU time per gradient with the gradient made
free (``own_cost``: steadier than the ratios on a loaded machine; the free model does not
stack, so its gradients are evaluated one by one), and simulated updates per wall second
for 1,000 ASGD workers on digits.

Usage: python benchmarks/bench_core.py [--data-dir DIR] [--reps N] [--rules ssgd,asgd,gsgd]
(MNIST; default ../shared/data)
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from netsim.config.scenario import load_scenario
from netsim.rng import Streams
from netsim.sim.engine import Simulation, prepare, simulate
from netsim.sim.worker import BatchSampler
from netsim.workload.models import Model

ROOT = Path(__file__).resolve().parents[1]


def plain_loop(
    prep, n_workers: int, batch: int, updates: int, group_size: int, lr: float, seed: int
):
    """The previously shipped bare loop: (wall s, CPU s) for *updates* updates of *group_size* gradients."""
    X, y, gradient = prep.dataset.X_train, prep.dataset.y_train, prep.model.gradient
    streams = Streams(seed)
    samplers = [
        BatchSampler(prep.shards[i], batch, streams.rng("batch", i)) for i in range(n_workers)
    ]
    w = prep.w0
    start, cpu = time.perf_counter(), time.process_time()
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
    return time.perf_counter() - start, time.process_time() - cpu


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


def release_plan(sched) -> list[list[int]]:
    """Per update u of *sched*: the model versions no later update reads once u is done
    (version u is read by update u itself, the step from it)."""
    last = {}
    for u, (_, items) in enumerate(sched):
        last[u] = u
        for _, read in items:
            last[read] = u
    plan: list[list[int]] = [[] for _ in sched]
    for version, u in last.items():
        plan[u].append(version)
    return plan


def replay_loop(prep, sched, n_workers: int, batch: int, lr: float, seed: int):
    """The tuned loop: (wall s, CPU s, final model). Same minibatches, models and order as the run.

    A linear model's gradient is computed as ``X_b^T r`` with ``r = residual(w, X_b, y_b)``
    into a preallocated vector; the MLP's (no such form) by its own ``gradient``, whose new
    vector then holds the update's sum. Each new model version is written into the buffer
    of the version last let go (no later update reads it: :func:`release_plan`), which is
    the one most likely still in cache."""
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    residual, l2 = model.residual, model.l2
    low_rank = model.name != "mlp"
    streams = Streams(seed)
    samplers = [
        BatchSampler(prep.shards[i], batch, streams.rng("batch", i)) for i in range(n_workers)
    ]
    d = prep.w0.size
    plan = release_plan(sched)
    models = {0: prep.w0.copy()}  # the versions still read, by version
    free: list[np.ndarray] = []  # buffers let go, the last one on top
    size = samplers[0].size
    xb = np.empty((size, X.shape[1]))
    g, acc, reg = np.empty(d), np.empty(d), np.empty(d)
    g2, acc2 = (g.reshape(X.shape[1], -1), acc.reshape(X.shape[1], -1)) if low_rank else (g, acc)
    version = 0
    start, cpu = time.perf_counter(), time.process_time()
    for count, items in sched:
        first = True
        for worker, read in items:
            w = models[read]
            rows = samplers[worker].next()
            X.take(rows, axis=0, out=xb, mode="clip")
            if not low_rank:  # the gradient is a new vector: the first one holds the sum
                grad = model.gradient(w, xb, y[rows])
                if first:
                    total = grad
                else:
                    total += grad
                first = False
                continue
            r = residual(w, xb, y[rows])
            out, out2 = (acc, acc2) if first else (g, g2)
            np.dot(xb.T, r, out=out2 if r.ndim == 2 else out)
            if l2:
                np.multiply(w, l2, out=reg)
                out += reg
            if not first:
                acc += g
            first = False
        if low_rank:
            total = acc
        if count > 1:
            total /= count
        total *= lr
        new = free.pop() if free else np.empty(d)
        np.subtract(models[version], total, out=new)
        models[version + 1] = new
        for done in plan[version]:
            free.append(models.pop(done))
        version += 1
    return time.perf_counter() - start, time.process_time() - cpu, models[version].copy()


def event_floor(result, sc) -> tuple[float, float]:
    """(wall s, CPU s) of SimPy alone: one process per worker, one timeout per gradient of
    the worker's class time, the run's gradient count, no numerics and no PS: the least
    any SimPy-based emulator of this run costs on top of the arithmetic."""
    import simpy

    env = simpy.Environment()
    left = [len(result.records.staleness)]
    done = env.event()

    def worker(duration):
        while left[0] > 0:
            yield env.timeout(duration)
            left[0] -= 1
        if not done.triggered:
            done.succeed()

    for wc in sc.workers:
        for _ in range(wc.count):
            env.process(worker(wc.compute.mean()))
    start, cpu = time.perf_counter(), time.process_time()
    env.run(until=done)
    return time.perf_counter() - start, time.process_time() - cpu


class _NoEvaluation:
    """The scenario's model with ``loss``, ``accuracy`` and ``predict`` answering 0 at no cost.

    A run evaluates the model at t = 0 and at the end even with ``eval_every = 0`` (the
    training loss, and the test-set predictions behind the accuracies); timing the emulator
    on this model leaves those two full-data evaluations out exactly, while ``gradient``
    and ``residual`` are the model's own (the final model is unchanged). ``predict`` must be
    stubbed too: a (10,000 x d) product there runs on every BLAS thread, whose spinning
    afterwards was charged to the CPU time of whatever ran next."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        return getattr(self._model, name)

    def for_run(self, seed: int) -> "_NoEvaluation":
        return _NoEvaluation(self._model.for_run(seed))

    def loss(self, w, X, y) -> float:
        return 0.0

    def accuracy(self, w, X, y) -> float:
        return 0.0

    def predict(self, w, X) -> np.ndarray:
        return np.zeros(X.shape[0], dtype=np.int64)


class _FreeGradient(Model):
    """A model whose gradient is a constant array (d,) at no cost: timing the emulator on it
    (with a one-column X, so that gathering rows costs next to nothing) leaves the emulator's
    own cost per gradient: SimPy, worker loop, push, rule, PS step (two vector operations and
    the finiteness check), records."""

    def __init__(self, d: int):
        super().__init__()
        self.g = np.full(d, 1e-9)

    def gradient(self, w, X, y) -> np.ndarray:
        return (
            self.g.copy()
        )  # a new array, as every model's gradient (the PS may scale it in place)

    def loss(self, w, X, y) -> float:
        return 0.0

    def predict(self, w, X) -> np.ndarray:
        return np.zeros(X.shape[0], dtype=np.int64)


def own_cost(sc, prep, rules: list[str], reps: int) -> None:
    """Print the emulator's CPU µs per gradient with :class:`_FreeGradient` (median of *reps*)."""
    ds = prep.dataset
    free = replace(
        prep,
        model=_FreeGradient(prep.w0.size),
        dataset=replace(
            ds,
            X_train=np.ascontiguousarray(ds.X_train[:, :1]),
            X_test=ds.X_test[:1, :1],
            y_test=ds.y_test[:1],
        ),
    )
    parts = []
    for name in rules:
        per = []
        for _ in range(reps):
            cpu = time.process_time()
            result = simulate(sc, name, prepared=free)
            per.append((time.process_time() - cpu) / len(result.records.staleness) * 1e6)
        parts.append(f"{name} {statistics.median(per):.1f} µs")
    print(
        f"  emulator's own CPU time per gradient (free gradient, median of {reps}): {', '.join(parts)}",
        flush=True,
    )


def _emulate(sc, name, prep, lean: bool = True):
    """(result, wall s, CPU s) of one emulated run, without its two evaluations; *lean* False
    forces the worker processes (the general path) where the run could use lean workers."""
    cpu = time.process_time()
    result = Simulation(sc, name, replace(prep, model=_NoEvaluation(prep.model)), lean=lean).run()
    return result, result.wall_s, time.process_time() - cpu


def _fmt(values) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def replay_checked(prep, sched, sc, name: str, result) -> tuple[float, float]:
    """(wall s, CPU s) of :func:`replay_loop` for rule *name*'s run *result* of scenario *sc*;
    exits when its final model is not bit-identical to the run's."""
    wall, cpu, w_final = replay_loop(
        prep, sched, sc.n_workers, sc.run.batch_size, sc.rule(name).lr, sc.run.seed
    )
    if not np.array_equal(w_final, result.final_w):
        raise SystemExit(f"{name}: the tuned loop's final model differs from the emulator's")
    return wall, cpu


def print_ratios(emu, old, tuned) -> None:
    """One line per clock (wall, CPU): the medians of (wall s, CPU s) pairs *emu*, *old* and
    *tuned* (one per repetition) and the ratios emulator/old and emulator/tuned."""
    for k, clock in enumerate(("wall", "CPU ")):
        e, o, t = ([x[k] for x in xs] for xs in (emu, old, tuned))
        print(
            f"        {clock}: emulator {statistics.median(e):.3f} s  old bare {statistics.median(o):.3f} s  "
            f"tuned {statistics.median(t):.3f} s  emulator/old {_fmt([a / b for a, b in zip(e, o)])}  "
            f"emulator/tuned {_fmt([a / b for a, b in zip(e, t)])}  (goal <= 1.25)",
            flush=True,
        )


def paper(data_dir: str, reps: int, rules: list[str]) -> None:
    sc = load_scenario(
        ROOT / "scenarios" / "gsgd_paper.toml", ["run.eval_every=0"], data_dir=data_dir
    )
    prep = prepare(sc)
    print(
        f"paper scenario (MNIST odd/even, {sc.n_workers} workers, T = {sc.run.until:g}), evaluation off; "
        f"{reps} interleaved repetitions, median [min-max of per-repetition ratios]"
    )
    for name in rules:
        emu, general, old, tuned, floor = [], [], [], [], []
        sched = None
        for _ in range(reps):
            result, wall, cpu = _emulate(sc, name, prep)
            emu.append((wall, cpu))
            general.append(_emulate(sc, name, prep, lean=False)[2])
            if sched is None:
                sched = schedule(result)
            grads = len(result.records.staleness)
            group = max(1, round(grads / max(1, result.updates)))
            old.append(
                plain_loop(
                    prep, sc.n_workers, sc.run.batch_size, result.updates, group, 0.01, sc.run.seed
                )
            )
            tuned.append(replay_checked(prep, sched, sc, name, result))
            floor.append(event_floor(result, sc))
        path = (
            "lean workers" if not Simulation(sc, name, prep).general_reason else "worker processes"
        )
        print(
            f"  {name:5s} updates {result.updates:5d}  gradients {grads:5d}  (tuned final model bit-identical; "
            f"emulator on {path})"
        )
        print_ratios(emu, old, tuned)
        f = [x[1] for x in floor]
        t = [x[1] for x in tuned]
        print(
            f"        general path (worker processes, CPU): {statistics.median(general):.3f} s = "
            f"{_fmt([a / b for a, b in zip(general, t)])} of the tuned loop",
            flush=True,
        )
        print(
            f"        SimPy floor (events only, CPU): {statistics.median(f):.3f} s = "
            f"{_fmt([a / b for a, b in zip(f, t)])} of the tuned loop",
            flush=True,
        )
    own_cost(sc, prep, rules, max(reps, 5))


def scale() -> None:
    sc = load_scenario(
        ROOT / "scenarios" / "quickstart.toml",
        [
            "run.eval_every=0",
            "run.until=200",
            "run.batch_size=1",
            'run.algorithm="asgd"',
            'workers=[{name="w", count=1000, compute={dist="exponential", mean=10.0}}]',
            "algorithms={asgd={lr=0.05}}",
        ],
    )
    result = simulate(sc, "asgd")
    print(
        f"1,000 ASGD workers, exponential times, digits: {result.updates} updates in {result.wall_s:.2f} s "
        f"= {result.updates / result.wall_s:,.0f} simulated updates per wall second"
    )


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
