"""Delay-compensated ASGD (Zheng et al., ICML 2017): constant and adaptive λ."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ScenarioError
from ..params import Table
from .base import Push, Rule, RuleContext, ServerActions, read_lr

__all__ = ["DCASGDConstant", "DCASGDAdaptive", "dc_delta", "mean_square", "adaptive_lambda"]


# -- pure math ---------------------------------------------------------------
def dc_delta(
    w: np.ndarray, w_bak: np.ndarray, g: np.ndarray, lr: float, lam: float | np.ndarray
) -> np.ndarray:
    """The DC-ASGD step ``η·(g + λ ⊙ g ⊙ g ⊙ (w − w_bak))``, to subtract from *w*.

    Parameters
    ----------
    w : ndarray of shape (d,), the current model ``w_t``.
    w_bak : ndarray of shape (d,), the model sent to the pushing worker.
    g : ndarray of shape (d,), its gradient, computed at *w_bak*.
    lr : float, η.
    lam : float or ndarray of shape (d,), λ (scalar or element-wise).

    Returns
    -------
    ndarray of shape (d,), a new array: the numbers of ``lr * (g + lam * g * g * (w - w_bak))``
    in that order, with two model-sized temporaries.
    """
    step = np.multiply(lam, g)
    step *= g
    gap = np.subtract(w, w_bak)
    step *= gap
    del gap
    step += g
    step *= lr
    return step


def mean_square(ms: np.ndarray, g: np.ndarray, m: float) -> np.ndarray:
    """``MS ← m·MS + (1 − m)·g ⊙ g``; ndarray (d,), a new array."""
    return m * ms + (1.0 - m) * g * g


def adaptive_lambda(ms: np.ndarray, lambda0: float, eps: float) -> np.ndarray:
    """``λ = λ0 / sqrt(MS + ε)``, recomputed from λ0 each step (never compounded)."""
    return lambda0 / np.sqrt(ms + eps)


# -- rules -------------------------------------------------------------------
class DCASGDConstant(Rule):
    """ASGD with delay compensation and a constant λ.

    When the PS sends ``(w, v)`` to worker m it keeps ``w_bak(m) = w`` (one
    snapshot per worker, here in the rule). When m's gradient g (computed at
    ``w_bak(m)``, version ``push.version``) arrives:
    ``w ← w − η·(g + λ·g ⊙ g ⊙ (w − w_bak(m)))``, version + 1, and only m gets
    the new model (and a new backup). The L2 term is in g (added by the worker
    at the read model, ALGORITHMS.md §0), so it sits inside the g ⊙ g term, as
    in MXNet 2.x. λ = 0 is ASGD exactly.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (every worker alone).
    lambda0 : float, λ >= 0 (default 0.04, MXNet's ``lamda``).
    """

    name = "dcasgd_c"
    real = True
    carries_on = True
    description = "delay-compensated ASGD, constant λ: w ← w − η(g + λ g⊙g⊙(w − w_bak)) with a per-worker backup"
    source = "Zheng et al., ICML 2017 (arXiv 1609.08326), DC-ASGD-c; ALGORITHMS.md §5"
    lean = True
    default_lambda0 = 0.04
    momentum_defined = False

    def __init__(self, lr: float, groups: list[list[int]], *, lambda0: float = 0.04) -> None:
        super().__init__(lr, groups)
        self.lambda0 = lambda0

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "DCASGDConstant":
        lr = read_lr(table, ctx)
        return cls(
            lr,
            cls.default_groups(ctx),
            lambda0=table.get("lambda0", float, cls.default_lambda0, minimum=0.0),
        )

    def start(self, ps: ServerActions) -> None:
        self.group_of_ = self.group_index()
        self.backup_: dict[int, tuple[int, np.ndarray]] = {}
        self._send(ps, range(len(self.group_of_)))

    def _send(self, ps: ServerActions, workers: Sequence[int]) -> None:
        for m in workers:
            self.backup_[m] = (ps.version, ps.w)
        ps.send(workers)

    def on_rejoin(self, ps: ServerActions, worker: int) -> None:
        """A worker back from a crash gets the current model and a fresh backup of it."""
        self._send(ps, (worker,))

    def compensation(self, g: np.ndarray) -> float | np.ndarray:
        """λ for this gradient (a scalar here)."""
        return self.lambda0

    def on_push(self, ps: ServerActions, push: Push) -> None:
        m = push.worker
        version, w_bak = self.backup_.pop(m)
        if version != push.version:  # every send goes to a waiting worker, so it reads at once
            raise RuntimeError(
                f"{self.name}: worker {m} pushed a gradient of version {push.version}, "
                f"but its backup is version {version}"
            )
        delta = dc_delta(ps.w, w_bak, push.grad, self.lr, self.compensation(push.grad))
        ps.step(delta, [push], self.group_of_[m], owned=True)  # a new array: the new model
        self._send(ps, (m,))


class DCASGDAdaptive(DCASGDConstant):
    """DC-ASGD with adaptive λ: ``MS ← m·MS + (1 − m)·g ⊙ g`` (MS starts at 0,
    updated with each arriving gradient before use), ``λ = λ0/sqrt(MS + ε)``
    element-wise, recomputed from λ0 every step (not compounded). No Adam-style
    bias correction.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (every worker alone).
    lambda0 : float, λ0 >= 0 (default 2).
    m : float, MS decay in [0, 1) (default 0.95).
    eps : float, ε > 0 (default 1e-7).
    """

    name = "dcasgd_a"
    real = True
    description = (
        "delay-compensated ASGD, adaptive λ = λ0/sqrt(MS + ε) with MS a moving mean of g⊙g"
    )
    source = "Zheng et al., ICML 2017 (arXiv 1609.08326), DC-ASGD-a; ALGORITHMS.md §5"
    default_lambda0 = 2.0

    def __init__(
        self,
        lr: float,
        groups: list[list[int]],
        *,
        lambda0: float = 2.0,
        m: float = 0.95,
        eps: float = 1e-7,
    ) -> None:
        super().__init__(lr, groups, lambda0=lambda0)
        self.m = m
        self.eps = eps

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "DCASGDAdaptive":
        lr = read_lr(table, ctx)
        lambda0 = table.get("lambda0", float, cls.default_lambda0, minimum=0.0)
        m = table.get("m", float, 0.95, minimum=0.0)
        if m >= 1.0:
            raise ScenarioError(table.key("m"), f"{m!r} is not allowed (allowed: 0 <= m < 1)")
        return cls(
            lr,
            cls.default_groups(ctx),
            lambda0=lambda0,
            m=m,
            eps=table.get("eps", float, 1e-7, positive=True),
        )

    def start(self, ps: ServerActions) -> None:
        self.ms_ = np.zeros_like(ps.w)
        super().start(ps)

    def compensation(self, g: np.ndarray) -> np.ndarray:
        self.ms_ = mean_square(self.ms_, g, self.m)
        return adaptive_lambda(self.ms_, self.lambda0, self.eps)
