"""What an all-reduce round costs to emulate: wall time per round of ring and
halving-doubling all-reduce on the flow network, against the target of issue #35
(a 64-worker ring round on the k=16 fat-tree in <= 5 ms of wall time).

Each case builds the topology once, then runs ROUNDS all-reduce rounds one after another
on a fresh SimPy environment and flow network per round (the routes are cached across
rounds, as in a run), and prints the wall and CPU milliseconds per round, the emulated
time of a round, and the ratio of the wall time to the 5 ms target.

Usage: python benchmarks/bench_collectives.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import simpy

from netsim.net.collectives import allreduce
from netsim.net.flows import FlowNetwork
from netsim.net.topology import fat_tree, star

TARGET_MS = 5.0


def cases():
    ft16 = fat_tree(16)
    yield "ring, 64 hosts, k=16 fat-tree", ft16, 64, "ring"
    yield "halving-doubling, 64 hosts, k=16 fat-tree", ft16, 64, "halving_doubling"
    yield "ring, 16 hosts, k=4 fat-tree", fat_tree(4), 16, "ring"
    yield "ring, 64 hosts, star", star(64), 64, "ring"


def measure(G, n, algorithm, rounds, nbytes=100e6):
    """(wall ms, CPU ms) per round, emulated s per round."""
    hosts = [f"h{i}" for i in range(n)]
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    allreduce(net, hosts, nbytes, algorithm)  # warm the route cache
    env.run()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        proc = allreduce(net, hosts, nbytes, algorithm)
        env.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return 1e3 * wall / rounds, 1e3 * cpu / rounds, proc.value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.platform()}, Python {platform.python_version()}\n"
    )
    print("| case | wall ms/round | CPU ms/round | emulated s/round | wall / 5 ms target |")
    print("|---|---:|---:|---:|---:|")
    for name, G, n, algorithm in cases():
        wall, cpu, emulated = measure(G, n, algorithm, args.rounds)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {emulated:.4g} | {wall / TARGET_MS:.2f} |")


if __name__ == "__main__":
    main()
