"""Scale benchmarks: many workers, big models, sweep throughput. Prints figures and ratios.

1. ASGD with 10,000 workers to 1,000,000 updates: wall seconds and updates per wall
   second. netsim cuts the training rows into equal disjoint shards, one per worker,
   so 10,000 workers need >= 10,000 training rows: digits has 1,437, hence the
   10,000-worker run uses synthetic data of digits' shape (64 features, 2 classes,
   12,500 rows); a 1,437-worker run on digits itself is printed beside it.
2. Peak memory (max RSS of a fresh process) with 10,000 workers on a softmax model
   of 1,000 features x 100 classes = 100,000 parameters (800 KB per model), for
   SSGD, GSGD (4 groups of 2,500) and ASGD (3 simulated s: ~3 gradients per
   worker; SSGD/GSGD 25 s: a few rounds). Target <= 2 GB. The PS makes a new
   array per update and every worker holds a reference to the snapshot it read,
   so the live snapshots are the distinct versions held: 1 (SSGD), one or two
   per group (GSGD), up to one per worker (ASGD, where every worker really
   computes on a different model). Synchronous rules also buffer every pushed
   gradient (800 KB each) until their round or group is complete.
3. Sweep throughput: the same 8-run sweep with 1 and with 2 local worker processes.

Usage: python benchmarks/bench_scale.py [all|asgd|memory RULE|sweep] [--quick]
Each case of ``all`` runs in a fresh Python process so peak memory is its own.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "scenarios" / "quickstart.toml"


def _workers(n: int, classes: int = 1, mean: float = 10.0) -> str:
    size = n // classes
    items = [
        f'{{name="c{k}", count={size}, compute={{dist="exponential", mean={mean}}}}}'
        for k in range(classes)
    ]
    return "workers=[" + ", ".join(items) + "]"


def bench_asgd(updates: int) -> None:
    from netsim import load, simulate

    common = [
        "run.eval_every=0",
        "run.until=1e9",
        f"run.max_updates={updates}",
        "run.batch_size=1",
        "run.timeline_until=0",
        'run.algorithm="asgd"',
        "algorithms={asgd={lr=0.05}}",
    ]
    cases = [
        (
            "10,000 workers, synthetic 64 x 2 (digits' shape)",
            10_000,
            [
                'data={source="synthetic", n_samples=12500, n_features=64, n_classes=2, labels="binary"}'
            ],
        ),
        ("1,437 workers, digits", 1_437, []),
    ]
    for title, n, data in cases:
        sc = load(QUICK, common + data + [_workers(n)])
        start = time.perf_counter()
        result = simulate(sc, "asgd")
        wall = time.perf_counter() - start
        print(
            f"ASGD, {title}: {result.updates:,} updates in {wall:.1f} s wall "
            f"= {result.updates / wall:,.0f} updates/s; peak RSS so far {_peak_mb():,.0f} MB",
            flush=True,
        )


def bench_memory(rule: str, quick: bool, compact: bool = True) -> None:
    from netsim import load, simulate

    n = 2_000 if quick else 10_000
    until = (
        3.0 if rule == "asgd" else 25.0
    )  # a synchronous round waits for the slowest of 2,500-10,000 draws
    sc = load(
        QUICK,
        [
            "run.eval_every=0",
            f"run.until={until}",
            "run.batch_size=1",
            "run.timeline_until=0",
            f'run.algorithm="{rule}"',
            f'data={{source="synthetic", n_samples={n + n // 4}, n_features=1000, n_classes=100, labels="multiclass"}}',
            f'model={{name="softmax", l2={0.0 if compact else 0.0001}}}',
            f"run.compact_gradients={'true' if compact else 'false'}",
            _workers(n, classes=4, mean=1.0),
            "algorithms={ssgd={lr=0.1}, asgd={lr=0.01}, gsgd={lr=0.05}}",
        ],
    )
    base = _peak_mb()
    start = time.perf_counter()
    result = simulate(sc, rule)
    wall = time.perf_counter() - start
    mode = "compact gradients, L2 = 0" if compact else "dense gradients, L2 = 1e-4"
    print(
        f"memory, {rule.upper()} ({mode}): {n:,} workers, softmax 1,000 x 100 = 100,000 parameters, "
        f"{result.updates:,} updates in {wall:.1f} s wall; peak RSS {_peak_mb():,.0f} MB "
        f"(data and imports before the run: {base:,.0f} MB); target <= 2,048 MB",
        flush=True,
    )


def _sweep_once(workers: int, runs: int, until: float) -> float:
    from netsim.sweeps.runner import plan_sweep, run_sweep

    plan = plan_sweep(
        QUICK,
        [f"run.seed={','.join(str(s) for s in range(1, runs + 1))}"],
        sets=[f"run.until={until}", "run.eval_every=50", "run.timeline_until=0"],
    )
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        outcome = run_sweep(plan, tmp, workers=workers)
        assert outcome.executed == runs and not outcome.failures
        return time.perf_counter() - start


def bench_sweep(quick: bool) -> None:
    runs, until = (4, 500.0) if quick else (8, 40000.0)
    one = _sweep_once(1, runs, until)
    two = _sweep_once(2, runs, until)
    print(
        f"sweep of {runs} quickstart runs (T = {until:g} s each): 1 worker {one:.1f} s "
        f"({60 * runs / one:.1f} runs/min), 2 workers {two:.1f} s ({60 * runs / two:.1f} runs/min); "
        f"speed-up {one / two:.2f}x",
        flush=True,
    )


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "case", nargs="?", default="all", choices=["all", "asgd", "memory", "sweep"]
    )
    parser.add_argument("rule", nargs="?", default="asgd", choices=["ssgd", "gsgd", "asgd"])
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes (a smoke test of this script)"
    )
    parser.add_argument(
        "--dense", action="store_true", help="memory case: dense gradients with L2 (no compaction)"
    )
    args = parser.parse_args()
    if args.case == "asgd":
        bench_asgd(20_000 if args.quick else 1_000_000)
    elif args.case == "memory":
        bench_memory(args.rule, args.quick, compact=not args.dense)
    elif args.case == "sweep":
        bench_sweep(args.quick)
    else:
        extra = ["--quick"] if args.quick else []
        for case in (
            ["asgd"],
            ["memory", "ssgd"],
            ["memory", "gsgd"],
            ["memory", "asgd"],
            ["sweep"],
        ):
            subprocess.run([sys.executable, __file__, *case, *extra], check=True)


if __name__ == "__main__":
    main()
