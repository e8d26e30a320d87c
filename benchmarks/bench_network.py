"""What the flow-level network costs per gradient: each scenario with and without its network.

For each case it runs the same scenario twice in this process, with its ``[network]`` and
with the table removed (transfers then take no time), and prints the wall time per applied
gradient of each, their ratio, the same for a third run without the network where every pull
and push is one timeout (per worker class, the mean of its workers' transfer times on the
idle network: what a transfer's event alone costs, the floor of any model that gives each
transfer an event), the same with each of those timeouts split in two (two events per
transfer: the floor of a flow model, which re-plans the rates when a transfer starts sending
after its path latency and when it ends), and, from a profile of the networked run, where
its time goes: routing (``net/routing.py``), re-solving (the max-min water-filling, the virtual
time of ``net/hubqueues.py``, the re-plans of ``net/flows.py`` and its sends on an idle
network, ``net/idlesends.py``, on ``net/linktable.py``'s links with ``net/flowstate.py``'s
records), event scheduling (SimPy's queue and events) and the rest (workers, server,
gradients, records). Each timed run starts on a collected heap (see :func:`_time`). The
cases: ``scenarios/fat_tree_ps.toml`` (300 s of it; 60 s with ``--quick``),
``scenarios/geo_gsgd.toml``, the paper cluster (``scenarios/gsgd_paper.toml`` on the
digits data) on a 17-host star and on the k=6 fat-tree (17 hosts do not fit k=4's 16),
and 1,000 and 10,000 ASGD workers (synthetic data, 64 features, batch 1, exponential
times of mean 10 s, 64-parameter messages of 1 MB) on a star and on a fat-tree (k=16,
1,024 hosts, for 1,000; k=36, 11,664 hosts, for 10,000), and a loaded network: 64 such
workers computing for 10 ms on average against 10 MB messages (8 ms alone on a star link),
most of them sending at once through the PS's links.

Goals (issue #36): networked within 2x of the same scenario without the network per
gradient (fat_tree_ps, geo_gsgd, the paper cluster on a star); 10,000 networked workers on a
star at >= 10,000 updates/s.

Then the flow solve on fixed flow sets: the 1,023-flow incast and 1,023 random pairs of the
k=16 fat-tree (one solve of their rates; and each run to its last completion with 1 MB per
flow, all started at 0), and the transfers of fat_tree_ps and geo_gsgd replayed at their
recorded times, each set run to completion by netsim's FlowNetwork (``env.run()``, routes
found beforehand) and by SimGrid (``Engine.run()``) on the same hosts, links and routes, with
netsim / SimGrid and the largest completion-time difference. SimGrid is a benchmark-only
dependency, loaded from ``--simgrid-path`` / ``NETSIM_SIMGRID_PATH``, else ``import
simgrid``, else Debian's ``python3-simgrid`` directory; it runs in a process of its own per
run (one engine per process), as CM02 without TCP factors (:data:`SIMGRID_CFG`) on links of
latency 0, each flow started once its path latency is paid: the max-min sharing of netsim's
flow model (CM02 weighs each flow's share by 1 / its latency). Without SimGrid the netsim side
is printed and the comparison says "skipped" with the reason and how to get it.

Times are the best of ``--repeat`` runs (wall clock; the machine is named in the first line).

Usage: python benchmarks/bench_network.py [--quick] [--cases NAME,...] [--no-profile]
       [--repeat N] [--no-flow-sets | --flows-only] [--simgrid-path DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import gc
import importlib
import importlib.machinery
import importlib.util
import math
import multiprocessing as mp
import os
import platform
import pstats
import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import simpy

import netsim
from netsim.config.scenario import parse_scenario
from netsim.net.comm import FixedLatency
from netsim.net.fairshare import LinkSharing
from netsim.net.flows import FlowNetwork
from netsim.net.routing import route
from netsim.net.topology import fat_tree, hosts
from netsim.sim.engine import Simulation, prepare, simulate

ROOT = Path(__file__).resolve().parents[1]
SC = ROOT / "scenarios"


def _asgd(workers: int, updates: int, topology: str, mean_s: float, nbytes: float):
    """The quickstart scenario made *workers* ASGD workers (synthetic data, 64 features,
    batch 1, exponential compute times of mean *mean_s*) on *topology* (TOML) with messages
    of *nbytes*, run to *updates* updates: (scenario path, overrides)."""
    rows = max(2_500, workers * 5 // 4)
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
        f'workers=[{{name="w", count={workers}, compute={{dist="exponential", mean={mean_s}}}}}]',
        f"network={{topology={topology}, message_bytes={nbytes}}}",
    ]


def _star(n_hosts: int) -> str:
    return f'{{builder="star", args={{n_hosts={n_hosts}}}}}'


def _big(workers: int, topology: str, updates: int) -> tuple[Path, list[str]]:
    net = {
        "star": _star(workers + 1),
        "fat_tree": '"fat_tree_k16"',  # 1,024 hosts
        "fat_tree_k36": '{builder="fat_tree", args={k=36}}',  # 11,664 hosts: 10,000 fit
    }[topology]
    return _asgd(workers, updates, net, 10.0, "1e6")


def _loaded(workers: int, updates: int) -> tuple[Path, list[str]]:
    """*workers* ASGD workers on a star whose PS links are the bottleneck: 10 MB messages
    (8 ms alone on the star's 10 Gbit/s links) against exponential compute times of mean
    10 ms, so that most workers' transfers are in flight at once."""
    return _asgd(workers, updates, _star(workers + 1), 0.01, "1e7")


PAPER = ["data.source='digits'", "run.eval_every=0", "run.timeline_until=0"]
CASES = {
    "fat_tree_ps": lambda q: (  # 60 s of it is 1,140 gradients, 45 ms: 300 s when not quick
        SC / "fat_tree_ps.toml",
        ["run.eval_every=0"] + ([] if q else ["run.until=300"]),
    ),
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
    "64_star_loaded": lambda q: _loaded(64, 5_000 if q else 20_000),
}
GOAL_RATIO = ("fat_tree_ps", "geo_gsgd", "paper_star")

CATEGORIES = (
    ("routing", ("routing.py",)),
    (
        "re-solving",
        (
            "fairshare.py",
            "flows.py",
            "flowstate.py",
            "linktable.py",
            "idlesends.py",
            "hubqueues.py",
        ),
    ),
    ("event scheduling", ("simpy",)),
)


def _without_network(sc):
    raw = copy.deepcopy(sc.raw)
    raw.pop("network", None)
    for worker_class in raw.get("workers", []):
        for key in ("datacenter", "hosts"):  # placement keys need a network
            worker_class.pop(key, None)
    return parse_scenario(raw, Path(sc.path)).with_algorithm(sc.run.algorithm)


def _fixed_latencies(sc, prepared):
    """*sc* without its network, each pull and push one timeout: per worker class the mean of
    its workers' transfer times on the idle network (the cost of a transfer's event alone)."""
    comm = Simulation(sc, None, prepared).comm
    index = {id(wc): i for i, wc in enumerate(sc.workers)}
    times: dict[int, list] = {}  # class index -> (pull, push) of its workers
    for wid, wc, _ in sc.worker_slots():
        times.setdefault(index[id(wc)], []).append(comm.min_times(wid))
    raw = copy.deepcopy(_without_network(sc).raw)
    for i, worker_class in enumerate(raw.get("workers", [])):
        pull, push = np.mean(times[i], axis=0)
        worker_class["pull_latency"], worker_class["push_latency"] = float(pull), float(push)
    return parse_scenario(raw, Path(sc.path)).with_algorithm(sc.run.algorithm)


@contextlib.contextmanager
def _two_events() -> Iterator[None]:
    """Inside, a fixed-latency pull or push takes two timeouts of half its time each, its
    waiter resumed by the second (a transfer's events in a flow model: the end of its path
    latency, when it starts sending, and its end)."""
    pull, push = FixedLatency.pull, FixedLatency.push

    def split(comm: FixedLatency, delay: float):
        if not delay:
            return None
        env, done = comm.env, comm.env.event()  # never triggered: its waiters move on

        def halfway(_event) -> None:
            env.timeout(delay / 2).callbacks = done.callbacks

        env.timeout(delay / 2).callbacks.append(halfway)
        return done

    FixedLatency.pull = lambda self, worker: split(self, self.pull_s[worker])  # type: ignore[method-assign]
    FixedLatency.push = lambda self, worker: split(self, self.push_s[worker])  # type: ignore[method-assign]
    try:
        yield
    finally:
        FixedLatency.pull, FixedLatency.push = pull, push  # type: ignore[method-assign]


def _time(sc, prepared, repeat: int) -> tuple[float, int, int]:
    """Best wall time (s) of *repeat* runs, gradients applied and updates of one. Each run
    starts on a collected heap, as in a process of its own: the cyclic garbage an earlier
    run left (its workers, events, flows) is freed before, not by the collections of the
    run timed (a tenth of a second and more with 10,000 workers)."""
    walls = []
    for _ in range(repeat):
        gc.collect()
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


K16_BYTES = 1e6
"""Bytes of every flow of the k=16 sets when they are run to completion."""


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


def _replay(G: Any, trace: list) -> tuple[float, list]:
    """FlowNetwork delivering the recorded *trace* in a bare SimPy run, its routes found
    beforehand (as SimGrid's routing table holds them): the wall time (s) of ``env.run()``
    and the :class:`TransferRecord` of every transfer, in trace order (its path and when
    its last byte arrived)."""
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    for _, src, dst, nbytes, key in trace:  # routes and path memo, outside the clock
        net.min_transfer_time(src, dst, nbytes, flow_key=key)
    records: list = [None] * len(trace)

    def at(i: int, t: float, src: Any, dst: Any, nbytes: float, key: Any) -> Generator:
        yield env.timeout(t)
        records[i] = yield net.transfer(src, dst, nbytes, flow_key=key)

    for i, (t, src, dst, nbytes, key) in enumerate(trace):
        env.process(at(i, t, src, dst, nbytes, key))
    start = time.perf_counter()
    env.run()
    return time.perf_counter() - start, records


# ------------------------------------------------------------------------ SimGrid side

SIMGRID_DIRS = ("/usr/lib/python3/dist-packages",)
"""Where Debian's and Ubuntu's ``python3-simgrid`` puts the module (tried after ``import``)."""
SIMGRID_CFG = (
    "network/model:CM02",
    "network/latency-factor:1",
    "network/bandwidth-factor:1",
    "network/weight-S:0",
    "network/TCP-gamma:0",
    "network/crosstraffic:0",
)
"""SimGrid's max-min model without TCP corrections: no latency or bandwidth factor, no
RTT payload term, no window bound, no reverse traffic."""
SIMGRID_ARGS = ["--log=root.thres:critical", "--log=xbt_cfg.thres:critical"] + [
    f"--cfg={c}" for c in SIMGRID_CFG
]
SIMGRID_GET = (
    "get it with `apt install python3-simgrid` (Debian/Ubuntu) or `pip install simgrid` "
    "(a source build of ~590 C++ files against Boost, long); point --simgrid-path or "
    "NETSIM_SIMGRID_PATH at a directory holding its module"
)


class _Platform(NamedTuple):
    """A netsim flow set as SimGrid is given it: host names, directed links ``(name,
    bytes/s)``, a route (link indices) per host pair, and the flows ``(start s, src, dst,
    bytes)``, each started once its path latency is paid."""

    hosts: list
    links: list
    routes: dict
    flows: list


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null (SimGrid logs from C++ when its module loads)."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _import_simgrid(path: str | None) -> Any:
    """SimGrid's module: from directory *path* if given, else ``import simgrid``, else from
    :data:`SIMGRID_DIRS` (only that module is loaded from there, the directory is not put on
    ``sys.path``). Raises ImportError when none has it."""
    dirs = [path] if path else []
    with _quiet_stderr():
        if not path:
            try:
                return importlib.import_module("simgrid")
            except ImportError:
                dirs = list(SIMGRID_DIRS)
        for folder in dirs:
            spec = importlib.machinery.PathFinder.find_spec("simgrid", [folder])
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules["simgrid"] = module
                spec.loader.exec_module(module)
                return module
    tried = ", ".join(dirs) if path else f"sys.path nor {', '.join(dirs)}"
    raise ImportError(f"no module named 'simgrid' in {tried}")


def _sg_engine(sg: Any, plat: _Platform) -> tuple[Any, dict]:
    """A SimGrid engine on *plat*: one full zone, a host per name, a link per directed link
    (latency 0), an explicit route per pair."""
    engine = sg.Engine(["netsim-bench", *SIMGRID_ARGS])
    zone = sg.NetZone.create_full_zone("netsim")
    host = {name: zone.create_host(name, 1e9) for name in plat.hosts}
    links = []
    for name, bytes_per_s in plat.links:
        link = zone.create_link(name, bytes_per_s)
        link.seal()
        links.append(link)
    for (src, dst), idx in plat.routes.items():
        hops = [sg.LinkInRoute(links[i]) for i in idx]
        zone.add_route(host[src].netpoint, host[dst].netpoint, None, None, hops, False)
    zone.seal()
    return engine, host


def _sg_simulate(sg: Any, plat: _Platform) -> tuple[float, list[float]]:
    """Wall time (s) of ``Engine.run()`` on *plat* and the finish time (s) of every flow.

    One actor starts the flows in time order (``Comm.sendto_async``, sleeping until each
    start) and waits for all; the clock covers that actor, SimGrid's max-min solves and its
    event loop, not building the platform."""
    engine, host = _sg_engine(sg, plat)
    order = sorted(range(len(plat.flows)), key=lambda i: plat.flows[i][0])
    comms: list = [None] * len(plat.flows)

    def starter() -> None:
        for i in order:
            t, src, dst, nbytes = plat.flows[i]
            if t > engine.clock:
                sg.this_actor.sleep_until(t)
            if (src, dst) in plat.routes:  # else no finite link: done once started
                comms[i] = sg.Comm.sendto_async(host[src], host[dst], nbytes)
        sg.Comm.wait_all([c for c in comms if c is not None])

    sg.Actor.create("flows", host[plat.hosts[0]], starter)
    start = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - start
    return wall, [f[0] if c is None else c.finish_time for f, c in zip(plat.flows, comms)]


def _sg_child(conn: Any, path: str | None, plat: _Platform | None) -> None:
    """In a process of its own (SimGrid allows one engine per process): SimGrid's version
    and file, and with a platform its :func:`_sg_simulate`; or the error."""
    if hasattr(os, "sched_setaffinity"):  # SimGrid's threads take turns: keep them on one core
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    try:
        sg = _import_simgrid(path)
        about = (str(sg.simgrid_version), str(getattr(sg, "__file__", "?")))
        conn.send(("ok", about, _sg_simulate(sg, plat) if plat else None))
    except BaseException as err:  # reported by the parent
        conn.send(("error", f"{type(err).__name__}: {err}", None))
    finally:
        conn.close()


def _sg_call(path: str | None, plat: _Platform | None) -> tuple[str, Any, Any]:
    """:func:`_sg_child` in a fresh process: ``(status, about or error, result)``."""
    fork = "fork" in mp.get_all_start_methods()  # fast; else a fresh interpreter
    ctx = mp.get_context("fork") if fork else mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_sg_child, args=(child, path, plat))
    proc.start()
    child.close()
    try:
        answer = parent.recv()
    except EOFError:  # it died without a word (a crash in SimGrid's C++)
        answer = None
    proc.join()
    return answer or ("error", f"the SimGrid process ended with code {proc.exitcode}", None)


