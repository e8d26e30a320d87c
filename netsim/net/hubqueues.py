"""Flows that share one bottleneck each, served by virtual time (processor sharing).

When the flows in flight split into at most two groups, each the flows crossing one link
of the least capacity (its hub), and no link is crossed by flows of two groups (a PS's
pushes and its pulls; see :meth:`netsim.net.fairshare.LinkSharing._hubs`), max-min gives
every flow of a group its hub's share ``capacity / flows on the hub``. A group is then a
processor-sharing queue: its *served* clock (bits sent by each of its flows since the
group formed) grows at that share, a flow that joins at served ``s`` with ``b`` bits left
is done when served reaches ``s + b``, and the first of a group to finish is the top of a
heap. A start or an end costs a heap operation and an update of at most two clocks,
whatever the number of flows in flight; the bits left of every flow are found (``finish
- served``) only when the groups no longer describe the flows.

Pure Python, no SimPy: :class:`netsim.net.flows.FlowNetwork` drives it. A flow here is
its flow object with ``links``, ``tol`` (bits within which it counts as done), ``order``
(when it started sending, for delivery order), ``left`` (bits to send when it joins; set
again when it leaves) and ``finish`` (the served bits it is done at, set here).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .fairshare import _HUBS  # at most this many groups, as LinkSharing finds them

if TYPE_CHECKING:
    from .fairshare import LinkSharing

__all__ = ["HubQueues"]


class QueuedFlow(Protocol):
    """A flow as the queues see it (see the module's docstring); bits, bit/s."""

    links: tuple[int, ...]
    tol: float
    order: int
    left: float
    finish: float
    rate: float


F = TypeVar("F", bound=QueuedFlow)

_FORMER = 8
"""Hubs remembered after their group emptied: a flow alone on its links, which crosses
one, joins it there rather than on another link of its path."""


class _Group:
    """The flows crossing one hub: *served* bits per flow by *since* (s), *rate* bit/s
    per flow now, and a heap of ``(finish, order, flow)``."""

    __slots__ = ("hub", "served", "since", "rate", "heap")

    def __init__(self, hub: int, now: float, rate: float) -> None:
        self.hub, self.served, self.since, self.rate = hub, 0.0, now, rate
        self.heap: list[tuple[float, int, Any]] = []  # (finish, order, flow)


class HubQueues(Generic[F]):
    """The groups of the flows in flight, while they split by hubs.

    Parameters
    ----------
    sharing : LinkSharing
        The network's link sharing (its ``on``, ``_share``, ``capacity`` and ``_least``):
        the flows in flight are added to and removed from it by the caller, before
        :meth:`join` and after :meth:`due`.
    """

    def __init__(self, sharing: LinkSharing) -> None:
        self.sharing = sharing
        self.groups: dict[int, _Group] = {}
        self.group_of: dict[F, _Group] = {}  # flow -> its group
        self._former: dict[int, None] = {}

    def start(self, hubs: list, now: float) -> None:
        """Form the groups of *hubs* (links) from the flows crossing them, each at its
        ``left`` bits (the water-filling has just given each the hub's share)."""
        on, share = self.sharing.on, self.sharing._share
        for hub in hubs:
            group = self.groups[hub] = _Group(hub, now, share[hub])
            heap = group.heap
            for flow in on[hub]:
                flow.finish = flow.left
                heap.append((flow.left, flow.order, flow))
                self.group_of[flow] = group
            heapq.heapify(heap)

    def __bool__(self) -> bool:
        return bool(self.group_of)

    def advance(self, now: float) -> None:
        """Serve every group up to *now* (s) at its rate."""
        for group in self.groups.values():
            dt = now - group.since
            if dt > 0:
                group.served += group.rate * dt
            group.since = now

    def due(self, tiny: float) -> list[F]:
        """Take out the flows done by now (as served): those at the top of their group with
        ``left <= tol`` or ``left / rate <= tiny`` (s); in the order they started sending."""
        done = []
        group_of = self.group_of
        for group in self.groups.values():
            heap, served, rate = group.heap, group.served, group.rate
            while heap:
                finish, _, flow = heap[0]
                left = finish - served
                if left <= flow.tol or (rate != 0 and left / rate <= tiny):
                    heapq.heappop(heap)
                    flow.left = left
                    del group_of[flow]
                    done.append(flow)
                else:
                    break
        if len(done) > 1:
            done.sort(key=_order)
        return done

    def reshare(self) -> None:
        """The flows on the hubs changed: each group's rate is its hub's share; a group
        without flows is dropped."""
        share = self.sharing._share
        for hub, group in list(self.groups.items()):
            if group.heap:
                group.rate = share[hub]
            else:
                del self.groups[hub]
                self._former[hub] = None
                if len(self._former) > _FORMER:
                    del self._former[next(iter(self._former))]

    def join(self, flow: F, now: float) -> bool:
        """Add *flow* (already added to the sharing, ``left`` bits to send) to the group
        of the hub it crosses, or to a new group when it shares no link: False when the
        flows would no longer split by hubs (nothing changed here then)."""
        links, groups, on = flow.links, self.groups, self.sharing.on
        group = None
        for hub, each in groups.items():
            if hub in links:
                if group is not None:  # on two hubs
                    return False
                group = each
        group_of = self.group_of
        for link in links:
            crossing = on[link]
            if len(crossing) > 1:
                if group is None:
                    return False  # it shares a link with a group whose hub it does not cross
                for other in crossing:  # all of one group: the first other tells
                    if other is not flow:
                        if group_of.get(other) is not group:
                            return False
                        break
        if group is None:
            if len(groups) == _HUBS:
                return False
            new = self._new_hub(links)
            if new is None:
                return False
            group = groups[new] = _Group(new, now, 0.0)
        flow.finish = finish = group.served + flow.left
        heapq.heappush(group.heap, (finish, flow.order, flow))
        group_of[flow] = group
        return True

    def _new_hub(self, links: tuple) -> int | None:
        """The hub of a flow alone on its *links*: a former hub among them, else the first
        of least capacity (None when none is: the flows do not split by hubs)."""
        cap, least = self.sharing.capacity, self.sharing._least
        first = None
        for link in links:
            if cap[link] == least:
                if link in self._former:
                    return link
                if first is None:
                    first = link
        return first

    def delay(self) -> float:
        """Time (s) to the first end of a flow at the current rates (inf: none)."""
        best = float("inf")
        for group in self.groups.values():
            if group.heap and group.rate > 0:
                wait = (group.heap[0][0] - group.served) / group.rate
                if wait < best:
                    best = wait
        return best

    def release(self) -> list[F]:
        """Take out every flow, with its ``left`` bits and ``rate``, in the order they
        started sending (the groups are then empty)."""
        flows = []
        for group in self.groups.values():
            served, rate = group.served, group.rate
            for finish, _, flow in group.heap:
                flow.left = finish - served
                flow.rate = rate
                flows.append(flow)
        self.groups, self.group_of = {}, {}
        flows.sort(key=_order)
        return flows

    def left(self, flow: F, now: float) -> float:
        """Bits *flow* (in a group) has left to send at *now* (s), without serving the groups."""
        group = self.group_of[flow]
        return flow.finish - (group.served + group.rate * (now - group.since))


def _order(flow: QueuedFlow) -> int:
    return flow.order
