"""netsim's predictions held against real runs: the tables of docs/VALIDATION.md.

Cases: the GSGD paper cluster (``scenarios/gsgd_paper.toml``: 16 workers, 4 × 1, 4 × 2,
8 × 3 time units, logistic regression on MNIST odd/even, T = 600) with SSGD, ASGD and GSGD
at two time scales, 3 seeds; and the busy server (``scenarios/busy_server.toml``: an MLP
of 1,017,610 parameters, 16 workers, ASGD and GSGD; batch 4 so that the workers' gradients
leave the two cores to the server; T = 100 at 0.05 and 0.1 s per unit, evaluated every
unit, 5 seeds); at 0.05 the real server is busy more than half the time, at 0.1 nearly
half of it or more. Those scales
are below the one at which the machine's messages and service fit into the scenario's
times (``netsim real`` refuses them unless ``--unpaced``): the real runs fall behind the
scenario file by design, and what is tested is whether netsim, calibrated on them,
predicts a server-bound cluster. Each cell (case, scale, rule) is trained for real with
the case's seeds (``--seeds`` sets them for all; ``netsim.real``: a server process and 16
worker processes over torch.distributed, gloo; each real worker draws its compute times
and minibatches from streams of its own), then emulated with as many seeds three ways:

- **scenario**: the scenario file alone;
- **calibrated**: the ``[server]`` keys and latencies ``netsim calibrate`` fits to the
  cell's own real runs;
- **held out**: those fitted to another cell's real runs (the case's GSGD at its first
  scale), predicting the other rules and scales.

Every figure is a mean with the half-width of its 95 % interval (Student's t); each
prediction's cell is the relative error of its mean against the real runs' mean. The time
to target uses the loss half way from the real runs' initial to their final loss; N is half
their updates. Goals (calibrated and held out): updates and gradients within 2 %, mean
staleness per update within 5 %, time to target within 8 %; ✗ marks a miss, listed at the
end with what was measured about it. The load average is recorded for every real run; ⚠
marks one taken above a load of 2 per core.

Usage: python benchmarks/real_vs_netsim.py [--data-dir DIR] [--out DIR] [--seeds N]
[--cases paper,busy] [--reuse] [--quick]  (MNIST and PyTorch; --reuse keeps real runs
already in OUT, with the load recorded before each; --quick: a smoke test, 2 seeds, short
horizons, one scale, not for the docs.) A full run takes about 45 minutes on a 2-core machine:
18 paper runs of 30 s and 120 s, 20 busy runs of 5 and 10 s, then about 110 emulations; every
real run comes first, while nothing else runs beside them.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
from pathlib import Path

import netsim
from netsim.errors import RealRunFailed, ScenarioError
from netsim.testbed.calibrate import Calibration
from netsim.testbed.predict import (
    METRICS,
    compare_rows,
    default_target,
    half_updates,
    mean_ci,
    metrics,
    variant_scenario,
)

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parent / "scenarios"
CASES = {
    "paper": {
        "scenario": SCENARIOS / "gsgd_paper.toml",
        "rules": ("ssgd", "asgd", "gsgd"),
        "scales": (0.05, 0.2),
        "overrides": [],
        "calibrate_on": "gsgd",
        "seeds": 3,
    },
    "busy": {
        "scenario": SCENARIOS / "busy_server.toml",
        "rules": ("asgd", "gsgd"),
        "scales": (0.05, 0.1),
        "overrides": ["run.batch_size=4", "run.until=100", "run.eval_every=1"],
        "calibrate_on": "gsgd",
        "paced": False,
        "seeds": 5,
    },
}
QUICK = {"paper": ["run.until=100", "run.eval_every=10"], "busy": ["run.until=20"]}
GOALS = {"updates": 0.02, "gradients_applied": 0.02, "staleness_mean": 0.05, "time_to_target": 0.08}
SHOWN = ("updates", "gradients_applied", "staleness_mean", "final_loss", "time_to_target")
SHOWN += ("update_n_time",)
VARIANTS = ("scenario", "calibrated", "held out")
LOAD_FILE = "bench_load_before.txt"
"""Beside a real run's folder files: the load average before it started (kept for --reuse)."""


def _load_mark(loads: tuple[float, float | None]) -> str:
    limit = 2 * (os.cpu_count() or 1)
    return " ⚠" if max(x or 0.0 for x in loads) > limit else ""