def _platform(G: Any, records: list) -> _Platform:
    """The SimGrid platform and flows of netsim's delivered *records* on *G*: links of
    ``bandwidth / 8`` bytes/s (infinite ones left out of routes), each flow on the path netsim
    gave it, started at its start plus its path latency (SimGrid's CM02 weighs a flow's share
    by 1 / its latency, netsim's max-min weighs all alike, so the latency is paid before the
    SimGrid flow starts). A pair whose flows took different paths gets alias source hosts."""
    links = [(u, v) for a, b in G.edges for u, v in ((a, b), (b, a))]
    index = {link: i for i, link in enumerate(links)}
    bandwidth = [float(G.edges[link]["bandwidth"]) for link in links]
    names = {n: str(n) for n in hosts(G)}
    routes: dict = {}
    flows = []
    for r in records:
        idx = tuple(index[link] for link in r.path if bandwidth[index[link]] != math.inf)
        src, dst, k = names[r.src], names[r.dst], 1
        while routes.setdefault((src, dst), idx) != idx:
            k += 1
            src = f"{names[r.src]}~{k}"
        latency = 0.0
        for link in r.path:
            latency += float(G.edges[link]["latency"])
        flows.append((r.start + latency, src, dst, int(r.nbytes)))
    used = {h for pair in routes for h in pair}
    return _Platform(
        hosts=list(names.values()) + sorted(used - set(names.values())),
        links=[(f"{u}>{v}", bw / 8.0) for (u, v), bw in zip(links, bandwidth, strict=True)],
        routes={pair: idx for pair, idx in routes.items() if idx},
        flows=flows,
    )


