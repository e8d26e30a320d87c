"""The contract between the parameter server and an update rule."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from ..errors import ScenarioError
from ..params import Table
from .schedules import ServerUpdate

__all__ = [
    "Rule",
    "KRule",
    "RuleContext",
    "Push",
    "CompactPush",
    "ServerActions",
    "Need",
    "RoundTimer",
    "stalled_on",
    "read_lr",
    "read_count",
    "read_round_timeout",
]


class Push:
    """A gradient arriving at the PS.

    Attributes: ``worker`` (id), ``grad`` (ndarray (d,)), ``version`` (the PS
    version the worker read), ``sent`` (simulated time the push left, s),
    ``samples`` (minibatch rows behind the gradient). A gradient held in compact
    form arrives as a :class:`CompactPush`.
    """

    __slots__ = ("worker", "grad", "version", "sent", "samples")

    def __init__(
        self, worker: int, grad: np.ndarray, version: int, sent: float, samples: int
    ) -> None:
        self.worker = worker
        self.grad = grad
        self.version = version
        self.sent = sent
        self.samples = samples


class Dense(Protocol):
    """A gradient held in compact form."""

    def dense(self) -> np.ndarray: ...


class CompactPush(Push):
    """A :class:`Push` whose gradient is held in compact form: *compact* has ``dense()``
    (see :class:`netsim.workload.models.CompactGradient`), and ``grad`` builds the dense
    array (d,) on each access."""

    __slots__ = ("compact",)

    def __init__(
        self, worker: int, compact: Dense, version: int, sent: float, samples: int
    ) -> None:
        self.worker = worker
        self.compact = compact
        self.version = version
        self.sent = sent
        self.samples = samples

    @property
    def grad(self) -> np.ndarray:
        return self.compact.dense()

    @grad.setter
    def grad(self, value: np.ndarray) -> None:
        raise AttributeError("a compact push builds its gradient; it cannot be set")


@dataclass(frozen=True)
class RuleContext:
    """What a rule may know of the scenario when it is built.

    ``classes`` maps worker class name → tuple of worker ids; ``model`` is the
    model name (for per-model learning rates); ``n_workers`` the worker count;
    ``until`` (s) and ``max_updates`` the run's horizon (default schedule horizons).
    """

    n_workers: int
    classes: dict
    model: str
    until: float = 0.0
    max_updates: int = 0


class ServerActions(Protocol):
    """What a rule may ask of the parameter server (see :mod:`netsim.sim.server`)."""

    version: int
    w: np.ndarray
    group_updates: list[int]

    @property
    def now(self) -> float: ...
    @property
    def rng(self) -> np.random.Generator: ...  # rules without a PS: peers chosen at random

    def apply(
        self, pushes: list[Push], lr: float, group: int, consume: bool = False
    ) -> None: ...  # consume: the pushes' gradients may be overwritten
    def apply_one(self, push: Push, lr: float, group: int) -> None: ...  # consumes push.grad
    def step(
        self,
        delta: np.ndarray,
        pushes: list[Push],
        group: int,
        scale: float = 1.0,
        owned: bool = False,
    ) -> None: ...
    def send(self, workers: Iterable[int]) -> None: ...
    def drop(self, push: Push, reason: str) -> None: ...
    def preempt(self, worker: int) -> None: ...
    def reading(self, worker: int) -> int | None: ...
    def call_later(self, delay: float, callback: Callable[[], object]) -> None: ...
    def record_event(self, kind: str, **fields: object) -> None: ...
    def is_down(self, worker: int) -> bool: ...
    def reset_groups(self, n_groups: int) -> None: ...
    def collect(self, worker: int, blocks: int, first: int = 0) -> tuple[Push, int] | None: ...

    # rules without a parameter server (each worker holds its own model)
    def use_replicas(self) -> None: ...
    def exchange(
        self,
        workers: Iterable[int],
        steps: list[list[tuple[int, int, float]]],
        callback: Callable[[], object],
    ) -> None: ...
    def group_step(
        self, members: Sequence[int], pushes: list[Push], lr: float, group: int
    ) -> None: ...
    def local_step(self, push: Push, lr: float, group: int) -> None: ...
    def average_models(self, members: Sequence[int], spread: Iterable[int] = ()) -> None: ...


class Rule:
    """A PS update rule: one small class per rule, SimPy-free.

    Subclasses set ``name`` and ``description``, read their hyper-parameters in
    ``from_table`` (validation lives there, never in ``__init__``), and implement
    ``on_push``. ``groups`` is the partition used for reporting. ``update``
    (a :class:`netsim.rules.schedules.ServerUpdate`, set by the scenario from the
    ``lr_*`` and ``momentum`` keys) is how the server schedules and accelerates
    every step the rule makes; rules whose step is not a plain gradient step set
    ``momentum_defined = False``.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    source: ClassVar[str] = ""
    momentum_defined: ClassVar[bool] = True
    lean: ClassVar[bool] = False
    """True when the rule never pre-empts, reads or collects a worker's iteration in
    progress (``preempt``, ``reading``, ``collect``): its workers may then run as lean
    callbacks (:mod:`netsim.sim.lean`)."""
    solo: ClassVar[bool] = False
    """True when every ``send`` after the start reaches one worker with a model no other
    worker reads (ASGD): lean workers then skip looking for computations on one model to
    evaluate together. Only a speed hint: stacked gradients are bitwise those one by one."""
    peer: ClassVar[bool] = False
    """True for a rule without a parameter server: workers pull and push nothing; the rule
    exchanges models or gradients between workers (``ps.exchange``, collectives)."""
    replicated: ClassVar[bool] = False
    """True when each worker holds its own model (``ps.use_replicas``): the steps are plain
    (no learning-rate schedule, no momentum) and the run reports the average model."""
    real: ClassVar[bool] = False
    """True when a real parameter server (``netsim real``) can apply the rule: it only
    applies, sends, drops and times rounds (no pre-emption, no reading of a worker's progress)."""
    carries_on: ClassVar[bool] = False
    """True when no step waits for every worker, so a run goes on without a worker that falls
    silent (a link cut for good): the summary then warns of it (:mod:`netsim.sim.silence`)."""
    compact: ClassVar[bool] = True
    """False when the rule reads a worker's partial gradient at the model it read, so
    ``run.compact_gradients`` cannot apply."""
    update: ServerUpdate = ServerUpdate()

    def real_refusal(self) -> tuple[str, str] | None:
        """``(key, why)`` when this configuration of a :attr:`real` rule still cannot run
        for real (*key* of its ``[algorithms.NAME]`` table); None when it can."""
        return None

    def reads_current(self) -> bool:
        """True when every computation in progress is on the PS's current model: each
        update pre-empts or completes every other computation, and every worker restarts
        on the new model (K-sync, K-batch-sync, backup workers that cancel). With
        ``run.compact_gradients`` a worker then keeps its model (one version, shared)
        and evaluates its gradient's factors when the computation ends, so pre-empted
        computations cost nothing; otherwise it evaluates them as the model arrives and
        lets the model go. The numbers are the same either way."""
        return False

    def __init__(self, lr: float, groups: list[list[int]]) -> None:
        self.lr = lr
        self.groups = groups

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "Rule":
        """Build from the scenario's ``[algorithms.NAME]`` table (validated)."""
        return cls(read_lr(table, ctx), cls.default_groups(ctx))

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        """Reporting partition: every worker alone."""
        return [[i] for i in range(ctx.n_workers)]

    def group_index(self) -> list[int]:
        """Group id of each worker, list of length n_workers."""
        index = [0] * sum(len(g) for g in self.groups)
        for k, members in enumerate(self.groups):
            for wid in members:
                index[wid] = k
        return index

    def solo_step(self, worker: int) -> tuple[float, int] | None:
        """``(η, group)`` when :meth:`on_push` answers every push from *worker* with exactly
        ``ps.apply_one(push, η, group)`` and ``ps.send((worker,))`` (ASGD), else None.

        Lean workers then hand their pushes to ``ps.apply_solo`` (the same update, records
        and reply in one call). Called once per worker after :meth:`start`; the answer
        must hold for the whole run. tests/sim/test_lean.py checks that every rule
        giving one has bitwise the results of the worker processes."""
        return None

    def probe_rounds(self) -> int:
        """Measurement rounds the rule needs before training starts (0: none).

        When positive, the engine measures every worker for that many rounds and
        hands the per-iteration times to :meth:`on_measured` before :meth:`start`.
        """
        return 0

    def on_measured(self, iteration: np.ndarray, seed: int) -> dict:
        """Use measured per-iteration times *iteration* (n_workers, rounds), s; return
        what ``summary.json`` records under ``grouping``."""
        raise NotImplementedError(f"{self.name} asks for no measurement")

    def wants_recommendation(self) -> bool:
        """True when the engine should choose groups and η by racing pilot emulations
        (:mod:`netsim.tuning.race`) after the measurement, then call ``adopt(groups, lr)``."""
        return False

    def grouping_record(self) -> dict | None:
        """What ``summary.json`` records under ``grouping`` without a measurement (None: nothing)."""
        return None

    def start(self, ps: ServerActions) -> None:
        """At time 0: by default every worker gets the initial model."""
        ps.send(range(len(self.group_index())))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        raise NotImplementedError

    def on_rejoin(self, ps: ServerActions, worker: int) -> None:
        """A crashed worker is back (called only after ``start``): it gets the current
        model, unless the rule holds a gradient it pushed in the round still open
        (:meth:`holds`); then it waits for the round's end like the others."""
        if not self.holds(worker):
            ps.send((worker,))

    def holds(self, worker: int) -> bool:
        """Whether *worker* pushed in the open round and waits for its end (default: never)."""
        return False

    def waiting(self, ps: ServerActions) -> list["Need"]:
        """What the next update needs, as alternatives (any one suffices).

        The engine uses it to tell a stalled run (no update can ever happen again)
        from a slow one: the run is stalled when, for every alternative, fewer than
        ``count`` of its ``workers`` can still push (the others are down for good).
        Default: any push of any worker leads to an update (ASGD-like rules).
        """
        return [Need(1, None)]


