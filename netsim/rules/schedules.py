"""Learning-rate schedules and server momentum: pure math applied to every rule's step (ALGORITHMS.md §10.2, §10.3).

A rule computes its step ``delta`` with its base rate η0 (``w ← w − delta``). The
server then scales it by the schedule's factor ``f(s)`` and passes it through
momentum (:class:`ServerUpdate`). The clock *s* is either the number of the
update being made (``unit = "updates"``, 1-based: the first update has s = 1) or
the simulated time of the update (``unit = "seconds"``).

Factors (η_s = η0 · warmup(s) · decay(s)):

- ``constant``: 1
- ``step``: ``γ^floor(s / S)`` (γ = ``lr_decay`` in (0, 1], S = ``lr_step`` > 0)
- ``inverse_time``: ``1 / (1 + k·s)`` (k = ``lr_decay`` > 0)
- ``inverse_sqrt``: ``1 / sqrt(1 + k·s)`` (k = ``lr_decay`` > 0)
- ``cosine``: ``ρ + (1 − ρ)·(1 + cos(π·min(s, T)/T))/2`` (T = ``lr_horizon`` > 0, ρ = ``lr_floor`` in [0, 1))
- warmup (any schedule, W = ``lr_warmup`` > 0): multiplied by ``min(1, s / W)``

Momentum (μ = ``momentum`` in [0, 1), velocity v0 = 0), on the scheduled step δ_t:

- heavy ball: ``v ← μ·v + δ_t``, ``w ← w − v``
- Nesterov: ``v ← μ·v + δ_t``, ``w ← w − (μ·v + δ_t)`` (the form of Sutskever et al. 2013 as
  written in PyTorch's SGD, with the gradient taken at the model the worker read)

Weight decay λ (``weight_decay``, any optimizer) at the server's current model w, sparing the
1-d parameters with ``weight_decay_1d = false``: SGD adds ``η·λ·w`` to the rule's step before
the schedule and momentum (PyTorch SGD's ``weight_decay``); Adam and AdamW
(:mod:`netsim.rules.optimizers`) take the rule's aggregated gradient ``g = δ / η`` (η the rate of
the step: the rule's rate times the step's scale) and step at rate ``η·f(s)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import ScenarioError
from ..params import Table
from .optimizers import OPTIMIZERS, Adam, decayed

__all__ = [
    "Schedule",
    "ServerUpdate",
    "UpdateState",
    "SCHEDULES",
    "UNITS",
    "read_update",
    "heavy_ball",
    "nesterov",
]

SCHEDULES = ("constant", "step", "inverse_time", "inverse_sqrt", "cosine")
UNITS = ("updates", "seconds")


@dataclass(frozen=True)
class Schedule:
    """A learning-rate factor as a function of the clock *s* (see the module docstring)."""

    kind: str = "constant"
    unit: str = "updates"
    decay: float = 0.0
    step: float = 0.0
    horizon: float = 0.0
    floor: float = 0.0
    warmup: float = 0.0

    @property
    def trivial(self) -> bool:
        """True when the factor is 1 at every s."""
        return self.kind == "constant" and not self.warmup

    def factor(self, s: float) -> float:
        """η_s / η0 at clock *s* (update number >= 1, or simulated time >= 0 s)."""
        if self.kind == "constant":
            f = 1.0
        elif self.kind == "step":
            f = self.decay ** math.floor(s / self.step)
        elif self.kind == "inverse_time":
            f = 1.0 / (1.0 + self.decay * s)
        elif self.kind == "inverse_sqrt":
            f = 1.0 / math.sqrt(1.0 + self.decay * s)
        else:
            f = self.floor + (1.0 - self.floor) * 0.5 * (
                1.0 + math.cos(math.pi * min(s, self.horizon) / self.horizon)
            )
        if self.warmup:
            f *= min(1.0, s / self.warmup)
        return f


def heavy_ball(v: np.ndarray | None, delta: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """(new velocity, step to subtract): ``v ← μ·v + δ``; step ``v``. *v* None means zeros."""
    v = delta.copy() if v is None else mu * v + delta
    return v, v


def nesterov(v: np.ndarray | None, delta: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """(new velocity, step to subtract): ``v ← μ·v + δ``; step ``μ·v + δ``."""
    v = delta.copy() if v is None else mu * v + delta
    return v, mu * v + delta


@dataclass(frozen=True)
class ServerUpdate:
    """How the server turns a rule's step into the model change: schedule, then momentum."""

    schedule: Schedule = Schedule()
    momentum: float = 0.0
    nesterov: bool = False
    optimizer: str = "sgd"
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    decay_1d: bool = True

    @property
    def trivial(self) -> bool:
        """True when the rule's step is applied unchanged (constant rate, plain SGD)."""
        return (
            self.schedule.trivial
            and not self.momentum
            and self.optimizer == "sgd"
            and not self.weight_decay
        )

    @property
    def spares_1d(self) -> bool:
        """True when weight decay must know which entries are 1-d parameters."""
        return bool(self.weight_decay) and not self.decay_1d

    def as_dict(self) -> dict:
        """What summary.json records of it: the schedule's kind and its keys that are set,
        and momentum (with ``nesterov``) when there is some.

        >>> ServerUpdate().as_dict()
        {'lr_schedule': 'constant'}
        >>> ServerUpdate(Schedule("inverse_time", decay=0.01), momentum=0.9).as_dict()
        {'lr_schedule': 'inverse_time', 'lr_unit': 'updates', 'lr_decay': 0.01, 'momentum': 0.9, 'nesterov': False}
        """
        sched = self.schedule
        out: dict = {"lr_schedule": sched.kind}
        if not sched.trivial:
            out["lr_unit"] = sched.unit
            for key in ("decay", "step", "horizon", "floor", "warmup"):
                if getattr(sched, key):
                    out[f"lr_{key}"] = getattr(sched, key)
        if self.momentum:
            out.update(momentum=self.momentum, nesterov=self.nesterov)
        if self.optimizer != "sgd":
            out.update(optimizer=self.optimizer, betas=list(self.betas), eps=self.eps)
        if self.weight_decay:
            out.update(weight_decay=self.weight_decay, weight_decay_1d=self.decay_1d)
        return out

    def state(self, spared: Iterable[tuple[int, int]] = ()) -> "UpdateState":
        """Fresh per-run state (velocity and moments zero); *spared*: the ``(lo, hi)`` ranges
        of the flat vector that weight decay leaves alone (the 1-d parameters when
        ``weight_decay_1d`` is false)."""
        return UpdateState(self, spared)


