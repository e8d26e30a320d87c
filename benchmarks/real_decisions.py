"""Does netsim pick what trains fastest for real? The race's choice held against real runs.

For each scenario of the suite, the race (``netsim group``, :func:`netsim.recommend`, on the
scenario at the horizon below) names its finalists; every finalist, SSGD, ASGD and GSGD with
the scenario's hand groups, each of those three at the race's η and at the scenario's own,
is trained for real with ``--seeds`` seeds (``netsim.real``: a server process and one
process per worker over torch.distributed, gloo; each real worker draws its compute times
and minibatches from streams of its own) and emulated with the same seeds. The target loss
is a steep one (``default_target``: half way from the initial to the final loss, averaged
over the real runs of the scenario's own configurations: GSGD with its hand groups, SSGD
and ASGD, at the scenario's η); the race is given the target of the same definition on
their emulated runs (``--target``), made before any real run, so that it ranks by the goal
the benchmark scores. A configuration's time to target is its seeds' mean (scenario time
units, with the half-width of its 95 % interval), "not reached" when a seed never got
there. The configurations whose real interval meets the real best's (the best among them)
are trained for real and emulated on ``--more`` further seeds, and their times are the
means over all their seeds: a verdict on three seeds of heavy-tailed times cannot tell them
apart; the target stays the one the first seeds set. Per scenario: the real best, the real
regret (how much later it reaches the target) of netsim's pick and of the hand groups at
the scenario's η, Kendall's τ-b between the emulated and the real times over every
configuration (the never reached are tied last), and whether the real best is the pick or
a finalist the race did not separate from it. A configuration the real runner refuses is
named and left out; GSGD with one-worker groups and ASGD at the same η are one
configuration (listed once).

Two figures say how far a verdict on ``--seeds`` seeds can be trusted: the pick's regret by
the emulation's own times (what deciding on short pilots costs, before any real run), and
the resolution: every configuration emulated again on as many other seeds, the fastest of
that second emulation, and its regret judged by the first (a predictor exactly as good as
the emulation itself, judged on other seeds, misses by that much).

The suite (the time scale is the first the real runner keeps: a scale it refuses is
replaced by the one its refusal names):

- paper: ``scenarios/gsgd_paper.toml`` (16 workers 4 × 1, 4 × 2, 8 × 3 units, logistic
  regression on MNIST odd/even), 0.05 s per unit;
- stragglers: ``benchmarks/decisions/stragglers.toml`` (8 fast workers, 2 about 6 times
  slower), 0.05 s per unit;
- skew_heavy: ``benchmarks/decisions/skew_heavy.toml`` (Dirichlet label skew α = 0.3,
  Pareto times, softmax regression), 0.05 s per unit;
- latencies: ``benchmarks/decisions/latencies.toml`` (equal compute, latencies 0, 0.5, 2
  units by class), 0.05 s per unit;
- busy: ``scenarios/busy_server.toml`` (a 1 M-parameter MLP, a server that takes time),
  T = 20, 0.75 s per unit;
- torch_mlp: ``benchmarks/decisions/torch_mlp.toml`` (a PyTorch MLP 784-32-10, 8 workers),
  0.1 s per unit.

T = 100 units (the files': 200 to 600) unless given, and the curve evaluated every half
unit: the steep target is crossed within the first few units.

The load average is recorded before and during every real run; ⚠ marks one above 2 per
core.

Usage: python benchmarks/real_decisions.py [--data-dir DIR] [--out DIR] [--seeds 3]
[--more 3] [--scenarios paper,stragglers,...] [--fraction 0.5] [--reuse] [--quick]
(MNIST and PyTorch; --fraction: where the target sits between the initial and final loss;
--reuse keeps real runs already in OUT; --quick: a smoke test, 2 seeds and 1 more, tiny
horizons, 2 scenarios, not for the docs.) At rest on a 2-core machine a full run takes
about 90 minutes: about 250 real runs of 5 to 15 s each and a few seconds to start, the
races and the emulations.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
from pathlib import Path

import netsim
from netsim.api import FolderError, recommend
from netsim.errors import RealRunFailed, ScenarioError
from netsim.testbed.decisions import (
    Config,
    config_rows,
    configs,
    contenders,
    mean_time,
    merge_singletons,
    own_configs,
    verdict,
)
from netsim.testbed.predict import crossing, default_target, variant_scenario

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parent / "scenarios"
OWN = HERE / "decisions"
FINE = ["run.until=100", "run.eval_every=0.5"]
"""T and evaluations: the steep target is crossed within the first few units (half way from
the initial loss is a few updates away), so the curve is evaluated every half unit."""
SUITE = {
    "paper": (SCENARIOS / "gsgd_paper.toml", 0.05, FINE),
    "stragglers": (OWN / "stragglers.toml", 0.05, FINE),
    "skew_heavy": (OWN / "skew_heavy.toml", 0.05, FINE),
    "latencies": (OWN / "latencies.toml", 0.05, FINE),
    "busy": (SCENARIOS / "busy_server.toml", 0.75, ["run.until=20", "run.eval_every=0.5"]),
    "torch_mlp": (OWN / "torch_mlp.toml", 0.1, FINE),
}
"""Scenario name → (file, the time scale tried first (s per unit), overrides)."""
QUICK = {"paper": ["run.until=60", "run.eval_every=5"], "stragglers": ["run.until=40"]}
"""--quick: its two scenarios and their tiny horizons."""
RULES = {"sync": "ssgd", "async": "asgd", "grouping": "gsgd"}
LOAD_FILE = "bench_load_before.txt"
"""Beside a real run's folder files: the load average before it started (kept for --reuse)."""


