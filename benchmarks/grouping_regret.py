"""Which grouping and learning rate reach a target loss first, and how close do recommenders get?

For each generated scenario (``--generator wide``, the default, :func:`generate_wide`:
digits with logistic regression, softmax on 10 classes or a small MLP; 6–64 workers; half
label-skewed with heavy-tailed times; the scenario's η off by up to 3× either way.
``--generator classic``, :func:`generate`: digits, logistic; 8–64 workers in 2–5 speed
classes with constant, lognormal, shifted-exponential or Pareto compute times, separated or
overlapping speeds; some with per-class latencies, some on the geo3 topology; one in
three with non-IID data, a Dirichlet label skew of alpha 0.3 or 0.5. ``--generator kinds``,
:func:`generate_kinds`: structures neither makes, in turn stragglers, speeds spread over
4–6 classes, a contended star network, a mid-run slowdown and many classes.
``--generator torch``, :func:`generate_torch`: wide's structures with PyTorch networks (an
MLP, a small CNN) on the ten digits, 6–24 workers. Each made milder
where a seed of the benchmark would leave a worker without rows: ``feasible``) the
exhaustive search runs GSGD with every candidate grouping (one group, singletons, the
hand classes, kmeans:K and equal:K for K = 2..min(8, P−1)) × every η of a log grid ×
2 × 3 seeds (common random numbers: every candidate of a seed shares its data, shards,
initial model and time draws). Loss curves are smoothed (trailing median over 1/20 of
the horizon) and averaged over seeds. The target is the loss the best one-group (SSGD)
run reaches at the horizon (best over η, averaged over the selection seeds); a
candidate's score is the time its averaged curve first reaches the target (interpolated;
2 × the horizon when never). The exhaustive pick is the best score on the 3 selection
seeds. Every pick (the exhaustive one, each recommender's, and the second search's below)
is then run on ``--holdout`` fresh seeds (default 12, none of the 2 × 3) and scored there,
so the exhaustive pick's luck on its own seeds does not count, and the score of a pick
carries a quarter of the seed noise that 3 seeds leave. Regret of a pick = its holdout
score / the exhaustive pick's holdout score − 1 (below 0 when it does better). A
recommender's pick at an η beyond the grid (the race widens its grid when the first
rung's best η is at an end) is scored the same way.

Two rows measure the benchmark itself: an exhaustive search on one seed (what a
single-seed search would pick: the noise floor), and a second exhaustive search, on the
3 other seeds, scored like every pick on the holdout seeds (how often two 3-seed
exhaustive searches land within 5 % of each other: the benchmark's resolution; the
per-seed spread of time to target among the best candidates is typically 10–30 %).
With ``--ceiling N`` every candidate also runs on N more seeds (none of the search's or
the holdout's), and a third exhaustive search on those, with the target they give, is
scored the same way: how often a search N/3 times as costly as the reference lands
within 5 % of it, the most a recommender costing a fraction of one can be expected to
reach (docs/GROUPING.md).

Recommenders: ``recommend`` (netsim.tuning.race: successive halving of pilot
emulations on the scenario seed), the advisor's closed form (``netsim group --quick``:
:func:`netsim.tuning.advise.advise`, no emulation; its η, η_sync / (1 + mean staleness),
snapped to the grid point nearest in log), the old ``silhouette`` auto and ``hand``
classes (both at the scenario's η, the centre of the grid) and ``hand, best η`` (oracle η).
Cost: emulated seconds (and wall seconds) of the recommender / of the exhaustive search.

Usage:
  python benchmarks/grouping_regret.py                 # default suite: 12 scenarios, held-out seed
  python benchmarks/grouping_regret.py --n 48 --suite-seed 41 --workers 1 --cache .regret-cache
  python benchmarks/grouping_regret.py --n 48 --suite-seed 41 --workers 1 --cache .regret-cache \
      --option factor=3 --option first=0.037037037037037035 --option finalists=2 --option replicates=2
  python benchmarks/grouping_regret.py --n 40 --suite-seed 7 --workers 2
  python benchmarks/grouping_regret.py --scheduler tcp://host:8786
  python benchmarks/grouping_regret.py --paper --data-dir /work/shared/data   # the paper scenario, 1 seed

Generator seeds: classic 1 was used while developing the recommender, 2–8 are the suites of
docs/GROUPING.md; wide 40 was used to choose the race's T/16 settings for issue #33, wide 41
was measured once with them; both were used to choose the T/8 settings; wide 42 was
measured once with the T/8 settings, after they were chosen.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import pickle
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from netsim.config.scenario import load_scenario, parse_scenario
from netsim.errors import ScenarioError
from netsim.grouping.clustering import choose_grouping
from netsim.rng import Streams
from netsim.sim.engine import Simulation, prepare
from netsim.sim.measurement import measure
from netsim.sweeps.executors import connect, dask_results, default_workers, local_results
from netsim.tuning.advise import advise
from netsim.tuning.candidates import ONE_GROUP, candidate_groupings, canonical
from netsim.tuning.race import RaceOptions, RecommendError, lr_grid, mean_curve, recommend

SEEDS = 3
HOLDOUT = 12
"""Seeds, beyond the two exhaustive searches' 2 × SEEDS, on which every pick is run and scored."""
EVAL_ROWS = (
    5000  # larger training sets (MNIST) are evaluated on a fixed subsample of this many rows
)
LR_BASE = 1.0  # centre of the η grid (logistic on digits)
DISTS = ("constant", "lognormal", "shifted_exponential", "pareto")
SIZES = (8, 8, 12, 12, 16, 16, 24, 32, 64)


