"""Fully synchronous SGD (BSP): one round waits for every worker."""

from __future__ import annotations

from ..params import Table
from .base import (
    Need,
    Push,
    RoundTimer,
    Rule,
    RuleContext,
    ServerActions,
    read_lr,
    read_round_timeout,
    round_needs,
)

__all__ = ["SSGD"]


class SSGD(Rule):
    """Round r: all M workers compute on w_r; the PS averages the M gradients,
    applies ``w ← w − η·mean``, and sends the new model to everyone.

    With ``round_timeout`` = T > 0 (s), a round that started at t closes at t + T with
    the gradients it has (or, when it has none, with the first that arrives); a
    gradient computed on an older model arrives late and is dropped. A worker that
    crashes after pushing and returns within the round waits for the round's end:
    every gradient counts once.
    """

    name = "ssgd"
    real = True
    description = "synchronous SGD: average all workers' gradients each round"
    source = "ALGORITHMS.md §1a (BSP)"
    lean = True

    def __init__(self, lr: float, groups: list[list[int]], *, round_timeout: float = 0.0) -> None:
        super().__init__(lr, groups)
        self.round_timeout = round_timeout

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "SSGD":
        return cls(
            read_lr(table, ctx), cls.default_groups(ctx), round_timeout=read_round_timeout(table)
        )

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    def start(self, ps: ServerActions) -> None:
        self.buffer_: dict[int, Push] = {}
        self.timer_ = RoundTimer(self.round_timeout)
        self.timer_.open(ps, lambda: self._expire(ps))
        ps.send(self.groups[0])

    def on_push(self, ps: ServerActions, push: Push) -> None:
        if push.version != ps.version:  # only with a round timeout: its round closed without it
            ps.drop(push, f"late: round {push.version + 1} closed at its timeout")
            return
        self.buffer_[push.worker] = push
        if len(self.buffer_) == len(self.groups[0]) or self.timer_.expired:
            self._close(ps)

    def _close(self, ps: ServerActions) -> None:
        ps.apply(list(self.buffer_.values()), self.lr, 0, consume=True)
        self.buffer_ = {}
        self.timer_.open(ps, lambda: self._expire(ps))
        ps.send(self.groups[0])

    def _expire(self, ps: ServerActions) -> None:
        if not self.buffer_:
            self.timer_.expired = True
            return
        ps.record_event(
            "round_timeout",
            present=sorted(self.buffer_),
            missing=[w for w in self.groups[0] if w not in self.buffer_],
        )
        self._close(ps)

    def holds(self, worker: int) -> bool:
        return worker in self.buffer_

    def waiting(self, ps: ServerActions) -> list[Need]:
        missing = tuple(w for w in self.groups[0] if w not in self.buffer_)
        return round_needs(len(missing), missing, bool(self.buffer_), bool(self.round_timeout))
