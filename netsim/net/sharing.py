"""Max-min rates of a changing set of flows, kept per link (pure Python, no numpy).

:class:`LinkSharing` is what :class:`netsim.net.flows.FlowNetwork` re-plans with: it
holds, per directed link, the sending flows that cross it, updated as flows start and
end (O(path length) each), and water-fills from there. Its rates are the same floats as
:func:`netsim.net.fairshare.water_fill` on the same flows in the same order (same
divisions, same summation order, same 1e-12 tie tolerance), without its O(n_links)
arrays or per-call numpy overhead: a re-plan of a few flows costs a few microseconds,
on a network of any size.
"""

from __future__ import annotations

from .fairshare import _RTOL

__all__ = ["LinkSharing"]


def _times(level: float, k: int) -> float:
    """*level* added *k* times to 0.0, one at a time (the order ``np.bincount`` sums in)."""
    total = 0.0
    for _ in range(k):
        total += level
    return total


class LinkSharing:
    """Which flows cross which links, and their water-filled rates.

    A flow is any object with ``links`` (the finite-capacity links it crosses, a tuple
    of link indices, not empty), ``weight`` (> 0) and a ``rate`` attribute that
    :meth:`solve` sets (bit/s).

    Parameters
    ----------
    capacity : list of float
        Capacity of every link, bit/s (the caller's list: call :meth:`reshare` after
        changing it).
    unit : bool
        Every weight is 1 (plain max-min): :meth:`solve` then needs no flow order.
    """

    def __init__(self, capacity: list[float], unit: bool):
        self.capacity = capacity
        self.unit = unit
        self.on: dict[int, dict] = {}
        """Link -> the flows crossing it (a dict used as an ordered set, in start order)."""
        self._share: dict[int, float] = {}  # link -> capacity / flows crossing it
        self._sums: list[float] | None = None  # one level, k times, per k (see solve)
        self.level: float | None = None
        """The rate of every flow when the last :meth:`solve` gave them all one, else None."""

    def add(self, flow) -> None:
        on, share, cap = self.on, self._share, self.capacity
        for link in flow.links:
            crossing = on.get(link)
            if crossing is None:
                on[link] = {flow: None}
                share[link] = cap[link]
            else:
                crossing[flow] = None
                share[link] = cap[link] / len(crossing)

    def remove(self, flow) -> None:
        on, share, cap = self.on, self._share, self.capacity
        for link in flow.links:
            crossing = on[link]
            del crossing[flow]
            if crossing:
                share[link] = cap[link] / len(crossing)
            else:
                del on[link], share[link]

    def clear(self) -> None:
        self.on, self._share = {}, {}

    def reshare(self) -> None:
        """The capacities changed: recompute the fair shares of the links."""
        cap = self.capacity
        self._share = {link: cap[link] / len(crossing) for link, crossing in self.on.items()}

    def solve(self, flows) -> None:
        """Set the max-min fair ``rate`` of every flow of *flows* (all added, in the
        order they were added)."""
        self._sums = self.level = None
        if not flows:
            return
        if self.unit:
            self._solve_unit(len(flows))
        else:
            self._solve_weighted(flows)

    def _solve_unit(self, n: int) -> None:
        """Water-filling with all weights 1: the load of a link is its count of flows not
        yet frozen, and the capacity a round of freezing takes from a link is the level
        added once per flow frozen on it, whatever the flows' order. The first round
        starts from the shares kept up to date by :meth:`add` and :meth:`remove`."""
        cap, on = self.capacity, self.on
        share = self._share
        count: dict[int, int] = {}
        remaining: dict[int, float] = {}
        frozen: set = set()
        while True:
            level = min(share.values())
            top = level * (1.0 + _RTOL)
            tight = [link for link, s in share.items() if s <= top]
            if not frozen and len(tight) == 1 and len(on[tight[0]]) == n:  # all on one link
                for flow in on[tight[0]]:
                    flow.rate = level
                self._one_level(level, n)
                return
            now = []
            for link in tight:
                for flow in on[link]:
                    if flow not in frozen:
                        frozen.add(flow)
                        now.append(flow)
            for flow in now:
                flow.rate = level
            if len(frozen) == n:
                if len(now) == n:
                    self._one_level(level, n)
                return
            if share is self._share:
                share = dict(share)
            taken: dict[int, int] = {}
            for flow in now:
                for crossed in flow.links:
                    taken[crossed] = taken.get(crossed, 0) + 1
            for link, k in taken.items():
                left = count.get(link, len(on[link])) - k
                count[link] = left
                rest = remaining.get(link, cap[link]) - _times(level, k)
                rest = rest if rest > 0.0 else 0.0
                remaining[link] = rest
                if left:
                    share[link] = rest / left
                else:
                    del share[link]

    def _one_level(self, level: float, n: int) -> None:
        """Every flow of *n* got *level*: a link's rate is it added once per flow crossing
        it (see :meth:`carry`)."""
        sums = [0.0]
        for _ in range(n):
            sums.append(sums[-1] + level)
        self._sums, self.level = sums, level

    def _solve_weighted(self, flows) -> None:
        """Water-filling with weights, summing loads and taken capacity per link in the
        order of *flows* (then of each flow's links), as ``np.bincount`` does."""
        cap = self.capacity
        remaining: dict[int, float] = {}
        active = list(flows)
        while True:
            load: dict[int, float] = {}
            for flow in active:
                w = flow.weight
                for link in flow.links:
                    load[link] = load.get(link, 0.0) + w
            share = {link: remaining.get(link, cap[link]) / w for link, w in load.items()}
            level = min(share.values())
            top = level * (1.0 + _RTOL)
            tight = {link for link, s in share.items() if s <= top}
            gone, stay = [], []
            for flow in active:
                (gone if not tight.isdisjoint(flow.links) else stay).append(flow)
            for flow in gone:
                flow.rate = level * flow.weight
            if not stay:
                return
            taken: dict[int, float] = {}
            for flow in gone:
                for link in flow.links:
                    taken[link] = taken.get(link, 0.0) + flow.rate
            for link, t in taken.items():
                rest = remaining.get(link, cap[link]) - t
                remaining[link] = rest if rest > 0.0 else 0.0
            active = stay

    def carry(self, carried: list[float], dt: float) -> None:
        """Add to *carried* (bits per link) what each link carries in *dt* s at the rates
        of the last :meth:`solve`: per link, the sum of its flows' rates in flow order
        (as ``np.bincount``) times *dt*."""
        sums = self._sums
        if sums is not None:
            step = [total * dt for total in sums]
            for link, crossing in self.on.items():
                carried[link] += step[len(crossing)]
            return
        for link, crossing in self.on.items():
            total = 0.0
            for flow in crossing:
                total += flow.rate
            carried[link] += total * dt