def compute_spec(dist: str, mean: float, rng: np.random.Generator):
    """A compute-time table of the given distribution with the given mean (s)."""
    if dist == "constant":
        return float(mean)
    if dist == "lognormal":
        sigma = float(rng.uniform(0.1, 0.5))
        return {
            "dist": "lognormal",
            "median": float(mean * np.exp(-(sigma**2) / 2)),
            "sigma": sigma,
        }
    if dist == "shifted_exponential":
        return {
            "dist": "shifted_exponential",
            "shift": float(0.7 * mean),
            "mean": float(0.3 * mean),
        }
    shape = float(rng.uniform(2.5, 4.0))
    return {"dist": "pareto", "shape": shape, "scale": float(mean * (shape - 1) / shape)}


def generate(suite_seed: int, index: int) -> dict:
    """Scenario *index* of the suite *suite_seed* (a raw scenario dict)."""
    rng = np.random.default_rng([suite_seed, index])
    P = int(rng.choice(SIZES))
    n_classes = int(rng.integers(2, min(5, P // 2) + 1))
    dist = DISTS[index % len(DISTS)] if index < 8 else str(rng.choice(DISTS))
    separated = bool(rng.random() < 0.5)
    if separated:
        speeds = np.cumprod(np.concatenate([[1.0], rng.uniform(1.8, 3.0, n_classes - 1)]))
    else:
        speeds = np.sort(np.exp(rng.uniform(0, np.log(4.0), n_classes)))
    speeds = speeds / speeds[0]
    cuts = np.sort(rng.choice(np.arange(1, P), n_classes - 1, replace=False))
    counts = np.diff(np.concatenate([[0], cuts, [P]])).astype(int)
    net = ("none", "latency", "topology")[int(rng.choice(3, p=[0.5, 0.3, 0.2]))]
    if net == "topology" and P > 24:
        net = "latency"
    workers = []
    for k in range(n_classes):
        w = {
            "name": f"c{k}",
            "count": int(counts[k]),
            "compute": compute_spec(dist, float(speeds[k]), rng),
        }
        if net == "latency":
            lat = float(rng.uniform(0.0, 0.4))
            w.update(pull_latency=lat, push_latency=lat)
        workers.append(w)
    rate = float(sum(c / s for c, s in zip(counts, speeds)))  # gradients per second, all workers
    until = float(np.round(40.0 * P / rate, 2))  # about 40 gradients per worker
    raw = _raw(
        f"gen{suite_seed}-{index}",
        rng,
        until,
        {"source": "digits", "labels": "odd_even"},
        {"name": "logistic", "l2": 0.001},
        workers,
        {"lr": LR_BASE, "groups": [[f"c{k}"] for k in range(n_classes)]},
    )
    if net == "topology":
        raw["network"] = {
            "topology": "geo3",
            "ps_host": "dc0-h0",
            "message_bytes": 2e5,
            "placement": "random",
        }
    data = _data_variant(np.random.default_rng([suite_seed, index, 1]))
    raw["data"].update(data)
    raw["_label"] = (
        f"P={P:2d} K={n_classes} {dist[:9]:9s} {'sep' if separated else 'ovl'} {net[:4]} "
        f"{'iid' if not data else 'dir' + str(data['alpha'])}"
    )
    return raw


WIDE_SIZES = (6, 8, 8, 12, 12, 16, 24, 32, 64)
WIDE_MODELS = (  # (model table, labels, η the exhaustive search's grid would be centred on)
    ({"name": "logistic", "l2": 0.001}, "odd_even", 1.0),
    ({"name": "softmax", "l2": 0.001}, "multiclass", 1.0),
    ({"name": "mlp", "l2": 0.001, "hidden": [16]}, "multiclass", 0.3),
)
WIDE_DISTS = ("constant", "lognormal", "exponential", "shifted_exponential", "pareto")


def generate_wide(suite_seed: int, index: int) -> dict:
    """Scenario *index* of a widened suite (issue #33): logistic (2 in 5), softmax on 10
    classes (2 in 5) or an MLP with 16 hidden units (1 in 5) on digits; 6–64 workers in 2–4 speed classes; one in two
    label-skewed (Dirichlet alpha 0.1–0.5), those with heavy-tailed times (exponential,
    shifted exponential, Pareto); the scenario's η off from the model's usual one by a
    factor 3**u, u uniform in [−1, 1]; about 24 gradients per worker (cheap: the whole
    exhaustive search of a scenario takes minutes on one core); ``k_max`` 4."""
    model = WIDE_MODELS[(0, 1, 0, 1, 2)[index % 5]]  # the MLP costs 10–20× more
    return _wide_like(f"wide{suite_seed}-{index}", [suite_seed, index, 33], WIDE_SIZES, model)


TORCH_MODELS = (  # PyTorch networks on the ten digits, and the η their grids centre on
    ({"backend": "torch", "name": "mlp", "hidden": [32], "l2": 0.001}, "multiclass", 0.3),
    (
        {"backend": "torch", "name": "cnn", "channels": [4], "hidden": [], "l2": 0.001},
        "multiclass",
        0.3,
    ),
)


def generate_torch(suite_seed: int, index: int) -> dict:
    """Scenario *index* of a suite of PyTorch networks (needs torch): :func:`generate_wide`'s
    structures with a two-layer MLP of 32 hidden units (3 in 4) or a CNN of four 3×3
    channels (1 in 4) on the ten digits, 6–24 workers (a run costs 0.3–1 s)."""
    model = TORCH_MODELS[(0, 0, 0, 1)[index % 4]]
    return _wide_like(
        f"torch{suite_seed}-{index}", [suite_seed, index, 2013], (6, 8, 12, 16, 24), model
    )


def _wide_like(name: str, key: list, sizes: tuple, model_row: tuple) -> dict:
    """A :func:`generate_wide` scenario named *name*, drawn from ``default_rng(key)``, of
    *sizes* workers, with the model, labels and usual η of *model_row*."""
    rng = np.random.default_rng(key)
    P = int(rng.choice(sizes))
    n_classes = int(rng.integers(2, min(4, P // 2) + 1))
    model, labels, lr0 = model_row
    skew = bool(rng.random() < 0.5)
    dist = str(rng.choice(WIDE_DISTS[2:] if skew else WIDE_DISTS))
    separated = bool(rng.random() < 0.5)
    if separated:
        speeds = np.cumprod(np.concatenate([[1.0], rng.uniform(1.8, 3.0, n_classes - 1)]))
    else:
        speeds = np.sort(np.exp(rng.uniform(0, np.log(4.0), n_classes)))
    cuts = np.sort(rng.choice(np.arange(1, P), n_classes - 1, replace=False))
    counts = np.diff(np.concatenate([[0], cuts, [P]])).astype(int)
    workers = [
        {"name": f"c{k}", "count": int(counts[k]), "compute": _wide_compute(dist, speeds[k], rng)}
        for k in range(n_classes)
    ]
    rate = float(sum(c / s for c, s in zip(counts, speeds)))
    until = float(np.round(24.0 * P / rate, 2))
    lr = float(lr0 * 3.0 ** rng.uniform(-1, 1))
    alpha = float(rng.choice([0.1, 0.2, 0.3, 0.5]))
    data = {"source": "digits", "labels": labels}
    if skew:
        data.update(partition="dirichlet", alpha=alpha)
    gsgd = {"lr": lr, "groups": [[f"c{k}"] for k in range(n_classes)], "k_max": 4}
    return {
        **_raw(name, rng, until, data, dict(model), workers, gsgd),
        "_label": (
            f"P={P:2d} K={n_classes} {model['name'][:7]:7s} {dist[:9]:9s} "
            f"{'sep' if separated else 'ovl'} {'dir' + str(alpha) if skew else 'iid'} η×{lr / lr0:.2f}"
        ),
    }


KINDS = ("straggler", "spread", "contention", "slowdown", "many")


def generate_kinds(suite_seed: int, index: int) -> dict:
    """Scenario *index* of a suite of structures neither other generator makes (kind
    ``KINDS[index % 5]``), logistic or softmax on digits, η off by 3**u, u in [−1, 1]:

    - ``straggler``: one fast class and 1–3 workers 3–10× slower;
    - ``spread``: 4–6 classes of speeds spread over 1–8×, the hand groups two halves;
    - ``contention``: 8–16 workers in 2–3 classes on a 1 Gbit/s star, a pull or push
      alone taking 2–20 % of a fast worker's compute (0.1–1 s): the PS's link is busy;
    - ``slowdown``: 2–3 classes, the fastest slowed 2–4× from T/4 on;
    - ``many``: 32–64 workers in 5–8 overlapping classes (more than ``k_max`` = 4).

    About 24 gradients per worker (as :func:`generate_wide`)."""
    rng = np.random.default_rng([suite_seed, index, 44])
    kind = KINDS[index % len(KINDS)]
    model, labels, lr0 = WIDE_MODELS[int(rng.integers(2))]
    dist = str(rng.choice(WIDE_DISTS))
    speeds, counts, hand = _kind_classes(kind, rng)
    workers = [
        {"name": f"c{k}", "count": int(c), "compute": _wide_compute(dist, float(s), rng)}
        for k, (s, c) in enumerate(zip(speeds, counts))
    ]
    rate = float(sum(c / s for c, s in zip(counts, speeds)))  # gradients/s, no network
    transfer = float(rng.uniform(0.02, 0.2) * speeds[0]) if kind == "contention" else 0.0
    if transfer:  # the PS's link carries a pull and a push per gradient
        rate = min(rate, 1.0 / (2.0 * transfer))
    until = float(np.round(24.0 * sum(counts) / rate, 2))
    lr = float(lr0 * 3.0 ** rng.uniform(-1, 1))
    groups = [[f"c{k}" for k in part] for part in hand]
    gsgd = {"lr": lr, "groups": groups, "k_max": 4}
    data = {"source": "digits", "labels": labels}
    raw = _raw(f"kinds{suite_seed}-{index}", rng, until, data, dict(model), workers, gsgd)
    if kind == "contention":
        raw["network"] = {
            "topology": {"builder": "star", "args": {"n_hosts": sum(counts) + 1, "bandwidth": 1e9}},
            "message_bytes": transfer * 1e9 / 8,
        }
    if kind == "slowdown":
        factor = float(rng.uniform(2.0, 4.0))
        raw["events"] = [{"kind": "slowdown", "time": until / 4, "worker": "c0", "factor": factor}]
    raw["_label"] = (
        f"P={sum(counts):2d} K={len(counts)} {kind[:10]:10s} {model['name'][:7]:7s} "
        f"{dist[:9]:9s} η×{lr / lr0:.2f}"
    )
    return raw


def _kind_classes(kind: str, rng: np.random.Generator) -> tuple[list, list, list]:
    """Per class its mean compute time (s) and worker count, and the hand groups (lists
    of class indices) of a :func:`generate_kinds` scenario of *kind*."""
    if kind == "straggler":
        slow = int(rng.integers(1, 4))
        fast = int(rng.choice([7, 11, 15, 23, 31]))
        return [1.0, float(rng.uniform(3.0, 10.0))], [fast, slow], [[0], [1]]
    if kind == "spread":
        n = int(rng.integers(4, 7))
        speeds = np.sort(np.exp(rng.uniform(0, np.log(8.0), n)))
        counts = rng.integers(1, 6, n)
        return speeds.tolist(), counts.tolist(), [list(range(n // 2)), list(range(n // 2, n))]
    if kind == "many":
        n = int(rng.integers(5, 9))
        speeds = np.sort(np.exp(rng.uniform(0, np.log(5.0), n)))
        counts = rng.multinomial(int(rng.integers(32, 65)) - n, np.full(n, 1 / n)) + 1
        return speeds.tolist(), counts.tolist(), [[k] for k in range(n)]
    n = int(rng.integers(2, 4))
    P = int(rng.integers(8, 17)) if kind == "contention" else int(rng.integers(6, 25))
    speeds = np.cumprod(np.concatenate([[1.0], rng.uniform(1.5, 3.0, n - 1)]))
    cuts = np.sort(rng.choice(np.arange(1, P), n - 1, replace=False))
    counts = np.diff(np.concatenate([[0], cuts, [P]]))
    scale = float(rng.uniform(0.1, 1.0)) if kind == "contention" else 1.0
    return (speeds * scale).tolist(), counts.tolist(), [[k] for k in range(n)]


GENERATORS = {
    "wide": generate_wide,
    "classic": generate,
    "kinds": generate_kinds,
    "torch": generate_torch,
}


def _raw(name: str, rng, until: float, data: dict, model: dict, workers: list, gsgd: dict) -> dict:
    """A generated scenario: GSGD's table *gsgd*, its run seed drawn from *rng* (one draw),
    100 evaluations over the horizon *until*, batch 16."""
    run = {
        "seed": int(rng.integers(1 << 20)),
        "algorithm": "gsgd",
        "until": until,
        "eval_every": until / 100,
        "batch_size": 16,
    }
    return {
        "name": name,
        "run": run,
        "data": data,
        "model": model,
        "workers": workers,
        "algorithms": {"gsgd": gsgd},
    }


def _wide_compute(dist: str, mean: float, rng: np.random.Generator):
    """A compute-time table: :func:`compute_spec`, plus a plain exponential of mean *mean* (s)."""
    if dist == "exponential":
        return {"dist": "exponential", "mean": float(mean)}
    return compute_spec(dist, float(mean), rng)


def feasible(raw: dict, seeds: int) -> dict:
    """*raw*, or a copy whose partition each of its first *seeds* run seeds can draw (the
    benchmark's: both searches' and the holdout's).

    A Dirichlet label skew can leave a worker with no rows on some seed (digits has 1,437
    training rows: with 64 workers and alpha 0.3 most draws do), which netsim refuses.
    Such a scenario is made milder, alpha 0.5 and then IID, until the *seeds* seeds all
    partition; its label marks the change with ``*``.
    """
    data = raw["data"]
    if data.get("partition") != "dirichlet":
        return raw
    plain = {k: v for k, v in data.items() if k not in ("partition", "alpha")}
    for alpha in sorted({data["alpha"], max(data["alpha"], 0.5)}) + [None]:
        trial = {
            **raw,
            "data": {**plain, "partition": "dirichlet", "alpha": alpha} if alpha else plain,
        }
        try:
            for s in range(seeds):
                prepare(item_scenario(trial, raw_seed(trial) + s))
        except ScenarioError as exc:
            if exc.key != "data.partition":
                raise
            continue
        if alpha == data["alpha"]:
            return raw
        trial["_label"] = raw["_label"].replace(
            f"dir{data['alpha']}", f"dir{alpha}*" if alpha else "iid*"
        )
        return trial
    raise AssertionError("an IID partition always draws")


def _data_variant(rng: np.random.Generator) -> dict:
    """Extra ``[data]`` keys: IID (2 in 3 scenarios) or a Dirichlet label skew (alpha 0.3 or 0.5)."""
    if rng.random() < 2 / 3:
        return {}
    return {"partition": "dirichlet", "alpha": float(rng.choice([0.3, 0.5]))}


# ---- one emulation (runs in a worker process) -------------------------------------------------
_PREPARED: dict = {}


def _scenario(raw: dict, seed: int):
    raw = {k: v for k, v in raw.items() if not k.startswith("_")}
    raw = {**raw, "run": {**raw["run"], "seed": seed}}
    return parse_scenario(raw, Path(raw["name"] + ".toml"))


def _prepared(key, sc):
    if key not in _PREPARED:
        had = bool(_PREPARED)
        _PREPARED.clear()
        if had:
            gc.collect()  # the previous data, held by its finished runs' reference cycles
        _PREPARED[key] = prepare(sc)
    return _PREPARED[key]


def run_item(item: tuple):
    """(raw, groups, lr, seed) → (curve [(t, loss)], simulated s, wall s)."""
    raw, groups, lr, seed = item
    sc = item_scenario(raw, seed)
    prep = _prepared((raw["name"], seed), sc)
    from netsim.tuning.race import pilot_rule

    n_train = prep.dataset.X_train.shape[0]
    rows = (
        None
        if n_train <= EVAL_ROWS
        else np.sort(np.random.default_rng(seed).permutation(n_train)[:EVAL_ROWS])
    )
    eval_set = None if rows is None else (prep.dataset.X_train[rows], prep.dataset.y_train[rows])
    sim = Simulation(sc, "gsgd", prep, rule=pilot_rule(sc, groups, lr), eval_set=eval_set)
    res = sim.run()
    curve = [(t, loss) for _, t, loss, _ in res.curve]
    return (
        curve if res.status == "ok" else curve + [(res.sim_time, math.inf)],
        res.sim_time,
        res.wall_s,
    )


def recommend_item(item: tuple):
    """(raw, seed, options) → the recommender's pick and cost."""
    raw, seed, options = item
    sc = item_scenario(raw, seed)
    wall = time.perf_counter()
    prep = prepare(sc)
    rec = recommend(sc, prep, RaceOptions(**options))
    wall = time.perf_counter() - wall
    finals = [(p.groups, p.lr) for p in rec.pilots if p.rung == len(rec.rungs) - 1]
    return {
        "groups": canonical(rec.groups),
        "lr": rec.lr,
        "name": rec.name,
        "sim_s": rec.sim_s,
        "wall_s": wall,
        "finalists": finals,
    }


def item_scenario(raw: dict, seed: int):
    if "_path" in raw:
        sc = load_scenario(raw["_path"], raw.get("_sets", []), data_dir=raw.get("_data_dir"))
        return replace(sc, run=replace(sc.run, seed=seed))
    return _scenario(raw, seed)


# ---- the exhaustive search and the regret table -----------------------------------------------
def plan(raw: dict, seeds: int):
    """Candidates {name: groups}, η grid, silhouette groups, items for the executor
    (every candidate × η on ``2 × seeds`` seeds: the selection seeds, then as many holdout seeds)."""
    sc = item_scenario(raw, raw_seed(raw))
    m = measure(
        sc,
        1 if sc.network is None or sc.network.message_bytes else prepare(sc).w0.size,
        sc.rules["gsgd"].grouping.probe_rounds,
        Streams(sc.run.seed),
    )
    gs = sc.rules["gsgd"]
    cands = candidate_groupings(
        m.iteration, hand=gs.groups, k_max=gs.grouping.k_max, seed=sc.run.seed
    )
    lrs = lr_grid(gs.lr)
    sil = canonical(
        choose_grouping("auto", m.iteration, k_max=gs.grouping.k_max, seed=sc.run.seed).groups
    )
    items = [
        (raw, groups, lr, raw_seed(raw) + s)
        for groups in cands.values()
        for lr in lrs
        for s in range(2 * seeds)
    ]
    return cands, lrs, sil, items, gs.lr, canonical(gs.groups)


def raw_seed(raw: dict) -> int:
    return int(raw.get("_seed", raw.get("run", {}).get("seed", 0)))


def crossing(grid: np.ndarray, values: np.ndarray, target: float) -> float:
    """First time (s) the piecewise-linear curve (*grid*, *values*) is at or below *target* (inf: never).

    >>> crossing(np.array([0.0, 1.0, 2.0]), np.array([3.0, 2.0, 1.0]), 1.5)
    1.5
    """
    hit = np.flatnonzero(values <= target)
    if not hit.size:
        return math.inf
    k = int(hit[0])
    if k == 0 or not values[k - 1] > values[k]:
        return float(grid[k])
    a, b = float(values[k - 1]), float(values[k])
    return float(grid[k - 1] + (grid[k] - grid[k - 1]) * (a - target) / (a - b))


def mean_curves(names, lrs, seeds, curves, horizon) -> dict:
    """{(name, lr): (grid, mean smoothed loss over *seeds*)} (see netsim.tuning.race.mean_curve)."""
    return {
        (n, lr): mean_curve([curves[(n, lr, s)] for s in seeds], horizon)
        for n in names
        for lr in lrs
    }


def target_loss(means: dict, horizon: float) -> tuple[float, str]:
    """The loss the best one-group (SSGD) run reaches at the horizon (best over η, seed-averaged);
    when every one-group run diverges, the lowest loss any candidate reaches by half the horizon."""
    ssgd = [m[-1] for (n, _), (_, m) in means.items() if n == ONE_GROUP and math.isfinite(m[-1])]
    if ssgd:
        return float(min(ssgd)), "best SSGD at the horizon"
    half = [float(m[: len(m) // 2 + 1].min()) for _, m in means.values()]
    return float(min(half)), "best candidate at half the horizon (SSGD diverged)"


def ttt_table(means: dict, target: float, horizon: float) -> dict:
    """{(name, lr): (time to *target*, s — 2 × *horizon* when never; final mean loss)}."""
    out = {}
    for k, (grid, m) in means.items():
        t = crossing(grid, m, target)
        out[k] = (t if math.isfinite(t) else 2 * horizon, float(m[-1]))
    return out


def regret(holdout: dict, pick, best, horizon: float) -> float:
    """Holdout time to target of *pick* / that of the exhaustive search's *best* − 1
    (times floored at the grid step, horizon / 100; may be < 0 when the pick does better)."""
    floor = horizon / 100
    return max(holdout[pick][0], floor) / max(holdout[best][0], floor) - 1.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=12, help="generated scenarios (default 12)")
    ap.add_argument(
        "--suite-seed",
        type=int,
        default=2,
        help="generator seed (1: development; default 2: held out)",
    )
    ap.add_argument(
        "--generator",
        choices=tuple(GENERATORS),
        default="wide",
        help="scenario generator: wide (softmax, MLP, label skew with heavy tails, η off by "
        "up to 3×; default), classic (logistic only, the suites 1–8 of docs/GROUPING.md), "
        "kinds (stragglers, spread speeds, a contended star, a mid-run slowdown, many classes) "
        "or torch (wide's structures with PyTorch networks; needs torch)",
    )
    ap.add_argument("--seeds", type=int, default=SEEDS, help="run seeds per candidate (default 3)")
    ap.add_argument(
        "--holdout",
        type=int,
        default=HOLDOUT,
        help=f"fresh seeds every pick is scored on (default {HOLDOUT})",
    )
    ap.add_argument("--workers", type=int, default=None, help="local processes (default: all CPUs)")
    ap.add_argument(
        "--scheduler", default=None, help="Dask scheduler address instead of local processes"
    )
    ap.add_argument("--only", type=str, default="", help="comma-separated scenario indices")
    ap.add_argument(
        "--dump", type=int, default=0, help="print the best N candidates of each scenario"
    )
    ap.add_argument(
        "--paper", action="store_true", help="the GSGD paper scenario instead of generated ones"
    )
    ap.add_argument("--data-dir", default=None, help="MNIST directory for --paper")
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="folder keeping each scenario's exhaustive curves (reused when the scenario is unchanged)",
    )
    ap.add_argument("--no-rec", action="store_true", help="exhaustive search only (fill --cache)")
    ap.add_argument(
        "--alike",
        type=float,
        default=None,
        help="the recommender's alike threshold (default its own; 0 races every grouping)",
    )
    ap.add_argument(
        "--set", action="append", default=[], help="scenario override for --paper (KEY=VALUE)"
    )
    ap.add_argument(
        "--ceiling",
        type=int,
        default=0,
        metavar="N",
        help="also run every candidate on N more seeds (none of the search's or the holdout's) "
        "and score the search on them: how close a search costing N/3 times the exhaustive "
        "one lands (default 0: not run)",
    )
    ap.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a field of netsim.tuning.race.RaceOptions for the race (e.g. last=1, replicates=3)",
    )
    ap.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also run the race with these RaceOptions fields set (over --option) and print "
        "its row beside the race's: the same scenarios under other settings, e.g. the "
        "previous defaults",
    )
    args = ap.parse_args(argv)
    options = {} if args.alike is None else {"alike": args.alike}
    if args.holdout < 1:
        ap.error(f"--holdout must be >= 1, got {args.holdout}")
    if args.ceiling < 0:
        ap.error(f"--ceiling must be >= 0, got {args.ceiling}")
    options = _race_options(ap, "--option", args.option, options)
    baseline = (
        _race_options(ap, "--baseline", args.baseline, dict(options)) if args.baseline else None
    )
    if args.paper:
        root = Path(__file__).resolve().parents[1]
        sc = load_scenario(root / "scenarios" / "gsgd_paper.toml", args.set, data_dir=args.data_dir)
        raws = [
            {
                "name": sc.name,
                "_path": str(root / "scenarios" / "gsgd_paper.toml"),
                "_sets": args.set,
                "_data_dir": args.data_dir,
                "_seed": sc.run.seed,
                "_label": f"paper {sc.model.name}",
            }
        ]
    else:
        idx = [int(i) for i in args.only.split(",")] if args.only else range(args.n)
        make = GENERATORS[args.generator]
        raws = [
            feasible(make(args.suite_seed, i), 2 * args.seeds + args.holdout + args.ceiling)
            for i in idx
        ]
    client, owned = connect(args.scheduler) if args.scheduler else (None, False)
    start = time.perf_counter()
    rows = []
    for raw in raws:
        cands, lrs, sil, items, base, hand = plan(raw, args.seeds)
        spare = range(2 * args.seeds + args.holdout, 2 * args.seeds + args.holdout + args.ceiling)
        items += [
            (raw, groups, lr, raw_seed(raw) + s)
            for groups in cands.values()
            for lr in lrs
            for s in spare
        ]
        names = list(cands)
        keyed = {canonical(g): n for n, g in cands.items()}
        store = _cache_file(args.cache, raw, lrs) if args.cache else None
        done = pickle.loads(store.read_bytes()) if store is not None and store.exists() else {}
        todo = [it for it in items if (canonical(it[1]), it[2], it[3] - raw_seed(raw)) not in done]
        races = {} if args.no_rec else {"rec": options}
        if baseline is not None and not args.no_rec:
            races["base"] = baseline
        work = [("run", it) for it in todo] + [
            (kind, (raw, raw_seed(raw), opts)) for kind, opts in races.items()
        ]
        results = _results(_dispatch, work, client, args.workers)
        recs: dict = {}
        for i, value, error in results:
            if error is not None:
                print(f"{raw['name']}: item {i} failed: {error!r}", file=sys.stderr)
                return 1
            kind, it = work[i]
            if kind != "run":
                recs[kind] = value
            else:
                done[(canonical(it[1]), it[2], it[3] - raw_seed(raw))] = value
        if store is not None and todo:
            _save(store, done)
        runs = {
            (keyed[g], lr, s): v for (g, lr, s), v in done.items() if g in keyed
        }  # every seed offset
        curves = {k: v[0] for k, v in runs.items()}
        sim_sel = sum(v[1] for k, v in runs.items() if k[2] < args.seeds)
        wall_sel = sum(v[2] for k, v in runs.items() if k[2] < args.seeds)
        horizon = max(t for c in curves.values() for t, _ in c)
        sel = mean_curves(names, lrs, range(args.seeds), curves, horizon)
        target, source = target_loss(sel, horizon)
        table = ttt_table(sel, target, horizon)
        second = ttt_table(
            mean_curves(names, lrs, range(args.seeds, 2 * args.seeds), curves, horizon),
            target,
            horizon,
        )
        best = min(table, key=lambda k: (table[k], k))
        one = ttt_table(mean_curves(names, lrs, [0], curves, horizon), target, horizon)
        one_seed = min(one, key=lambda k: (one[k], k))
        second_best = min(second, key=lambda k: (second[k], k))
        ceiling = None
        if spare:  # a search on the spare seeds, with the target those seeds give
            wide = mean_curves(names, lrs, spare, curves, horizon)
            table_c = ttt_table(wide, target_loss(wide, horizon)[0], horizon)
            ceiling = min(table_c, key=lambda k: (table_c[k], k))
        hand_best = min((k for k in table if k[0] == keyed[hand]), key=lambda k: (table[k], k))
        rec, base_rec = recs.get("rec"), recs.get("base")
        pick = (keyed.get(rec["groups"], "?"), rec["lr"]) if rec else None
        base_pick = (keyed.get(base_rec["groups"], "?"), base_rec["lr"]) if base_rec else None
        top = advise(item_scenario(raw, raw_seed(raw)))["ranking"][0]
        quick = (
            keyed.get(canonical(top.groups), "?"),
            min(lrs, key=lambda lr: abs(math.log(lr / top.lr))),
        )
        picks = {
            k: canonical(cands[k[0]])
            for k in (best, one_seed, second_best, hand_best, quick, (keyed[hand], base), ceiling)
            if k and k[0] in cands
        }
        if sil in keyed:
            picks[(keyed[sil], base)] = sil
        if pick is not None:
            picks[pick] = rec["groups"]  # its η may lie beyond the grid (the race widens it)
        if base_pick is not None:
            picks[base_pick] = base_rec["groups"]
        offsets = range(2 * args.seeds, 2 * args.seeds + args.holdout)
        extra = [
            (raw, groups, lr, raw_seed(raw) + s)
            for (_, lr), groups in picks.items()
            for s in offsets
        ]
        todo = [it for it in extra if (it[1], it[2], it[3] - raw_seed(raw)) not in done]
        results = _results(run_item, todo, client, args.workers)
        for i, value, error in results:
            if error is not None:
                print(f"{raw['name']}: holdout run {i} failed: {error!r}", file=sys.stderr)
                return 1
            it = todo[i]
            done[(it[1], it[2], it[3] - raw_seed(raw))] = value
        if store is not None and todo:
            _save(store, done)
        hold = ttt_table(
            {
                (n, lr): mean_curve([done[(groups, lr, s)][0] for s in offsets], horizon)
                for (n, lr), groups in picks.items()
            },
            target,
            horizon,
        )
        row = {
            "label": raw["_label"],
            "best": best,
            "best_ttt": hold[best][0],
            "pick": pick,
            "rec": regret(hold, pick, best, horizon) if pick in hold else math.inf,
            "quick": regret(hold, quick, best, horizon) if quick in hold else math.inf,
            "one_seed": regret(hold, one_seed, best, horizon),
            "resolution": regret(hold, second_best, best, horizon),
            "silhouette": regret(hold, (keyed[sil], base), best, horizon)
            if sil in keyed
            else math.inf,
            "hand": regret(hold, (keyed[hand], base), best, horizon),
            "hand_best_lr": regret(hold, hand_best, best, horizon),
            "ceiling": regret(hold, ceiling, best, horizon) if ceiling else None,
            "base": regret(hold, base_pick, best, horizon) if base_pick in hold else math.inf,
            "base_sim": base_rec["sim_s"] if base_rec else math.nan,
            "base_wall": base_rec["wall_s"] if base_rec else math.nan,
            "rec_sim": rec["sim_s"] if rec else math.nan,
            "ex_sim": sim_sel,
            "rec_wall": rec["wall_s"] if rec else math.nan,
            "ex_wall": wall_sel,
            "n_cand": len(names) * len(lrs),
        }
        rows.append(row)
        if args.dump:
            for k in sorted(table, key=lambda k: table[k])[: args.dump]:
                print(
                    f"    {k[0]:>10s} η={k[1]:<7.3g} selection {table[k][0]:7.3g} s  second search "
                    f"{second[k][0]:7.3g} s"
                )
        rec_txt = (
            f"recommend {pick[0]:>10s} η={pick[1]:<7.3g} regret {_pct(row['rec'])} | "
            f"cost {row['rec_sim'] / sim_sel:.1%} | "
            if rec
            else ""
        )
        if base_rec:
            rec_txt += (
                f"baseline {base_pick[0]:>10s} η={base_pick[1]:<7.3g} regret {_pct(row['base'])} | "
            )
        print(
            f"{raw['name']:10s} {row['label']}  target {target:.4g} ({source}) best {best[0]:>10s} η={best[1]:<7.3g} "
            f"ttt {row['best_ttt']:7.3g} s | {rec_txt}1 seed {_pct(row['one_seed'])} | "
            f"quick {quick[0]:>10s} η={quick[1]:<7.3g} {_pct(row['quick'])} | "
            f"silhouette {_pct(row['silhouette'])} | hand {_pct(row['hand'])}",
            flush=True,
        )
    if owned:
        client.close()
    print()
    print(summary(rows, args.seeds, args.ceiling, baseline))
    print(
        f"\n{len(rows)} scenarios ({args.generator} generator, seed {args.suite_seed}), "
        f"{args.seeds} seeds per search, {args.holdout} holdout seeds, race options "
        f"{options or 'default'}, {time.perf_counter() - start:.0f} s wall"
    )
    return 0


def _cache_file(folder: Path, raw: dict, lrs) -> Path:
    """Cache file of a scenario's runs ``{(groups, η, seed offset): (curve, sim s, wall s)}``:
    keyed by the scenario and the η grid."""
    key = json.dumps([raw, list(lrs)], sort_keys=True, default=str)
    return Path(folder) / f"{raw['name']}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pkl"


def _results(fn, items: list, client, workers: int | None):
    """``(index, value, error)`` of ``fn(item)`` for *items*: on the Dask *client* when given,
    else in *workers* local processes (default: all CPUs)."""
    if client is not None:
        return dask_results(fn, items, client)
    return local_results(fn, items, workers or default_workers())


def _save(store: Path, done: dict) -> None:
    """Write a scenario's runs ``{(groups, η, seed offset): (curve, sim s, wall s)}`` to its cache file."""
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes(pickle.dumps(done))


def _dispatch(work):
    kind, item = work
    return run_item(item) if kind == "run" else recommend_item(item)


def _pct(x: float) -> str:
    return "   never" if not math.isfinite(x) else f"{100 * x:6.1f} %"


def _race_options(ap, flag: str, texts: list[str], options: dict) -> dict:
    """*options* with each ``KEY=VALUE`` of *texts* set (a RaceOptions field, VALUE JSON);
    a bad key, value or combination ends the run naming *flag* (``ap.error``)."""
    keywords = {f.name for f in fields(RaceOptions)}
    for text in texts:
        key, _, value = text.partition("=")
        if key not in keywords:
            ap.error(
                f"{flag} {text!r}: {key!r} is not a field of RaceOptions "
                f"(allowed: {', '.join(sorted(keywords))})"
            )
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            ap.error(
                f"{flag} {text!r}: expected KEY=VALUE with a number, true/false or a JSON list as VALUE"
            )
    try:
        RaceOptions(**options)
    except RecommendError as err:
        ap.error(f"{flag}: {err}")
    return options


def summary(rows, seeds: int = SEEDS, ceiling: int = 0, baseline: dict | None = None) -> str:
    """The Markdown table: share within 5 % regret, median, 90th percentile and worst regret,
    cost ratios (*seeds* per search; *ceiling*: the seeds of ``--ceiling``, 0 when not run;
    *baseline*: the options of ``--baseline``'s race, None when not run)."""
    lines = [
        "| recommender | within 5 % regret | median regret | 90th percentile | worst regret "
        "| emulated cost | wall cost |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    ex_sim = sum(r["ex_sim"] for r in rows)
    ex_wall = sum(r["ex_wall"] for r in rows)
    shown = ", ".join(f"{k}={v}" for k, v in (baseline or {}).items())
    for key, name, cost in (
        ("rec", "recommend (pilots, successive halving)", True),
        ("base", f"recommend with {shown} (baseline)", True),
        ("quick", "advisor's closed form (--quick), no emulation", False),
        ("silhouette", "old auto (silhouette), scenario η", False),
        ("hand", "hand classes, scenario η", False),
        ("hand_best_lr", "hand classes, best η (oracle η)", False),
        ("one_seed", "exhaustive search on 1 seed (noise floor)", False),
        (
            "resolution",
            "a second exhaustive search, on other seeds (the benchmark's resolution)",
            False,
        ),
        (
            "ceiling",
            f"an exhaustive search on {ceiling} other seeds, {ceiling / seeds:.3g} × the "
            f"cost (the ceiling)",
            False,
        ),
    ):
        if key == "rec" and all(r["pick"] is None for r in rows):
            continue
        if key == "ceiling" and not ceiling or key == "base" and baseline is None:
            continue
        reg = np.array([r[key] for r in rows])
        share = float(np.mean(reg <= 0.05))
        c1 = f"{sum(r[f'{key}_sim'] for r in rows) / ex_sim:.1%}" if cost else "—"
        c2 = f"{sum(r[f'{key}_wall'] for r in rows) / ex_wall:.1%}" if cost else "—"
        lines.append(
            f"| {name} | {share:.0%} | {_pct(float(np.median(reg))).strip()} | "
            f"{_pct(float(np.percentile(reg, 90, method='higher'))).strip()} | "
            f"{_pct(float(reg.max())).strip()} | {c1} | {c2} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
