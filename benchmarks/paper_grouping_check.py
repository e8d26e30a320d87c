"""The GSGD paper scenario: hand classes vs the recommender's usual picks, η from the grid, in full.

Runs GSGD with each listed grouping × η on *seeds* seeds (MNIST; the loss evaluated on a
fixed 5,000-row subsample of the training set every 6 s) and prints the time at which the
seed-averaged smoothed loss curve reaches the target of the grouping-regret benchmark
(that curve at half the horizon for the candidate whose curve ends lowest).

Usage: python benchmarks/paper_grouping_check.py --data-dir /work/shared/data [--set model.name="smooth_svm"]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grouping_regret import run_item  # noqa: E402

from netsim.config.scenario import load_scenario  # noqa: E402
from netsim.sim.recommend import lr_grid, mean_half_horizon_loss, mean_time_to_target  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    path = ROOT / "scenarios" / "gsgd_paper.toml"
    sc = load_scenario(path, args.set + ["run.eval_every=6.0"], data_dir=args.data_dir)
    H = sc.run.until
    groupings = {"hand (3 classes)": [list(range(4)), list(range(4, 8)), list(range(8, 16))],
                 "kmeans:2 (fast | rest)": [list(range(4)), list(range(4, 16))],
                 "singletons": [[i] for i in range(16)], "one group": [list(range(16))]}
    raw = {"name": sc.name, "_path": str(path), "_sets": args.set + ["run.eval_every=6.0"], "_data_dir": args.data_dir}
    runs = {}
    for name, groups in groupings.items():
        for lr in lr_grid(sc.rules["gsgd"].lr):
            runs[(name, lr)] = [run_item((raw, groups, lr, sc.run.seed + s))[0] for s in range(args.seeds)]
            print(f"{name:24s} η={lr:<8.3g} final {mean_time_to_target(runs[(name, lr)], -1, H)[1]:.5f}", flush=True)
    final = {k: mean_time_to_target(v, -1, H)[1] for k, v in runs.items()}
    top = min(final, key=final.get)
    target = mean_half_horizon_loss(runs[top], H)
    print(f"\ntarget {target:.5f} (curve of {top[0]} η={top[1]:.3g} at {H / 2:g} s)")
    for k in sorted(runs, key=lambda k: mean_time_to_target(runs[k], target, H)):
        t, f, ok = mean_time_to_target(runs[k], target, H)
        print(f"{k[0]:24s} η={k[1]:<8.3g} time to target {t if ok else float('nan'):7.4g} s  final {f:.5f}")


if __name__ == "__main__":
    main()
