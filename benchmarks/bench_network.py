"""What the flow-level network costs per gradient: each scenario with and without its network.

For each case it runs the same scenario twice in this process, with its ``[network]`` and
with the table removed (transfers then take no time), and prints the wall time per applied
gradient of each, their ratio, and, from a profile of the networked run, where its time
goes: routing (``net/routing.py``), re-solving (the max-min water-filling and the re-plans
of ``net/flows.py``), event scheduling (SimPy's queue and events) and the rest (workers,
server, gradients, records). The cases: ``scenarios/fat_tree_ps.toml``,
``scenarios/geo_gsgd.toml``, the paper cluster (``scenarios/gsgd_paper.toml`` on the
digits data) on a 17-host star and on the k=6 fat-tree (17 hosts do not fit k=4's 16),
and 1,000 and 10,000 ASGD workers (synthetic data, 64 features, batch 1, exponential
times of mean 10 s, 64-parameter messages of 1 MB) on a star and on a fat-tree (k=16,
1,024 hosts, for 1,000; k=36, 11,664 hosts, for 10,000).

Goals (issue #36): networked within 2x of the same scenario without the network per
gradient (fat_tree_ps, geo_gsgd, the paper cluster on a star); 10,000 networked workers on a
star at >= 10,000 updates/s.

Then the flow solve on fixed flow sets, side by side with SimGrid 4.1 when its Python module
(PyPI ``simgrid``, a benchmark-only dependency) imports: the 1,023-flow incast and 1,023
random pairs of the k=16 fat-tree, and the transfers of fat_tree_ps and geo_gsgd replayed
on their topologies with the routes netsim gave them. Without SimGrid the netsim side is
printed and the comparison says "skipped" with the reason.

Times are the best of ``--repeat`` runs (wall clock; the machine is named in the first line).

Usage: python benchmarks/bench_network.py [--quick] [--cases NAME,...] [--no-profile]
       [--repeat N] [--no-flow-sets]
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import os
import platform
import pstats
import time
from pathlib import Path

import numpy as np
import simpy

import netsim
from netsim.config.scenario import parse_scenario
from netsim.net.fairshare import LinkSharing
from netsim.net.flows import FlowNetwork
from netsim.net.routing import route
from netsim.net.topology import fat_tree, hosts
from netsim.sim.engine import prepare, simulate

ROOT = Path(__file__).resolve().parents[1]
SC = ROOT / "scenarios"


def _big(workers: int, topology: str, updates: int) -> tuple[Path, list[str]]:
    rows = max(2_500, workers * 5 // 4)
    net = {
        "star": f'{{builder="star", args={{n_hosts={workers + 1}}}}}',
        "fat_tree": '"fat_tree_k16"',  # 1,024 hosts
        "fat_tree_k36": '{builder="fat_tree", args={k=36}}',  # 11,664 hosts: 10,000 fit
    }[topology]
    return SC / "quickstart.toml", [
        "run.eval_every=0",
        "run.until=1e12",
        f"run.max_updates={updates}",
        "run.batch_size=1",
        "run.timeline_until=0",
        'run.algorithm="asgd"',
        "algorithms={asgd={lr=0.01}}",
        f'data={{source="synthetic", n_samples={rows}, n_features=64, labels="binary"}}',
        'model={name="logistic", l2=0.0001}',
        f'workers=[{{name="w", count={workers}, compute={{dist="exponential", mean=10.0}}}}]',
        f"network={{topology={net}, message_bytes=1e6}}",
    ]


PAPER = ["data.source='digits'", "run.eval_every=0", "run.timeline_until=0"]
CASES = {
    "fat_tree_ps": lambda q: (SC / "fat_tree_ps.toml", ["run.eval_every=0"]),
    "geo_gsgd": lambda q: (SC / "geo_gsgd.toml", ["run.eval_every=0"]),
    "paper_star": lambda q: (
        SC / "gsgd_paper.toml",
        PAPER + ['network={topology={builder="star", args={n_hosts=17}}, message_bytes=1e6}'],
    ),
    "paper_fat_tree_k6": lambda q: (  # 16 workers + the PS do not fit the k=4 tree's 16 hosts
        SC / "gsgd_paper.toml",
        PAPER + ['network={topology={builder="fat_tree", args={k=6}}, message_bytes=1e6}'],
    ),
    "1000_star": lambda q: _big(1_000, "star", 2_000 if q else 20_000),
    "1000_fat_tree_k16": lambda q: _big(1_000, "fat_tree", 2_000 if q else 20_000),
    "10000_star": lambda q: _big(10_000, "star", 10_000 if q else 50_000),
    "10000_fat_tree_k36": lambda q: _big(10_000, "fat_tree_k36", 10_000 if q else 50_000),
}
GOAL_RATIO = ("fat_tree_ps", "geo_gsgd", "paper_star")

CATEGORIES = (
    ("routing", ("routing.py",)),
    ("re-solving", ("fairshare.py", "flows.py")),
    ("event scheduling", ("simpy",)),
)


def _without_network(sc):
    raw = copy.deepcopy(sc.raw)
    raw.pop("network", None)
    for worker_class in raw.get("workers", []):
        for key in ("datacenter", "hosts"):  # placement keys need a network
            worker_class.pop(key, None)
    return parse_scenario(raw, Path(sc.path)).with_algorithm(sc.run.algorithm)


def _time(sc, prepared, repeat: int) -> tuple[float, int, int]:
    """Best wall time (s) of *repeat* runs, gradients applied and updates of one."""
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = simulate(sc, prepared=prepared)
        walls.append(time.perf_counter() - start)
    return min(walls), len(result.records.staleness), result.updates


def _split(sc, prepared) -> dict[str, float]:
    """Shares of the networked run's profiled time (own time per function) by category."""
    prof = cProfile.Profile()
    prof.enable()
    simulate(sc, prepared=prepared)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values()) or 1.0
    shares = dict.fromkeys([c for c, _ in CATEGORIES] + ["rest"], 0.0)
    for (filename, _, _), value in stats.items():
        name = next((c for c, keys in CATEGORIES if any(k in filename for k in keys)), "rest")
        shares[name] += value[2] / total
    return shares


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


