"""Transfers sent on an idle network without re-plans: a *solo* transfer (one flow alone)
and a *fast* batch (transfers sharing no link), each with one timeout to its end, turned into
ordinary flows when another flow arrives or a link changes first. A part of
:class:`~netsim.net.flows.FlowNetwork` (its base class), kept apart from its re-plans."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .flowstate import Batch, FastBatch, Flow, Found, Pair, Solo, Step, add_at

if TYPE_CHECKING:
    import simpy

    from .linktable import LinkTable

__all__ = ["IdleSends"]


class IdleSends:
    """The solo and fast sends of :class:`~netsim.net.flows.FlowNetwork`, which sets the
    attributes below and defines the methods declared for type checking."""

    env: simpy.Environment
    sharing: str
    header_bytes: float
    _table: LinkTable
    _link_bits: list[float]
    _fast: FastBatch | None
    _solo: Solo | None
    _early: list
    _arrived: list[Flow]

    if TYPE_CHECKING:

        def _new_flow(
            self,
            src: Hashable,
            dst: Hashable,
            nbytes: float,
            found: Found,
            start: float,
            batch: Batch | None,
            bits: float | None = None,
        ) -> Flow: ...

        def _credit(self, flow: Flow, sent: float) -> None: ...

        def _deliver(self, flow: Flow) -> None: ...

        def _arrive(self, flow: Flow) -> None: ...

        def _on_arrival(self, event: simpy.Event) -> None: ...

        def _request_replan(self) -> None: ...

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