def _seeds(args, case: str) -> int:
    """Seeds each side for *case*: --seeds, else the case's own (2 at most with --quick)."""
    n = args.seeds or CASES[case]["seeds"]
    return min(n, 2) if args.quick else n


def _real_runs(args, case: str, scale: float, rule: str) -> list[tuple[Path, tuple]]:
    """The cell's real runs (folder, (load before, highest load seen)); refused ones skipped."""
    spec, out = CASES[case], Path(args.out)
    overrides = spec["overrides"] + (QUICK[case] if args.quick else [])
    runs = []
    for k in range(_seeds(args, case)):
        folder = out / f"{case}-{rule}-{scale:g}-seed{k}"
        before = os.getloadavg()[0]
        if args.reuse and (folder / "summary.json").is_file() and (folder / LOAD_FILE).is_file():
            before = float((folder / LOAD_FILE).read_text())
        else:
            try:
                netsim.real(
                    spec["scenario"],
                    rule,
                    time_scale=scale,
                    out=folder,
                    overwrite=True,
                    overrides=overrides,
                    seed=1 + k,
                    data_dir=args.data_dir,
                    progress=None,
                    paced=spec.get("paced", True),
                )
            except (ScenarioError, RealRunFailed) as exc:
                print(f"\n{case} {rule} at {scale:g}, seed {1 + k}: {exc}")
                continue
            (folder / LOAD_FILE).write_text(f"{before}\n")
        summary = netsim.open_run(folder).summary
        runs.append((folder, (before, summary["real"].get("load1_max"))))
    return runs


def _cores(summary: dict) -> str:
    """A real run's CPU shares (gradients, server) as percentages; '-' where not recorded."""
    real = summary.get("real", {})
    shares = [real.get("compute_cpu_share"), real.get("server_cpu_share")]
    return ", ".join("-" if s is None else f"{100 * s:.0f} %" for s in shares)