def _overloaded(loads: tuple[float, float | None]) -> bool:
    return max(x or 0.0 for x in loads) > 2 * (os.cpu_count() or 1)


def _real(args, name: str, config: Config, scale: float, k: int) -> tuple[Path, tuple]:
    """Seed *k*'s real run of *config* (folder, (load before, highest load seen)); raises
    ScenarioError or RealRunFailed when refused or failed."""
    path, _, overrides = _spec(args, name)
    folder = Path(args.out) / name / f"{_slug(config)}-seed{k}"
    if args.reuse and _kept(folder):
        before = float((folder / LOAD_FILE).read_text())
    else:
        before = os.getloadavg()[0]
        netsim.real(
            path,
            config.rule,
            time_scale=scale,
            out=folder,
            overwrite=True,
            overrides=overrides + config.overrides(),
            seed=1 + k,
            data_dir=args.data_dir,
            progress=None,
        )
        (folder / LOAD_FILE).write_text(f"{before}\n")
    summary = netsim.open_run(folder).summary
    if summary["status"] == "interrupted":  # Ctrl-C or SIGTERM stopped the run: stop here
        raise KeyboardInterrupt
    return folder, (before, summary["real"].get("load1_max"))


def _kept(folder: Path) -> bool:
    """Whether *folder* holds a finished real run to reuse (not one that was stopped)."""
    if not ((folder / "summary.json").is_file() and (folder / LOAD_FILE).is_file()):
        return False
    return netsim.open_run(folder).summary["status"] != "interrupted"


def _spec(args, name: str) -> tuple[Path, float, list[str]]:
    path, scale, overrides = SUITE[name]
    return path, scale, overrides + (QUICK[name] if args.quick else [])


