"""Scenario files: TOML in, one frozen, validated Scenario out."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..params import Table, apply_overrides, check_value, set_path, show
from ..rules import GROUPING_RULE, RULES, Rule, RuleContext
from ..rules.schedules import read_update
from ..workload.backends import BACKENDS
from ..workload.sources import SOURCES
from .data import (
    DATA_SOURCES,
    LABELINGS,
    DataSpec,
    binary_problem,
    check_dataset,
    check_rows,
    known_train_rows,
    labels_problem,
    read_data,
    shards_problem,
)
from .events import ClusterEvent, parse_events
from .file import MAX_SCENARIO_BYTES, read_toml, resolve_scenario_path
from .model import MODEL_NAMES, ModelSpec, check_compact, read_model
from .network_plan import SHIPPED_TOPOLOGIES, NetworkPlan, find_topology_file
from .run import (
    MAX_GRADIENTS,
    RunSpec,
    check_budget,
    check_rule_budget,
    check_slowdown_budget,
    read_run,
)
from .server import ServerSpec, parse_server
from .workers import MAX_WORKERS, WorkerClass, class_ids, read_network, read_workers

__all__ = [
    "Scenario",
    "RunSpec",
    "DataSpec",
    "ModelSpec",
    "WorkerClass",
    "load_scenario",
    "parse_scenario",
    "resolve_scenario_path",
    "DATA_SOURCES",
    "MODEL_NAMES",
    "LABELINGS",
    "binary_problem",
    "labels_problem",
    "shards_problem",
    "check_dataset",
    "class_ids",
    "read_toml",
    "MAX_WORKERS",
    "MAX_GRADIENTS",
    "MAX_SCENARIO_BYTES",
]

SECTIONS = (
    "name",
    "description",
    "run",
    "data",
    "model",
    "workers",
    "network",
    "server",
    "events",
    "algorithms",
)
"""The top-level keys of a scenario file."""


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. ``rules`` holds one built Rule per ``[algorithms.X]``."""

    path: str
    name: str
    run: RunSpec
    data: DataSpec
    model: ModelSpec
    workers: tuple[WorkerClass, ...]
    rules: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)
    network: NetworkPlan | None = None
    events: tuple[ClusterEvent, ...] = ()
    overrides: tuple[str, ...] = ()
    """The ``KEY=VALUE`` overrides applied to the file, in order (``--set``, ``--seed``, ...)."""
    server: ServerSpec | None = None
    """The ``[server]`` table (None: the server takes no time); see :mod:`netsim.config.server`."""

    @property
    def n_workers(self) -> int:
        return sum(c.count for c in self.workers)

    def classes(self) -> dict[str, tuple[int, ...]]:
        """Worker class name → its worker ids."""
        return class_ids(self.workers)

    def worker_slots(self) -> list[tuple[int, WorkerClass, int]]:
        """``(worker id, its class, its index within the class)`` for every worker, in id order.

        The one place where worker classes become worker ids (ids follow the file's class order).
        """
        return [
            (wid, wc, m)
            for wc, ids in zip(self.workers, class_ids(self.workers).values())
            for m, wid in enumerate(ids)
        ]

    def worker_class_names(self) -> list[str]:
        """Class name of each worker id."""
        return [wc.name for _, wc, _ in self.worker_slots()]

    def pull_latencies(self) -> list[float]:
        """Fixed pull latency (s) of each worker id."""
        return [wc.pull_latency for _, wc, _ in self.worker_slots()]

    def push_latencies(self) -> list[float]:
        """Fixed push latency (s) of each worker id."""
        return [wc.push_latency for _, wc, _ in self.worker_slots()]

    def grouping_rule(self) -> Rule:
        """The rule whose grouping settings apply (:data:`~netsim.rules.GROUPING_RULE`): the scenario's table,
        or one with the worker classes as hand groups (η = 1) when there is none."""
        if GROUPING_RULE in self.rules:
            return self.rule(GROUPING_RULE)
        return RULES[GROUPING_RULE](1.0, [list(ids) for ids in self.classes().values()])

    def rule(self, name: str | None = None) -> Rule:
        """A fresh copy of the rule *name* (default: ``run.algorithm``)."""
        name = name or self.run.algorithm
        if name not in self.rules:
            raise ScenarioError(
                "run.algorithm",
                f"{name!r} has no [algorithms.{name}] table in the scenario "
                f"(configured: {', '.join(self.rules) or 'none'}; known rules: {', '.join(RULES)})",
                self.path,
            )
        if self.network is not None and self.network.ps_host is None and not self.rules[name].peer:
            peers = [n for n, r in self.rules.items() if r.peer]
            raise ScenarioError(
                "run.algorithm",
                f"{name!r} needs a parameter server, but network.ps_host = 'none' "
                f"(rules without one configured here: {', '.join(peers) or 'none'}; "
                "docs/ALGORITHMS.md §12)",
                self.path,
            )
        return copy.deepcopy(self.rules[name])

    def with_overrides(self, overrides: Sequence[str]) -> "Scenario":
        """This scenario with ``KEY=VALUE`` *overrides* applied (values are TOML), validated
        again; its rule stays the one chosen (:meth:`with_algorithm`) unless they set
        ``run.algorithm``.

        Raises ScenarioError naming this scenario's file and the key.
        """
        raw = copy.deepcopy(self.raw)
        try:
            if self.rules:  # keep the rule chosen (with_algorithm) unless an override names one
                raw.setdefault("run", {})["algorithm"] = self.run.algorithm
            apply_overrides(raw, list(overrides))
            return replace(
                parse_scenario(raw, Path(self.path)), overrides=self.overrides + tuple(overrides)
            )
        except ScenarioError as exc:
            exc.file = self.path
            raise

    def with_seed(self, seed: int) -> "Scenario":
        """This scenario with ``run.seed`` = *seed*: what ``with_overrides(["run.seed=SEED"])``
        gives (the rule chosen kept, the override recorded, :attr:`raw` and the placement of a
        ``[network]``, which the seed draws, made anew), without parsing the other sections
        again. A seed not allowed goes through :meth:`with_overrides` for its error."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            return self.with_overrides([f"run.seed={seed}"])
        raw = copy.deepcopy(self.raw)
        run = raw.setdefault("run", {})
        if self.rules:  # as with_overrides: the rule chosen is written out
            run["algorithm"] = self.run.algorithm
        run["seed"] = seed
        network = self.network
        if network is not None:
            try:
                network = read_network(Table(raw, ""), Path(self.path), self.workers, seed)
            except ScenarioError as exc:
                exc.file = self.path
                raise
        return replace(
            self,
            run=replace(self.run, seed=seed),
            raw=raw,
            network=network,
            overrides=self.overrides + (f"run.seed={seed}",),
        )

    def with_rule_keys(self, name: str, keys: Mapping[str, Any]) -> "Scenario":
        """This scenario running the rule *name* with *keys* of its ``[algorithms.NAME]``
        table set: what ``with_overrides(["algorithms.NAME.KEY=VALUE", ...,
        'run.algorithm="NAME"'])`` gives (:attr:`raw` and the overrides recorded alike),
        by :func:`dataclasses.replace` without parsing the other sections again.

        What the re-parse would check still is, with the same keys and messages: the
        values' depth and size (:func:`~netsim.params.check_value`), the rule's whole table read
        again by its own reader (``from_table`` and the update's keys: every value it
        allows, its worker ids and classes), and the checks of a rule against the run and
        model (:func:`~netsim.config.run.check_rule_budget`, ``compact_gradients``,
        ``weight_decay_1d``). The other sections do not depend on a rule's table.

        Raises ScenarioError naming this scenario's file and the key.
        """
        from .grid import toml_value

        raw = copy.deepcopy(self.raw)
        overrides = [f"algorithms.{name}.{k}={toml_value(v)}" for k, v in keys.items()]
        overrides.append(f'run.algorithm="{name}"')
        try:
            if self.rules:  # as with_overrides: the rule chosen is written out first
                raw.setdefault("run", {})["algorithm"] = self.run.algorithm
            for key, value in keys.items():
                set_path(raw, f"algorithms.{name}.{key}", value, f"algorithms.{name}.{key}")
            set_path(raw, "run.algorithm", name, "run.algorithm")
            check_value(raw, "")
            ctx = RuleContext(
                n_workers=self.n_workers,
                classes=self.classes(),
                model=self.model.key,
                until=self.run.until,
                max_updates=self.run.max_updates,
            )
            rule = _rules(Table({name: raw["algorithms"][name]}, "algorithms"), ctx)[name]
            run = replace(self.run, algorithm=name)
            rules = {**self.rules, name: rule}
            check_rule_budget(run, {name: rule}, self.n_workers)
            _check_rules_model(run, self.model, rules)
        except ScenarioError as exc:
            exc.file = self.path
            raise
        return replace(
            self, run=run, rules=rules, raw=raw, overrides=self.overrides + tuple(overrides)
        )

    def resolved(self) -> dict:
        """The scenario dict with every override applied, standing on its own: ``name``
        and ``run.algorithm`` written out, ``data.dir`` absolute (the directory read,
        including one from ``$NETSIM_DATA_DIR``), a topology file given by a relative
        path (or read by an inline ``graphml`` spec), the data source's files
        (:meth:`~netsim.workload.sources.DataSource.resolve`) and the folder a torch module is
        imported from made absolute. Loading it again, from any folder, gives
        the same scenario."""
        from ..workload.loading import resolve_data_dir

        raw = copy.deepcopy(self.raw)
        raw["name"] = self.name
        raw.setdefault("run", {})["algorithm"] = self.run.algorithm
        directory = resolve_data_dir(self.data)
        if directory is not None:
            raw.setdefault("data", {})["dir"] = str(Path(directory).resolve())
        network = raw.get("network")
        here = Path(self.path).resolve().parent
        if isinstance(network, dict) and isinstance(network.get("topology"), str):
            spec = network["topology"]
            found = find_topology_file(spec, here)
            if found is not None and found.parent != SHIPPED_TOPOLOGIES:
                network["topology"] = str(found)
        elif (
            isinstance(network, dict)
            and isinstance(network.get("topology"), dict)
            and isinstance(network["topology"].get("graphml"), str)
        ):  # an inline spec reading a file
            network["topology"]["graphml"] = str((here / network["topology"]["graphml"]).resolve())
        data = raw.get("data")
        if isinstance(data, dict):  # the source's files, as read
            SOURCES[self.data.source].resolve(self.data, data)
        if self.model.module_dir:
            raw["model"]["module_dir"] = self.model.module_dir
        for wc in raw.get("workers", []):  # a real run's folder replayed, made absolute
            compute = wc.get("compute") if isinstance(wc, dict) else None
            if isinstance(compute, dict) and isinstance(compute.get("run"), str):
                compute["run"] = str((here / Path(compute["run"]).expanduser()).resolve())
        return raw

    def to_toml(self) -> str:
        """:meth:`resolved` as TOML text, with a header naming the source file and the overrides."""
        from .tomlwrite import dumps

        head = [f"Resolved scenario written by netsim from {self.path}"]
        if self.overrides:
            head.append("overrides applied: " + " ".join(self.overrides))
        return dumps(self.resolved(), "\n".join(head))

    def with_algorithm(self, name: str) -> "Scenario":
        self.rule(name)
        return replace(self, run=replace(self.run, algorithm=name))


def load_scenario(
    path: str | os.PathLike,
    overrides: Sequence[str] = (),
    *,
    seed: int | None = None,
    algorithm: str | None = None,
    data_dir: str | None = None,
) -> Scenario:
    """Read, override and validate a scenario file.

    Raises ScenarioError (with the file set) for anything not allowed.
    """
    given = str(path)
    path = resolve_scenario_path(path)
    shown = given if path != Path(given) else str(path)  # a preset by the name the user typed
    raw = read_toml(path)
    record = list(overrides)
    try:
        apply_overrides(raw, list(overrides))
        if seed is not None:
            set_path(raw, "run.seed", seed, "--seed")
            record.append(f"run.seed={seed}")
        if algorithm is not None:
            set_path(raw, "run.algorithm", algorithm, "--algorithm")
            record.append(f'run.algorithm="{algorithm}"')
        if data_dir is not None:
            set_path(raw, "data.dir", str(Path(data_dir).resolve()), "--data-dir")
        return replace(parse_scenario(raw, path), overrides=tuple(record))
    except ScenarioError as exc:
        exc.file = shown
        raise


def parse_scenario(raw: dict, path: Path) -> Scenario:
    """Validate the dict of a scenario file located at *path*."""
    check_value(raw, "")
    raw = copy.deepcopy(raw)
    algorithm_given = isinstance(raw.get("run"), dict) and "algorithm" in raw["run"]
    top = Table(raw, "")
    top.unknown(SECTIONS)
    name = top.get("name", str, path.stem)
    top.get("description", str, "")
    run = read_run(top.table("run", {}))
    data = read_data(top.table("data", {}), path)
    model = read_model(top.table("model", {}), path)
    if (n_labels := data.n_labels()) is not None and (why := binary_problem(model, data, n_labels)):
        raise ScenarioError("data.labels", why)
    workers = read_workers(top.get("workers", list), data, path.parent)
    gradients = check_budget(run, workers)
    classes = class_ids(workers)
    start = sum(wc.count for wc in workers)
    ctx = RuleContext(
        n_workers=start,
        classes=classes,
        model=model.key,
        until=run.until,
        max_updates=run.max_updates,
    )
    rules = _rules(top.table("algorithms"), ctx)
    if not algorithm_given and run.algorithm not in rules and rules:
        run = replace(run, algorithm=next(iter(rules)))  # the first configured rule
    check_rule_budget(run, rules, start)
    network = read_network(top, path, workers, run.seed)
    server = parse_server(top, network is not None)
    _check_rules_model(run, model, rules)
    events = parse_events(
        top.get("events", list, []),
        until=run.until,
        classes=classes,
        n_workers=start,
        graph=network.graph if network else None,
    )
    check_slowdown_budget(run, workers, events, top.get("events", list, []), gradients)
    top.done()
    if run.algorithm not in rules:
        raise ScenarioError(
            "run.algorithm",
            f"{show(run.algorithm)} is not configured (configured: {', '.join(rules)}); add an "
            f"[algorithms.{run.algorithm if isinstance(run.algorithm, str) else 'NAME'}] table with its lr "
            "(and the rule's keys: docs/ALGORITHMS.md)",
        )
    rows = known_train_rows(data)
    if rows is not None:
        check_rows(rows, start, data)
    return Scenario(
        str(path), name, run, data, model, workers, rules, raw, network, events, server=server
    )


def _check_rules_model(run: RunSpec, model: ModelSpec, rules: dict[str, Rule]) -> None:
    """Refuse rules the model cannot serve: ``run.compact_gradients`` (see
    :func:`~netsim.config.model.check_compact`), ``weight_decay_1d = false`` without a torch
    model."""
    check_compact(run, model, rules)
    for rule_name, rule in rules.items():
        if rule.update.spares_1d and not BACKENDS[model.backend].shapes_known:
            raise ScenarioError(
                f"algorithms.{rule_name}.weight_decay_1d",
                "false needs a torch model (its parameters' shapes tell the 1-d ones)",
            )


def _rules(t: Table, ctx: RuleContext) -> dict[str, Rule]:
    rules = {}
    for name in t.data:
        if name not in RULES:
            raise ScenarioError(t.key(name), f"unknown algorithm (allowed: {', '.join(RULES)})")
        sub = t.table(name)
        rule = RULES[name].from_table(sub, ctx)
        rule.update = read_update(
            sub,
            until=ctx.until,
            max_updates=ctx.max_updates,
            momentum_defined=rule.momentum_defined,
            rule=name,
        )
        if rule.replicated and not rule.update.trivial:
            key = next(
                (k for k in ("optimizer", "weight_decay", "momentum", "lr_warmup") if sub.has(k)),
                "lr_schedule",
            )
            raise ScenarioError(
                sub.key(key),
                f"{name} steps each worker's own model plainly: no learning-rate schedule, "
                "momentum, optimizer or weight decay (remove the key)",
            )
        rules[name] = rule
        sub.done()
    if not rules:
        raise ScenarioError(
            "algorithms", f"configure at least one algorithm (allowed: {', '.join(RULES)})"
        )
    return rules