def _completion_diff(records: list, finish: list) -> float:
    """Largest ``|SimGrid end - netsim end| / netsim transfer time (end - start)`` over the
    flows (0 when both end at once, inf when only one does)."""
    worst = 0.0
    for r, end in zip(records, finish, strict=True):
        gap, span = abs(end - r.end), r.end - r.start
        worst = max(worst, gap / span if span > 0 else (0.0 if gap <= 1e-12 else math.inf))
    return worst


def _flow_sets() -> list[tuple[str, object, list, list | None]]:
    """``(name, G, trace, pairs)`` per flow set: the k=16 sets as a trace of
    :data:`K16_BYTES`-byte flows all started at 0 (with their pairs, for the one solve),
    and the recorded transfers of fat_tree_ps and geo_gsgd (pairs None)."""
    sets: list[tuple[str, object, list, list | None]] = [
        (name, G, [(0.0, s, d, K16_BYTES, None) for s, d in pairs], pairs)
        for name, G, pairs in _k16_sets()
    ]
    for case in ("fat_tree_ps", "geo_gsgd"):
        G, trace = _trace(SC / f"{case}.toml")
        sets.append((f"{case} transfers, replayed", G, trace, None))
    return sets


def _simgrid_side(path: str | None, G: Any, records: list, repeat: int) -> tuple[float, float]:
    """SimGrid's best ``Engine.run()`` wall time (s) of *repeat* runs of the transfers netsim
    delivered (*records*, on its routes), and the largest relative completion-time
    difference from netsim."""
    plat = _platform(G, records)
    walls, finish = [], []
    for _ in range(repeat):
        status, why, result = _sg_call(path, plat)
        if status != "ok":
            raise RuntimeError(f"SimGrid failed: {why}")
        walls.append(result[0])
        finish = result[1]
    return min(walls), _completion_diff(records, finish)