def _slug(config: Config) -> str:
    """A folder name for *config*: ``gsgd_kmeans_2_lr0.08``."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", config.label.replace("η=", "lr")).strip("_")


def _suggested(exc: ScenarioError) -> float | None:
    """The time scale a refusal of ``--time-scale`` names, None for another refusal."""
    found = re.search(r"--time-scale ([0-9.e+-]+) or more", exc.message)
    return float(found.group(1)) if exc.key == "--time-scale" and found else None


def _real_runs(args, name: str, cfgs: list[Config]) -> tuple[dict, float, list[str]]:
    """Every configuration's real runs (config → [(folder, loads)]), the time scale used,
    and the refusals (one line each; their configurations left out)."""
    scale, refused, runs = _spec(args, name)[1], [], {}
    for config in cfgs:
        done = []
        for k in range(args.seeds):
            try:
                done.append(_real(args, name, config, scale, k))
            except ScenarioError as exc:
                better = _suggested(exc)
                if better is None or better <= scale:
                    refused.append(f"{config.label}: {exc}")
                    break
                print(f"{name}: {scale:g} s per unit refused, {better:g} used ({exc.message})")
                scale = better
                try:
                    done.append(_real(args, name, config, scale, k))
                except (ScenarioError, RealRunFailed) as again:
                    refused.append(f"{config.label}: {again}")
                    break
            except RealRunFailed as exc:
                refused.append(f"{config.label}, seed {1 + k}: {exc}")
                break
        if len(done) == args.seeds:
            runs[config] = done
    return runs, scale, refused


def _more_seeds(args, name: str, runs: dict, target: float, scale: float) -> list[str]:
    """Real seeds ``--seeds`` to ``--seeds + --more − 1`` of every configuration that its
    first seeds cannot tell from the real best to *target* (:func:`contenders`: the best and
    those whose intervals meet its), appended to *runs*; their labels."""
    if args.more <= 0:
        return []
    times = {
        config: mean_time(_real_time(folder, target) for folder, _ in done)
        for config, done in runs.items()
    }
    chosen = contenders(times)
    for config in chosen:
        for k in range(args.seeds, args.seeds + args.more):
            try:
                runs[config].append(_real(args, name, config, scale, k))
            except (ScenarioError, RealRunFailed) as exc:
                print(f"{name}: {config.label}, seed {1 + k} not run ({exc})")
                break
    return [c.label for c in chosen]


def _real_time(folder: Path, target: float) -> float | None:
    """When the real run in *folder* first reaches *target* (scenario units), or None."""
    return _time_to(netsim.open_run(folder).curve, target)


def _time_to(curve: dict, target: float) -> float | None:
    """When a run's *curve* (``sim_time``, ``loss``) first reaches *target*, or None."""
    return crossing(curve["sim_time"], curve["loss"], target)


_EMULATED: dict[tuple, list] = {}
"""(scenario, configuration, variant, real folder) → its emulated runs' curves, made once."""


def _emulated_curves(
    args,
    name: str,
    config: Config,
    cal=None,
    folder: Path | None = None,
    first: int = 1,
    n: int | None = None,
) -> list[dict]:
    """*config* emulated from the scenario file, or with the ``[server]`` keys and
    overheads of *cal* (at the time scale of its real run in *folder*): one run per seed
    (*n*, default ``--seeds``, of them from seed *first*: 1, the real runs' seeds, as many
    as its real runs; 1 + ``--seeds`` + ``--more``, the second emulation's), their curves."""
    n = args.seeds if n is None else n
    key = (name, config.key, cal is not None, folder, first, n)
    if key in _EMULATED:
        return _EMULATED[key]
    path, _, overrides = _spec(args, name)
    sc = netsim.load(path, overrides + config.overrides(), data_dir=args.data_dir)
    sc, kind = sc.with_algorithm(config.rule), "emulated"
    if cal is not None and folder is not None:
        scale = netsim.open_run(folder).summary["real"]["time_scale"]
        sc, kind = variant_scenario(sc, folder, "calibrated", cal, scale), "calibrated"
    curves, kind = [], kind if first == 1 else "second"
    for k in range(n):
        out = Path(args.out) / name / kind / f"{_slug(config)}-seed{k}"
        run = netsim.run(sc, config.rule, out=out, overwrite=True, progress=None, seed=first + k)
        curves.append(run.curve)
    _EMULATED[key] = curves
    return curves


def _emulated_times(
    args,
    name: str,
    config: Config,
    target: float,
    cal=None,
    folder: Path | None = None,
    first: int = 1,
    n: int | None = None,
) -> list[float | None]:
    """Each seed's emulated time to *target* of *config* (:func:`_emulated_curves`)."""
    curves = _emulated_curves(args, name, config, cal, folder, first, n)
    return [_time_to(c, target) for c in curves]


def _aim(args, name: str, own: list[Config]) -> float:
    """The target the race is given: the benchmark's own definition (``default_target``) on
    the emulated runs of the scenario's own configurations, before any real run."""
    curves = [c for config in own for c in _emulated_curves(args, name, config)]
    return default_target(curves, args.fraction)


