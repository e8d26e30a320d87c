"""What a :class:`~netsim.net.flows.FlowNetwork` keeps per transfer: the flow, the batch it
belongs to, a solo transfer or a fast batch sent on an idle network, and the record a
delivered transfer's event carries: slotted records, and what a solo transfer or a fast
batch has sent by a given time (pure: no SimPy at run time, no I/O)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import simpy

__all__ = [
    "MIN_LATENCY",
    "add_at",
    "TransferRecord",
    "Pair",
    "Found",
    "Batch",
    "Step",
    "FastBatch",
    "Solo",
    "Flow",
]

MIN_LATENCY = 1e-9
"""Floor of the path latency (s) used as RTT weight by ``sharing="rtt"``."""


def add_at(carried: list, links: np.ndarray, bits: np.ndarray) -> None:
    """``np.add.at(carried, links, bits)`` on a list: one addition per entry, in order."""
    for link, b in zip(links.tolist(), bits.tolist(), strict=True):
        carried[link] += b


class TransferRecord(NamedTuple):
    """Value of a delivered transfer event (a named tuple: made once per transfer).

    ``start`` is when :meth:`~netsim.net.flows.FlowNetwork.transfer` was called and ``end``
    when the last byte arrived (s); ``path`` holds the directed links crossed.
    """

    src: object
    dst: object
    nbytes: float
    start: float
    end: float
    path: tuple


Pair = tuple[Hashable, Hashable]
"""A transfer's (source host, destination host)."""
Found = tuple[tuple, tuple[int, ...], float, tuple[int, ...]]
"""A path as :meth:`~netsim.net.linktable.LinkTable.path` finds it: its directed links, their
indices, its latency (s) and the indices of its finite links."""


class Batch:
    """Transfers started together by :meth:`~netsim.net.flows.FlowNetwork.transfer_many`: one
    event for all."""

    __slots__ = ("event", "left")

    def __init__(self, event: simpy.Event, left: int) -> None:
        self.event, self.left = event, left


class Step:
    """What a set of transfers needs to be sent as one batch: per transfer its path, path
    latency (s) and bottleneck (bit/s, inf with no finite link), the finite links of all
    (concatenated, with their count per transfer), and whether no two share a link."""

    __slots__ = ("paths", "latency", "bottleneck", "links", "counts", "disjoint")
    paths: list[tuple]
    latency: np.ndarray
    bottleneck: np.ndarray
    links: np.ndarray
    counts: np.ndarray
    disjoint: bool


class FastBatch:
    """A batch sent on an otherwise idle network whose transfers share no link: each goes
    at its bottleneck, done at ``start + latency + bits / bottleneck``, with no event but
    one for the batch (:meth:`~netsim.net.flows.FlowNetwork.transfer_many`)."""

    __slots__ = ("batch", "step", "pairs", "keys", "sizes", "bits", "start", "done", "live")
    batch: Batch
    step: Step
    pairs: Sequence[tuple[Hashable, Hashable]]
    keys: Sequence[Hashable]
    sizes: Sequence[float]
    bits: np.ndarray
    start: float
    done: np.ndarray
    live: bool

    def sent(self, now: float) -> np.ndarray:
        """Bits per transfer sent by *now* (s), shape (n_transfers,)."""
        sending = np.maximum(now - (self.start + self.step.latency), 0.0)
        with np.errstate(invalid="ignore"):
            sent = np.minimum(sending * self.step.bottleneck, self.bits)
        return np.where(self.done <= now, self.bits, np.nan_to_num(sent, nan=0.0))


class Solo:
    """A transfer started on an idle network: alone, it arrives at ``arrive = start +
    latency`` and sends at ``rate``, its bottleneck (what a re-plan would give it), done at
    ``arrive + bits / rate``, with one timeout and no re-plan. It becomes an ordinary flow
    (:meth:`~netsim.net.flows.FlowNetwork._unsolo`) when another flow arrives or a link
    changes first."""

    __slots__ = ("flow", "arrive", "rate", "done", "live")
    flow: Flow
    arrive: float
    rate: float
    done: float
    live: bool

    def sent(self, now: float) -> float:
        """Bits of it sent by *now* (s)."""
        if now < self.arrive:
            return 0.0
        return min((now - self.arrive) * self.rate, self.flow.bits)


class Flow:
    __slots__ = (
        "src",
        "dst",
        "nbytes",
        "bits",
        "path",
        "idx",
        "links",
        "weight",
        "event",
        "start",
        "batch",
        "gen",
        "left",
        "tol",
        "rate",
        "credited",
        "seq",
        "order",
        "finish",
    )
    # idx: every link of the path; links: those of finite capacity (a tuple), the ones
    # that share its rate (set when it starts sending, and again when a link's finiteness
    # changes); left: bits still to send, tol: 1e-9 * bits, rate: bit/s, while sending;
    # credited: bits of it counted in the network's per-link totals (see IdleSends._credit);
    # seq: the order it was created in (see FlowNetwork._unsolo); order: the order it
    # started sending in; finish: see HubQueues (left and rate are stale while in a group)
    src: Hashable
    dst: Hashable
    nbytes: float
    bits: float
    path: tuple
    idx: tuple[int, ...]
    links: tuple[int, ...]
    weight: float
    event: simpy.Event | None
    start: float
    batch: Batch | None
    gen: int
    left: float
    tol: float
    rate: float
    credited: float
    seq: int
    order: int
    finish: float