# ------------------------------------------------------------------------ flow sets


def _k16_sets() -> list[tuple[str, object, list]]:
    """The incast and the random pairs of the k=16 fat-tree (1,023 flows each)."""
    G = fat_tree(16, bandwidth=10e9, latency=1e-6)
    H = hosts(G)
    rng = np.random.default_rng(2024)
    pairs = []
    while len(pairs) < 1023:
        a, b = rng.choice(len(H), size=2, replace=False)
        pairs.append((H[a], H[b]))
    return [
        ("k16 incast (1,023 -> h0)", G, [(h, H[0]) for h in H[1:]]),
        ("k16 random pairs", G, pairs),
    ]


class _SolvedFlow:
    """What LinkSharing reads and sets of a flow: ``links``, ``weight`` and ``rate``."""

    __slots__ = ("links", "weight", "rate")

    def __init__(self, links: tuple):
        self.links, self.weight, self.rate = links, 1.0, 0.0


def _solve_once(G, pairs) -> float:
    """Wall time (s) to route-index *pairs* (routes cached) and solve their max-min rates with
    the solver FlowNetwork re-plans with (every flow added, then one solve)."""
    links = [(u, v) for a, b in G.edges for u, v in ((a, b), (b, a))]
    index = {link: i for i, link in enumerate(links)}
    cap = [float(G.edges[link]["bandwidth"]) for link in links]
    cache: dict = {}
    paths = [tuple(index[link] for link in route(G, s, d, cache=cache)) for s, d in pairs]
    start = time.perf_counter()
    sharing = LinkSharing(cap, unit=True)
    fl = []
    for path in paths:
        flow = _SolvedFlow(path)
        sharing.add(flow)
        fl.append(flow)
    sharing.solve(fl)
    return time.perf_counter() - start


