"""Rules without a parameter server: all-reduce, decentralized SGD, partial all-reduce
groups and group all-reduce (docs/ALGORITHMS.md §12).

The workers talk to each other: ``ps.exchange(workers, steps, done)`` sends the messages
of a schedule (an all-reduce of :mod:`netsim.net.collectives`, or a pair swapping models)
and calls ``done`` when the last one arrived. ``ps`` then stands for the workers' shared
state: under :class:`AllReduce` one model all workers hold; under the others each worker's
own model (``ps.use_replicas``), changed by ``ps.group_step``, ``ps.local_step`` and
``ps.average_models``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from ..errors import ScenarioError
from ..net.collectives import ALGORITHMS, schedule
from ..params import Table
from .base import Need, Push, Rule, RuleContext, ServerActions, read_lr
from .gsgd import GroupingSpec, choose, parse_groups, read_grouping, read_groups

__all__ = ["AllReduce", "ADPSGD", "PartialAllReduce", "GroupAllReduce", "SWAP"]

SWAP = [[(0, 1, 1.0), (1, 0, 1.0)]]
"""Two workers send each other their whole model at once (one step)."""


def read_collective(table: Table) -> str:
    """The ``collective`` key: the all-reduce algorithm (``ring`` or ``halving_doubling``)."""
    return table.get("collective", str, "ring", choices=ALGORITHMS)


class AllReduce(Rule):
    """Synchronous SGD by all-reduce: every round, each worker computes a gradient on the
    shared model; once all have, they all-reduce the gradients (``collective``: ring or
    halving-doubling, on the network) and each applies ``w ← w − η·mean`` (the same
    model everywhere), then starts the next round. The model trajectory is SSGD's; only
    the communication differs (no PS link to converge on, 2(n−1) steps for a ring).
    """

    name = "allreduce"
    description = "synchronous SGD without a PS: all workers all-reduce their gradients each round"
    source = "Patarasuk & Yuan, JPDC 2009 (ring); Sergeev & Del Balso 2018 (Horovod); ALGORITHMS.md §12.1"
    peer = True

    def __init__(self, lr: float, groups: list[list[int]], *, collective: str = "ring") -> None:
        super().__init__(lr, groups)
        self.collective = collective

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "AllReduce":
        return cls(read_lr(table, ctx), cls.default_groups(ctx), collective=read_collective(table))

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    def start(self, ps: ServerActions) -> None:
        self.buffer_: dict[int, Push] = {}
        self.reducing_ = False
        ps.send(self.groups[0])

    def on_push(self, ps: ServerActions, push: Push) -> None:
        self.buffer_[push.worker] = push
        if len(self.buffer_) == len(self.groups[0]):
            self.reducing_ = True
            steps = schedule(self.collective, len(self.groups[0]))
            ps.exchange(self.groups[0], steps, lambda: self._close(ps))

    def _close(self, ps: ServerActions) -> None:
        ps.apply(list(self.buffer_.values()), self.lr, 0)
        self.buffer_ = {}
        self.reducing_ = False
        ps.send(self.groups[0])

    def holds(self, worker: int) -> bool:
        return worker in self.buffer_

    def waiting(self, ps: ServerActions) -> list[Need]:
        everyone = tuple(self.groups[0])
        if self.reducing_:  # the all-reduce needs every member alive and reachable
            return [Need(len(everyone), everyone)]
        missing = tuple(w for w in everyone if w not in self.buffer_)
        return [Need(len(missing), missing)]


class ADPSGD(Rule):
    """Asynchronous decentralized SGD (AD-PSGD): each worker computes a gradient g on its
    own model; then it swaps models with one peer drawn uniformly from the others (a
    message each way), and at the swap's end, atomically, both models become their
    average and the worker applies ``w_i ← w_i − η·g``; then it starts again. Nobody
    waits for anyone but its peer's message; the peer keeps computing (its gradient is
    then stale by one model change). Staleness: changes of the worker's model between
    reading it and applying its gradient.
    """

    name = "adpsgd"
    description = "asynchronous decentralized SGD: average with one random peer after each gradient"
    source = "Lian, Zhang, Zhang & Liu, ICML 2018 (AD-PSGD); ALGORITHMS.md §12.2"
    peer = True
    carries_on = True
    replicated = True

    def start(self, ps: ServerActions) -> None:
        ps.use_replicas()
        self.index_ = self.group_index()
        self.n_ = len(self.index_)
        self.swapping_: dict[int, int] = {}  # worker -> the peer it swaps with now
        ps.send(range(self.n_))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        i = push.worker
        if self.n_ == 1:
            ps.local_step(push, self.lr, self.index_[i])
            ps.send((i,))
            return
        j = int(ps.rng.integers(self.n_ - 1))
        j += j >= i  # uniform among the others
        self.swapping_[i] = j

        def swapped() -> None:
            del self.swapping_[i]
            ps.average_models((i, j))
            ps.local_step(push, self.lr, self.index_[i])
            ps.send((i,))

        ps.exchange((i, j), SWAP, swapped)

    def holds(self, worker: int) -> bool:
        return worker in self.swapping_

    def waiting(self, ps: ServerActions) -> list[Need]:
        # a swap in flight needs both ends; otherwise any push of a worker not swapping
        needs = [Need(2, (i, j)) for i, j in self.swapping_.items()]
        free = tuple(w for w in range(self.n_) if w not in self.swapping_)
        return needs + ([Need(1, free)] if free else [])


class PartialAllReduce(Rule):
    """Partial all-reduce groups (Prague): a worker that has a gradient waits in a queue;
    as soon as ``group_size`` workers wait, they form a group, all-reduce (``collective``)
    and each member's model becomes ``m − η·mean(their gradients)``, m the members'
    average model; they start again. Groups form in order of arrival and never wait for
    workers outside them. With ``group_size`` = all workers it is :class:`AllReduce`.
    Each worker's model is its own; the run reports their average.
    """

    name = "partial_allreduce"
    description = "partial all-reduce: workers that finish form groups of group_size and all-reduce"
    source = "Luo, He, Zhuo & Qian, ASPLOS 2020 (Prague); ALGORITHMS.md §12.3"
    peer = True
    replicated = True

    def __init__(
        self, lr: float, groups: list[list[int]], *, group_size: int = 2, collective: str = "ring"
    ) -> None:
        super().__init__(lr, groups)
        self.group_size = group_size
        self.collective = collective

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "PartialAllReduce":
        size = table.get("group_size", int)
        if not 2 <= size <= ctx.n_workers:
            raise ScenarioError(
                table.key("group_size"),
                f"{size!r} is not allowed (allowed: 2..{ctx.n_workers}, the number of workers)",
            )
        return cls(
            read_lr(table, ctx),
            cls.default_groups(ctx),
            group_size=size,
            collective=read_collective(table),
        )

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return [list(range(ctx.n_workers))]

    def start(self, ps: ServerActions) -> None:
        ps.use_replicas()
        self.queue_: list[Push] = []
        self.in_flight_: list[list[int]] = []  # the members of each group all-reducing
        ps.send(range(len(self.group_index())))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        self.queue_.append(push)
        if len(self.queue_) < self.group_size:
            return
        pushes, self.queue_ = self.queue_, []
        members = sorted(p.worker for p in pushes)
        self.in_flight_.append(members)

        def reduced() -> None:
            ps.group_step(members, pushes, self.lr, 0)
            self.in_flight_.remove(members)
            ps.send(members)

        ps.exchange(members, schedule(self.collective, len(members)), reduced)

    def holds(self, worker: int) -> bool:
        return any(worker in m for m in self.in_flight_) or any(
            p.worker == worker for p in self.queue_
        )

    def waiting(self, ps: ServerActions) -> list[Need]:
        # a group all-reducing needs all its members; a new group, enough more pushes
        needs = [Need(len(members), tuple(members)) for members in self.in_flight_]
        busy = {p.worker for p in self.queue_}.union(*self.in_flight_)
        others = tuple(w for w in range(len(self.group_index())) if w not in busy)
        return needs + [Need(self.group_size - len(self.queue_), others)]


class GroupAllReduce(Rule):
    """The GSGD analogue without a PS: groups given (``groups``: lists of worker ids or
    class names; default one group per worker class) or formed from a measurement phase
    (``grouping``: ``kmeans:K``, ``equal:K``, ``silhouette``, or ``auto``: the race of
    pilot runs, as GSGD's). Inside a group a round is
    synchronous: once every member has a gradient, the group all-reduces (``collective``)
    and each member's model becomes ``m − η·mean``. Across groups it is asynchronous:
    after each round the group's first member swaps models with the first member of
    another group drawn at random (one message each way) and both groups' models become
    the average of the two (one gossip step); then the group starts its next round.
    """

    name = "group_allreduce"
    description = "group all-reduce: synchronous inside fixed groups, gossip between groups"
    source = "Jiang et al., CCGrid 2019 (Grouping-SGD); Li et al., SC 2020 (WAGMA-SGD); ALGORITHMS.md §12.4"
    peer = True
    replicated = True

    def __init__(
        self,
        lr: float,
        groups: list[list[int]],
        *,
        collective: str = "ring",
        grouping: GroupingSpec = GroupingSpec(),
    ) -> None:
        super().__init__(lr, groups)
        self.collective = collective
        self.grouping = grouping

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "GroupAllReduce":
        groups = read_groups(table, ctx)
        grouping = read_grouping(table, ctx)
        return cls(
            read_lr(table, ctx), groups, collective=read_collective(table), grouping=grouping
        )

    def probe_rounds(self) -> int:
        """Measure first unless the groups are given by hand."""
        return 0 if self.grouping.method == "hand" else self.grouping.probe_rounds

    def on_measured(self, iteration: np.ndarray, seed: int) -> dict:
        chosen = choose(self.grouping, self.groups, iteration, seed)
        self.groups = [list(members) for members in chosen.groups]
        return chosen.as_dict()

    def grouping_record(self) -> dict:
        return {"method": "hand", "k": len(self.groups), "members": [list(g) for g in self.groups]}

    def wants_recommendation(self) -> bool:
        """``grouping = "auto"``: the race picks the groups and η, as for GSGD."""
        return self.grouping.method in ("auto", "race")

    def adopt(self, groups: Iterable[Iterable[int]], lr: float) -> None:
        """Use the race's *groups* and step *lr* (before ``start``)."""
        self.groups = [list(g) for g in groups]
        self.lr = float(lr)

    def piloted(self, groups: Iterable[Iterable[int]], lr: float) -> "GroupAllReduce":
        """A copy with fixed *groups* and step *lr*, the other options kept (a race's pilot)."""
        return GroupAllReduce(
            lr,
            [list(g) for g in groups],
            collective=self.collective,
            grouping=replace(self.grouping, method="hand"),
        )

    @staticmethod
    def default_groups(ctx: RuleContext) -> list[list[int]]:
        return parse_groups([[name] for name in ctx.classes], "groups", ctx)

    def start(self, ps: ServerActions) -> None:
        ps.use_replicas()
        self.index_ = self.group_index()
        self.buffers_: list[dict[int, Push]] = [{} for _ in self.groups]
        self.busy_: set[int] = set()
        self.partner_: dict[int, int] = {}  # group -> the other group's member it gossips with
        for members in self.groups:
            ps.send(members)

    def on_push(self, ps: ServerActions, push: Push) -> None:
        k = self.index_[push.worker]
        members = self.groups[k]
        buffer = self.buffers_[k]
        buffer[push.worker] = push
        if len(buffer) < len(members):
            return
        self.busy_.add(k)

        def reduced() -> None:
            ps.group_step(members, list(buffer.values()), self.lr, k)
            buffer.clear()
            if len(self.groups) == 1:
                self._next(ps, k)
                return
            other = int(ps.rng.integers(len(self.groups) - 1))
            other += other >= k
            pair = (members[0], self.groups[other][0])
            self.partner_[k] = pair[1]

            def gossiped() -> None:
                del self.partner_[k]
                ps.average_models(pair, spread=list(members) + list(self.groups[other]))
                self._next(ps, k)

            ps.exchange(pair, SWAP, gossiped)

        ps.exchange(members, schedule(self.collective, len(members)), reduced)

    def _next(self, ps: ServerActions, k: int) -> None:
        self.busy_.discard(k)
        ps.send(self.groups[k])

    def holds(self, worker: int) -> bool:
        k = self.index_[worker]
        return k in self.busy_ or worker in self.buffers_[k]

    def waiting(self, ps: ServerActions) -> list[Need]:
        needs = []
        for k, (members, buffer) in enumerate(zip(self.groups, self.buffers_, strict=True)):
            if k in self.busy_:  # all-reducing or gossiping: every member must be there
                ends = tuple(
                    dict.fromkeys([*members, *([self.partner_[k]] if k in self.partner_ else [])])
                )
                needs.append(Need(len(ends), ends))
            else:
                missing = tuple(w for w in members if w not in buffer)
                needs.append(Need(len(missing), missing))
        return needs
