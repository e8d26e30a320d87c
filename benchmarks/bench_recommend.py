"""Wall time of the grouping recommender against one full run of the same scenario.

On the paper scenario (default ``scenarios/gsgd_paper.toml``, MNIST) this times, in one
process and interleaved ``--reps`` times: one full GSGD run as the scenario defines it
(its groups, its η, its evaluations), and ``recommend`` (measurement, the race and the
replicate runs), in one process (``jobs = 1``) and in as many as this process may use
(the default: pilots spread over forked copies of the process, the same
recommendation). Loading the data (``prepare``) is timed once and reported apart: a
user pays it once either way. Printed: median wall seconds of each, and the ratios
recommend / run, with and without the shared load (the aim in the issue is <= 2).

Usage: python benchmarks/bench_recommend.py [--data-dir DIR] [--reps N] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from netsim.config.scenario import load_scenario
from netsim.sim.engine import Simulation, prepare
from netsim.tuning.pool import usable_jobs
from netsim.tuning.race import recommend

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "gsgd_paper.toml"))
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    sc = load_scenario(args.scenario, args.set, data_dir=args.data_dir)
    t = time.perf_counter()
    prepared = prepare(sc)
    load_s = time.perf_counter() - t
    jobs = usable_jobs(None)
    runs, recs = [], {1: [], jobs: []}
    for _ in range(args.reps):
        t = time.perf_counter()
        Simulation(sc, "gsgd", prepared).run()
        runs.append(time.perf_counter() - t)
        for j in recs:
            t = time.perf_counter()
            rec = recommend(sc, prepared, jobs=j)
            recs[j].append(time.perf_counter() - t)
    run = statistics.median(runs)
    print(
        f"{sc.name} ({sc.model.name}): load {load_s:.2f} s | one full run {run:.2f} s | "
        f"{len(rec.pilots)} candidates, pick {rec.name} η={rec.lr:.3g}"
    )
    for j, walls in recs.items():
        race = statistics.median(walls)
        print(
            f"recommend, {j} process{'es' if j > 1 else ''}: {race:.2f} s; / run: {race / run:.2f} (without the "
            f"load), {(race + load_s) / (run + load_s):.2f} (each with its own load); aim <= 2"
        )


if __name__ == "__main__":
    main()