def _trace(path: Path) -> tuple[object, list]:
    """The topology of the scenario at *path* and its transfers ``(t, src, dst, nbytes,
    flow_key)``, recorded from one run."""
    sc = netsim.load(path, ["run.eval_every=0"])
    recorded: list = []
    graphs: list = []
    original, init = FlowNetwork.transfer, FlowNetwork.__init__

    def transfer(net, src, dst, nbytes, *, flow_key=None):
        recorded.append((net.env.now, src, dst, nbytes, flow_key))
        return original(net, src, dst, nbytes, flow_key=flow_key)

    def keep(net, env, G, **kw):
        graphs.append(G)
        init(net, env, G, **kw)

    FlowNetwork.transfer, FlowNetwork.__init__ = transfer, keep  # type: ignore[method-assign]
    try:
        simulate(sc, prepared=prepare(sc))
    finally:
        FlowNetwork.transfer, FlowNetwork.__init__ = original, init  # type: ignore[method-assign]
    return graphs[0], recorded


def _replay(G, trace) -> float:
    """Wall time (s) of FlowNetwork delivering the recorded *trace* in a bare SimPy run."""
    env = simpy.Environment()
    net = FlowNetwork(env, G)

    def at(t, src, dst, nbytes, key):
        yield env.timeout(t)
        yield net.transfer(src, dst, nbytes, flow_key=key)

    for t, src, dst, nbytes, key in trace:
        env.process(at(t, src, dst, nbytes, key))
    start = time.perf_counter()
    env.run()
    return time.perf_counter() - start


def _simgrid() -> str | None:
    """None when SimGrid's Python module imports, else why it is skipped."""
    try:
        import simgrid  # type: ignore[import-not-found]  # noqa: F401
    except ImportError as err:
        return (
            f"skipped: SimGrid is not importable ({err}); PyPI has only the simgrid 4.1 sdist, "
            "whose build compiles ~590 C++ files against Boost"
        )
    return "skipped: SimGrid imports, but the SimGrid side of this comparison is not written yet"


def flow_sets(repeat: int) -> None:
    print("\n| flow set | flows | netsim solve, ms | SimGrid, ms | netsim / SimGrid |")
    print("|---|---:|---:|---:|---:|")
    why = _simgrid()
    for name, G, pairs in _k16_sets():
        best = min(_solve_once(G, pairs) for _ in range(repeat))
        print(f"| {name} | {len(pairs):,} | {best * 1e3:.2f} | - | - |")
    for name in ("fat_tree_ps", "geo_gsgd"):
        G, trace = _trace(SC / f"{name}.toml")
        best = min(_replay(G, trace) for _ in range(repeat))
        print(f"| {name} transfers, replayed | {len(trace):,} | {best * 1e3:.2f} | - | - |")
    print(f"\nSimGrid: {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer updates in the big cases")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    ap.add_argument("--no-flow-sets", action="store_true", help="skip the solve comparison")
    args = ap.parse_args()
    print(
        f"machine: {_cpu()}, {os.cpu_count()} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| case | gradients | µs/gradient, network | µs/gradient, none | ratio | updates/s, network "
        "| routing | re-solving | events | rest |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.cases.split(","):
        path, sets = CASES[name](args.quick)
        sc = netsim.load(path, sets)
        bare = _without_network(sc)
        prepared = prepare(sc)
        simulate(sc, prepared=prepared)  # warm: routes, imports, caches
        net_wall, net_grads, net_updates = _time(sc, prepared, args.repeat)
        bare_wall, bare_grads, _ = _time(bare, prepared, args.repeat)
        per_net, per_bare = net_wall / net_grads * 1e6, bare_wall / bare_grads * 1e6
        split = {} if args.no_profile else _split(sc, prepared)
        shares = " | ".join(
            f"{split[k]:.0%}" if split else "-"
            for k in ("routing", "re-solving", "event scheduling", "rest")
        )
        goal = " (goal ≤ 2)" if name in GOAL_RATIO else ""
        print(
            f"| {name} | {net_grads:,} | {per_net:.1f} | {per_bare:.1f} | "
            f"{per_net / per_bare:.2f}{goal} | {net_updates / net_wall:,.0f} | {shares} |",
            flush=True,
        )
    if not args.no_flow_sets:
        flow_sets(args.repeat)


if __name__ == "__main__":
    main()