class UpdateState:
    """The server-side optimiser state of one run: ``step(delta, update, now)`` → the change."""

    def __init__(self, config: ServerUpdate, spared: Iterable[tuple[int, int]] = ()) -> None:
        self.config = config
        self.velocity: np.ndarray | None = None
        self.spared = tuple(spared) if config.spares_1d else ()
        self.adam = (
            Adam(
                config.betas,
                config.eps,
                config.weight_decay,
                config.optimizer == "adamw",
                self.spared,
            )
            if config.optimizer != "sgd"
            else None
        )

    @property
    def fresh_steps(self) -> bool:
        """Whether :meth:`step` returns a new array it keeps no reference to (Adam, AdamW:
        the caller may write the new model into it)."""
        return self.adam is not None

    def lr_factor(self, update: int, now: float) -> float:
        """Schedule factor for update number *update* (1-based) at simulated time *now* (s)."""
        sch = self.config.schedule
        return sch.factor(update if sch.unit == "updates" else now)

    def step(
        self,
        delta: np.ndarray,
        update: int,
        now: float,
        w: np.ndarray | None = None,
        rate: float = 1.0,
        owned: bool = False,
    ) -> np.ndarray:
        """The model change ``w_old − w_new`` for the rule's *delta* (ndarray (d,); not
        modified unless *owned*: a new array nobody else holds, which Adam then uses for its
        gradient): update number *update* (1-based) at *now* (s), from the current model *w*
        (d,; read by weight decay), *rate* the step's η (``delta = η·g``). With
        :attr:`fresh_steps` the change is a new array this state does not keep."""
        cfg = self.config
        factor = 1.0 if cfg.schedule.trivial else self.lr_factor(update, now)
        if self.adam is not None:
            g = np.divide(delta, rate, out=delta if owned else None)
            return self.adam.step(g, rate * factor, _model(w))
        if cfg.weight_decay:
            delta = delta + decayed(_model(w), rate * cfg.weight_decay, self.spared)
        if not cfg.schedule.trivial:
            delta = factor * delta
        if cfg.momentum:
            self.velocity, delta = (nesterov if cfg.nesterov else heavy_ball)(
                self.velocity, delta, cfg.momentum
            )
        return delta


_KEYS = {
    "step": ("lr_decay", "lr_step"),
    "inverse_time": ("lr_decay",),
    "inverse_sqrt": ("lr_decay",),
    "cosine": ("lr_horizon", "lr_floor"),
    "constant": (),
}


