"""Speed of the flow-level network on a k=16 fat-tree (1,024 hosts).

Run: ``python benchmarks/bench_flows.py``. Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import simpy

from netsim.net.fairshare import max_min_rates, progressive_filling
from netsim.net.flows import FlowNetwork
from netsim.net.routing import route
from netsim.net.topology import fat_tree, hosts

K = 16
GRAD_BYTES = MODEL_BYTES = 1_000_000
BANDWIDTH = 10e9
ROUTING_TARGET = 0.050  # s to route 1,023 pairs on the k=16 fat-tree, cold cache


def best_of(fn, repeat):
    """Smallest wall time (s) of *repeat* calls of *fn*."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def route_cold(G, pairs):
    """``(wall, cpu)`` seconds to route *pairs* with a fresh cache (building it included).

    CPU time is the steadier figure on a shared machine.
    """
    cache = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for src, dst in pairs:
        route(G, src, dst, cache=cache)
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_routing(cases):
    """Best-of-5 cold-cache routing time of each ``(name, graph, pairs)`` vs the target."""
    print(
        f"ECMP routing, cold cache, best of 5 (target {ROUTING_TARGET * 1e3:.0f} ms per 1,023 pairs):"
    )
    for name, graph, pairs in cases:
        runs = [route_cold(graph, pairs) for _ in range(5)]
        wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        print(
            f"  {name}: wall {wall * 1e3:8.2f} ms = {wall / ROUTING_TARGET:6.3f} x target "
            f"(CPU {cpu * 1e3:8.2f} ms = {cpu / ROUTING_TARGET:6.3f} x)"
        )


def incidence(G, pairs):
    """COO incidence (link_idx, flow_idx) and capacities of the routed *pairs*."""
    cache, index, li, fi = {}, {}, [], []
    for f, (src, dst) in enumerate(pairs):
        for link in route(G, src, dst, cache=cache):
            li.append(index.setdefault(link, len(index)))
            fi.append(f)
    caps = np.full(len(index), BANDWIDTH)
    return np.array(li), np.array(fi), caps


def bench_solver(G, name, pairs):
    t0 = time.perf_counter()
    li, fi, caps = incidence(G, pairs)
    t_route = time.perf_counter() - t0
    n = len(pairs)
    coo = best_of(lambda: progressive_filling(li, fi, caps, n_flows=n), 20)
    try:
        import scipy.sparse as sp

        A = sp.csr_matrix((np.ones(li.size), (li, fi)), shape=(caps.size, n))
        csr = best_of(lambda: max_min_rates(A, caps), 20)
    except ImportError:
        csr = float("nan")
    dense_A = np.zeros((caps.size, n))
    dense_A[li, fi] = 1
    dense = best_of(lambda: max_min_rates(dense_A, caps), 3)
    rates = progressive_filling(li, fi, caps, n_flows=n)
    print(
        f"{name}: {n} flows over {caps.size} used links ({li.size} crossings), "
        f"routing {t_route * 1e3:.1f} ms"
    )
    print(f"  solve (COO index arrays): {coo * 1e3:7.3f} ms = {n / coo:12,.0f} flows/s")
    print(f"  solve (scipy CSR input):  {csr * 1e3:7.3f} ms = {n / csr:12,.0f} flows/s")
    print(f"  solve (dense input):      {dense * 1e3:7.3f} ms = {n / dense:12,.0f} flows/s")
    print(f"  rates: min {rates.min() / 1e9:.4f} Gbit/s, max {rates.max() / 1e9:.4f} Gbit/s")


def ssgd_round(env, net, ps, workers):
    """All workers push a gradient at once; after the last arrives, the PS sends the model."""
    yield env.all_of([net.transfer(w, ps, GRAD_BYTES) for w in workers])
    yield env.all_of([net.transfer(ps, w, MODEL_BYTES) for w in workers])


def bench_round(G):
    H = hosts(G)
    ps, workers = H[0], H[1:]
    env = simpy.Environment()
    t0 = time.perf_counter()
    net = FlowNetwork(env, G)
    t_build = time.perf_counter() - t0
    walls = []
    for _ in range(2):
        start = env.now
        t0 = time.perf_counter()
        env.process(ssgd_round(env, net, ps, workers))
        env.run()
        walls.append(time.perf_counter() - t0)
    sim = env.now - start
    bound = 2 * len(workers) * 8 * GRAD_BYTES / BANDWIDTH
    print(f"SSGD round, {len(workers)} workers, 1 MB push + 1 MB pull through FlowNetwork:")
    print(
        f"  FlowNetwork build {t_build * 1e3:.1f} ms; round wall time "
        f"{walls[0] * 1e3:.1f} ms (cold route cache), {walls[1] * 1e3:.1f} ms (warm)"
    )
    print(
        f"  simulated round {sim:.6f} s vs PS-link bound {bound:.6f} s "
        f"(ratio {sim / bound:.6f}); wall/simulated = {walls[1] / sim:.3f}"
    )
    busiest = net.link_utilisation()[0]
    print(f"  busiest link {busiest[0]} -> {busiest[1]}: utilisation {busiest[2]:.4f}")


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    t0 = time.perf_counter()
    G = fat_tree(K, bandwidth=BANDWIDTH, latency=1e-6)
    print(
        f"fat_tree({K}): {len(hosts(G))} hosts, {G.number_of_nodes() - len(hosts(G))} switches, "
        f"{2 * G.number_of_edges()} directed links, built in {(time.perf_counter() - t0) * 1e3:.1f} ms"
    )
    H = hosts(G)
    bench_solver(G, "all-to-PS (1,023 workers -> h0)", [(h, H[0]) for h in H[1:]])
    rng = np.random.default_rng(2024)
    pairs = []
    while len(pairs) < 1023:
        a, b = rng.choice(len(H), size=2, replace=False)
        pairs.append((H[a], H[b]))
    bench_solver(G, "random pairs (1,023)", pairs)
    # one link 1 ns slower: not a uniform fat-tree any more, so the general algorithm routes
    slow = G.copy()
    slow.edges["core0", "p0-agg0"]["latency"] += 1e-9
    to_ps, from_ps = [(h, H[0]) for h in H[1:]], [(H[0], h) for h in H[1:]]
    bench_routing(
        [
            ("1,023 random pairs", G, pairs),
            ("all-to-PS (1,023 -> h0)", G, to_ps),
            ("PS-to-all (h0 -> 1,023)", G, from_ps),
            ("all-to-PS, one link changed (general algorithm)", slow, to_ps),
            ("PS-to-all, one link changed (general algorithm)", slow, from_ps),
        ]
    )
    bench_round(G)


if __name__ == "__main__":
    main()