@dataclass(frozen=True)
class Need:
    """The next update happens once *count* more distinct workers among *workers* push.

    ``workers`` None: any worker. ``Need(0, ())``: it happens without any push (a round
    timer is running).
    """

    count: int
    workers: tuple | None


def round_needs(count: int, others: tuple, has_arrivals: bool, timed: bool) -> list[Need]:
    """What a round still needs: *count* more pushes among *others* (the workers not
    yet in it); under a round timeout, nothing once it holds a gradient (the timer
    closes it), else its first arrival.

    >>> round_needs(2, (1, 2), True, False), round_needs(2, (1, 2), True, True)
    ([Need(count=2, workers=(1, 2))], [Need(count=0, workers=())])
    >>> round_needs(2, (1, 2), False, True)
    [Need(count=1, workers=(1, 2))]
    """
    if timed:
        return [Need(0, ())] if has_arrivals else [Need(1, others)]
    return [Need(count, others)]


def stalled_on(needs: list[Need], lost: set, n_workers: int) -> list[int] | None:
    """The lost workers that block every alternative of *needs*, or None when an
    update can still happen.

    *lost*: set of worker ids down with no recovery scheduled (of *n_workers*).

    >>> stalled_on([Need(2, (1, 2))], {2}, 3), stalled_on([Need(1, (1, 2))], {2}, 3)
    ([2], None)
    >>> stalled_on([Need(1, (0,)), Need(1, (3, 4))], {0, 3, 4}, 5), stalled_on([Need(0, ())], {1}, 2)
    ([0, 3, 4], None)
    >>> stalled_on([Need(1, None)], {0, 1}, 3), stalled_on([Need(1, None)], {0, 1, 2}, 3)
    (None, [0, 1, 2])
    """
    blocking: set[int] = set()
    for need in needs:
        size = n_workers if need.workers is None else len(need.workers)
        if need.count <= size - len(lost):  # met even if every lost worker is among them
            return None
        if need.workers is None:
            gone = lost
        else:
            members = set(need.workers)
            gone = {w for w in lost if w in members}
        if size - len(gone) >= need.count:
            return None
        blocking.update(gone)
    return sorted(blocking)


