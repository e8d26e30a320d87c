"""Group SGD (Gao & Chen 2020): synchronous inside a group, asynchronous across."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ScenarioError
from ..grouping.clustering import Grouping, choose_grouping, parse_method
from ..params import Table
from .base import Need, Push, Rule, RuleContext, ServerActions, read_lr

__all__ = ["GSGD", "GroupingSpec", "parse_groups", "group_weights", "WEIGHTINGS"]

WEIGHTINGS = ("none", "inverse_rate", "fedat")
"""Bias-aware group weightings of GSGD (see :func:`group_weights`)."""


def group_weights(updates: ArrayLike, method: str) -> np.ndarray:
    """Per-group step weights (K,), mean 1, countering how often each group updates.

    *updates* (K,) are the groups' update counts so far; with ``c = updates + 1``
    (so that no count is zero):

    - ``inverse_rate``: ``w_k ∝ 1/c_k`` (all groups have run for the same time, so
      this is ∝ 1 / observed update rate), normalised to mean 1.
    - ``fedat``: FedAT's cross-tier rule (Chai et al., SC 2021): with groups ranked by
      update count, most first, the group of rank r gets the count of the group of
      rank K−1−r, normalised to mean 1 (FedAT weights tier i by T_(M+1−i)/T). Groups
      with equal counts share their ranks: each gets the mean of those ranks' weights,
      so equal counts give equal weights, whatever the groups' order.
    - ``none``: all ones.

    See ALGORITHMS.md §10.4.

    >>> group_weights([5, 5, 1], "fedat").round(4).tolist()
    [0.8571, 0.8571, 1.2857]
    """
    c = np.asarray(updates, dtype=float) + 1.0
    if method == "none":
        return np.ones_like(c)
    if method == "inverse_rate":
        w = 1.0 / c
    else:
        order = np.argsort(-c, kind="stable")  # ranks, most updates first
        ranked = c[order]
        mirrored = ranked[::-1].copy()  # rank r's weight: the count of rank K-1-r
        _, first, size = np.unique(-ranked, return_index=True, return_counts=True)
        for i, n in zip(first, size):
            if n > 1:  # tied ranks share the mean of their weights
                mirrored[i : i + n] = mirrored[i : i + n].mean()
        w = np.empty_like(c)
        w[order] = mirrored
    return w / w.mean()


@dataclass(frozen=True)
class GroupingSpec:
    """How GSGD forms and maintains its groups.

    ``method``: ``hand`` (the ``groups`` key), ``auto`` (= ``race``: the grouping
    and η that pilot emulations predict reach the target loss first,
    :mod:`netsim.tuning.race`), ``silhouette`` (K by silhouette, no emulation),
    ``kmeans:K`` or ``equal:K`` (formed from a measurement phase of ``probe_rounds``
    iterations per worker);
    ``k_max``, ``jitter``, ``min_silhouette``, ``homogeneous_ratio``: see
    :func:`netsim.grouping.clustering.auto_groups`. ``timeout`` (s, 0: none): a group's round that
    started (its members were sent the model) at t closes at t + timeout with the
    gradients it has; when it has none, the first gradient to arrive closes it. ``regroup_every`` (updates, 0: never) or
    ``regroup_every_s`` (simulated s, 0: never): re-cluster from the last
    ``regroup_window`` iteration times observed at the PS. ``weighting`` (one of
    :data:`WEIGHTINGS`): scale each group's step by :func:`group_weights` of the
    groups' update counts since the last (re)grouping.
    """

    method: str = "hand"
    k_max: int = 8
    probe_rounds: int = 5
    jitter: bool = False
    min_silhouette: float = 0.6
    homogeneous_ratio: float = 1.25
    timeout: float = 0.0
    regroup_every: int = 0
    regroup_every_s: float = 0.0
    regroup_window: int = 5
    weighting: str = "none"


class GSGD(Rule):
    """Workers are partitioned into groups. A group's members compute on the same
    model; once all have pushed, the PS applies ``w ← w − η·mean(group)`` and sends
    the new model to that group only. η is not scaled by group size. Optional:
    groups formed from measurements, a per-round timeout, online regrouping."""

    name = "gsgd"
    real = True
    carries_on = True
    description = "group SGD: synchronous inside each group, asynchronous across groups"
    source = "Gao & Chen, J. USTC 50(8), 2020; ALGORITHMS.md §1c"
    lean = True

    def __init__(
        self, lr: float, groups: list[list[int]], grouping: GroupingSpec = GroupingSpec()
    ) -> None:
        super().__init__(lr, groups)
        self.grouping = grouping

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "GSGD":
        lr = read_lr(table, ctx)
        groups = read_groups(table, ctx)
        grouping = replace(
            read_grouping(table, ctx),
            jitter=table.get("jitter_feature", bool, False),
            min_silhouette=table.get("min_silhouette", float, 0.6, minimum=-1.0, maximum=1.0),
            homogeneous_ratio=table.get("homogeneous_ratio", float, 1.25, minimum=1.0),
            timeout=table.get("group_timeout", float, 0.0, minimum=0.0),
            regroup_every=table.get("regroup_every", int, 0, minimum=0),
            regroup_every_s=table.get("regroup_every_s", float, 0.0, minimum=0.0),
            regroup_window=table.get("regroup_window", int, 5, minimum=1),
            weighting=table.get("group_weighting", str, "none", choices=WEIGHTINGS),
        )
        return cls(lr, groups, grouping)

    def probe_rounds(self) -> int:
        """Measure first unless the groups are given by hand."""
        return 0 if self.grouping.method == "hand" else self.grouping.probe_rounds

    def on_measured(self, iteration: np.ndarray, seed: int) -> dict:
        chosen = self.choose(iteration, seed=seed)
        self.set_groups(chosen.groups)
        return chosen.as_dict()

    def real_refusal(self) -> tuple[str, str] | None:
        if self.grouping.regroup_every or self.grouping.regroup_every_s:
            return (
                "regroup_every",
                "online regrouping is emulated only (a real run keeps its hand groups)",
            )
        return None

    def grouping_record(self) -> dict:
        return {"method": "hand", "k": len(self.groups), "members": [list(g) for g in self.groups]}

    def wants_recommendation(self) -> bool:
        """True for ``grouping = "auto"`` or ``"race"``: the engine races pilot emulations
        of candidate (grouping, η) pairs (:mod:`netsim.tuning.race`) and calls :meth:`adopt`."""
        return self.grouping.method in ("auto", "race")

    def piloted(self, groups: Iterable[Iterable[int]], lr: float) -> "GSGD":
        """A copy with fixed *groups* and step *lr*, the other options kept (a race's pilot)."""
        return GSGD(lr, [list(g) for g in groups], replace(self.grouping, method="hand"))

    def adopt(self, groups: Iterable[Iterable[int]], lr: float) -> None:
        """Use the recommended *groups* and step *lr* (before ``start``)."""
        self.set_groups(groups)
        self.lr = float(lr)

    def choose(self, times: np.ndarray, seed: int, method: str | None = None) -> Grouping:
        """The grouping this rule's method makes of measured *times* (n_workers, rounds), s."""
        return choose(self.grouping, self.groups, times, seed, method)

    def start(self, ps: ServerActions) -> None:
        n = len(self.group_index())
        self._regroup_to(self.groups)
        self.buffers_: list[dict] = [{} for _ in self.groups]
        self.next_round_ = 0
        self.rounds_ = [0] * len(self.groups)  # a fresh id per group round, for timers
        self.expired_ = [False] * len(self.groups)
        for k in range(len(self.groups)):
            self._open_round(ps, k)
        self.sent_at_ = [0.0] * n
        self.observed_: list[list[float]] = [[] for _ in range(n)]
        self.observing_ = bool(self.grouping.regroup_every or self.grouping.regroup_every_s)
        """Iteration times are kept (``observed_``) only for regrouping, their one reader."""
        self.counted_at_: float | None = None
        self.counted_: list[int] = []
        ps.send(range(n))
        if self.grouping.regroup_every_s:
            self._schedule_regroup(ps)

    def _schedule_regroup(self, ps: ServerActions) -> None:
        def tick() -> None:
            self._regroup(ps)
            self._schedule_regroup(ps)

        ps.call_later(self.grouping.regroup_every_s, tick)

    def on_push(self, ps: ServerActions, push: Push) -> None:
        wid = push.worker
        if self.observing_:
            seen = self.observed_[wid]
            seen.append(ps.now - self.sent_at_[wid])
            del seen[: -self.grouping.regroup_window]
        k = self.group_of_[wid]
        buffer = self.buffers_[k]
        buffer[wid] = push
        if len(buffer) == len(self.groups[k]) or self.expired_[k]:
            self._update(ps, k)

    def _open_round(self, ps: ServerActions, k: int) -> None:
        """Group *k* starts a round: a fresh round id and, with a timeout, its timer."""
        self.rounds_[k] = self.next_round_
        self.next_round_ += 1
        self.expired_[k] = False
        if self.grouping.timeout:
            ps.call_later(self.grouping.timeout, partial(self._timeout, ps, k, self.rounds_[k]))

    def on_rejoin(self, ps: ServerActions, worker: int) -> None:
        if self.holds(worker):  # pushed in its group's open round: waits for its end
            return
        self.sent_at_[worker] = ps.now
        ps.send((worker,))

    def holds(self, worker: int) -> bool:
        return worker in self.buffers_[self.group_of_[worker]]

    def waiting(self, ps: ServerActions) -> list[Need]:
        needs = []
        for k, members in enumerate(self.groups):
            missing = tuple(w for w in members if w not in self.buffers_[k])
            if self.grouping.timeout:
                needs.append(Need(0, ()) if self.buffers_[k] else Need(1, missing))
            else:
                needs.append(Need(len(missing), missing))
        return needs

    def _update(self, ps: ServerActions, k: int) -> None:
        buffer = self.buffers_[k]  # {worker id: push}
        pushes = list(buffer.values())
        if self.grouping.weighting == "none":
            ps.apply(pushes, self.lr, k, consume=True)
        else:
            self.weights_ = group_weights(self._counts_before(ps), self.grouping.weighting)
            ps.apply(pushes, self.lr * float(self.weights_[k]), k, consume=True)
        self.buffers_[k] = {}
        self._open_round(ps, k)
        recipients = sorted(buffer)
        if self.observing_:
            for wid in recipients:
                self.sent_at_[wid] = ps.now
        ps.send(recipients)
        every = self.grouping.regroup_every
        if every and ps.version % every == 0:
            self._regroup(ps)

    def _counts_before(self, ps: ServerActions) -> list[int]:
        """The groups' update counts before this simulated instant. Updates at one instant
        are simultaneous: counting the ones the PS happened to apply first would give the
        later groups other weights (two identical groups finishing together would not
        share their steps equally)."""
        if self.counted_at_ != ps.now:
            self.counted_at_, self.counted_ = ps.now, list(ps.group_updates)
        return self.counted_

    def _timeout(self, ps: ServerActions, k: int, round_id: int) -> None:
        if k >= len(self.groups) or self.rounds_[k] != round_id:
            return
        if not self.buffers_[k]:
            self.expired_[k] = True
            return
        present = sorted(self.buffers_[k])
        missing = [w for w in self.groups[k] if w not in self.buffers_[k]]
        ps.record_event("group_timeout", group=k, present=present, missing=missing)
        self._update(ps, k)

    def _regroup(self, ps: ServerActions) -> None:
        if any(not seen for seen in self.observed_):
            return
        width = min(len(seen) for seen in self.observed_)
        times = np.array([seen[-width:] for seen in self.observed_])
        method = (
            "silhouette"
            if self.grouping.method in ("hand", "auto", "race")
            else self.grouping.method
        )
        new = [list(g) for g in self.choose(times, seed=ps.version, method=method).groups]
        if sorted(new) == sorted(self.groups):
            return
        ps.record_event(
            "regroup", update=ps.version, before=[list(g) for g in self.groups], after=new
        )
        pending = {w: p for buffer in self.buffers_ for w, p in buffer.items()}
        self._regroup_to(new)
        ps.reset_groups(len(new))
        self.counted_at_ = None  # counts start again from the new groups
        self.buffers_ = [{w: pending[w] for w in g if w in pending} for g in new]
        self.rounds_ = [0] * len(new)
        self.expired_ = [False] * len(new)
        for k in range(len(new)):
            self._open_round(ps, k)
        for k, g in enumerate(new):
            if len(self.buffers_[k]) == len(g):
                self._update(ps, k)

    def _regroup_to(self, groups: Iterable[Iterable[int]]) -> None:
        self.groups = [list(g) for g in groups]
        self.group_of_ = self.group_index()

    def set_groups(self, groups: Iterable[Iterable[int]]) -> None:
        """Use *groups* (lists of worker ids) from now on (before ``start``)."""
        self.groups = [list(g) for g in groups]


def read_groups(table: Table, ctx: RuleContext) -> list[list[int]]:
    """The ``groups`` key (default: one group per worker class), as id lists."""
    spec = table.get("groups", list, [[name] for name in ctx.classes])
    return parse_groups(spec, table.key("groups"), ctx)


def read_grouping(table: Table, ctx: RuleContext) -> GroupingSpec:
    """The ``grouping``, ``k_max`` and ``probe_rounds`` keys of a grouping rule (gsgd,
    group_allreduce); the other options at their defaults."""
    n = ctx.n_workers
    method = table.get("grouping", str, "hand")
    try:
        parse_method(method, n)
    except ValueError as exc:
        raise ScenarioError(table.key("grouping"), str(exc)) from None
    k_max = table.get("k_max", int, min(8, n))
    if not 1 <= k_max <= n:
        raise ScenarioError(
            table.key("k_max"), f"{k_max!r} is not allowed (1 <= k_max <= {n} workers)"
        )
    return GroupingSpec(
        method=method, k_max=k_max, probe_rounds=table.get("probe_rounds", int, 5, minimum=1)
    )


def choose(
    spec: GroupingSpec, groups: list, times: np.ndarray, seed: int, method: str | None = None
) -> Grouping:
    """The grouping *spec*'s method (or *method*) makes of measured *times* (n_workers,
    rounds), s; *groups*: the hand groups."""
    return choose_grouping(
        method or spec.method,
        times,
        k_max=spec.k_max,
        hand=groups,
        jitter=spec.jitter,
        seed=seed,
        min_silhouette=spec.min_silhouette,
        homogeneous_ratio=spec.homogeneous_ratio,
    )


def parse_groups(spec: list, key: str, ctx: RuleContext) -> list[list[int]]:
    """Groups given as lists of worker ids and/or worker class names.

    Every worker must be in exactly one group. Returns sorted id lists.
    """
    groups: list[list[int]] = []
    owner: dict[int, int] = {}
    for k, entry in enumerate(spec):
        if not isinstance(entry, list) or not entry:
            raise ScenarioError(
                f"{key}[{k}]",
                f"expected a non-empty list of worker ids or class names, got {entry!r}",
            )
        members: list[int] = []
        for item in entry:
            if isinstance(item, str):
                if item not in ctx.classes:
                    raise ScenarioError(
                        f"{key}[{k}]",
                        f"unknown worker class {item!r} (classes: {', '.join(ctx.classes)})",
                    )
                members.extend(ctx.classes[item])
            elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < ctx.n_workers:
                members.append(item)
            else:
                raise ScenarioError(
                    f"{key}[{k}]",
                    f"{item!r} is neither a worker id in 0..{ctx.n_workers - 1} nor a class name",
                )
        for wid in members:
            if wid in owner:
                raise ScenarioError(
                    key,
                    f"worker {wid} is in group {owner[wid]} and group {k}; groups must partition the workers",
                )
            owner[wid] = k
        groups.append(sorted(members))
    missing = [w for w in range(ctx.n_workers) if w not in owner]
    if missing:
        raise ScenarioError(
            key,
            f"workers {missing} are in no group; groups must partition the workers 0..{ctx.n_workers - 1}",
        )
    return groups
