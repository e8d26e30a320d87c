"""Flow-level network model inside a SimPy environment: :class:`FlowNetwork` schedules the
transfers (path latency, re-plans of the max-min rates, the shortcuts of an idle network) on
the links of a :class:`~netsim.net.linktable.LinkTable`; the rates are
:class:`~netsim.net.fairshare.LinkSharing`'s, the per-flow records :mod:`netsim.net.flowstate`'s."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from .fairshare import LinkSharing
from .flowstate import (
    Batch,
    Flow,
    Pair,
    TransferRecord,
)
from .hubqueues import HubQueues
from .idlesends import IdleSends
from .linktable import LinkTable

if TYPE_CHECKING:
    import networkx as nx
    import simpy

__all__ = ["FlowNetwork", "TransferRecord"]

HUB_FLOWS = 16
"""Flows in flight from which, when they split by hubs, they are served by virtual time
(:class:`netsim.net.hubqueues.HubQueues`). With fewer the water-filling serves them, keeping
its floats bit for bit: its pass over the flows costs less than the heaps up to about 8 of
them, and a quarter more at 12 (docs/SCALING.md)."""


class FlowNetwork(IdleSends):
    """Max-min fair sharing of full-duplex links by flows, driven by SimPy.

    A transfer first waits out the sum of the link latencies of its path
    (using no bandwidth), then sends its bytes at its fair rate. Rates are
    recomputed (water-filling, :class:`netsim.net.fairshare.LinkSharing`, which keeps
    per link the flows crossing it, so a re-plan costs what the flows in flight
    touch, not the size of the network) whenever flows start sending or finish; all
    starts and ends at one instant are batched into one recomputation, and only the
    earliest completion is scheduled (a generation counter invalidates the timeout
    when rates change). A transfer started on an idle network goes at its bottleneck
    with one timeout to its end, and becomes a flow like the others only if another
    flow starts sending before it is done (same times, same order).

    Parameters
    ----------
    env : simpy.Environment
    G : networkx.Graph
        Topology in the vocabulary of :mod:`netsim.topology` (validated and copied here).
    sharing : {"maxmin", "rtt"}, default "maxmin"
        ``"maxmin"``: plain max-min. ``"rtt"``: weighted max-min with weight
        ``1 / max(path latency, 1e-9 s)``, so flows with shorter RTT get more of
        a shared bottleneck (like SimGrid's CM02 model).
    header_bytes : int, default 0
        Bytes added to every transfer (protocol headers).

    Raises
    ------
    TopologyError
        If *G* is invalid. :exc:`ValueError` for a bad *sharing* or *header_bytes*.
    """

    def __init__(
        self,
        env: simpy.Environment,
        G: nx.Graph,
        *,
        sharing: str = "maxmin",
        header_bytes: float = 0,
    ) -> None:
        if sharing not in ("maxmin", "rtt"):
            raise ValueError(f"sharing must be 'maxmin' or 'rtt', got {sharing!r}")
        if not header_bytes >= 0:
            raise ValueError(f"header_bytes must be >= 0, got {header_bytes!r}")
        table = LinkTable(G)  # raises TopologyError for an invalid G
        super().__init__(env, table, sharing, header_bytes)
        self.graph = table.graph
        """The network's own copy of *G*: link events change it, never the caller's graph."""
        self.links = table.links
        """Directed links; link ``i`` is ``links[i]``."""
        self.capacity = table.capacity
        """Capacity of every directed link, bit/s, shape (n_links,)."""
        self._cap = table.cap  # the same, as floats for the re-plans (one list, the table's)
        self._path = table.path  # (src, dst, key) -> Found, memoised
        self._finite = table.finite
        self._flows: list[Flow] = []  # sending flows, in the order they started sending
        self._sharing = LinkSharing(self._cap, unit=sharing == "maxmin")
        self._queues: HubQueues[Flow] | None = None  # the flows sending, while they split by hubs
        self._orders = 0  # flows that started sending so far
        self._admitted: set = (
            set()
        )  # former solos (_early) arrived with a later flow, their timeout not yet fired
        self._leaving: dict = {}  # path latency -> flows started at _leaving_at (see _leave)
        self._leaving_at = -1.0
        self._last = env.now
        self._generation = 0
        self._replan_pending = False
        self._waking = False  # in a timeout of the network's own (see _request_replan)
        self._deferred = False  # ... which re-plans when it is done

    # ------------------------------------------------------------------ paths

    def min_transfer_time(
        self, src: Hashable, dst: Hashable, nbytes: float, *, flow_key: object = None
    ) -> float:
        """Time (s) to deliver *nbytes* from *src* to *dst* on an idle network.

        Path latency plus ``8 * (nbytes + header_bytes) / bottleneck``, on the
        path :meth:`transfer` would use with the same *flow_key*; ``inf`` when a link
        of the path is cut (bandwidth 0) and there are bytes to send.
        """
        return self._table.min_time(
            self._path(src, dst, flow_key), 8.0 * (nbytes + self.header_bytes)
        )

    # --------------------------------------------------------------- transfers

    def transfer(
        self, src: Hashable, dst: Hashable, nbytes: float, *, flow_key: object = None
    ) -> simpy.Event:
        """Start sending *nbytes* from host *src* to host *dst*.

        Parameters
        ----------
        src, dst : node
        nbytes : int or float
            Payload, bytes (>= 0); ``header_bytes`` is added.
        flow_key : optional
            ECMP key (see :func:`netsim.net.routing.route`); default ``(src, dst)``.

        Returns
        -------
        simpy.Event
            Succeeds with a :class:`TransferRecord` when the last byte arrives.
        """
        if not nbytes >= 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes!r}")
        found = self._path(src, dst, flow_key)
        flow = self._new_flow(src, dst, nbytes, found, self.env.now, None)
        event = cast("simpy.Event", flow.event)  # a flow outside a batch has its own
        if self._idle() and self._send_solo(flow, found[2]):
            return event
        latency = found[2]
        if latency > 0:
            self._leave(flow, latency)
        else:
            self._arrive(flow)
        return event

    def _leave(self, flow: Flow, latency: float) -> None:
        """Start *flow*'s path latency (s): transfers started at one instant with one
        latency share its timeout (they arrive together, in the order they started)."""
        now = self.env.now
        if self._leaving_at != now:
            self._leaving_at = now
            self._leaving = {}
        flows = self._leaving.get(latency)
        if flows is None:
            flows = self._leaving[latency] = [flow]
            self.env.timeout(latency, flows).callbacks.append(self._on_arrival)
        else:
            flows.append(flow)

    def transfer_many(
        self, pairs: Sequence[Pair], sizes: Sequence[float], keys: Sequence[Hashable]
    ) -> simpy.Event:
        """Start one transfer per ``(src, dst)`` of *pairs*, of *sizes* bytes with ECMP
        *keys* (sequences of one length): the same flows as that many :meth:`transfer`
        calls, with one event for all of them (transfers with one path latency also share
        the timeout of their latency). For collectives, whose steps start many at once.

        Returns
        -------
        simpy.Event
            Succeeds, with the time (s), when the last byte of the last transfer arrives.
        """
        bad = [n for n in sizes if not n >= 0]
        if bad:
            raise ValueError(f"nbytes must be >= 0, got {bad[0]!r}")
        env = self.env
        batch = Batch(env.event(), len(pairs))
        if not pairs:
            batch.event.succeed(env.now)
            return batch.event
        if self._idle():
            step = self._table.step(pairs, keys)
            if step.disjoint:
                self._send_fast(batch, step, pairs, keys, sizes)
                return batch.event
        self._start_flows(batch, pairs, sizes, keys)
        return batch.event

    def _idle(self) -> bool:
        """No flow sending or about to, no fast batch or solo transfer in flight (flows
        still in their path latency do not count: they take their share on arrival)."""
        return not (
            self._flows
            or self._queues is not None
            or self._arrived
            or self._replan_pending
            or self._fast is not None
            or self._solo is not None
        )

    def _start_flows(
        self,
        batch: Batch,
        pairs: Sequence[Pair],
        sizes: Sequence[float],
        keys: Sequence[Hashable],
    ) -> None:
        """The transfers of *batch* as ordinary flows, one timeout per path latency."""
        env = self.env
        waiting: dict[float, list] = {}
        for (src, dst), nbytes, key in zip(pairs, sizes, keys, strict=True):
            found = self._path(src, dst, key)
            flow = self._new_flow(src, dst, nbytes, found, env.now, batch)
            latency = found[2]
            if latency > 0:
                waiting.setdefault(latency, []).append(flow)
            else:
                self._arrive(flow)
        for latency, flows in waiting.items():
            env.timeout(latency, flows).callbacks.append(self._on_arrival)

    def _arrive(self, flow: Flow) -> None:
        """*flow* is through its path latency: it starts sending on the links finite now
        (none, or no bits to send: it is delivered at once)."""
        if (self._early or self._admitted) and not self._arrive_early(flow):
            return
        self._admit(flow)

    def _admit(self, flow: Flow) -> None:
        if self._fast is not None:  # it would share the network with the fast batch
            self._materialize(self._fast)
        if self._solo is not None:  # ... or with the solo transfer
            self._unsolo(self._solo)
        if flow.gen != self._finite_gen:  # a link changed finiteness since it started
            flow.links = self._finite(flow.idx)
        if flow.bits == 0 or not flow.links:
            self._deliver(flow)
            return
        self._arrived.append(flow)
        self._request_replan()

    def _arrive_early(self, flow: Flow) -> bool:
        """Let the former solos due now that were created before *flow* arrive first, as
        their path-latency timeout, created with them, would have; False when *flow* is a
        former solo that has arrived so already (its own timeout fires later)."""
        if flow in self._admitted:
            self._admitted.discard(flow)
            return False
        now, seq = self.env.now, flow.seq
        due = [f for t, f in self._early if t <= now and f.seq < seq]
        self._early = [(t, f) for t, f in self._early if f is not flow and f not in due]
        for early in sorted(due, key=lambda f: f.seq):
            self._admitted.add(early)
            self._admit(early)
        return True

    def _recross(self) -> None:
        """A link became finite or infinite: recompute which links each flow about to
        send or sending shares its rate on. One left with none sends the rest of its
        bits at once (infinite rate): it is delivered at the next re-plan (now)."""
        for flow in self._flows:  # what it sent so far counts on the links it sent it on
            self._credit(flow, flow.bits - flow.left)
        for flow in self._arrived + self._flows:
            flow.links = self._finite(flow.idx)
        for flow in [f for f in self._arrived if not f.links]:
            self._arrived.remove(flow)
            self._deliver(flow)
        self._sharing.clear()
        for flow in self._flows:
            if flow.links:
                self._sharing.add(flow)
            else:
                flow.left = 0.0
                flow.credited = flow.bits  # the rest goes at infinite rate: no link counts it

    def _request_replan(self) -> None:
        if not self._replan_pending:
            self._replan_pending = True
            env = self.env
            if self._waking and env.peek() > env.now:
                # nothing else is due now: the timeout of 0 below would be the next event
                # processed, so re-planning when the network's own timeout has done (after
                # what it queued, before any of it runs) keeps the order, one event less
                self._deferred = True
                return
            # runs after events already due now; a timeout of 0 is queued exactly as an
            # event succeeded now (NORMAL priority, next id), in one call
            env.timeout(0).callbacks.append(self._replan)

    def _on_arrival(self, event: simpy.Event) -> None:
        """The flows of *event* (a tuple or list, its value) are through their path latency."""
        self._waking = True
        for flow in event._value:
            self._arrive(flow)
        self._woken()

    def _on_timeout(self, event: simpy.Event) -> None:
        """The earliest completion planned by the re-plan of generation ``event._value``."""
        if event._value == self._generation:
            self._waking = True
            self._request_replan()
            self._woken()

    def _woken(self) -> None:
        """The end of a timeout of the network's own: the re-plan it deferred, if any."""
        self._waking = False
        if self._deferred:
            self._deferred = False
            self._replan(None)

    def _advance(self) -> None:
        """Account for bits sent since the last update at the current rates."""
        dt = self.env.now - self._last
        if dt > 0 and self._flows:
            for flow in self._flows:
                flow.left -= flow.rate * dt
        self._last = self.env.now

    def _replan(self, _event: simpy.Event | None) -> None:
        """Deliver the flows done by now, start the ones arrived, re-solve the rates and
        schedule the earliest completion. The arithmetic is the vectorised one it
        replaced, flow by flow: ``left -= rate * dt`` at every re-plan, done when
        ``left <= 1e-9 * bits`` or ``left / rate <= 4 * spacing(now)``; while the flows
        split by hubs, by their groups' virtual time (:meth:`_replan_hubs`)."""
        self._replan_pending = False
        if self._queues is not None and self._replan_hubs(self._queues):
            return
        now = self.env.now
        sharing = self._sharing
        flows = self._flows
        least = math.inf  # the least bits left of a flow sending
        if flows:  # _advance and the deliveries in one pass over the flows
            dt = now - self._last
            tiny = 4 * math.ulp(now)  # np.spacing(now), now >= 0
            keep = []
            for flow in flows:
                left, rate = flow.left, flow.rate
                if dt > 0:
                    left = flow.left = left - rate * dt
                if left <= flow.tol or (rate != 0 and left / rate <= tiny):
                    self._credit(flow, flow.bits)
                    self._deliver(flow)
                    sharing.remove(flow)
                else:
                    keep.append(flow)
                    if left < least:
                        least = left
            self._flows = flows = keep
        self._last = now
        if self._arrived:
            for flow in self._arrived:
                bits = self._sending(flow)
                if bits < least:
                    least = bits
            flows.extend(self._arrived)
            self._arrived = []
        self._generation += 1
        sharing.solve(flows)
        if len(flows) >= HUB_FLOWS and sharing.hubs is not None and sharing._least > 0:
            queues: HubQueues[Flow] = HubQueues(sharing)  # serve them by virtual time from now
            self._queues = queues
            queues.start(sharing.hubs, now)
            self._flows = []
            self._plan(queues.delay())
            return
        if flows:
            level = sharing.level
            if level:  # one rate for all: x / level grows with x, so the least first
                delay = least / level
            else:
                delay = math.inf  # a flow at rate 0 crosses a cut link
                for flow in flows:
                    if flow.rate:
                        wait = flow.left / flow.rate
                        if wait < delay:
                            delay = wait
            self._plan(delay)

    def _sending(self, flow: Flow) -> float:
        """*flow* starts sending now: its bits left (those not sent as a solo), tolerance
        and order are set and it is added to the link sharing. Returns its bits left."""
        flow.left = bits = flow.bits - flow.credited
        flow.tol = 1e-9 * bits
        flow.order = self._orders = self._orders + 1
        self._sharing.add(flow)
        return bits

    def _replan_hubs(self, queues: HubQueues[Flow]) -> bool:
        """:meth:`_replan` while the flows in flight split by hubs (``self._queues``): the
        groups are served up to now, the flows done leave, the ones arrived join their hub's
        group. False when a flow arrived does not fit the groups: the flows then leave them
        (``self._flows``, with their bits left) and the water-filling takes over, with that
        flow and the ones after it still to start."""
        now = self.env.now
        sharing = self._sharing
        queues.advance(now)
        done = queues.due(4 * math.ulp(now))
        for flow in done:
            self._credit(flow, flow.bits)
            self._deliver(flow)
            sharing.remove(flow)
        if done:
            queues.reshare()  # a group left empty frees its hub
        self._last = now
        arrived, self._arrived = self._arrived, []
        for i, flow in enumerate(arrived):
            self._sending(flow)
            if not queues.join(flow, now):
                sharing.remove(flow)
                self._arrived = arrived[i:]
                self._leave_hubs()
                return False
        sharing.forget()
        self._generation += 1
        if not queues:
            self._queues = None
            return True
        queues.reshare()
        self._plan(queues.delay())
        return True

    def _plan(self, delay: float) -> None:
        """Re-plan at the first end of a flow, *delay* s from now (none when inf: every flow
        waits for a cut link to come back)."""
        if delay != math.inf:
            self.env.timeout(max(delay, 0.0), self._generation).callbacks.append(self._on_timeout)

    def _leave_hubs(self) -> None:
        """Take the flows out of their groups (``self._flows``, with their bits left now)."""
        queues = self._queues
        if queues is not None:
            queues.advance(self.env.now)
            self._flows = queues.release()
            self._queues = None
            self._sharing.forget()
            self._last = self.env.now

    def set_link(
        self,
        u: Hashable,
        v: Hashable,
        *,
        bandwidth: float | None = None,
        latency: float | None = None,
    ) -> None:
        """Change the link between *u* and *v* (both directions) from now on.

        *bandwidth* (bit/s, >= 0; 0 cuts the link: flows crossing it stop until it comes
        back) applies at once to flows crossing the link (rates are recomputed); *latency*
        (s, >= 0) and the routes apply to transfers started from now on. Raises KeyError
        when there is no such link.
        """
        if not self.graph.has_edge(u, v):
            raise KeyError(f"no link {u!r}-{v!r}")
        if self._fast is not None:
            self._materialize(self._fast)
        if self._solo is not None:
            self._unsolo(self._solo)
        self._leave_hubs()
        self._advance()
        if self._table.set(u, v, bandwidth, latency):  # a link became finite or infinite
            self._finite_gen += 1
            self._recross()
        if bandwidth is not None:
            self._sharing.reshare()
        self._request_replan()

    # ------------------------------------------------------------- statistics

    def link_utilisation(
        self, sim_time: float | None = None
    ) -> list[tuple[Hashable, Hashable, float]]:
        """Busiest links first: ``[(u, v, utilisation), ...]`` for every directed link.

        Utilisation is ``bytes carried * 8 / (bandwidth * sim_time)``, bytes
        counted up to now, rounded to 12 significant digits (a flow's bits are added to
        its links' totals when it is delivered, so the last digits depend on the order
        of the additions); ties in link order. *sim_time* (s) defaults to ``env.now``.
        Links of infinite or zero bandwidth have utilisation 0.
        """
        self._advance()
        sim_time = self.env.now if sim_time is None else sim_time
        if not sim_time > 0:
            raise ValueError(f"sim_time must be > 0 s, got {sim_time!r}")
        return self._table.utilisation(self._carried(), sim_time)

    def bytes_carried(self) -> dict[Pair, float]:
        """Bytes carried so far per directed link, ``{(u, v): bytes}``."""
        self._advance()
        return {link: float(b) / 8.0 for link, b in zip(self.links, self._carried(), strict=True)}

    def _carried(self) -> np.ndarray:
        """Bits carried so far per directed link (after :meth:`_advance`), the flows still
        sending and the fast batch in flight included."""
        carried = np.array(self._link_bits)
        for flow in self._flows:
            more = flow.bits - flow.left - flow.credited
            for link in flow.links:
                carried[link] += more
        queues = self._queues
        if queues is not None:
            for flow in queues.group_of:
                more = flow.bits - queues.left(flow, self.env.now) - flow.credited
                for link in flow.links:
                    carried[link] += more
        solo = self._solo
        if solo is not None:
            sent = solo.sent(self.env.now)
            for link in solo.flow.links:
                carried[link] += sent
        fast = self._fast
        if fast is not None:
            carried_fast = fast.sent(self.env.now)
            np.add.at(carried, fast.step.links, np.repeat(carried_fast, fast.step.counts))
        return carried
