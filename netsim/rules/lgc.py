"""LGC-style live gradient compensation (after Xu, Huang, Song, Lan, INFOCOM 2021): a reconstruction."""

from __future__ import annotations

import numpy as np

from ..errors import ScenarioError
from ..params import Table
from .aggregation import weighted_mean_by_worker
from .base import Need, Push, Rule, RuleContext, ServerActions, read_count, read_lr

__all__ = ["LGC"]


class LGC(Rule):
    """LGC-style rule (ALGORITHMS.md §4 reconstruction; not a reproduction).

    Every minibatch of B rows is seen as *blocks* blocks computed one after
    another (equal time each; see :meth:`netsim.sim.server.ParameterServer.collect`).
    Round t (model ``w_t``): the PS waits until K workers have pushed a whole
    minibatch computed on ``w_t`` (they then wait). At that moment it forms

    * the K fresh gradients (τ = 0, B rows each);
    * the **live partial gradient** of every other worker computing: the mean
      over the blocks it has completed and not yet handed in, at the model it
      read (τ = 0 or 1);
    * the **one-step-delayed remainders** that arrived during round t: when a
      worker whose partial was taken at the end of round t − 1 finishes, the
      rows not yet taken (``B·g − Σ taken``, exact for these linear-in-rows
      gradients) are folded into round t (τ = 1);

    and applies their sample-weighted mean ``w ← w − η·Σ n_i g_i / Σ n_i``,
    version + 1, sending ``w_{t+1}`` to the K fast workers. Stragglers keep
    computing (their remainder joins the next round, after which they get the
    newest model). No gradient more than one step old is used: a straggler still
    computing on ``w_{t−1}`` at the end of round t hands in its new blocks and is
    pre-empted (the rest is abandoned, not recorded as a drop); a remainder that
    arrives two or more updates late is dropped (``ps.drop``). K = M and blocks = 1
    give SSGD's schedule.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    k : int, the straggler threshold K in ``1 .. M``.
    blocks : int >= 1, blocks per minibatch (a block is empty when blocks > B).
    """

    name = "lgc"
    compact = False  # partial gradients at the model each straggler read
    description = "LGC-style live gradient compensation: fastest K gradients + stragglers' partial blocks + their one-step-delayed rest"
    source = "after Xu, Huang, Song, Lan, IEEE INFOCOM 2021 (reconstruction); ALGORITHMS.md §4"

    def __init__(self, lr: float, groups: list[list[int]], *, k: int = 1, blocks: int = 4) -> None:
        super().__init__(lr, groups)
        self.k = k
        self.blocks = blocks

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "LGC":
        lr = read_lr(table, ctx)
        k = read_count(table, "k", ctx)
        blocks = table.get("blocks", int, 4)
        if blocks < 1:
            raise ScenarioError(
                table.key("blocks"), f"{blocks!r} is not allowed (allowed: an integer >= 1)"
            )
        return cls(lr, cls.default_groups(ctx), k=k, blocks=blocks)

    def start(self, ps: ServerActions) -> None:
        self.n_workers_ = len(self.group_index())
        self.fresh_: list[Push] = []
        self.delayed_: list[Push] = []
        self.taken_: dict[
            int, tuple[int, np.ndarray | None, int]
        ] = {}  # wid -> (rows, Σ n·g, blocks done)
        ps.send(range(self.n_workers_))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        j = push.worker
        tau = ps.version - push.version
        taken = self.taken_.pop(j, None)
        if taken is None and tau == 0:
            self.fresh_.append(push)
            if len(self.fresh_) == self.k:
                self._close(ps)
            return
        rows, total, _ = taken or (0, None, 0)
        rest = push.samples - rows
        if rest > 0:
            grad = push.grad if total is None else (push.samples * push.grad - total) / rest
            late = Push(j, grad, push.version, push.sent, rest)
            if tau <= 1:
                self.delayed_.append(late)
            else:
                ps.drop(late, f"lgc: remainder {tau} updates old (> 1)")
        ps.send((j,))

    def holds(self, worker: int) -> bool:
        return any(p.worker == worker for p in self.fresh_)

    def on_rejoin(self, ps: ServerActions, worker: int) -> None:
        """Back from a crash: the blocks taken from the lost iteration no longer refer to a push to come."""
        self.taken_.pop(worker, None)
        super().on_rejoin(ps, worker)

    def waiting(self, ps: ServerActions) -> list[Need]:
        pushed = {p.worker for p in self.fresh_}
        others = tuple(w for w in range(self.n_workers_) if w not in pushed)
        return [Need(self.k - len(self.fresh_), others)]

    def _close(self, ps: ServerActions) -> None:
        """End of round: fresh + partial + delayed, one sample-weighted update."""
        fresh = sorted(p.worker for p in self.fresh_)
        parts = self.fresh_ + self.delayed_
        stop = []
        for j in range(self.n_workers_):
            read = ps.reading(j)
            if j in fresh or read is None:
                continue
            tau = ps.version - read
            rows, total, first = self.taken_.get(j, (0, None, 0))
            got = ps.collect(j, self.blocks, first) if tau <= 1 else None
            if got is not None:
                part, done = got
                if part.samples:
                    parts.append(part)
                    weighted = part.samples * part.grad
                    total = weighted if total is None else total + weighted
                    rows += part.samples
                self.taken_[j] = (rows, total, done)
                if tau == 0 or done == self.blocks:
                    continue
            if tau >= 1:  # what it has left would be two or more updates old
                self.taken_.pop(j, None)
                stop.append(j)
        grad = weighted_mean_by_worker(
            [p.grad for p in parts], [p.samples for p in parts], [p.worker for p in parts]
        )
        ps.step(self.lr * grad, parts, 0)
        self.fresh_, self.delayed_ = [], []
        for j in stop:
            ps.preempt(j)
        ps.send(fresh)
