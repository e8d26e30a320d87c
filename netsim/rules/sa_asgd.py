"""Staleness-aware ASGD (Zhang et al. 2016): the step of a τ-stale gradient is η/max(1, τ)."""

from __future__ import annotations

from .base import Push, Rule, ServerActions

__all__ = ["SAASGD"]


class SAASGD(Rule):
    """ASGD whose learning rate is divided by the gradient's staleness:
    ``w ← w − η/max(1, τ)·g`` with ``τ = v_now − v_read``; only the sender gets
    the new model (elasticdl's ``lr_staleness_modulation``; the n-softsync
    variant with n = λ, one gradient per update).
    """

    name = "sa_asgd"
    real = True
    carries_on = True
    description = (
        "staleness-aware ASGD: apply each gradient on arrival with learning rate η / max(1, τ)"
    )
    source = "Zhang, Gupta, Lian, Liu, IJCAI 2016 (arXiv 1511.05950); ALGORITHMS.md §6.3"
    lean = True

    def start(self, ps: ServerActions) -> None:
        self.group_of_ = self.group_index()
        ps.send(range(len(self.group_of_)))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        tau = ps.version - push.version
        ps.apply([push], self.lr / max(1, tau), self.group_of_[push.worker])
        ps.send((push.worker,))