def flow_sets(repeat: int, sg_path: str | None) -> None:
    """The flow sets' table: netsim's one solve (k=16 sets), netsim's and SimGrid's runs of
    each set to its last completion, their ratio and the completion-time check."""
    status, about, _ = _sg_call(sg_path, None)
    print(
        "\n| flow set | flows | netsim one solve, ms | netsim run, ms | SimGrid run, ms "
        "| netsim / SimGrid | completion-time difference, max |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, G, trace, pairs in _flow_sets():
        solve = f"{min(_solve_once(G, pairs) for _ in range(repeat)) * 1e3:.2f}" if pairs else "-"
        replays = [_replay(G, trace) for _ in range(repeat)]
        run = min(wall for wall, _ in replays)
        sg = "- | - | -"
        if status == "ok":
            sg_run, diff = _simgrid_side(sg_path, G, replays[0][1], repeat)
            sg = f"{sg_run * 1e3:.2f} | {run / sg_run:.2f} | {diff:.2e}"
        print(f"| {name} | {len(trace):,} | {solve} | {run * 1e3:.2f} | {sg} |", flush=True)
    if status != "ok":
        print(f"\nSimGrid: skipped: {about}; {SIMGRID_GET}")
        return
    version, where = about
    print(
        f"\nSimGrid {version} ({where}), {' '.join('--cfg=' + c for c in SIMGRID_CFG)}; "
        "links of latency 0, each flow started once its path latency is paid (max-min as "
        "netsim; CM02 would weigh shares by 1 / latency). Run: every flow to the last "
        f"completion ({K16_BYTES:.0e} bytes each in the k16 sets, all at 0; the traces at "
        "their recorded times) on netsim's routes; SimGrid timed over Engine.run() (an actor "
        "starting the flows, the solves, the events; not the platform's building; its "
        "process on one core, where its threads hand over fast), netsim "
        "over env.run() (routes found before). Difference: |SimGrid - netsim| completion "
        "time / netsim transfer time."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer updates in the big cases")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    ap.add_argument("--no-flow-sets", action="store_true", help="skip the solve comparison")
    ap.add_argument("--flows-only", action="store_true", help="only the solve comparison")
    ap.add_argument(
        "--simgrid-path",
        default=os.environ.get("NETSIM_SIMGRID_PATH"),
        help="directory holding SimGrid's Python module (default: $NETSIM_SIMGRID_PATH, "
        f"else `import simgrid`, else {', '.join(SIMGRID_DIRS)})",
    )
    args = ap.parse_args()
    print(
        f"machine: {_cpu()}, {os.cpu_count()} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}\n"
    )
    if args.flows_only:
        flow_sets(args.repeat, args.simgrid_path)
        return
    print(
        "| case | gradients | µs/gradient, network | µs/gradient, none | ratio | "
        "µs/gradient, fixed latencies | fixed / none | two events / none | updates/s, network "
        "| routing | re-solving | events | rest |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.cases.split(","):
        path, sets = CASES[name](args.quick)
        sc = netsim.load(path, sets)
        bare = _without_network(sc)
        prepared = prepare(sc)
        simulate(sc, prepared=prepared)  # warm: routes, imports, caches
        net_wall, net_grads, net_updates = _time(sc, prepared, args.repeat)
        bare_wall, bare_grads, _ = _time(bare, prepared, args.repeat)
        fixed = _fixed_latencies(sc, prepared)
        fixed_wall, fixed_grads, _ = _time(fixed, prepared, args.repeat)
        with _two_events():
            two_wall, two_grads, _ = _time(fixed, prepared, args.repeat)
        per_net, per_bare = net_wall / net_grads * 1e6, bare_wall / bare_grads * 1e6
        per_fixed = fixed_wall / fixed_grads * 1e6
        per_two = two_wall / two_grads * 1e6
        split = {} if args.no_profile else _split(sc, prepared)
        shares = " | ".join(
            f"{split[k]:.0%}" if split else "-"
            for k in ("routing", "re-solving", "event scheduling", "rest")
        )
        goal = " (goal ≤ 2)" if name in GOAL_RATIO else ""
        print(
            f"| {name} | {net_grads:,} | {per_net:.1f} | {per_bare:.1f} | "
            f"{per_net / per_bare:.2f}{goal} | {per_fixed:.1f} | {per_fixed / per_bare:.2f} | "
            f"{per_two / per_bare:.2f} | "
            f"{net_updates / net_wall:,.0f} | {shares} |",
            flush=True,
        )
    if not args.no_flow_sets:
        flow_sets(args.repeat, args.simgrid_path)


if __name__ == "__main__":
    main()