class RoundTimer:
    """The optional deadline of each round of a synchronous rule (``round_timeout``, s).

    :meth:`open` starts a round; *seconds* later ``expire()`` is called unless another
    round was opened meanwhile. A rule's ``expire`` closes the round with the
    gradients it has or, when it has none, sets ``expired`` so the next arrival closes
    it at once. With ``seconds == 0`` nothing is ever scheduled.
    """

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.round = 0
        self.expired = False

    def open(self, ps: ServerActions, expire: Callable[[], object]) -> None:
        self.round += 1
        self.expired = False
        if self.seconds:
            r = self.round
            ps.call_later(self.seconds, lambda: self.round == r and expire())


def read_round_timeout(table: Table) -> float:
    """The optional ``round_timeout`` key (s, >= 0; 0 means wait for ever)."""
    return table.get("round_timeout", float, 0.0, minimum=0.0)


def check_model_names(per_model: Table, model: str) -> None:
    """Refuse a per-model table (``lr = { logistic = 0.1 }``) naming a model that does not
    exist: a typo would otherwise be silently ignored. The names allowed: every registered
    model (numpy and torch built-ins) and the scenario's own *model* (a user module's class)."""
    import difflib

    from ..workload.models import MODELS
    from ..workload.torch_nets import TORCH_NETS

    known = sorted({*MODELS, *TORCH_NETS, model})
    for name in per_model.data:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ScenarioError(
                per_model.key(name), f"unknown model ({hint}allowed: {', '.join(known)})"
            )


