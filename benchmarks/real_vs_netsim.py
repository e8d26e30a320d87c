"""netsim's predictions held against real runs: the tables of docs/VALIDATION.md.

For each case (the GSGD paper cluster, ``scenarios/gsgd_paper.toml``: 16 workers, 4 × 1,
4 × 2, 8 × 3 time units, logistic regression on MNIST odd/even, T = 600; and the same with
per-class message latencies of 0.1 / 0.2 / 0.3 units added to every model and gradient
message), each time scale and each rule, this trains the scenario for real (``netsim.real()``:
a parameter-server process and 16 worker processes over torch.distributed, gloo), then
emulates it three ways (``netsim.predict``: the scenario as written, calibrated with the
overheads the real run measured, and replaying its measured iterations) and prints one
markdown table per case: each figure of the real run and each prediction's error.

Goals (issue #31), for the replayed prediction: updates and gradients within 2 %, mean
staleness per update within 5 %, time to target within 8 %.

Usage: python benchmarks/real_vs_netsim.py [--data-dir DIR] [--out DIR] [--scales 0.05,0.2]
[--reuse]  (MNIST and PyTorch; default data ../shared/data; --reuse keeps real runs already
in OUT. A real run takes T × scale seconds: 30 s at 0.05, 120 s at 0.2.)
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

import netsim

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parent / "scenarios" / "gsgd_paper.toml"
RULES = ("ssgd", "asgd", "gsgd")
CASES = {
    "paper": [],
    "latency": ["workers.0.latency=0.1", "workers.1.latency=0.2", "workers.2.latency=0.3"],
}
GOALS = {"updates": 0.02, "gradients_applied": 0.02, "staleness_mean": 0.05, "time_to_target": 0.08}
SHOWN = (
    "updates",
    "gradients_applied",
    "staleness_mean",
    "idle_pct",
    "final_loss",
    "time_to_target",
)


def _cell(row: dict, variant: str) -> str:
    gap = row[f"{variant}_gap"]
    if gap is None:
        return "-"
    if row["metric"] == "idle_pct":
        return f"{gap:+.2f} pt"
    mark = "" if row["metric"] not in GOALS or abs(gap) <= GOALS[row["metric"]] else " ✗"
    return f"{gap:+.1%}{mark}"


def _real_value(row: dict) -> str:
    v = row["real"]
    return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--out", default="runs/real_vs_netsim")
    ap.add_argument("--scales", default="0.05,0.2")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.platform()}, Python {platform.python_version()}"
    )
    for case in args.cases.split(","):
        for scale in (float(s) for s in args.scales.split(",")):
            if case != "paper" and scale != 0.05:
                continue
            print(f"\n### {case}, {scale:g} s per unit\n")
            print(
                "| rule | figure | real | scenario | calibrated | replayed |\n"
                "|---|---|---:|---:|---:|---:|"
            )
            for rule in RULES:
                folder = out / f"{case}-{rule}-{scale:g}"
                if not (args.reuse and (folder / "summary.json").is_file()):
                    netsim.real(
                        SCENARIO,
                        rule,
                        time_scale=scale,
                        out=folder,
                        overwrite=True,
                        overrides=CASES[case],
                        data_dir=args.data_dir,
                    )
                pred = netsim.predict(
                    folder, out=out / f"{folder.name}-predict", data_dir=args.data_dir
                )
                for row in pred.rows:
                    if row["metric"] in SHOWN:
                        print(
                            f"| {rule} | {row['label']} | {_real_value(row)} | "
                            + " | ".join(
                                _cell(row, v) for v in ("scenario", "calibrated", "replayed")
                            )
                            + " |"
                        )


if __name__ == "__main__":
    main()
