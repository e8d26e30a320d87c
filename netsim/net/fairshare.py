"""Max-min fair rates of flows on capacitated links (water-filling).

Pure numpy: no SimPy, no networkx, no scipy import (scipy.sparse matrices are
accepted by duck typing). The incidence of flows on links is handled as a
coordinate list -- two index arrays ``link_idx, flow_idx`` of length ``nnz``,
one entry per (link, flow) crossing -- because every step of the algorithm is
then an O(nnz) :func:`numpy.bincount` or boolean mask. That is what
:func:`progressive_filling` takes and what a flow-level simulator has at hand;
:func:`max_min_rates` converts a scipy.sparse matrix (``.tocoo()``, O(nnz)) or
a dense 0/1 array (``np.nonzero``, O(n_links * n_flows)) to it.

:class:`LinkSharing` is what :class:`netsim.net.flows.FlowNetwork` re-plans with: the
same rates as :func:`water_fill` on the same flows in the same order (same divisions,
same summation order, same tie tolerance), in plain Python, kept per link as flows start
and end, so that a re-plan of a few flows costs a few microseconds on a network of any
size (no O(n_links) arrays, no per-call numpy overhead). When flows only left since the
last solve, it resumes that solve from the first round that froze one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["LinkSharing", "max_min_rates", "progressive_filling", "water_fill"]

_RTOL = 1e-12
"""Links whose fair share is within this relative distance of the smallest are
saturated in the same step (saves iterations on symmetric topologies)."""


def _check(
    capacities: ArrayLike, weights: ArrayLike | None, n_flows: int
) -> tuple[np.ndarray, np.ndarray]:
    cap = np.asarray(capacities, dtype=float)
    if cap.ndim != 1:
        raise ValueError(f"capacities must have shape (n_links,), got shape {cap.shape}")
    bad = np.flatnonzero(~(cap >= 0))
    if bad.size:
        raise ValueError(f"capacities must be >= 0 bit/s, got {cap[bad[0]]!r} for link {bad[0]}")
    if weights is None:
        return cap, np.ones(n_flows)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_flows,):
        raise ValueError(f"weights must have shape ({n_flows},), got shape {w.shape}")
    bad = np.flatnonzero(~((w > 0) & np.isfinite(w)))
    if bad.size:
        raise ValueError(f"weights must be finite and > 0, got {w[bad[0]]!r} for flow {bad[0]}")
    return cap, w


def progressive_filling(
    link_idx: np.ndarray,
    flow_idx: np.ndarray,
    capacities: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    n_flows: int,
) -> np.ndarray:
    """Weighted max-min fair rates from a coordinate-list incidence.

    Parameters
    ----------
    link_idx, flow_idx : ndarray of int of shape (nnz,)
        Flow ``flow_idx[e]`` crosses link ``link_idx[e]``; no pair repeated.
    capacities : array_like of shape (n_links,)
        Link capacities, bit/s, >= 0; ``inf`` never constrains.
    weights : array_like of shape (n_flows,), optional
        Positive weights; at a shared bottleneck rates are proportional to
        them. Default: all 1 (plain max-min).
    n_flows : int
        Number of flows (flows without entries are unbounded).

    Returns
    -------
    ndarray of shape (n_flows,)
        Rates, bit/s; ``inf`` for flows that cross no finite-capacity link.

    Notes
    -----
    Water-filling: each iteration computes, for every link, the fair share
    ``s_l = remaining_l / sum of weights of unfrozen flows on l``; all unfrozen
    flows crossing a link whose share is the minimum ``s*`` (within a relative
    1e-12) are frozen at ``weight * s*`` and their rates are removed from
    the remaining capacity of every link they cross. Each iteration is
    O(nnz + n_links) and there are at most as many iterations as distinct
    bottleneck levels (<= n_flows).
    """
    cap, w = _check(capacities, weights, n_flows)
    return water_fill(
        np.asarray(link_idx, dtype=np.intp), np.asarray(flow_idx, dtype=np.intp), cap, w
    )


def water_fill(links: np.ndarray, flows: np.ndarray, cap: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`progressive_filling` on arrays already in shape and checked: *links*, *flows*
    intp (nnz,), *cap* float (n_links,) >= 0 bit/s (``inf`` allowed; not modified), *w*
    float (n_flows,) > 0. Rates (n_flows,), bit/s. For callers that solve often on
    arrays they own: the checks cost a quarter of a small solve. (The flow model
    re-plans with :class:`LinkSharing`, the same floats.)
    """
    n_flows = w.size
    rates = np.full(n_flows, np.inf)
    finite = np.isfinite(cap[links])
    links, flows = links[finite], flows[finite]
    remaining = cap.copy()
    n_links = cap.size
    frozen = np.zeros(n_flows, dtype=bool)
    unbounded = np.full(n_links, np.inf)
    while links.size:
        load = np.bincount(links, weights=w[flows], minlength=n_links)
        share = unbounded.copy()  # remaining / load on the links in use, inf elsewhere
        np.divide(remaining, load, out=share, where=load > 0)
        level = share.min()
        tight = share <= level * (1.0 + _RTOL)
        frozen[flows[tight[links]]] = True
        rates[frozen] = level * w[frozen]
        gone = frozen[flows]
        if gone.all():  # every flow left is frozen: the remaining capacity is not needed
            break
        remaining -= np.bincount(links[gone], weights=rates[flows[gone]], minlength=n_links)
        np.maximum(remaining, 0.0, out=remaining)
        stay = ~gone
        links, flows = links[stay], flows[stay]
        frozen[:] = False
    return rates


