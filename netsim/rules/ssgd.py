"""Fully synchronous SGD (BSP): one round waits for every worker."""
from __future__ import annotations

from .base import Push, Rule, RuleContext

__all__ = ["SSGD"]


class SSGD(Rule):
    """Round r: all M workers compute on w_r; the PS averages the M gradients,
    applies ``w ← w − η·mean``, and sends the new model to everyone."""
    name = "ssgd"
    description = "synchronous SGD: average all workers' gradients each round"
    source = "ALGORITHMS.md §1a (BSP)"

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    def start(self, ps) -> None:
        self.buffer_: list[Push] = []
        ps.send(self.groups[0])

    def on_push(self, ps, push: Push) -> None:
        self.buffer_.append(push)
        if len(self.buffer_) == len(self.groups[0]):
            ps.apply(self.buffer_, self.lr, 0)
            self.buffer_ = []
            ps.send(self.groups[0])
