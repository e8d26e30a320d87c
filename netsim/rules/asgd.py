"""Fully asynchronous SGD (Downpour-style, plain SGD step)."""

from __future__ import annotations

from .base import Push, Rule, ServerActions

__all__ = ["ASGD"]


class ASGD(Rule):
    """Each arriving gradient is applied at once, ``w ← w − η·g``; only its
    sender gets the new model back."""

    name = "asgd"
    real = True
    carries_on = True
    description = "asynchronous SGD: apply every gradient on arrival, reply to its sender"
    source = "ALGORITHMS.md §1b (Dean et al. 2012)"
    lean = True
    solo = True

    def start(self, ps: ServerActions) -> None:
        self.group_of_ = self.group_index()
        ps.send(range(len(self.group_of_)))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        ps.apply_one(push, self.lr, self.group_of_[push.worker])
        ps.send((push.worker,))

    def solo_step(self, worker: int) -> tuple[float, int]:
        return self.lr, self.group_of_[worker]
