"""K-async SGD (Dutta et al. 2018): average any K gradients, reply to those K workers."""

from __future__ import annotations

from .base import KRule, Need, Push, ServerActions

__all__ = ["KAsync"]


class KAsync(KRule):
    """The PS waits for any K gradients (possibly stale), applies
    ``w ← w − (η/K)·Σ g``, and sends the new model **only to those K workers**,
    which wait for it after pushing; the others keep computing on their old
    models and are never cancelled. K = 1 is ASGD.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    k : int, K in ``1 .. P``.
    """

    name = "kasync"
    real = True
    description = "K-async SGD: average any K (possibly stale) gradients, send the new model to those K workers"
    source = (
        "Dutta, Wang, Joshi et al., AISTATS 2018 (JSAIT 2021, arXiv 2003.10579); ALGORITHMS.md §6.2"
    )
    lean = True

    def start(self, ps: ServerActions) -> None:
        self.buffer_: list[Push] = []
        ps.send(range(len(self.group_index())))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        self.buffer_.append(push)
        if len(self.buffer_) == self.k:
            ps.apply(self.buffer_, self.lr, 0)
            took = sorted(p.worker for p in self.buffer_)
            self.buffer_ = []
            ps.send(took)

    def holds(self, worker: int) -> bool:
        return any(p.worker == worker for p in self.buffer_)

    def waiting(self, ps: ServerActions) -> list[Need]:
        pushed = {p.worker for p in self.buffer_}
        others = tuple(w for w in range(len(self.group_index())) if w not in pushed)
        return [Need(self.k - len(self.buffer_), others)]
