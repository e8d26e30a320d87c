"""Scaling table: wall time and peak memory vs workers and vs model size, with and without the network.

Every point is one ASGD run (evaluation and timeline off, a fixed number of updates,
exponential compute times of mean 10 s) in a fresh Python process, so the peak
resident memory printed is that run's own (data, imports and the run together).

* workers 16 → 10,000 (100,000 with ``--big``), synthetic data of 64 features
  (1.25 rows per worker, at least 2,500 rows: the shards are disjoint), batch 1;
* parameters 64 → 100,000 with 16 workers, batch 16: logistic on 64 and 1,000
  features, softmax on 1,000 features x 10 and x 100 classes;
* "network": the same runs on a star topology (one 10 Gbit/s link per host, the PS on
  its own host), every pull and push a flow of the model's size (4 bytes per
  parameter) sharing links max-min fairly; fewer updates, as every transfer is
  two flow events. Without the network, transfers take no time.

Points run with single-threaded BLAS (see ONE_THREAD). Columns: updates, wall time of the run (s; data preparation excluded), updates per
wall second, peak RSS (MB). The table is printed (``benchmarks/refresh_docs.py bench_scaling``
puts it in docs/SCALING.md); the progress of each point goes to stderr.

Usage: python benchmarks/bench_scaling.py [--big] [--quick]
       python benchmarks/bench_scaling.py point WORKERS FEATURES CLASSES UPDATES BATCH NETWORK
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = {
    **os.environ,
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
"""Points run with single-threaded BLAS: a minibatch product is far too small to gain from
threads, and on a shared 2-core machine OpenBLAS's spinning threads slowed the 100,000-
parameter run more than tenfold (164 s for 2,000 updates; 125 s for 20,000 single-threaded)."""
QUICK = ROOT / "scenarios" / "quickstart.toml"


def point(
    workers: int, features: int, classes: int, updates: int, batch: int, network: bool
) -> dict:
    """Run one point in this process; returns its figures."""
    from netsim import load
    from netsim.sim.engine import prepare, simulate

    rows = max(2_500, workers * 5 // 4)
    labels, model = ("binary", "logistic") if classes == 2 else ("multiclass", "softmax")
    sets = [
        "run.eval_every=0",
        "run.until=1e12",
        f"run.max_updates={updates}",
        f"run.batch_size={batch}",
        "run.timeline_until=0",
        'run.algorithm="asgd"',
        "algorithms={asgd={lr=0.01}}",
        f'data={{source="synthetic", n_samples={rows}, n_features={features}, n_classes={classes}, labels="{labels}"}}',
        f'model={{name="{model}", l2=0.0001}}',
        f'workers=[{{name="w", count={workers}, compute={{dist="exponential", mean=10.0}}}}]',
    ]
    if network:
        sets.append(f'network={{topology={{builder="star", args={{n_hosts={workers + 1}}}}}}}')
    sc = load(QUICK, sets)
    prep = prepare(sc)
    start = time.perf_counter()
    result = simulate(sc, "asgd", prepared=prep)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {
        "workers": workers,
        "params": prep.w0.size,
        "network": network,
        "updates": result.updates,
        "wall_s": wall,
        "peak_mb": peak,
    }


def plan(big: bool, quick: bool) -> list[tuple[str, tuple]]:
    """(table section, point arguments) in order."""
    upd, net_upd = (2_000, 200) if quick else (20_000, 2_000)
    workers = [16, 100, 1_000, 10_000] + ([100_000] if big else [])
    net_workers = [16, 100, 1_000] + ([10_000] if big else [])
    models = [(64, 2), (1_000, 2), (1_000, 10), (1_000, 100)]
    out = [("workers", (n, 64, 2, max(upd, n), 1, False)) for n in workers]
    out += [("workers, network", (n, 64, 2, max(net_upd, n), 1, True)) for n in net_workers]
    out += [("parameters", (16, f, c, upd, 16, False)) for f, c in models]
    out += [("parameters, network", (16, f, c, net_upd, 16, True)) for f, c in models]
    return out


def table(rows: list[tuple[str, dict]]) -> str:
    lines = [
        "| sweep | workers | parameters | network | updates | wall (s) | updates/s | peak RSS (MB) |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for section, r in rows:
        lines.append(
            f"| {section} | {r['workers']:,} | {r['params']:,} | {'star, flows' if r['network'] else 'none'} | "
            f"{r['updates']:,} | {r['wall_s']:.2f} | {r['updates'] / r['wall_s']:,.0f} | {r['peak_mb']:,.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "point":
        w, f, c, u, b, net = sys.argv[2:8]
        print(json.dumps(point(int(w), int(f), int(c), int(u), int(b), net == "1")))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--big", action="store_true", help="add 100,000 workers (and 10,000 with the network)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="10x fewer updates (a smoke test of this script)"
    )
    args = parser.parse_args()
    rows = []
    for section, (w, f, c, u, b, net) in plan(args.big, args.quick):
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "point",
                str(w),
                str(f),
                str(c),
                str(u),
                str(b),
                "1" if net else "0",
            ],
            check=True,
            capture_output=True,
            text=True,
            env=ONE_THREAD,
        )
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        rows.append((section, r))
        print(
            f"{section:20s} workers {w:>7,} params {r['params']:>7,}: {r['updates']:,} updates in "
            f"{r['wall_s']:.1f} s, peak {r['peak_mb']:,.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    print(table(rows))  # stdout holds the table alone: refresh_docs.py pastes it in SCALING.md


if __name__ == "__main__":
    main()
