"""How often does the grouping advisor pick the grouping that really reaches the target first?

Generates heterogeneous scenarios (digits, logistic regression; 8–16 workers in 2–4 speed
classes with lognormal jitter, or a continuous spread of speeds), asks the advisor to rank
candidate groupings from a measurement phase, then runs GSGD with every candidate for real
(same seed) and records which reached the target loss first. Prints the hit rate (the
advisor's first choice is the fastest) and the top-2 rate.

Usage: python benchmarks/advisor_hit_rate.py [--scenarios 40] [--seed 0]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from netsim.config.scenario import parse_scenario
from netsim.grouping.advisor import ALPHA, BETA, progress_rate
from netsim.sim.engine import advise, prepare, simulate
from netsim.sim.records import time_to_target


def generated(rng: np.random.Generator, index: int) -> dict:
    """A random heterogeneous scenario dict."""
    n_classes = int(rng.integers(2, 5))
    workers = []
    if index % 4 == 3:  # continuous spread, no class structure
        n = int(rng.integers(8, 17))
        for i, m in enumerate(np.exp(rng.uniform(0, np.log(6), n))):
            workers.append({"name": f"w{i}", "count": 1,
                            "compute": {"dist": "lognormal", "median": float(m), "sigma": 0.1}})
    else:
        speeds = np.sort(np.exp(rng.uniform(0, np.log(8), n_classes)))
        for k, m in enumerate(speeds):
            workers.append({"name": f"c{k}", "count": int(rng.integers(2, 7)),
                            "compute": {"dist": "lognormal", "median": float(m), "sigma": float(rng.uniform(0.05, 0.2))}})
    return {
        "name": f"gen{index}",
        "run": {"seed": int(rng.integers(1 << 30)), "algorithm": "gsgd", "until": 400.0, "eval_every": 2.0,
                "batch_size": 16},
        "data": {"source": "digits", "labels": "odd_even"},
        "model": {"name": "logistic", "l2": 0.001},
        "workers": workers,
        "algorithms": {"gsgd": {"lr": float(np.exp(rng.uniform(np.log(0.05), np.log(5.0)))), "k_max": 6}},
    }


def collect(n: int, rng: np.random.Generator) -> list[dict]:
    """Per generated scenario: the advisor's predictions and each candidate's real time to target."""
    cases = []
    for i in range(n):
        raw = generated(rng, i)
        sc = parse_scenario(raw, Path(f"gen{i}.toml"))
        ranking = advise(sc)["ranking"]
        prep = prepare(sc)
        curves = {}
        for p in ranking:
            lr = raw["algorithms"]["gsgd"]["lr"]
            raw_p = {**raw, "algorithms": {"gsgd": {"lr": lr, "groups": [list(g) for g in p.groups]}}}
            curves[p.name] = simulate(parse_scenario(raw_p, Path(f"gen{i}.toml")), prepared=prep).curve
        # target: 1.02 × the lowest loss any candidate reaches
        target = 1.02 * min(row[2] for c in curves.values() for row in c)
        reach = {k: time_to_target(c, target)[0] for k, c in curves.items()}
        reach = {k: v for k, v in reach.items() if v is not None}
        best = min(reach.values())
        cases.append({"n": sc.n_workers, "preds": ranking, "fastest": {k for k, v in reach.items() if v <= best}})
        print(f"scenario {i:2d}: {sc.n_workers:2d} workers, lr {lr:.3g}, fastest: {', '.join(sorted(cases[-1]['fastest']))}")
    return cases


def hit_rate(cases, alpha: float, beta: float) -> float:
    hits = 0
    for case in cases:
        pick = max(case["preds"], key=lambda p: (progress_rate(p, alpha, beta), p.name))
        hits += pick.name in case["fastest"]
    return hits / len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=40, help="generated scenarios (half fit, half test)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    cases = collect(args.scenarios, np.random.default_rng(args.seed))
    fit, test = cases[: len(cases) // 2], cases[len(cases) // 2:]
    grid = [(a, b) for a in (0.0, 0.25, 0.5, 0.75, 1.0) for b in (0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)]
    best = max(grid, key=lambda ab: (hit_rate(fit, *ab), -ab[1], -ab[0]))
    print(f"{len(cases)} generated scenarios, {time.perf_counter() - start:.0f} s")
    print(f"defaults  alpha={ALPHA} beta={BETA}: hit rate {hit_rate(cases, ALPHA, BETA):.0%} on all, "
          f"{hit_rate(test, ALPHA, BETA):.0%} on the held-out half; top-2 rate {top2_rate(cases, ALPHA, BETA):.0%}")
    print(f"fitted    alpha={best[0]} beta={best[1]}: hit rate {hit_rate(fit, *best):.0%} on the fit half, "
          f"{hit_rate(test, *best):.0%} on the held-out half")
    print(f"baselines on all: always one group {_always(cases, 'one group (ssgd)'):.0%}, "
          f"always singletons {_always(cases, 'singletons (asgd)'):.0%}, always auto {_always(cases, 'auto'):.0%}")


def top2_rate(cases, alpha: float, beta: float) -> float:
    hits = 0
    for case in cases:
        order = sorted(case["preds"], key=lambda p: (-progress_rate(p, alpha, beta), p.name))
        hits += any(p.name in case["fastest"] for p in order[:2])
    return hits / len(cases)


def _always(cases, name: str) -> float:
    return sum(name in c["fastest"] for c in cases) / len(cases)


if __name__ == "__main__":
    main()
