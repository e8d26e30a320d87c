"""K-sync SGD (Dutta et al. 2018): first K gradients of a step, cancel the rest."""

from __future__ import annotations

from typing import ClassVar

from ..params import Table
from .backup import Backup
from .base import RuleContext, read_count, read_lr, read_round_timeout

__all__ = ["KSync"]


class KSync(Backup):
    """All P workers start from ``w_j``; the PS averages the first K gradients,
    ``w_{j+1} = w_j − (η/K)·Σ g``, pre-empts the P − K others, and everyone
    restarts from ``w_{j+1}``. K = P is SSGD. The same rule as :class:`Backup`
    with N = K, b = P − K and ``late_policy = "cancel"``.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    k : int, K in ``1 .. P``.
    round_timeout : float, s (see :class:`Backup`).
    """

    name = "ksync"
    real: ClassVar[bool] = False  # it pre-empts the P − K late workers (docs/VALIDATION.md)
    description = (
        "K-sync SGD: average the first K gradients of each step, cancel the other P − K workers"
    )
    source = (
        "Dutta, Wang, Joshi et al., AISTATS 2018 (JSAIT 2021, arXiv 2003.10579); ALGORITHMS.md §6.2"
    )

    def __init__(
        self, lr: float, groups: list[list[int]], *, k: int = 1, round_timeout: float = 0.0
    ) -> None:
        super().__init__(lr, groups, late_policy="cancel", round_timeout=round_timeout)
        self.k = k

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "KSync":
        lr = read_lr(table, ctx)
        return cls(
            lr,
            cls.default_groups(ctx),
            k=read_count(table, "k", ctx),
            round_timeout=read_round_timeout(table),
        )

    def aggregate_count(self, n_workers: int) -> int:
        return self.k