def _server_busy(folder: Path, summary: dict) -> float:
    """The real server's busy share (%): its pushes' service and the model messages it sent
    outside them, over the run's real time."""
    busy, spans = 0.0, []
    with open(folder / "measured_server.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if r["kind"] == "push":
            busy += float(r["real_s"])
            spans.append((float(r["start"]), float(r["end"])))
    inside = sorted(spans)
    for r in rows:
        if r["kind"] == "send":
            t = float(r["start"])
            if not any(a <= t <= b for a, b in inside):
                busy += float(r["real_s"])
    return 100.0 * busy / (summary["sim_time"] * summary["real"]["time_scale"])


def _emulate(
    args, folder: Path, variant: str, cal: Calibration | None, tag: str, seeds: int
) -> list:
    """*variant* of the real run in *folder* emulated with *seeds* seeds (their runs)."""
    sc = netsim.load(folder / "scenario.toml", data_dir=args.data_dir)
    scale = netsim.open_run(folder).summary["real"]["time_scale"]
    kind = "calibrated" if variant != "scenario" else "scenario"
    vs = variant_scenario(sc, folder, kind, cal, scale)
    runs = []
    for k in range(seeds):
        out = Path(args.out) / "emulated" / f"{folder.name}-{tag}-{k}"
        run = netsim.run(vs, out=out, overwrite=True, progress=None, seed=1 + k)
        runs.append(run)
    return runs


def _cell(row: dict, variant: str, real: float | None) -> str:
    gap = row.get(f"{variant}_gap")
    if gap is None:
        return "-"
    ci = row.get(f"{variant}_ci")
    spread = f" ± {ci / abs(real):.1%}" if ci and real else ""
    miss = row["metric"] in GOALS and variant != "scenario" and abs(gap) > GOALS[row["metric"]]
    return f"{gap:+.1%}{spread}{' ✗' if miss else ''}"


def _fmt(value, ci) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" + (f" ± {ci:.2g}" if ci else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--out", default="runs/real_vs_netsim")
    ap.add_argument("--seeds", type=int, default=None, help="each side (default: per case)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.platform()}, Python {platform.python_version()}"
    )
    misses, loads = [], []
    labels = dict(METRICS)
    cases = args.cases.split(",")
    scales_of = {c: CASES[c]["scales"][:1] if args.quick else CASES[c]["scales"] for c in cases}
    real = {  # every real run first, while nothing else runs beside them
        c: {(s, r): _real_runs(args, c, s, r) for s in scales_of[c] for r in CASES[c]["rules"]}
        for c in cases
    }
    for case in cases:
        spec, scales, cells = CASES[case], scales_of[case], real[case]
        seeds = _seeds(args, case)
        home = cells.get((scales[0], spec["calibrate_on"])) or []
        held = netsim.calibrate([f for f, _ in home]) if home else None
        for (scale, rule), runs in cells.items():
            print(f"\n### {case}, {rule}, {scale:g} s per unit ({seeds} seeds each side)\n")
            if not runs:
                print("no real run: refused (see above)")
                continue
            folders = [f for f, _ in runs]
            for folder, load in runs:
                s = netsim.open_run(folder).summary
                loads.append(
                    f"| {folder.name} | {s['status']} | {s['updates']} | "
                    f"{load[0]:.1f} | {load[1] or 0:.1f}{_load_mark(load)} | {_cores(s)} |"
                )
            reals = [netsim.open_run(f) for f in folders]
            target = default_target([r.curve for r in reals])
            n = half_updates([r.summary for r in reals])
            own = netsim.calibrate(folders)["calibration"]
            emulated = {
                "scenario": _emulate(args, folders[0], "scenario", None, "scenario", seeds),
                "calibrated": _emulate(args, folders[0], "calibrated", own, "calibrated", seeds),
            }
            if held is not None and (scale, rule) != (scales[0], spec["calibrate_on"]):
                emulated["held out"] = _emulate(
                    args, folders[0], "held out", held["calibration"], "held", seeds
                )
            figures = {
                v: [metrics(r.summary, r.curve, r.updates, target, n) for r in rs]
                for v, rs in emulated.items()
            }
            real_figures = [metrics(r.summary, r.curve, r.updates, target, n) for r in reals]
            rows = compare_rows(real_figures, figures)
            print(f"target loss {target:.4g}, N = {n}\n")
            print(f"| figure | real ({len(reals)} runs) | " + " | ".join(VARIANTS) + " |")
            print("|---|---:|" + "---:|" * len(VARIANTS))
            for row in rows:
                if row["metric"] not in SHOWN:
                    continue
                cells_text = [_cell(row, v, row["real"]) for v in VARIANTS]
                print(
                    f"| {row['label']} | {_fmt(row['real'], row['real_ci'])} | "
                    + " | ".join(cells_text)
                    + " |"
                )
                for v in VARIANTS[1:]:
                    gap = row.get(f"{v}_gap")
                    if (
                        row["metric"] in GOALS
                        and gap is not None
                        and abs(gap) > GOALS[row["metric"]]
                    ):
                        misses.append((case, scale, rule, v, row, emulated[v], reals, folders))
            busy_real = mean_ci([_server_busy(f, r.summary) for f, r in zip(folders, reals)])
            busy_cal = mean_ci(
                [r.summary.get("server", {}).get("busy_pct") for r in emulated["calibrated"]]
            )
            print(f"| server busy % | {_fmt(*busy_real)} | - | {_fmt(*busy_cal)} | - |")
    print(
        "\n### Real runs\n\nCore share: the CPU time over the real time of the workers' gradients "
        "and of the server's jobs (below 100 % by the time they waited for a core)."
        "\n\n| run | status | updates | load before | load max | core share: gradients, server "
        "|\n|---|---|---:|---:|---:|---:|"
    )
    print("\n".join(loads))
    print("\n### Goals missed\n")
    if not misses:
        print("None.")
    for case, scale, rule, v, row, emulated, reals, folders in misses:
        real_ci = row["real_ci"] / abs(row["real"]) if row["real_ci"] and row["real"] else 0.0
        loaded = sum(
            1
            for f in folders
            if _load_mark((0.0, netsim.open_run(f).summary["real"].get("load1_max")))
        )
        over = mean_ci([r.summary["real"].get("overhead_mean_s") for r in reals])[0] or 0.0
        paced = sum(1 for r in reals if r.summary["status"] != "ok")
        print(
            f"- {case} {rule} at {scale:g}, {v}, {labels[row['metric']]}: {row[f'{v}_gap']:+.1%} "
            f"(goal ±{GOALS[row['metric']]:.0%}); the real runs' own 95 % interval ±{real_ci:.1%}; "
            f"{loaded} of {len(folders)} real runs above a load of 2 per core, {paced} not ok "
            f"(the pace check: see the runs' table); measured overhead "
            f"{over * 1e3:.2g} ms per iteration beyond the scenario's times"
        )


if __name__ == "__main__":
    main()
