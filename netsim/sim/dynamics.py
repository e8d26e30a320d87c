"""A run's dynamics: its timed events (slowdowns, crashes, recoveries, link changes) and
the diagnosis of a run that can make no update again (``stalled``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config.events import ClusterEvent
from ..rules.base import stalled_on
from .measurement import Measurement
from .server import ParameterServer
from .worker import COMM, COMPUTE

if TYPE_CHECKING:
    import simpy

__all__ = ["Dynamics"]


class Dynamics:
    """The timed events of *scenario* applied to the server *ps* (its workers, rule and
    environment), over *comm* and the flow network *net* (None: fixed latencies); the
    stall messages name the rule as *algorithm*.

    ``returning``: worker id → recoveries scheduled (crash durations, recover events);
    ``lost``: workers down with no recovery scheduled; ``started``: whether the rule has
    started (after the grouping measurement), set by the engine.
    """

    def __init__(self, ps: ParameterServer, scenario: Any, comm: Any, net: Any, algorithm: str):
        self.ps, self.env, self.states, self.rule = ps, ps.env, ps.workers, ps.rule
        self.scenario, self.comm, self.net, self.algorithm = scenario, comm, net, algorithm
        self.started = False
        self.returning: Counter = Counter()
        self.lost: set[int] = set()
        for event in scenario.events:
            if event.kind == "recover":
                self.returning.update(event.workers)
        self.link_events_left = sum(event.kind == "link" for event in scenario.events)
        self.cut: dict[int, tuple[float, float]] = {}
        """Workers cut off from the PS: (pull, push) shortest times (s), one longer than
        the whole run (a link at bandwidth 0, or all but), once no link event is left."""
        self.find_cut()

    # -- events ----------------------------------------------------------
    def apply(self, events: Sequence[ClusterEvent]) -> Iterator:
        """A SimPy process: apply *events* at their times; each is logged in the run's events."""
        env, ps = self.env, self.ps
        for event in events:
            if event.time > env.now:
                yield env.timeout(event.time - env.now)
            ps.record_event(
                event.kind,
                **{k: v for k, v in event.as_dict().items() if k not in ("time", "kind")},
            )
            if event.kind == "slowdown":
                for wid in event.workers:
                    self.states[wid].slowdown = event.factor
            elif event.kind == "crash":
                self._crash_all(event)
            elif event.kind == "recover":
                self._recover(event.workers, False)
            else:
                self.net.set_link(*event.link, bandwidth=event.bandwidth, latency=event.latency)
                self.link_events_left -= 1
                self.find_cut()
                self.check_progress()

    def _crash_all(self, event: ClusterEvent) -> None:
        for wid in event.workers:
            self._crash(wid)
        if event.duration:
            self.returning.update(event.workers)
            self.env.timeout(event.duration).callbacks.append(
                partial(self._recover, event.workers, True)
            )
        for w in event.workers:
            if self.returning[w] <= 0:
                self.lost.add(w)
            else:
                self.lost.discard(w)
        self.check_progress()

    def _crash(self, wid: int) -> None:
        st = self.states[wid]
        if not st.down:
            st.down = True
            st.crashes += 1
            st.job = None  # no pre-emption on top of the crash
            if st.process is None:
                raise RuntimeError(f"worker {wid} has no process to crash (a lean worker)")
            st.process.interrupt("crash")

    def _recover(
        self, ids: Sequence[int], logged_elsewhere: bool, _event: simpy.Event | None = None
    ) -> None:
        """Bring crashed workers *ids* back; the rule sends them a model (``on_rejoin``).
        *_event*: the timeout that brought them back, if any."""
        back = []
        for wid in ids:
            self.returning[wid] -= 1
            st = self.states[wid]
            if st.down:
                st.down = False
                back.append(wid)
            self.lost.discard(wid)
        if back and logged_elsewhere:
            self.ps.record_event("recover", workers=back)
        for wid in back:
            st = self.states[wid]
            if st.revive is not None and not st.revive.triggered:
                st.revive.succeed()
            # the rule sends a model once the worker waits for one (after its revive, or after the
            # interrupt of a crash at this very instant), so it reads the model current then
            self.env.timeout(0).callbacks.append(partial(self._rejoin, wid, st.crashes))

    def _rejoin(self, wid: int, crashes: int, _event: simpy.Event | None = None) -> None:
        st = self.states[wid]
        if self.started and not st.down and st.crashes == crashes:
            self.rule.on_rejoin(self.ps, wid)

    # -- stalls ----------------------------------------------------------
    def find_cut(self) -> None:
        """Refresh :attr:`cut` (after the last link event, the network stays as it is)."""
        if self.link_events_left:
            self.cut = {}
            return
        horizon = self.scenario.run.until
        if self.rule.peer:  # no PS: cut off from the other workers
            self.cut = {w: (math.inf, math.inf) for w in self.comm.isolated(horizon)}
            return
        times = (self.comm.min_times(w) for w in range(len(self.states)))
        self.cut = {
            w: (pull, push)
            for w, (pull, push) in enumerate(times)
            if pull > horizon or push > horizon
        }

    def _cut_now(self) -> set[int]:
        """The cut-off workers that can never push again: the push is cut, or the pull is
        and the worker does not already hold a model (computing, or pushing)."""
        horizon = self.scenario.run.until
        blocked = set()
        for w, (pull, push) in self.cut.items():
            st = self.states[w]
            holds = st.phase == COMPUTE or (st.phase == COMM and st.job is None)
            if push > horizon or not holds:
                blocked.add(w)
        return blocked

    def check_progress(self) -> None:
        """End the run as ``stalled`` when no update can ever happen again.

        Checked after crashes, link events, pushes and rule timers while some worker is
        down for good or cut off from the PS (:attr:`cut`): the rule says what its next
        update needs (``Rule.waiting``); when every alternative needs such a worker,
        nothing will change until ``run.until``.
        """
        watched = self.lost or self.cut
        self.ps.watch = self.check_progress if watched else None
        if not watched or not self.started or self.ps.stop.triggered:
            return
        cut = self._cut_now() - self.lost
        blocking = stalled_on(self.rule.waiting(self.ps), self.lost | cut, len(self.states))
        if blocking is not None:
            self.ps.stalled_on = blocking
            self.ps.stall(
                f"stalled at simulated time {self.env.now:g} s: no update can happen again; "
                f"{self.algorithm} waits for workers {blocking}, {self._why(blocking, cut)}"
            )

    def _why(self, blocking: list[int], cut: set[int]) -> str:
        """Why each of *blocking* cannot push again (the stall message's tail)."""
        down = [w for w in blocking if w not in cut]
        off = [w for w in blocking if w in cut]
        if not off:
            return "down with no recovery scheduled"
        parts = [f"{workers_text(down)} down with no recovery scheduled"] if down else []
        if self.rule.peer:
            parts.append(
                f"{workers_text(off)} cut off from the other workers (no message to or from "
                f"{'it' if len(off) == 1 else 'them'} ends within run.until = "
                f"{self.scenario.run.until:g} s)"
            )
            return "; ".join(parts)
        w = off[0]
        pull, push = self.cut[w]
        which, took = ("push", push) if push >= pull else ("pull", pull)
        why = (
            f"a link on worker {w}'s {which} path is cut"
            if took == np.inf
            else f"worker {w}'s {which} takes at least {took:.3g} s alone on the network, "
            f"longer than run.until = {self.scenario.run.until:g} s"
        )
        parts.append(f"{workers_text(off)} cut off from the parameter server ({why})")
        return "; ".join(parts)

    def unmeasurable(self, m: Measurement) -> bool:
        """End the run ``stalled`` when the grouping measurement *m* cannot end within the
        run (some worker is cut off from the PS), or ends too late for any training."""
        horizon = self.scenario.run.until
        off = m.cut_off(horizon)
        if off:
            self.ps.stalled_on = off
            self.ps.stall(
                f"stalled at simulated time 0 s: the grouping measurement cannot end within "
                f"run.until = {horizon:g} s: {workers_text(off)} cut off from the parameter "
                f"server (their probe transfers take longer than the run, or never end)"
            )
            return True
        if m.duration < horizon:
            return False
        late = np.flatnonzero(m.iteration.sum(axis=1) >= horizon).tolist()
        self.ps.stalled_on = late or list(range(len(self.states)))
        rounds = m.iteration.shape[1]
        self.ps.stall(
            f"stalled at simulated time 0 s: the grouping measurement ({rounds} probe rounds "
            f"of every worker) takes {m.duration:.4g} s, not less than run.until = {horizon:g} s, "
            f"so training would never start ({workers_text(self.ps.stalled_on)} the last to "
            f"end); lower algorithms.{self.algorithm}.probe_rounds or raise run.until"
        )
        return True


def workers_text(ids: list[int]) -> str:
    """``worker 3`` or ``workers [1, 2]``."""
    return f"worker {ids[0]}" if len(ids) == 1 else f"workers {ids}"