def _calibration(runs: dict) -> tuple[Config | None, object]:
    """The configuration whose real runs calibrate the scenario (ASGD at the scenario's η,
    else the first that ran) and its :class:`~netsim.testbed.calibrate.Calibration`
    (None when its runs cannot be fitted)."""
    order = sorted(runs, key=lambda c: (c.rule != "asgd", "scenario η" not in c.tags))
    for config in order:
        try:
            return config, netsim.calibrate([f for f, _ in runs[config]])["calibration"]
        except FolderError:
            continue
    return None, None


def _finite_curves(folders: list[Path]) -> list[dict]:
    curves = [netsim.open_run(f).curve for f in folders]
    return [c for c in curves if len(c["loss"]) and all(math.isfinite(x) for x in c["loss"])]


def _scenario(args, name: str, loads: list[str]) -> dict | None:
    """Race, real runs, emulations and the table of scenario *name*; its verdict."""
    path, _, overrides = _spec(args, name)
    sc = netsim.load(path, overrides, data_dir=args.data_dir)
    grouping = sc.rules[RULES["grouping"]]
    baselines = {  # a rule the file has no table for: at the race's η only
        RULES[r]: float(sc.rules[RULES[r]].lr) if RULES[r] in sc.rules else None
        for r in ("sync", "async")
    }
    own = own_configs(RULES["grouping"], grouping.groups, baselines, float(grouping.lr))
    aim = _aim(args, name, own)
    rec = recommend(sc, target=aim)
    cfgs = configs(rec, RULES["grouping"], grouping.groups, baselines, float(grouping.lr))
    tables = sc.raw.get("algorithms", {})
    if set(tables.get(RULES["grouping"], {})) <= {"lr", "groups"} and set(
        tables.get(RULES["async"], {})
    ) <= {"lr"}:  # one-worker groups are the asynchronous rule itself
        cfgs = merge_singletons(cfgs, RULES["grouping"], RULES["async"])
    runs, scale, refused = _real_runs(args, name, cfgs)
    keys, target, more = {c.key for c in own}, math.nan, []
    if runs:  # the target on the first --seeds seeds: the extra ones do not move it
        target = default_target(
            _finite_curves([f for c, d in runs.items() if c.key in keys for f, _ in d])
            or _finite_curves([f for d in runs.values() for f, _ in d]),
            args.fraction,
        )
        more = _more_seeds(args, name, runs, target, scale)
    print(f"\n### {name}: T = {sc.run.until:g} units at {scale:g} s per unit\n")
    print(f"race: {rec.name} η={rec.lr:.3g} ({rec.reason})")
    for line in refused:
        print(f"- left out, the real runner refused: {line}")
    if not runs:
        print("no configuration ran for real")
        return None
    off = 0
    for config, done in runs.items():
        for folder, load in done:
            s = netsim.open_run(folder).summary
            off += s["status"] != "ok"
            mark = " ⚠" if _overloaded(load) else ""
            loads.append(
                f"| {name} | {folder.name} | {s['real']['time_scale']:g} | {s['status']} | "
                f"{s['updates']} | {load[0]:.1f} | {load[1] or 0:.1f}{mark} |"
            )
    source, cal = _calibration(runs)
    rows = []
    for config, done in runs.items():
        real_t = mean_time(_real_time(f, target) for f, _ in done)
        n = len(done)  # the real best's contenders: as many emulated seeds as real ones
        emu_t = mean_time(_emulated_times(args, name, config, target, n=n))
        row = {"config": config, "real": real_t[0], "real_ci": real_t[1]}
        row |= {"predicted": emu_t[0], "predicted_ci": emu_t[1]}
        row["second"] = mean_time(
            _emulated_times(args, name, config, target, first=1 + args.seeds + args.more)
        )[0]
        if cal is not None:
            cal_t = mean_time(_emulated_times(args, name, config, target, cal, done[0][0], n=n))
            row |= {"calibrated": cal_t[0], "calibrated_ci": cal_t[1]}
        rows.append(row)
    if source is not None:
        print(f"calibrated: on the real runs of {source.label} (netsim calibrate)")
    print(
        f"target loss {target:.4g} (the race was given {aim:.4g}, the same definition on "
        f"the emulated runs); {args.seeds} seeds each side"
        + (
            f"; real times on {args.seeds + args.more} seeds for {', '.join(more)} (not "
            f"separated from the real best on {args.seeds})"
            if more
            else ""
        )
        + "\n"
    )
    print("\n".join(config_rows(rows)))
    n = sum(len(d) for d in runs.values())
    if off:
        print(f"\n{off} of {n} real runs not ok (the pace kept after the run: see the runs' table)")
    return {"scale": scale, "T": sc.run.until, "off": f"{off}/{n}", **verdict(rows)}


