"""Synchronous SGD with backup workers (Chen et al. 2016)."""

from __future__ import annotations

from ..errors import ScenarioError
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

__all__ = ["Backup", "LATE_POLICIES"]

LATE_POLICIES = ("finish_then_drop", "cancel")


class Backup(Rule):
    """N + b workers; step t averages the first N gradients computed on ``w_t``.

    ``w_{t+1} = w_t − η·(1/N)·Σ_{first N} g`` (divided by N, not N + b); version
    + 1; the N contributors get the new model. A gradient computed for an
    older step is dropped (``ps.drop``), never applied stale. What the b late
    workers do depends on *late_policy*:

    * ``"finish_then_drop"`` (the paper's and TensorFlow's
      SyncReplicasOptimizer): they finish, push, are dropped, then take the
      newest model.
    * ``"cancel"`` (Dutta et al.'s K-sync): they are pre-empted at the update
      and restart on the new model at once; the cancelled work is neither
      applied nor dropped (it never becomes a gradient).

    With ``round_timeout`` = T > 0 (s), a step that started at t closes at t + T with
    the gradients it has (or with the first one to arrive when it has none). A
    worker that crashes after pushing and returns within the step waits for its end.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    backups : int, b in ``0 .. n_workers − 1``; N = n_workers − b.
    late_policy : str, one of :data:`LATE_POLICIES`.
    round_timeout : float, s (0: wait for N gradients however long it takes).
    """

    name = "backup"
    real = True
    description = "synchronous SGD with b backup workers: average the first N = M − b gradients of each step, drop the rest"
    source = "Chen, Pan, Monga, Bengio, Jozefowicz, arXiv 1604.00981 (2016); ALGORITHMS.md §2"

    def __init__(
        self,
        lr: float,
        groups: list[list[int]],
        *,
        backups: int = 0,
        late_policy: str = "finish_then_drop",
        round_timeout: float = 0.0,
    ) -> None:
        super().__init__(lr, groups)
        self.backups = backups
        self.late_policy = late_policy
        self.round_timeout = round_timeout

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    def real_refusal(self) -> tuple[str, str] | None:
        if self.late_policy == "cancel":
            return (
                "late_policy",
                "'cancel' pre-empts computations: a real run needs 'finish_then_drop'",
            )
        return None

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "Backup":
        lr = read_lr(table, ctx)
        backups = table.get("backups", int)
        if not 0 <= backups < ctx.n_workers:
            raise ScenarioError(
                table.key("backups"),
                f"{backups!r} is not allowed: N + b must equal the "
                f"{ctx.n_workers} workers with N >= 1 (allowed: 0..{ctx.n_workers - 1})",
            )
        policy = table.get("late_policy", str, "finish_then_drop", choices=LATE_POLICIES)
        return cls(
            lr,
            cls.default_groups(ctx),
            backups=backups,
            late_policy=policy,
            round_timeout=read_round_timeout(table),
        )

    def reads_current(self) -> bool:
        return self.late_policy == "cancel"  # finish_then_drop: late workers finish on older models

    def aggregate_count(self, n_workers: int) -> int:
        """N, the gradients averaged per step."""
        return n_workers - self.backups

    def start(self, ps: ServerActions) -> None:
        self.n_workers_ = len(self.group_index())
        self.n_ = self.aggregate_count(self.n_workers_)
        self.buffer_: list[Push] = []
        self.timer_ = RoundTimer(self.round_timeout)
        self.timer_.open(ps, lambda: self._expire(ps))
        ps.send(range(self.n_workers_))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        if push.version != ps.version:
            ps.drop(push, f"late: step {push.version} already applied")
            ps.send((push.worker,))
            return
        self.buffer_.append(push)
        if len(self.buffer_) < self.n_ and not self.timer_.expired:
            return
        self._close(ps)

    def _close(self, ps: ServerActions) -> None:
        ps.apply(self.buffer_, self.lr, 0)
        took = sorted(p.worker for p in self.buffer_)
        self.buffer_ = []
        self.timer_.open(ps, lambda: self._expire(ps))
        if self.late_policy == "cancel":
            chosen = set(took)
            for wid in range(self.n_workers_):
                if wid not in chosen:
                    ps.preempt(wid)
        ps.send(took)

    def _expire(self, ps: ServerActions) -> None:
        if not self.buffer_:
            self.timer_.expired = True
            return
        present = sorted(p.worker for p in self.buffer_)
        ps.record_event(
            "round_timeout",
            present=present,
            missing=[w for w in range(self.n_workers_) if w not in present],
        )
        self._close(ps)

    def holds(self, worker: int) -> bool:
        return any(p.worker == worker for p in self.buffer_)

    def waiting(self, ps: ServerActions) -> list[Need]:
        pushed = {p.worker for p in self.buffer_}
        others = tuple(w for w in range(self.n_workers_) if w not in pushed)
        return round_needs(
            self.n_ - len(self.buffer_), others, bool(self.buffer_), bool(self.round_timeout)
        )
