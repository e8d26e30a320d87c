"""The GSGD paper scenario: the recommender's pick against hand classes, two groups,
singletons and one group, every η of the grid, run in full.

Runs GSGD with each grouping × η on *seeds* seeds (MNIST; the loss evaluated on a fixed
5,000-row subsample of the training set every 6 time units) and scores them as the
grouping-regret benchmark does: the target is the loss the best one-group (SSGD) run
reaches at the horizon (seed-averaged, smoothed), and each candidate's score is the time
its seed-averaged smoothed curve first reaches it. The recommender (``netsim group``'s
race, on the scenario seed) runs first; its pick is added to the groupings.

The scenario is ``scenarios/gsgd_paper.toml`` or, with ``--scenario paper_cnn``, the same
cluster training LeNet-5 (``scenarios/paper_cnn.toml``, PyTorch); both have the paper's
classes of 4, 4 and 8 workers, the hand groups.

Usage: python benchmarks/paper_grouping_check.py --data-dir /work/shared/data [--scenario paper_cnn] [--set model.name=smooth_svm]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grouping_regret import mean_curves, run_item, target_loss, ttt_table  # noqa: E402

from netsim.config.scenario import load_scenario  # noqa: E402
from netsim.sim.engine import prepare  # noqa: E402
from netsim.tuning.candidates import ONE_GROUP, canonical  # noqa: E402
from netsim.tuning.race import lr_grid, recommend  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--scenario", default="gsgd_paper", choices=("gsgd_paper", "paper_cnn"))
    args = ap.parse_args()
    path = ROOT / "scenarios" / f"{args.scenario}.toml"
    sc = load_scenario(path, args.set, data_dir=args.data_dir)
    wall = time.perf_counter()
    rec = recommend(sc, prepare(sc))
    print(
        f"recommendation: {rec.name} η={rec.lr:.3g} ({time.perf_counter() - wall:.1f} s wall): {rec.reason}"
    )
    H = sc.run.until
    groupings = {
        "hand": [list(range(4)), list(range(4, 8)), list(range(8, 16))],
        "kmeans:2": [list(range(4)), list(range(4, 16))],
        "singletons": [[i] for i in range(16)],
        ONE_GROUP: [list(range(16))],
    }
    names = {canonical(g): n for n, g in groupings.items()}
    if canonical(rec.groups) not in names:
        groupings[f"pick {rec.name}"] = [list(g) for g in rec.groups]
    pick = (names.get(canonical(rec.groups), f"pick {rec.name}"), rec.lr)
    sets = args.set + ["run.eval_every=6.0"]
    raw = {"name": sc.name, "_path": str(path), "_sets": sets, "_data_dir": args.data_dir}
    lrs = lr_grid(sc.rules["gsgd"].lr)
    curves = {}
    for s in range(args.seeds):  # seed outermost: the runs of one seed share its loaded data
        for name, groups in groupings.items():
            for lr in lrs:
                curves[(name, lr, s)] = run_item((raw, groups, lr, sc.run.seed + s))[0]
        print(f"  ran seed {s + 1} of {args.seeds}: every grouping × η", flush=True)
    means = mean_curves(list(groupings), lrs, range(args.seeds), curves, H)
    target, source = target_loss(means, H)
    table = ttt_table(means, target, H)
    print(f"\ntarget {target:.5f} ({source})")
    for k in sorted(table, key=lambda k: table[k]):
        t, final = table[k]
        mark = "  <- recommended" if k == pick else ""
        print(
            f"{k[0]:18s} η={k[1]:<8.3g} time to target {t if t < 2 * H else float('nan'):7.4g} s  "
            f"final {final:.5f}{mark}"
        )


if __name__ == "__main__":
    main()