def max_min_rates(
    incidence: Any, capacities: ArrayLike, weights: ArrayLike | None = None
) -> np.ndarray:
    """Weighted max-min fair rates of flows sharing links.

    Parameters
    ----------
    incidence : scipy.sparse matrix or array_like of shape (n_links, n_flows)
        Entry (l, f) non-zero iff flow f crosses link l. A sparse matrix in
        any format is fastest to convert; a dense array costs
        O(n_links * n_flows) to scan.
    capacities : array_like of shape (n_links,)
        Link capacities, bit/s (>= 0, ``inf`` allowed).
    weights : array_like of shape (n_flows,), optional
        Positive weights for weighted max-min; default all 1.

    Returns
    -------
    ndarray of shape (n_flows,)
        Rates, bit/s; ``inf`` for flows crossing no finite link.

    Examples
    --------
    One long flow over links 0 and 1, one short flow on each link:

    >>> A = [[1, 1, 0], [1, 0, 1]]
    >>> max_min_rates(A, [1.0, 2.0]).tolist()
    [0.5, 0.5, 1.5]
    """
    if hasattr(incidence, "tocoo"):
        coo = incidence.tocoo()
        keep = np.asarray(coo.data) != 0
        links, flows = np.asarray(coo.row)[keep], np.asarray(coo.col)[keep]
        shape = coo.shape
    else:
        dense = np.asarray(incidence)
        if dense.ndim != 2:
            raise ValueError(
                f"incidence must have shape (n_links, n_flows), got shape {dense.shape}"
            )
        links, flows = np.nonzero(dense)
        shape = dense.shape
    if np.size(capacities) != shape[0]:
        raise ValueError(
            f"capacities must have {shape[0]} entries (incidence rows), got {np.size(capacities)}"
        )
    return progressive_filling(links, flows, capacities, weights, n_flows=shape[1])


# ------------------------------------------------- re-plans of a changing set of flows


def _times(level: float, k: int) -> float:
    """*level* added *k* times to 0.0, one at a time (the order ``np.bincount`` sums in)."""
    total = 0.0
    for _ in range(k):
        total += level
    return total