def _share(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "-"
    return "never" if math.isinf(x) else f"{x:+.1%}"


def _summary(found: dict, seeds: int, more: int) -> None:
    print("\n### Decisions\n")
    print(
        "| scenario | T, s per unit | real best | its time | pick's regret | "
        "emulated fastest's regret | hand groups' regret | Kendall τ | best not separated | "
        "calibrated: τ, fastest's regret | pick's emulated regret | resolution | runs not ok |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for name, v in found.items():
        best = v["best"]
        ci = f" ± {best['real_ci']:.2g}" if best["real_ci"] else ""
        cal = "-"
        if "calibrated_tau" in v:
            cal = f"{_tau(v['calibrated_tau'])}, {_share(v['calibrated_regret'])}"
        print(
            f"| {name} | {v['T']:g}, {v['scale']:g} | {best['config'].label} | "
            f"{best['real']:.4g}{ci} | {_share(v['pick_regret'])} | "
            f"{_share(v['emulated_regret'])} | {_share(v['hand_regret'])} | "
            f"{_tau(v['tau'])} | {'yes' if v['best_close'] else 'no'} | {cal} | "
            f"{_share(v['pick_emulated_regret'])} | {_share(v.get('second_regret'))} | "
            f"{v['off']} |"
        )
    within = [v for v in found.values() if v.get("second_regret") is not None]
    hits = sum(v["second_regret"] <= 0.05 for v in within)
    print(
        f"\nresolution: the second emulation's fastest (seeds {1 + seeds + more}–"
        f"{2 * seeds + more}) is within 5 % of the first emulation's fastest (seeds 1–{seeds}"
        + (f", the real best's contenders 1–{seeds + more}" if more else "")
        + f") in {hits} of {len(within)} scenarios"
    )


def _tau(tau: float | None) -> str:
    return "-" if tau is None else f"{tau:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--out", default="runs/real_decisions")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--more",
        type=int,
        default=3,
        help="real seeds more for the configurations not separated from the real best (0: none)",
    )
    ap.add_argument("--scenarios", default=None, help=f"of {', '.join(SUITE)} (default all)")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--fraction",
        type=float,
        default=0.5,
        help="where the target sits, from the initial (0) to the final loss (1); default 0.5",
    )
    args = ap.parse_args()
    names = args.scenarios.split(",") if args.scenarios else list(QUICK if args.quick else SUITE)
    unknown = [n for n in names if n not in (QUICK if args.quick else SUITE)]
    if unknown:
        ap.error(f"unknown scenario(s) {', '.join(unknown)} (allowed: {', '.join(SUITE)})")
    if not 0.0 < args.fraction < 1.0:
        ap.error(f"--fraction must be between 0 and 1 (exclusive), got {args.fraction:g}")
    if args.seeds < 2 or args.more < 0:
        ap.error(f"--seeds must be at least 2 and --more at least 0, got {args.seeds}, {args.more}")
    if args.quick:
        args.seeds, args.more = min(args.seeds, 2), min(args.more, 1)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.platform()}, Python {platform.python_version()}; {args.seeds} seeds each "
        f"side; target {args.fraction:g} of the way from the initial to the final loss"
    )
    loads: list[str] = []
    found = {}
    for name in names:
        if (v := _scenario(args, name, loads)) is not None:
            found[name] = v
    _summary(found, args.seeds, args.more)
    print(
        "\n### Real runs\n\n| scenario | run | s per unit | status | updates | load before | "
        "load max |\n|---|---|---:|---|---:|---:|---:|"
    )
    print("\n".join(loads))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("\ninterrupted: the real runs made so far stay in --out (--reuse keeps them)")
        raise SystemExit(130) from None
