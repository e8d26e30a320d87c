"""Group SGD (Gao & Chen 2020): synchronous inside a group, asynchronous across."""
from __future__ import annotations

from ..errors import ScenarioError
from ..schema import Table
from .base import Push, Rule, RuleContext, read_lr

__all__ = ["GSGD", "parse_groups"]


class GSGD(Rule):
    """Workers are partitioned into groups. A group's members compute on the same
    model; once all have pushed, the PS applies ``w ← w − η·mean(group)`` and sends
    the new model to that group only. η is not scaled by group size."""
    name = "gsgd"
    description = "group SGD: synchronous inside each group, asynchronous across groups"
    source = "Gao & Chen, J. USTC 50(8), 2020; ALGORITHMS.md §1c"

    @classmethod
    def from_table(cls, table: Table, ctx: RuleContext) -> "GSGD":
        lr = read_lr(table, ctx)
        spec = table.get("groups", list, [[name] for name in ctx.classes])
        return cls(lr, parse_groups(spec, table.key("groups"), ctx))

    def start(self, ps) -> None:
        self.group_of_ = self.group_index()
        self.buffers_: list[list[Push]] = [[] for _ in self.groups]
        ps.send(range(len(self.group_of_)))

    def on_push(self, ps, push: Push) -> None:
        k = self.group_of_[push.worker]
        buffer = self.buffers_[k]
        buffer.append(push)
        if len(buffer) == len(self.groups[k]):
            ps.apply(buffer, self.lr, k)
            self.buffers_[k] = []
            ps.send(self.groups[k])


def parse_groups(spec: list, key: str, ctx: RuleContext) -> list[list[int]]:
    """Groups given as lists of worker ids and/or worker class names.

    Every worker must be in exactly one group. Returns sorted id lists.
    """
    groups: list[list[int]] = []
    owner: dict[int, int] = {}
    for k, entry in enumerate(spec):
        if not isinstance(entry, list) or not entry:
            raise ScenarioError(f"{key}[{k}]", f"expected a non-empty list of worker ids or class names, got {entry!r}")
        members: list[int] = []
        for item in entry:
            if isinstance(item, str):
                if item not in ctx.classes:
                    raise ScenarioError(f"{key}[{k}]", f"unknown worker class {item!r} (classes: {', '.join(ctx.classes)})")
                members.extend(ctx.classes[item])
            elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < ctx.n_workers:
                members.append(item)
            else:
                raise ScenarioError(f"{key}[{k}]", f"{item!r} is neither a worker id in 0..{ctx.n_workers - 1} nor a class name")
        for wid in members:
            if wid in owner:
                raise ScenarioError(key, f"worker {wid} is in group {owner[wid]} and group {k}; groups must partition the workers")
            owner[wid] = k
        groups.append(sorted(members))
    missing = [w for w in range(ctx.n_workers) if w not in owner]
    if missing:
        raise ScenarioError(key, f"workers {missing} are in no group; groups must partition the workers 0..{ctx.n_workers - 1}")
    return groups