_HUBS = 2
"""At most this many hubs are looked for (:meth:`LinkSharing._hubs`): a PS's pushes and its
pulls. With more, flows between random pairs (a hub per few flows) would pay a longer
search before each water-filling."""

_ABSENT = object()
"""A key a round's journal found missing (see :class:`_Round`)."""


def _restore(values: dict, key: int, value: object) -> None:
    """Put *value* back at *key* of *values* (remove the key when *value* is _ABSENT)."""
    if value is _ABSENT:
        values.pop(key, None)
    else:
        values[key] = value


class _Round:
    """One round of a unit water-filling: its *level* (bit/s), the flows it *frozen*, the
    *changes* it made (``[link, count, remaining, share]`` as they were before, _ABSENT for
    a missing key) and how many flows the rounds before it froze (*before*)."""

    __slots__ = ("level", "frozen", "changes", "before")

    def __init__(self, level: float, frozen: list, changes: list, before: int) -> None:
        self.level, self.frozen, self.changes, self.before = level, frozen, changes, before


class SharedFlow(Protocol):
    """A flow as :class:`LinkSharing` sees it: the finite-capacity *links* it crosses (link
    indices, not empty), its *weight* (> 0) and the *rate* (bit/s) :meth:`LinkSharing.solve`
    sets."""

    links: tuple[int, ...]
    weight: float
    rate: float


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

    def __init__(self, capacity: list[float], unit: bool) -> None:
        self.capacity = capacity
        self.unit = unit
        self.on: dict[int, dict] = {}
        """Link -> the flows crossing it (a dict used as an ordered set, in start order)."""
        self._share: dict[int, float] = {}  # link -> capacity / flows crossing it
        self.level: float | None = None
        """The rate of every flow when the last :meth:`solve` gave them all one, else None."""
        self.hubs: list | None = None
        """The hubs (links) of the last :meth:`solve` when its flows split by hubs (see
        :meth:`_hubs`), else None."""
        # the last unit solve, kept to resume it when flows only left (see _resume)
        self._rounds: list[_Round] = []
        self._round_of: dict = {}  # flow -> the round that froze it
        self._touched: dict[int, list] = {}  # link -> the rounds' changes of it, in order
        self._end: tuple = ({}, {}, {})  # share, count, remaining after the last round
        self._gone: list = []  # flows removed since the last solve
        self._fresh = True  # a flow added or the capacities changed since the last solve
        self._least = min(capacity, default=0.0)  # the least capacity of any link

    def add(self, flow: SharedFlow) -> None:
        on, share, cap = self.on, self._share, self.capacity
        self._fresh = True
        for link in flow.links:
            crossing = on.get(link)
            if crossing is None:
                on[link] = {flow: None}
                share[link] = cap[link]
            else:
                crossing[flow] = None
                share[link] = cap[link] / len(crossing)

    def remove(self, flow: SharedFlow) -> None:
        on, share, cap = self.on, self._share, self.capacity
        self._gone.append(flow)
        for link in flow.links:
            crossing = on[link]
            del crossing[flow]
            if crossing:
                share[link] = cap[link] / len(crossing)
            else:
                del on[link], share[link]

    def clear(self) -> None:
        self.on, self._share = {}, {}
        self._fresh = True

    def reshare(self) -> None:
        """The capacities changed: recompute the fair shares of the links."""
        cap = self.capacity
        self._share = {link: cap[link] / len(crossing) for link, crossing in self.on.items()}
        self._least = min(cap, default=0.0)
        self._fresh = True

    def forget(self) -> None:
        """Solve the next time from scratch: the flows changed outside :meth:`solve`'s
        view (they were served by :class:`netsim.net.hubqueues.HubQueues`)."""
        self._gone = []
        self._fresh = True

    def solve(self, flows: Sequence[SharedFlow]) -> None:
        """Set the max-min fair ``rate`` of every flow of *flows* (all added, in the
        order they were added)."""
        self.level = None
        self.hubs = None
        gone, self._gone = self._gone, []
        fresh, self._fresh = self._fresh, False
        if not self.unit:
            if flows:
                self._solve_weighted(flows)
            return
        if flows and self._hubs(flows):
            self._rounds, self._round_of, self._touched = [], {}, {}
            return
        start = 0 if fresh or not gone else min([self._round_of.get(f, 0) for f in gone])
        if flows and 2 * start > len(self._rounds):  # else undoing costs what it saves
            self._resume(len(flows), start, gone)
            return
        self._rounds, self._round_of, self._touched = [], {}, {}
        if flows:
            self._water(len(flows), 0, 0, (self._share, {}, {}))

    def _hubs(self, flows: Sequence[SharedFlow]) -> bool:
        """Give every flow the share of its hub, when the flows split into at most
        :data:`_HUBS` groups, each the flows crossing one link of the least capacity of all
        (its hub), and no link is crossed by flows of two groups (a PS's pushes and its
        pulls). Water-filling then freezes group after group at its hub's share, in order of
        shares (``cap / k >= least / k >= least / n_group`` on every link of a group), and
        no round changes the links of a later group. A hub every flow crosses has the least
        share of all, so it settles every rate with nothing else to check (what
        water-filling does in its one round). False when the flows do not split so.
        """
        on, cap, least, n = self.on, self.capacity, self._least, len(flows)
        hubs: list = []
        for flow in flows:
            for hub in hubs:
                if flow in on[hub]:
                    break
            else:
                if len(hubs) == _HUBS:
                    return False
                best, most = None, 0
                for link in flow.links:
                    if cap[link] == least and len(on[link]) > most:
                        best, most = link, len(on[link])
                if best is None:
                    return False
                if most == n:  # every flow crosses it
                    level = self.level = self._share[best]
                    for each in flows:
                        each.rate = level
                    self.hubs = [best]
                    return True
                hubs.append(best)
        if sum([len(on[hub]) for hub in hubs]) != n:  # a flow on two hubs
            return False
        group = {}
        for i, hub in enumerate(hubs):
            for flow in on[hub]:
                group[flow] = i
        for crossing in on.values():
            if len(crossing) > 1:
                first = None
                for flow in crossing:
                    if first is None:
                        first = group[flow]
                    elif group[flow] != first:
                        return False
        share = self._share
        levels = {share[hub] for hub in hubs}
        self.level = levels.pop() if len(levels) == 1 else None
        for hub in hubs:
            level = share[hub]
            for flow in on[hub]:
                flow.rate = level
        self.hubs = hubs
        return True

    def _water(self, n: int, r: int, done: int, state: tuple) -> None:
        """Water-filling with all weights 1, from round *r* with *done* flows frozen and
        *state* ``(share, count, remaining)`` as that round starts: the load of a link is
        its count of flows not yet frozen, and the capacity a round of freezing takes from
        a link is the level added once per flow frozen on it, whatever the flows' order.
        Round 0 starts from the shares kept up to date by :meth:`add` and :meth:`remove`.
        Each round is journaled (:class:`_Round`) so that :meth:`_resume` can undo it;
        round 0's journal is written only when a resume could use it (see :meth:`_first`).
        A link whose flows are all frozen leaves the state's shares; its count and
        remaining capacity are then never read again, and not written."""
        cap, on, round_of, rounds = self.capacity, self.on, self._round_of, self._rounds
        touched = self._touched
        share, count, remaining = state
        first = None  # round 0's taken links, journaled at the end if a resume could pay
        while True:
            level = min(share.values())
            top = level * (1.0 + _RTOL)
            tight = [link for link, s in share.items() if s <= top]
            if not r and len(tight) == 1 and len(on[tight[0]]) == n:  # all on one link
                for flow in on[tight[0]]:
                    flow.rate = level
                self.level = level  # no journal: with one round, a resume never pays
                return
            now = []
            for link in tight:
                for flow in on[link]:
                    if flow not in round_of:
                        round_of[flow] = r
                        now.append(flow)
            for flow in now:
                flow.rate = level
            changes: list = []
            rounds.append(_Round(level, now, changes, done))
            done += len(now)
            if done == n:
                if len(now) == n:
                    self.level = level
                self._end = (share, count, remaining)
                if first is not None and len(rounds) > 2:
                    self._first(first)
                return
            if share is self._share:
                share = dict(share)
            taken: dict[int, int] = {}
            for flow in now:
                for crossed in flow.links:
                    taken[crossed] = taken.get(crossed, 0) + 1
            if r:
                for link, k in taken.items():
                    was = count.get(link, _ABSENT)
                    rest = remaining.get(link, _ABSENT)
                    change = [link, was, rest, share.get(link, _ABSENT)]
                    changes.append(change)
                    touched.setdefault(link, []).append(change)
            else:
                first = taken
            for link, k in taken.items():
                was = count.get(link)
                left = (len(on[link]) if was is None else was) - k
                if left:
                    count[link] = left
                    rest = remaining.get(link)
                    rest = (cap[link] if rest is None else rest) - (
                        level if k == 1 else _times(level, k)
                    )
                    rest = rest if rest > 0.0 else 0.0
                    remaining[link] = rest
                    share[link] = rest / left
                else:
                    del share[link]
            r += 1

    def _first(self, taken: dict) -> None:
        """Write round 0's journal (it took *taken*, link -> flows frozen on it): round 0
        starts with no counts, no remaining capacities and the shares of :meth:`add` and
        :meth:`remove`; its changes come first on each link."""
        changes, touched, share = self._rounds[0].changes, self._touched, self._share
        for link in taken:
            change = [link, _ABSENT, _ABSENT, share.get(link, _ABSENT)]
            changes.append(change)
            touched[link] = [change, *touched.get(link, ())]

    def _resume(self, n: int, start: int, gone: list) -> None:
        """Solve again after flows *gone* left (none came). The rounds before *start*, the
        first that froze one of them, are what a solve from scratch does again: a link of a
        flow not yet frozen was above each one's level, and a flow leaving only raises its
        links' shares. So their rates stand; the state is rewound to round *start*, the
        flows gone are taken off it (and off what the earlier rounds' journal says the
        state was), and water-filling goes on from there: the floats of a solve from
        scratch, in the work of the rounds redone."""
        cap, on, round_of, rounds = self.capacity, self.on, self._round_of, self._rounds
        touched = self._touched
        share, count, remaining = self._end
        for undone in reversed(rounds[start:]):
            for change in reversed(undone.changes):
                link, was, rest, fair = change
                _restore(count, link, was)
                _restore(remaining, link, rest)
                _restore(share, link, fair)
                touched[link].pop()
            for flow in undone.frozen:
                del round_of[flow]
        done = rounds[start].before
        del rounds[start:]
        for flow in gone:
            round_of.pop(flow, None)
            for link in flow.links:
                members = len(on[link]) if link in on else 0
                for change in touched.get(link, ()):  # the kept rounds' view of the state
                    if change[1] is not _ABSENT:
                        change[1] -= 1
                    held = members if change[1] is _ABSENT else change[1]
                    rest = cap[link] if change[2] is _ABSENT else change[2]
                    change[3] = rest / held
                was = count.get(link)
                left = members if was is None else was - 1
                if was is not None:
                    count[link] = left
                if left:
                    share[link] = remaining.get(link, cap[link]) / left
                else:
                    share.pop(link, None)
        if done == n:  # every flow left was frozen before *start*
            first = rounds[0]
            self.level = first.level if len(rounds) == 1 and len(first.frozen) == n else None
            self._end = (share, count, remaining)
            return
        self._water(n, start, done, (share, count, remaining))

    def _solve_weighted(self, flows: Sequence[SharedFlow]) -> None:
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
            gone: list[SharedFlow] = []
            stay: list[SharedFlow] = []
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