def read_lr(table: Table, ctx: RuleContext) -> float:
    """The ``lr`` key: a number > 0, or a table with one such number per model name."""
    if not isinstance(table.get("lr", (float, dict)), dict):
        return table.get("lr", float, positive=True)
    per_model = table.table("lr")
    for name in per_model.data:
        per_model.get(name, float, positive=True)
    check_model_names(per_model, ctx.model)
    if ctx.model not in per_model.data:
        given = ", ".join(per_model.data) or "none"
        raise ScenarioError(
            per_model.key(ctx.model),
            f"missing: no learning rate for model {ctx.model!r} (given for: {given})",
        )
    return per_model.data[ctx.model]


class KRule(Rule):
    """A rule with one integer knob ``k`` (1..P) and one reporting group of all workers."""

    def __init__(self, lr: float, groups: list[list[int]], *, k: int = 1) -> None:
        super().__init__(lr, groups)
        self.k = k

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "KRule":
        return cls(read_lr(table, ctx), cls.default_groups(ctx), k=read_count(table, "k", ctx))


def read_count(table: Table, name: str, ctx: RuleContext, default: int | None = None) -> int:
    """A worker count such as K: an integer in ``1 .. n_workers`` (required if *default* is None)."""
    value = table.get(name, int) if default is None else table.get(name, int, default)
    if not 1 <= value <= ctx.n_workers:
        raise ScenarioError(
            table.key(name),
            f"{value!r} is not allowed (allowed: 1..{ctx.n_workers}, the number of workers)",
        )
    return value
