"""Stale Synchronous Parallel (Ho et al. 2013) for a gradient PS."""

from __future__ import annotations

from functools import partial

from ..params import Table
from .base import Need, Push, Rule, RuleContext, ServerActions, read_lr, read_round_timeout

__all__ = ["SSP"]


class SSP(Rule):
    """ASGD with bounded clock drift.

    Worker i's clock ``c_i`` counts its pushes (iterations completed). Every
    gradient is applied on arrival, ``w ← w − η·g`` (version + 1), as in ASGD.
    The pusher may start its next iteration, number ``c_i`` (0-based), only if
    ``c_i − min_j c_j ≤ s``: then it gets the current model at once; otherwise it
    is blocked, and blocked workers are released (in id order, on the model
    current then) as soon as the slowest clock advances enough. Nothing is
    dropped. Large s is ASGD exactly; s = 0 gives the barrier timing of SSGD
    but still one update per gradient (staleness 0 .. M − 1 within a round).

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (every worker alone, as ASGD).
    s : int, the staleness bound (clock drift), >= 0.
    round_timeout : float, s (0: none). A worker blocked for this long is released
        anyway (event ``round_timeout``), so a crashed slowest worker slows the
        others down instead of stopping them.
    """

    name = "ssp"
    real = True
    description = "stale synchronous parallel: apply each gradient on arrival, block workers more than s clocks ahead of the slowest"
    source = "Ho et al., NeurIPS 2013; ALGORITHMS.md §6.1"
    lean = True

    def __init__(
        self, lr: float, groups: list[list[int]], *, s: int = 3, round_timeout: float = 0.0
    ) -> None:
        super().__init__(lr, groups)
        self.s = s
        self.round_timeout = round_timeout

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "SSP":
        lr = read_lr(table, ctx)
        return cls(
            lr,
            cls.default_groups(ctx),
            s=table.get("s", int, minimum=0),
            round_timeout=read_round_timeout(table),
        )

    def start(self, ps: ServerActions) -> None:
        self.group_of_ = self.group_index()
        self.clock_ = [0] * len(self.group_of_)
        self.blocked_: set[int] = set()
        self.blocks_ = [0] * len(
            self.group_of_
        )  # how many times each worker was blocked (timer ids)
        ps.send(range(len(self.group_of_)))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        i = push.worker
        ps.apply([push], self.lr, self.group_of_[i])
        slowest = min(self.clock_)
        self.clock_[i] += 1
        low = min(self.clock_)
        if self.clock_[i] - low <= self.s:
            ps.send((i,))
        else:
            self.blocked_.add(i)
            if self.round_timeout:
                self.blocks_[i] += 1
                ps.call_later(self.round_timeout, partial(self._expire, ps, i, self.blocks_[i]))
        if low > slowest and self.blocked_:
            ready = sorted(j for j in self.blocked_ if self.clock_[j] - low <= self.s)
            self.blocked_.difference_update(ready)
            ps.send(ready)

    def _expire(self, ps: ServerActions, i: int, n: int) -> None:
        if i not in self.blocked_ or self.blocks_[i] != n:
            return
        low = min(self.clock_)
        ps.record_event(
            "round_timeout",
            worker=i,
            waiting_for=[j for j, c in enumerate(self.clock_) if c == low],
        )
        self.blocked_.discard(i)
        ps.send((i,))

    def holds(self, worker: int) -> bool:
        return worker in self.blocked_

    def waiting(self, ps: ServerActions) -> list[Need]:
        if self.round_timeout:  # blocked workers are released in time
            return [Need(1, tuple(range(len(self.clock_))))]
        return [Need(1, tuple(j for j in range(len(self.clock_)) if j not in self.blocked_))]