def read_update(
    table: Table,
    *,
    until: float = 0.0,
    max_updates: int = 0,
    momentum_defined: bool = True,
    rule: str = "",
) -> ServerUpdate:
    """The schedule and momentum keys of an ``[algorithms.X]`` table.

    ``lr_schedule`` (one of :data:`SCHEDULES`), ``lr_unit`` (``updates`` or
    ``seconds``), ``lr_decay``, ``lr_step``, ``lr_horizon`` (default: ``run.until``
    in seconds, ``run.max_updates`` in updates), ``lr_floor``, ``lr_warmup``,
    ``momentum`` in [0, 1), ``nesterov``, ``optimizer`` (:data:`~netsim.rules.optimizers.OPTIMIZERS`),
    ``betas``, ``eps``, ``weight_decay``, ``weight_decay_1d``. Raises ScenarioError naming the key.
    """
    kind = table.get("lr_schedule", str, "constant", choices=SCHEDULES)
    unit = table.get("lr_unit", str, "updates", choices=UNITS)
    for key in ("lr_decay", "lr_step", "lr_horizon", "lr_floor"):
        if table.has(key) and key not in _KEYS[kind]:
            raise ScenarioError(
                table.key(key),
                f"does not apply to lr_schedule = {kind!r} "
                f"(keys it reads: {', '.join(_KEYS[kind]) or 'none'})",
            )
    decay = step = horizon = floor = 0.0
    if kind == "step":
        decay = table.get("lr_decay", float, positive=True, maximum=1.0)
        step = table.get("lr_step", float, positive=True)
    elif kind in ("inverse_time", "inverse_sqrt"):
        decay = table.get("lr_decay", float, positive=True)
    elif kind == "cosine":
        default = until if unit == "seconds" else float(max_updates)
        horizon = table.get("lr_horizon", float, default if default > 0 else None, positive=True)
        if horizon is None:
            raise ScenarioError(
                table.key("lr_horizon"),
                "missing: a cosine schedule in updates needs lr_horizon "
                "(> 0 updates) or run.max_updates",
            )
        floor = table.get("lr_floor", float, 0.0, minimum=0.0)
        if floor >= 1.0:
            raise ScenarioError(
                table.key("lr_floor"), f"{floor!r} is not allowed (0 <= lr_floor < 1)"
            )
    warmup = table.get("lr_warmup", float, 0.0, minimum=0.0)
    if table.has("lr_warmup") and warmup <= 0:
        raise ScenarioError(
            table.key("lr_warmup"),
            f"{warmup!r} is not allowed (must be > 0; leave it out for none)",
        )
    if not momentum_defined:
        for key in ("momentum", "nesterov", *_OPTIMIZER_KEYS):
            if table.has(key):
                raise ScenarioError(
                    table.key(key),
                    f"not defined for {rule} (its delay compensation is its own "
                    "update rule); use it with the other rules",
                )
        return ServerUpdate(Schedule(kind, unit, decay, step, horizon, floor, warmup))
    momentum = table.get("momentum", float, 0.0, minimum=0.0)
    if momentum >= 1.0:
        raise ScenarioError(
            table.key("momentum"), f"{momentum!r} is not allowed (0 <= momentum < 1)"
        )
    use_nesterov = table.get("nesterov", bool, False)
    if use_nesterov and not momentum:
        raise ScenarioError(table.key("nesterov"), "needs momentum > 0")
    return ServerUpdate(
        Schedule(kind, unit, decay, step, horizon, floor, warmup),
        momentum,
        use_nesterov,
        **_read_optimizer(table),
    )


_OPTIMIZER_KEYS = ("optimizer", "betas", "weight_decay", "weight_decay_1d")
"""The optimizer's keys a rule without momentum refuses (``eps`` is DC-ASGD's own)."""


def _read_optimizer(table: Table) -> dict:
    """``optimizer``, ``betas``, ``eps``, ``weight_decay``, ``weight_decay_1d`` of a rule's
    table (after its momentum), as ServerUpdate's keyword arguments; ScenarioError naming
    the key."""
    optimizer = table.get("optimizer", str, "sgd", choices=OPTIMIZERS)
    betas = table.get("betas", list, [0.9, 0.999], item=float)
    eps = table.get("eps", float, 1e-8)
    weight_decay = table.get("weight_decay", float, 0.0, minimum=0.0)
    decay_1d = table.get("weight_decay_1d", bool, True)
    if optimizer == "sgd":
        for key in ("betas", "eps"):
            if table.has(key):
                raise ScenarioError(table.key(key), "applies to optimizer = 'adam' or 'adamw' only")
    else:
        for key in ("momentum", "nesterov"):
            if table.has(key):
                raise ScenarioError(
                    table.key(key),
                    f"not used by optimizer = {optimizer!r}, which keeps its own moments "
                    "(set betas instead)",
                )
    if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
        raise ScenarioError(
            table.key("betas"), f"{betas!r} is not allowed (two numbers, each 0 <= beta < 1)"
        )
    if not eps > 0:
        raise ScenarioError(table.key("eps"), f"{eps!r} is not allowed (must be > 0)")
    if table.has("weight_decay_1d") and not weight_decay:
        raise ScenarioError(table.key("weight_decay_1d"), "needs weight_decay > 0")
    return {
        "optimizer": optimizer,
        "betas": (float(betas[0]), float(betas[1])),
        "eps": eps,
        "weight_decay": weight_decay,
        "decay_1d": decay_1d,
    }


def _model(w: np.ndarray | None) -> np.ndarray:
    """*w*, which Adam and weight decay need (ValueError without it)."""
    if w is None:
        raise ValueError("Adam and weight decay step from the model: pass w")
    return w
