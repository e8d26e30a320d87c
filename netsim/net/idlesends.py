"""Transfers sent on an idle network without re-plans: a *solo* transfer (one flow alone)
and a *fast* batch (transfers sharing no link), each with one timeout to its end, turned into
ordinary flows when another flow arrives or a link changes first. A part of
:class:`~netsim.net.flows.FlowNetwork` (its base class), kept apart from its re-plans."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from .flowstate import (
    MIN_LATENCY,
    Batch,
    FastBatch,
    Flow,
    Found,
    Pair,
    Solo,
    Step,
    TransferRecord,
    add_at,
)

if TYPE_CHECKING:
    import simpy

    from .linktable import LinkTable

__all__ = ["IdleSends"]


class IdleSends:
    """The base of :class:`~netsim.net.flows.FlowNetwork`: the state its re-plans share with
    the solo and fast sends (made here), the flows' making, crediting and delivery, and
    the solo and fast sends. A flow handed back to the re-plans goes through the three steps
    :class:`~netsim.net.flows.FlowNetwork` defines: ``_arrive``, ``_on_arrival`` and
    ``_request_replan``."""

    def __init__(
        self, env: simpy.Environment, table: LinkTable, sharing: str, header_bytes: float
    ) -> None:
        self.env = env
        self._table = table
        self.sharing = sharing
        self.header_bytes = header_bytes
        self._finite_gen = 0  # changes when a link becomes finite or infinite
        self._seq = 0  # flows created so far
        self._link_bits = [0.0] * len(table.links)  # bits credited so far, per link (_credit)
        self._arrived: list[Flow] = []  # flows done with latency, not yet sending
        self._fast: FastBatch | None = None  # the fast batch in flight, if any
        self._solo: Solo | None = None  # the Solo transfer in flight, if any
        self._early: list = []  # (arrive, flow) of solos made flows in their path latency

    def _arrive(self, flow: Flow) -> None:
        """*flow* is through its path latency (the re-plans: FlowNetwork)."""
        raise NotImplementedError

    def _on_arrival(self, event: simpy.Event) -> None:
        """The flows of *event* are through their path latency (the re-plans: FlowNetwork)."""
        raise NotImplementedError

    def _request_replan(self) -> None:
        """Re-plan the rates now, once (the re-plans: FlowNetwork)."""
        raise NotImplementedError

    def _new_flow(
        self,
        src: Hashable,
        dst: Hashable,
        nbytes: float,
        found: Found,
        start: float,
        batch: Batch | None,
        bits: float | None = None,
    ) -> Flow:
        """A flow of *nbytes* from *src* to *dst* on the path *found* (:meth:`LinkTable.path`'s
        tuple), started at *start*, in *batch* (None: its own event), with *bits* still to
        send (default all of them, header included)."""
        path, idx, latency, finite = found
        flow = Flow()
        flow.src, flow.dst, flow.nbytes, flow.path, flow.idx = src, dst, nbytes, path, idx
        flow.links, flow.gen = finite, self._finite_gen
        flow.bits = 8.0 * (nbytes + self.header_bytes) if bits is None else bits
        flow.weight = 1.0 / max(latency, MIN_LATENCY) if self.sharing == "rtt" else 1.0
        flow.event = self.env.event() if batch is None else None
        flow.start, flow.batch = start, batch
        flow.credited = 0.0
        flow.seq = self._seq = self._seq + 1
        return flow

    def _deliver(self, flow: Flow) -> None:
        batch = flow.batch
        if batch is None:
            cast("simpy.Event", flow.event).succeed(
                TransferRecord(flow.src, flow.dst, flow.nbytes, flow.start, self.env.now, flow.path)
            )
            return
        batch.left -= 1
        if not batch.left:
            batch.event.succeed(self.env.now)

    def _credit(self, flow: Flow, sent: float) -> None:
        """Count *sent* bits of *flow* (its total so far) on its links: a flow's bits are
        added to the per-link totals when it is delivered (or its links change), not at
        every re-plan; :meth:`_carried` adds those of the flows still sending."""
        more = sent - flow.credited
        if more:
            carried = self._link_bits
            for link in flow.links:
                carried[link] += more
            flow.credited = sent

    def _send_solo(self, flow: Flow, latency: float) -> bool:
        """Send *flow* (path latency *latency*, s) as a :class:`Solo` when its end is known
        now: it has bits to send, no cut link, and one timeout from now lands on the very
        float a re-plan at its arrival would have scheduled (``arrive + bits / rate``).
        False: send it as a flow."""
        if not flow.bits or not flow.links:
            return False
        rate = self._table.alone_rate(flow.links, flow.weight if self.sharing == "rtt" else None)
        if not rate > 0:
            return False
        now = self.env.now
        arrive = now + latency
        done = arrive + flow.bits / rate
        wait = done - now
        if now + wait != done:
            return False
        solo = Solo()
        solo.flow, solo.arrive, solo.rate, solo.done, solo.live = flow, arrive, rate, done, True
        self._solo = solo
        self.env.timeout(wait, solo).callbacks.append(self._solo_done)
        return True

    def _solo_done(self, event: simpy.Event) -> None:
        solo = event._value
        if solo.live:
            self._solo, solo.live = None, False
            flow = solo.flow
            self._credit(flow, flow.bits)
            self._deliver(flow)

    def _unsolo(self, solo: Solo) -> None:
        """Turn the solo transfer in flight into an ordinary flow, as it stands now: still
        in its path latency, sending with the bits it has left, or done."""
        self._solo, solo.live = None, False
        flow, now = solo.flow, self.env.now
        if now < solo.arrive:  # it arrives by its own timeout, or with a later flow (_arrive)
            self._early.append((solo.arrive, flow))
            self.env.timeout(solo.arrive - now, (flow,)).callbacks.append(self._on_arrival)
            return
        sent = solo.sent(now)
        if now >= solo.done or flow.bits - sent <= 1e-9 * flow.bits:
            self._credit(flow, flow.bits)
            self._deliver(flow)
            return
        self._credit(flow, sent)
        self._arrived.append(flow)
        self._request_replan()

    def _send_fast(
        self,
        batch: Batch,
        step: Step,
        pairs: Sequence[Pair],
        keys: Sequence[Hashable],
        sizes: Sequence[float],
    ) -> None:
        """Send the batch as a :class:`FastBatch` one: one timeout, at its last transfer's end."""
        now = self.env.now
        fast = FastBatch()
        fast.batch, fast.step, fast.pairs, fast.keys = batch, step, pairs, keys
        fast.sizes = sizes
        fast.bits = 8.0 * (np.asarray(sizes, dtype=float) + self.header_bytes)
        with np.errstate(divide="ignore", invalid="ignore"):
            send = np.where(fast.bits > 0, fast.bits / step.bottleneck, 0.0)
        fast.start, fast.done, fast.live = now, (now + step.latency) + send, True
        self._fast = fast
        end = float(fast.done.max())
        if end < math.inf:  # else a link of a path is cut: it ends only if it comes back
            self.env.timeout(end - now).callbacks.append(lambda _ev: self._fast_done(fast))

    def _fast_done(self, fast: FastBatch) -> None:
        if not fast.live:  # sent on as flows (another transfer came, or a link changed)
            return
        self._fast, fast.live = None, False
        add_at(self._link_bits, fast.step.links, np.repeat(fast.bits, fast.step.counts))
        fast.batch.left = 0
        fast.batch.event.succeed(self.env.now)

    def _materialize(self, fast: FastBatch) -> None:
        """Turn the fast batch in flight into ordinary flows, as they stand now: the done
        ones count as delivered, the ones still in their path latency arrive later, the
        ones sending go on with the bits they have left."""
        self._fast, fast.live = None, False
        now = self.env.now
        sent = fast.sent(now)
        add_at(self._link_bits, fast.step.links, np.repeat(sent, fast.step.counts))
        batch, step = fast.batch, fast.step
        for i, ((src, dst), key) in enumerate(zip(fast.pairs, fast.keys, strict=True)):
            left = float(fast.bits[i] - sent[i])
            if fast.done[i] <= now or (left <= 1e-9 * fast.bits[i] and sent[i] > 0):
                batch.left -= 1
                continue
            found = step.paths[i]
            flow = self._new_flow(src, dst, fast.sizes[i], found, fast.start, batch, bits=left)
            flow.gen -= 1  # its links were found before now: recheck them at arrival
            arrive = fast.start + found[2]
            if arrive > now:
                self.env.timeout(arrive - now, (flow,)).callbacks.append(self._on_arrival)
            else:
                self._arrive(flow)
        if not batch.left:
            batch.event.succeed(now)
