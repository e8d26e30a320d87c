"""All-reduce among hosts as steps of concurrent flows on a :class:`~netsim.net.flows.FlowNetwork`.

Each algorithm is a schedule: a list of steps, each a list of ``(sender, receiver, share)``
transfers of ``share × nbytes`` bytes that run at once; a step ends when its last transfer
arrives and the next one starts then (the bulk-synchronous schedule of MPI and NCCL
implementations). The flows share links with each other and with everything else on the
network, so contention comes from the flow model; on an idle network whose steps use
disjoint links a step lasts its slowest transfer, latency plus bytes over bottleneck: the
α-β cost model.

- ``ring``: reduce-scatter then all-gather around the ring of *hosts* in the given order,
  ``2 (n - 1)`` steps in which every host sends ``nbytes / n`` to the next.
- ``halving_doubling``: recursive halving (reduce-scatter; partners ``n/2, n/4, ...`` apart,
  ``nbytes / 2, / 4, ...``) then recursive doubling (all-gather, the same steps reversed):
  ``2 log2 n`` steps. For *n* not a power of two, the ``r = n - p`` hosts beyond the largest
  power of two ``p`` first send their whole vector to hosts ``0 .. r-1`` and get the result
  back at the end (Rabenseifner's pre- and post-step), two more steps.

Schedules are pure (:func:`schedule`); :func:`run_steps` runs one as a SimPy process, over
any way of sending a step's messages (:func:`allreduce`: a flow network's transfers).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import simpy

    from .flows import FlowNetwork

__all__ = ["ALGORITHMS", "schedule", "allreduce", "run_steps"]

ALGORITHMS = ("ring", "halving_doubling")

Step = list[tuple[int, int, float]]
"""One step of a schedule: the ``(sender, receiver, share of the vector)`` transfers run at once."""


def _ring(n: int) -> list[list[tuple[int, int, float]]]:
    step = [(i, (i + 1) % n, 1.0 / n) for i in range(n)]
    return [step] * (2 * (n - 1))


def _halving_doubling(n: int) -> list[list[tuple[int, int, float]]]:
    p = 1 << (n.bit_length() - 1)  # largest power of two <= n
    extra = [(p + j, j, 1.0) for j in range(n - p)]
    halving = []
    distance, share = p // 2, 0.5
    while distance:
        halving.append([(i, i ^ distance, share) for i in range(p)])
        distance, share = distance // 2, share / 2
    steps = ([extra] if extra else []) + halving + halving[::-1]
    return steps + ([[(j, p + j, 1.0) for j in range(n - p)]] if extra else [])


def schedule(algorithm: str, n: int) -> list[list[tuple[int, int, float]]]:
    """The steps of *algorithm* among *n* hosts (indices 0..n-1): each step a list of
    ``(sender, receiver, share of the vector)`` transfers that run at once.

    >>> [len(s) for s in schedule("ring", 3)], schedule("ring", 3)[0][2]
    ([3, 3, 3, 3], (2, 0, 0.3333333333333333))
    >>> [[t[:2] for t in s] for s in schedule("halving_doubling", 3)]
    [[(2, 0)], [(0, 1), (1, 0)], [(0, 1), (1, 0)], [(0, 2)]]
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"all-reduce algorithm must be one of {list(ALGORITHMS)}, got {algorithm!r}"
        )
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if n == 1:
        return []
    return _ring(n) if algorithm == "ring" else _halving_doubling(n)


def allreduce(
    net: FlowNetwork,
    hosts: Iterable[Hashable],
    nbytes: float,
    algorithm: str = "ring",
    key: Hashable = None,
) -> simpy.Process:
    """Start an all-reduce of a vector of *nbytes* bytes among *hosts* (in ring order) on
    *net* (a :class:`~netsim.net.flows.FlowNetwork`); *key* tells the flows of concurrent
    collectives apart for ECMP. Returns a SimPy process whose value is the time it took (s).
    """
    hosts = list(hosts)
    steps = schedule(algorithm, len(hosts))
    if not nbytes >= 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes!r}")
    return run_steps(
        net.env,
        steps,
        lambda step: net.transfer_many(
            [(hosts[a], hosts[b]) for a, b, _ in step],
            [share * nbytes for _, _, share in step],
            [(key, a, b) for a, b, _ in step],  # one connection per pair, as NCCL keeps
        ),
    )


def run_steps(
    env: simpy.Environment, steps: list[Step], send: Callable[[Step], simpy.Event | None]
) -> simpy.Process:
    """Run *steps* one after the other: ``send(step)`` starts a step's messages and returns
    the event of their arrival (None: they take no time). Returns a SimPy process whose
    value is the time it all took (s)."""

    def run() -> Generator[simpy.Event, object, float]:
        start = env.now
        for step in steps:
            event = send(step)
            if event is not None:
                yield event
        return env.now - start

    return env.process(run())
