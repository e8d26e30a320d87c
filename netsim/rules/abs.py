"""ABS-style adaptive bounded staleness (after Tan, Zhu, Zhang, arXiv 2301.08895): a reconstruction."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ScenarioError
from ..params import Table
from .base import (
    Need,
    Push,
    RoundTimer,
    Rule,
    RuleContext,
    ServerActions,
    read_count,
    read_lr,
    read_round_timeout,
    round_needs,
)

__all__ = ["ABS", "next_k", "tau_max"]


# -- pure math ---------------------------------------------------------------
def next_k(k: int, k0: int, ratio: float, p: float, n_workers: int) -> int:
    """``K^{t+1} = min(M, max(K^t, ⌈K0·ratio^p⌉))``: K never decreases.

    *ratio* is the progress ratio ``F̂_0 / F̂_t`` (> 0); p = 0 keeps K = K0.

    Examples
    --------
    >>> next_k(4, 4, 1.0, 0.5, 16), next_k(4, 4, 2.25, 0.5, 16), next_k(6, 4, 1.2, 1.0, 16), next_k(6, 4, 9.0, 1.0, 16)
    (4, 6, 6, 16)
    """
    target = math.ceil(k0 * ratio**p - 1e-9)
    return min(n_workers, max(k, target))


def tau_max(n_workers: int, k: int, c: float) -> int:
    """Pre-emption threshold ``⌈c·⌈M/K⌉⌉`` (M/K is the typical staleness of K-async).

    >>> tau_max(16, 4, 1.0), tau_max(3, 2, 1.0), tau_max(16, 16, 1.5)
    (4, 2, 2)
    """
    return math.ceil(c * math.ceil(n_workers / k))


# -- rule --------------------------------------------------------------------
class ABS(Rule):
    """ABS-style rule (ALGORITHMS.md §3 reconstruction, SGD-gradient framing of
    arXiv 2301.08895 v1, U = 1 local step; not a reproduction of the paper).

    Round t: the PS takes the first ``K^t`` arrivals, whatever their version
    (a pusher waits for the round to end), applies their unweighted mean
    ``w ← w − η·mean(g)``, version + 1, and sends the new model to the ``K^t``
    contributors. Then K and the threshold are updated and every worker whose
    in-flight pull or computation is too stale, ``v_now − v_read ≥ τ_max``, is
    pre-empted and restarts from the newest model. Other workers keep computing.

    Progress signal (the PS never evaluates the training set, and a push
    carries no loss): ``F̂_t``, an exponential moving average (factor
    *smoothing*) of the mean Euclidean norm of the round's minibatch gradients,
    ``mean_i ‖g_i‖``, a loss proxy that falls as training converges and does
    not depend on K. ``F̂_0`` is its value after round 1. Then
    ``K^{t+1} = min(M, max(K^t, ⌈K0·(F̂_0/F̂_t)^p⌉))`` (:func:`next_k`) and
    ``τ_max = ⌈c·⌈M/K^{t+1}⌉⌉`` (:func:`tau_max`), both applied from the
    update they follow (the pre-emption after update t uses ``K^{t+1}``).

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    k0 : int, K^0 in ``1 .. M``.
    p : float >= 0, exponent of the schedule (0 keeps K = K0; the spec suggests 0.5 or 1).
    c : float >= 1, scale of the staleness threshold.
    smoothing : float in [0, 1), the moving-average factor of F̂.
    round_timeout : float, s (0: none). A round that started at t closes at t + T
        with the arrivals it has (or with the first one when it has none).
    """

    name = "abs"
    description = "ABS-style adaptive bounded staleness: wait for K (non-decreasing) arrivals, pre-empt too-stale workers"
    source = "after Tan, Zhu, Zhang, arXiv 2301.08895 (reconstruction); ALGORITHMS.md §3"

    def __init__(
        self,
        lr: float,
        groups: list[list[int]],
        *,
        k0: int = 1,
        p: float = 0.5,
        c: float = 1.0,
        smoothing: float = 0.9,
        round_timeout: float = 0.0,
    ) -> None:
        super().__init__(lr, groups)
        self.round_timeout = round_timeout
        self.k0 = k0
        self.p = p
        self.c = c
        self.smoothing = smoothing

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "ABS":
        lr = read_lr(table, ctx)
        k0 = read_count(table, "k0", ctx)
        p = table.get("p", float, 0.5, minimum=0.0)
        c = table.get("c", float, 1.0, minimum=1.0)
        smoothing = table.get("smoothing", float, 0.9, minimum=0.0)
        if smoothing >= 1.0:
            raise ScenarioError(
                table.key("smoothing"),
                f"{smoothing!r} is not allowed (allowed: 0 <= smoothing < 1)",
            )
        return cls(
            lr,
            cls.default_groups(ctx),
            k0=k0,
            p=p,
            c=c,
            smoothing=smoothing,
            round_timeout=read_round_timeout(table),
        )

    def start(self, ps: ServerActions) -> None:
        self.n_workers_ = len(self.group_index())
        self.k_ = self.k0
        self.tau_max_ = tau_max(self.n_workers_, self.k_, self.c)
        self.signal_: float | None = None
        self.reference_: float | None = None
        self.k_history_: list[int] = [self.k_]
        self.buffer_: list[Push] = []
        self.timer_ = RoundTimer(self.round_timeout)
        self.timer_.open(ps, lambda: self._expire(ps))
        ps.send(range(self.n_workers_))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        self.buffer_.append(push)
        if len(self.buffer_) < self.k_ and not self.timer_.expired:
            return
        self._close(ps)

    def _expire(self, ps: ServerActions) -> None:
        if not self.buffer_:
            self.timer_.expired = True
            return
        present = sorted(p.worker for p in self.buffer_)
        ps.record_event("round_timeout", present=present, k=self.k_)
        self._close(ps)

    def holds(self, worker: int) -> bool:
        return any(p.worker == worker for p in self.buffer_)

    def waiting(self, ps: ServerActions) -> list[Need]:
        pushed = {p.worker for p in self.buffer_}
        others = tuple(w for w in range(self.n_workers_) if w not in pushed)
        return round_needs(
            self.k_ - len(self.buffer_), others, bool(self.buffer_), bool(self.round_timeout)
        )

    def _close(self, ps: ServerActions) -> None:
        pushes, self.buffer_ = self.buffer_, []
        ps.apply(pushes, self.lr, 0)
        self.timer_.open(ps, lambda: self._expire(ps))
        self._adapt(float(np.mean([np.linalg.norm(p.grad) for p in pushes])))
        took = sorted(p.worker for p in pushes)
        chosen = set(took)
        for wid in range(self.n_workers_):
            read = ps.reading(wid)
            if wid not in chosen and read is not None and ps.version - read >= self.tau_max_:
                ps.preempt(wid)
        ps.send(took)

    def _adapt(self, signal: float) -> None:
        """Update F̂, then K (never down) and τ_max."""
        s = self.signal_
        self.signal_ = signal if s is None else self.smoothing * s + (1.0 - self.smoothing) * signal
        if self.reference_ is None:
            self.reference_ = self.signal_
        if self.signal_ > 0:
            self.k_ = next_k(
                self.k_, self.k0, self.reference_ / self.signal_, self.p, self.n_workers_
            )
        self.tau_max_ = tau_max(self.n_workers_, self.k_, self.c)
        self.k_history_.append(self.k_)
