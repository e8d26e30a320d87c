"""Scenario files: TOML in, one frozen, validated Scenario out."""

from __future__ import annotations

import bisect
import copy
import itertools
import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import ScenarioError
from ..params import MAX_DEPTH, Table, apply_overrides, check_path, check_value, set_path, show
from ..presets import find_scenario, list_scenarios
from ..rng import Streams
from ..rules import DEFAULT_RULE, GROUPING_RULE, RULES, Rule, RuleContext
from ..rules.schedules import read_update
from ..workload.datasets import DIGITS_ROWS, LABELLINGS, MAX_FEATURES, SOURCES, train_rows
from ..workload.models import BINARY, MODELS
from ..workload.partition import PARTITIONS, QUANTITY_LAWS, PartitionSpec
from ..workload.timemodels import TimeModel, make_time_model
from ..workload.torch_nets import DTYPES as TORCH_DTYPES
from ..workload.torch_nets import LOSSES as TORCH_LOSSES
from ..workload.torch_nets import TORCH_INSTALL, TORCH_NETS, torch_missing
from .events import ClusterEvent, parse_events
from .network_plan import SHIPPED_TOPOLOGIES, NetworkPlan, find_topology_file, parse_network
from .server import ServerSpec, parse_server

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
]

DATA_SOURCES = SOURCES
MODEL_NAMES = tuple(MODELS)
BACKENDS = ("numpy", "torch")
TORCH_INITS = ("default", "zeros", "normal")
DEVICES = ("cpu", "cuda")
MAX_THREADS = 256
LABELINGS = tuple(dict.fromkeys(x for xs in LABELLINGS.values() for x in xs))
INITS = ("zeros", "normal", "he")
BINARY_MODELS = BINARY

MAX_WORKERS = 1_000_000
"""Most workers a scenario may have, over all classes."""
MAX_GRADIENTS = 1e8
"""Most gradient computations a run may be expected to make: the sum over classes of
count × run.until / (median compute time + fixed latencies). Beyond this a run cannot
finish in reasonable wall time (the emulator makes ~1e5 per wall second at best)."""
MAX_EVALUATIONS = 1e7
"""Most periodic events of one kind a run may schedule (run.until / eval_every, ...)."""
MAX_EVALUATED = 5e12
"""Most multiply-adds a run's periodic evaluations may make in all: evaluations × entries of
the training and test sets × the model's first-layer width (1 for the binary models, the
classes for softmax, the first hidden width for the MLP); from minutes to an hour or two."""
MIN_UNTIL = 1e-9
"""Shortest horizon (s): shorter ones are below the resolution of the event times."""
MAX_SAMPLES = 10_000_000
MAX_VALUES = 50_000_000
"""Synthetic data: most rows, and most rows × features (400 MB of float64); most features:
:data:`~netsim.workload.datasets.MAX_FEATURES`."""
MAX_CLASSES = 1000
MAX_SCENARIO_BYTES = 8 * 2**20
"""Largest scenario file read (8 MiB, about a million replay times): validating a larger
one takes longer than a run."""


@dataclass(frozen=True)
class RunSpec:
    """``[run]``: seed, algorithm, horizon (s), evaluation cadence (s or updates).

    ``timeline_until``: record per-worker phase spans up to this simulated time
    (s); negative: the whole run; 0: none. ``target_loss`` (> 0): the summary
    reports when the evaluated training loss first reached it. ``compact_gradients``:
    keep minibatch gradients as their low-rank factors (needs ``model.l2 = 0``); same
    results, far less memory with thousands of workers. ``time_unit``: the name of
    one unit of simulated time in tables and figures (``"s"``, or ``"units"`` for a
    scenario that counts abstract time units); it changes no number. ``eval_rows``
    (> 0): evaluations read a fixed random subset of that many training rows (the
    loss) and test rows (the accuracy), drawn from the seed; 0: all rows.
    """

    seed: int = 0
    algorithm: str = DEFAULT_RULE
    until: float = 100.0
    max_updates: int = 0
    eval_every: float = 0.0
    eval_every_updates: int = 0
    batch_size: int = 32
    timeline_until: float = -1.0
    target_loss: float = 0.0
    compact_gradients: bool = False
    time_unit: str = "s"
    eval_rows: int = 0


@dataclass(frozen=True)
class DataSpec:
    """``[data]``: where examples come from and how they are labelled."""

    source: str = "digits"
    dir: str | None = None
    labels: str = "odd_even"
    test_fraction: float = 0.2
    add_bias: bool = False
    train_file: str | None = None
    test_file: str | None = None
    n_features: int = 0
    n_samples: int = 2000
    n_classes: int = 2
    partition: PartitionSpec = PartitionSpec()
    path: str | None = None
    min_rows: int = 1

    def n_labels(self) -> int | None:
        """Number of distinct labels after labelling, when known without reading files (None for libsvm)."""
        if self.labels in ("odd_even", "binary"):
            return 2
        if self.source in ("digits", "mnist"):
            return 10
        return self.n_classes if self.source == "synthetic" else None


@dataclass(frozen=True)
class ModelSpec:
    """``[model]``: the model, its L2 weight λ and its initial model.

    ``backend = "numpy"`` (default): *name* is one of :data:`MODEL_NAMES`, *hidden* the
    MLP's widths (``init = "he"``: He normal weights, zero biases; the MLP's default).
    ``backend = "torch"``: a built-in network *name* (:data:`TORCH_NETS`: ``hidden`` for
    ``mlp``; ``channels``, ``hidden``, ``kernel`` for ``cnn``) or the user's *module*
    ``"package.module:ClassName"`` built with *kwargs*, imported from the folder
    *module_dir* first (absolute; default the scenario's folder); trained on *loss* in *dtype* on
    *device* with *threads* intra-op threads; ``init = "default"`` keeps the module's own
    initialisation (seeded from the scenario); *stack* evaluates the gradients of workers
    that finish together in one ``vmap`` call.
    """

    name: str = "logistic"
    l2: float = 0.0
    init: str = "zeros"
    init_scale: float = 0.01
    hidden: tuple[int, ...] = (128,)
    backend: str = "numpy"
    module: str = ""
    kwargs: tuple = ()
    loss: str = "cross_entropy"
    channels: tuple[int, ...] = (16, 32)
    kernel: int = 3
    dtype: str = "float32"
    device: str = "cpu"
    threads: int = 1
    stack: bool = False
    module_dir: str = ""

    @property
    def key(self) -> str:
        """The model's name in per-model tables (``lr = { <key> = ... }``): *name*, or the
        class name of a user *module*."""
        return self.module.rpartition(":")[2] if self.module else self.name

    def kwargs_dict(self) -> dict:
        """*kwargs* as the keyword arguments of the module's constructor (lists, tables)."""
        return {k: _thaw(v) for k, v in self.kwargs}


def _freeze(value):
    """A TOML value as a hashable one (tables → sorted pairs tagged ``dict``, arrays → tuples)."""
    if isinstance(value, dict):
        return ("__dict__", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value):
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "__dict__":
        return {k: _thaw(v) for k, v in value[1]}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class WorkerClass:
    """``[[workers]]``: *count* workers sharing a compute-time model and latencies (s)."""

    name: str
    count: int
    compute: TimeModel
    pull_latency: float = 0.0
    push_latency: float = 0.0
    datacenter: int | None = None
    hosts: tuple | None = None
    partition: PartitionSpec | None = None
    labels: tuple[int, ...] | None = None


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

    def with_overrides(self, overrides) -> "Scenario":
        """This scenario with ``KEY=VALUE`` *overrides* applied (values are TOML), validated again.

        Raises ScenarioError naming this scenario's file and the key.
        """
        raw = copy.deepcopy(self.raw)
        try:
            apply_overrides(raw, list(overrides))
            return replace(
                parse_scenario(raw, Path(self.path)), overrides=self.overrides + tuple(overrides)
            )
        except ScenarioError as exc:
            exc.file = self.path
            raise

    def resolved(self) -> dict:
        """The scenario dict with every override applied, standing on its own: ``name``
        and ``run.algorithm`` written out, ``data.dir`` absolute (the directory read,
        including one from ``$NETSIM_DATA_DIR``), a topology file given by a relative
        path (or read by an inline ``graphml`` spec), an npz or LIBSVM file and the folder a
        torch module is imported from made absolute. Loading it again, from any folder, gives
        the same scenario."""
        from ..workload.loading import DataNotFoundError, data_file, resolve_data_dir

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
        if isinstance(data, dict) and self.data.path is not None:  # npz, read from here
            data["path"] = self.data.path
        if isinstance(data, dict) and self.data.source == "libsvm":
            for key in ("train_file", "test_file"):  # as read: data folder, then here
                try:
                    found = data_file(getattr(self.data, key), self.data, f"data.{key}")
                except DataNotFoundError:
                    found = None  # not there: written as given, refused when loaded
                if found is not None:
                    data[key] = str(Path(found).resolve())
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


def class_ids(workers) -> dict[str, tuple[int, ...]]:
    """Worker class name → its worker ids (ids are given in class order)."""
    out, start = {}, 0
    for wc in workers:
        out[wc.name] = tuple(range(start, start + wc.count))
        start += wc.count
    return out


def resolve_scenario_path(path: str | os.PathLike) -> Path:
    """A scenario file, or the preset named *path* (``gsgd_paper``: ./scenarios, then the
    presets shipped with netsim). Raises ScenarioError listing the presets when neither exists."""
    try:
        exists = Path(path).exists()
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
        raise ScenarioError(
            "(file)", f"not a usable path: {getattr(exc, 'strerror', None) or exc}", str(path)[:200]
        ) from None
    if exists:
        return Path(path)  # a file, or a folder refused with its own message when read
    found = find_scenario(str(path))
    if found is None:
        names = ", ".join(list_scenarios()) or "none"
        raise ScenarioError(
            "(file)",
            f"no such file or scenario preset (presets: {names}; "
            "start a new one with: netsim init NAME)",
            str(path),
        )
    return found


def load_scenario(
    path: str | os.PathLike,
    overrides: list[str] = (),
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


def read_toml(path: Path) -> dict:
    """The table of the TOML file *path*; ScenarioError (key ``(file)`` or ``(syntax)``)
    for a file that is missing, a directory, unreadable, not UTF-8 or not valid TOML."""
    try:
        if (
            path.exists() and not path.is_dir() and not path.is_file()
        ):  # a FIFO or device: reading could block
            raise ScenarioError("(file)", "not a regular file (give a .toml file)", str(path))
        if path.is_file() and path.stat().st_size > MAX_SCENARIO_BYTES:
            raise ScenarioError(
                "(file)",
                f"{path.stat().st_size:,} bytes; a scenario file may have at most "
                f"{MAX_SCENARIO_BYTES:,} (about a million replay times)",
                str(path),
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError("(file)", "no such file", str(path)) from None
    except IsADirectoryError:
        raise ScenarioError(
            "(file)", "is a directory, not a scenario file (give a .toml file)", str(path)
        ) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            "(file)",
            f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            str(path),
        ) from None
    except OSError as exc:
        raise ScenarioError("(file)", f"cannot be read: {exc.strerror or exc}", str(path)) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError("(syntax)", f"not valid TOML: {exc}", str(path)) from None
    except RecursionError:
        raise ScenarioError(
            "(syntax)", f"nested too deeply to read (at most {MAX_DEPTH} levels)", str(path)
        ) from None
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        raise ScenarioError("(syntax)", f"not readable: {exc}", str(path)) from None
    try:
        check_value(raw, "")
    except ScenarioError as exc:
        exc.file = str(path)
        raise
    return raw


def parse_scenario(raw: dict, path: Path) -> Scenario:
    """Validate the dict of a scenario file located at *path*."""
    check_value(raw, "")
    raw = copy.deepcopy(raw)
    algorithm_given = isinstance(raw.get("run"), dict) and "algorithm" in raw["run"]
    top = Table(raw, "")
    name = top.get("name", str, path.stem)
    top.get("description", str, "")
    run = _run(top.table("run", {}))
    data = _data(top.table("data", {}), path)
    model = _model(top.table("model", {}), path)
    if (n_labels := data.n_labels()) is not None and (why := binary_problem(model, data, n_labels)):
        raise ScenarioError("data.labels", why)
    workers = _workers(top.get("workers", list), data, path.parent)
    gradients = _check_budget(run, workers)
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
    _check_rule_budget(run, rules, start)
    network = _network(top, path, workers, run.seed)
    server = parse_server(top, network is not None)
    _check_compact(run, model, rules)
    events = parse_events(
        top.get("events", list, []),
        until=run.until,
        classes=classes,
        n_workers=start,
        graph=network.graph if network else None,
    )
    _check_slowdown_budget(run, workers, events, top.get("events", list, []), gradients)
    top.done()
    if run.algorithm not in rules:
        raise ScenarioError(
            "run.algorithm",
            f"{show(run.algorithm)} is not configured (configured: {', '.join(rules)}); add an "
            f"[algorithms.{run.algorithm if isinstance(run.algorithm, str) else 'NAME'}] table with its lr "
            "(and the rule's keys: docs/ALGORITHMS.md)",
        )
    rows = _train_rows(data)
    if rows is not None:
        check_rows(rows, start, data)
    return Scenario(
        str(path), name, run, data, model, workers, rules, raw, network, events, server=server
    )


def _network(top: Table, path: Path, workers: list, seed: int):
    """The ``[network]`` table's plan (None without one); fixed latencies only without it,
    datacenter/hosts placements only with it."""
    if not top.has("network"):
        for i, wc in enumerate(workers):
            if wc.datacenter is not None or wc.hosts:
                raise ScenarioError(f"workers[{i}]", "datacenter/hosts need a [network] table")
        return None
    for i, wc in enumerate(workers):
        if wc.pull_latency or wc.push_latency:
            raise ScenarioError(
                f"workers[{i}].latency",
                "fixed latencies apply only without a [network] "
                "table; with one, transfers follow the topology",
            )
    return parse_network(
        top.table("network"),
        path,
        [{"count": wc.count, "datacenter": wc.datacenter, "hosts": wc.hosts} for wc in workers],
        Streams(seed).rng("placement"),
    )


def _check_compact(run, model, rules: dict) -> None:
    """``run.compact_gradients`` needs L2 = 0, a linear numpy model and no lgc."""
    if not run.compact_gradients:
        return
    if model.l2:
        raise ScenarioError(
            "run.compact_gradients",
            f"needs model.l2 = 0 (got {model.l2!r}): the L2 term of a "
            "gradient is a dense vector of the model the worker read",
        )
    if model.name == "mlp" or model.backend == "torch":
        raise ScenarioError(
            "run.compact_gradients",
            "needs a linear numpy model (an MLP's or a torch "
            "model's gradient has no low-rank form)",
        )
    if partial := [name for name in rules if not RULES[name].compact]:
        raise ScenarioError(
            "run.compact_gradients",
            f"not available with {partial[0]}, which reads partial gradients "
            f"at the model each straggler read (remove [algorithms.{partial[0]}] or this key)",
        )


def _train_rows(data: DataSpec) -> int | None:
    """Training rows, when known without reading files (digits, synthetic)."""
    if data.source == "digits":
        return train_rows(DIGITS_ROWS, data.test_fraction)
    if data.source == "synthetic":
        return train_rows(data.n_samples, data.test_fraction)
    return None


def check_rows(rows: int, n_workers: int, data: DataSpec) -> None:
    """Every worker needs at least ``data.min_rows`` (default 1) training rows of its own."""
    if n_workers * data.min_rows > rows and data.min_rows > 1:
        raise ScenarioError(
            "data.min_rows",
            f"{data.min_rows} rows for each of {n_workers} workers, but data "
            f"{data.source!r} has only {rows} training rows: lower data.min_rows or use fewer workers",
        )
    if n_workers > rows:
        hint = "raise data.n_samples" if data.source == "synthetic" else "use a larger data set"
        raise ScenarioError(
            "workers",
            f"{n_workers} workers but only {rows} training rows in data "
            f"{data.source!r} (each worker needs a shard of >= 1 row): use fewer workers or {hint}",
        )


def binary_problem(model: ModelSpec, data: DataSpec, n_classes: int) -> str | None:
    """Why a binary model cannot take data of *n_classes* classes (None when it can)."""
    if model.backend != "numpy" or model.name not in BINARY_MODELS or n_classes == 2:
        return None
    two = "'odd_even'" if "odd_even" in LABELLINGS[data.source] else "'binary' with 2-class data"
    return (
        f"{data.labels!r} gives {n_classes} classes, but model {model.name!r} needs 2 (use "
        f"labels = {two}, or model.name = 'softmax')"
    )


def labels_problem(labels, n_labels: int | None, data: DataSpec) -> str | None:
    """Why a worker class's *labels* do not exist in data of *n_labels* labels (None: unknown
    yet, or they do)."""
    bad = [c for c in labels if c < 0 or (n_labels is not None and c >= n_labels)]
    if not bad:
        return None
    allowed = f"0..{n_labels - 1}" if n_labels is not None else "labels >= 0"
    return (
        f"labels {bad} do not exist (allowed: {allowed} for {data.source} "
        f"with labels = {data.labels!r})"
    )


def shards_problem(k: int, n_labels: int, given: bool) -> str | None:
    """Why ``classes_per_worker = k`` (*given*, or the default) cannot cut *n_labels* labels."""
    if k <= n_labels:
        return None
    what = repr(k) if given else f"{k!r} (the default; set it)"
    return (
        f"{what} is not allowed (the data has {n_labels} "
        f"label{'s' if n_labels != 1 else ''}: 1..{n_labels})"
    )


def check_dataset(scenario: "Scenario", n_train: int, n_classes: int, entries: int = 0) -> None:
    """Refuse what the loaded data cannot support (ScenarioError with the file set):
    fewer training rows than workers, more than 2 classes for a binary model, periodic
    evaluations making more than MAX_EVALUATED multiply-adds in all (*entries*: those of
    the training and test sets, which every evaluation reads)."""
    try:
        check_rows(n_train, scenario.n_workers, scenario.data)
        if why := binary_problem(scenario.model, scenario.data, n_classes):
            raise ScenarioError("data.labels", why)
        run = scenario.run
        if run.eval_every and entries:
            n = _evaluation_horizon(run, scenario.workers) / run.eval_every
            model = scenario.model
            width = _eval_width(model, n_classes)
            if n * entries * width > MAX_EVALUATED:
                raise ScenarioError(
                    "run.eval_every",
                    f"{run.eval_every!r} s gives {n:.3g} evaluations, each of "
                    f"{entries:.3g} data entries (training and test sets) × {width} model "
                    f"column{'s' if width > 1 else ''}: {n * entries * width:.2g} multiply-adds "
                    f"in all; at most {MAX_EVALUATED:.0e} can finish: raise eval_every or lower "
                    "run.until",
                )
    except ScenarioError as exc:
        exc.file = scenario.path
        raise


def _eval_width(model: ModelSpec, n_classes: int) -> int:
    """Multiply-adds per data entry of one evaluated row: 1 for the binary models, the
    classes for softmax, the first hidden width for the MLP or a torch network's first
    dense layer (a lower bound for a convolutional one, whose size is known only once built)."""
    if model.backend == "torch":
        return model.hidden[0] if model.name == "mlp" and model.hidden else 1
    return {"softmax": n_classes, "mlp": model.hidden[0]}.get(model.name, 1)


def _check_rule_budget(run: RunSpec, rules: dict, n_workers: int) -> None:
    """Rule timers and probes that could not finish: periodic regrouping more often
    than MAX_EVALUATIONS times per run, probe phases beyond MAX_GRADIENTS iterations."""
    for name, rule in rules.items():
        spec = getattr(rule, "grouping", None)
        every = getattr(spec, "regroup_every_s", 0.0)
        if every and run.until / every > MAX_EVALUATIONS:
            raise ScenarioError(
                f"algorithms.{name}.regroup_every_s",
                f"{every!r} s gives {run.until / every:.3g} "
                f"regroupings over run.until = {run.until:g} s (at most {MAX_EVALUATIONS:.0e})",
            )
        rounds = getattr(spec, "probe_rounds", 0)
        if rounds * n_workers > MAX_GRADIENTS:
            raise ScenarioError(
                f"algorithms.{name}.probe_rounds",
                f"{rounds} rounds × {n_workers} workers is more "
                f"than {MAX_GRADIENTS:.0e} probe iterations",
            )


def _steps(workers) -> list[float]:
    """Each class's typical iteration (s): median compute time plus fixed latencies."""
    return [wc.compute.typical() + wc.pull_latency + wc.push_latency for wc in workers]


def _evaluation_horizon(run: RunSpec, workers) -> float:
    """The simulated time (s) periodic evaluations can run for: run.until, or with
    ``max_updates`` at most about 10 slowest steps per update."""
    if run.max_updates:
        return min(run.until, run.max_updates * 10 * max(_steps(workers)))
    return run.until


def _check_budget(run: RunSpec, workers) -> float:
    """Refuse runs whose event count cannot finish: see MAX_GRADIENTS, MAX_EVALUATIONS.
    Returns the expected gradient count (without ``max_updates``' cap).

    With ``max_updates`` the run also ends after that many updates: each needs at
    least one gradient (so the gradient count to refuse is at least ``max_updates``)
    and lasts at most about 10 slowest steps (the evaluation count is bounded by that).
    """
    steps = _steps(workers)
    horizon = _evaluation_horizon(run, workers)
    if run.eval_every and horizon / run.eval_every > MAX_EVALUATIONS:
        raise ScenarioError(
            "run.eval_every",
            f"{run.eval_every!r} s gives {horizon / run.eval_every:.3g} "
            f"evaluations over run.until = {run.until:g} s (at most {MAX_EVALUATIONS:.0e}; "
            "raise eval_every or lower run.until)",
        )
    cap = run.max_updates if run.max_updates else float("inf")  # each update takes >= 1 gradient
    total = 0.0
    for i, (wc, step) in enumerate(zip(workers, steps)):
        total += wc.count * run.until / step if step > 0 else float("inf")
        if min(total, cap) > MAX_GRADIENTS:
            raise ScenarioError(
                f"workers[{i}].compute",
                f"the run would make ~{min(total, cap):.3g} gradient "
                f"computations (sum of count × run.until / median compute time; here "
                f"{wc.count} × {run.until:g} s / {step:.3g} s); at most {MAX_GRADIENTS:.0e} can "
                "finish: lower run.until, run.max_updates or the worker count, or make compute "
                "times longer",
            )
    return total


def _check_slowdown_budget(run: RunSpec, workers, events, items: list, gradients: float) -> None:
    """:func:`_check_budget` with the ``slowdown`` events, from its expected count *gradients*:
    a worker whose compute times are multiplied by f from time t0 makes about
    (t1 − t0) / (typical · f + latencies) gradients until its next slowdown (or run.until)
    instead of (t1 − t0) / (typical + latencies). A refusal names the factor of the fastest
    slowdown (*items*: the raw ``[[events]]``)."""
    slow = [e for e in events if e.kind == "slowdown"]
    if not slow:
        return
    typical = [wc.compute.typical() for wc in workers]
    latency = [wc.pull_latency + wc.push_latency for wc in workers]
    ends = list(
        itertools.accumulate(wc.count for wc in workers)
    )  # worker w is of class bisect_right(ends, w)
    changes: dict[int, list] = {}
    for e in slow:  # in time order
        for w in e.workers:
            changes.setdefault(w, []).append((e.time, e.factor))

    def rate(k: int, f: float) -> float:
        step = typical[k] * f + latency[k]
        return 1.0 / step if step > 0 else math.inf

    total = gradients
    for w, seq in changes.items():
        k = bisect.bisect_right(ends, w)
        for (t0, f), t1 in zip(seq, [t for t, _ in seq[1:]] + [run.until]):
            total += (t1 - t0) * (rate(k, f) - rate(k, 1.0))
    cap = run.max_updates if run.max_updates else math.inf
    if min(total, cap) > MAX_GRADIENTS:
        low = min(e.factor for e in slow)
        i = next(
            i
            for i, item in enumerate(items)
            if isinstance(item, dict)
            and item.get("kind") == "slowdown"
            and float(item.get("factor", 1.0)) == low
        )
        raise ScenarioError(
            f"events[{i}].factor",
            f"{low!r} makes compute times so short that the run would make "
            f"~{min(total, cap):.3g} gradient computations; at most {MAX_GRADIENTS:.0e} can finish: "
            "use a larger factor, or lower run.until or run.max_updates",
        )


def _run(t: Table) -> RunSpec:
    spec = RunSpec(
        seed=t.get("seed", int, 0, minimum=0),
        algorithm=t.get("algorithm", str, DEFAULT_RULE),
        until=t.get("until", float, 100.0, positive=True, minimum=MIN_UNTIL),
        max_updates=t.get("max_updates", int, 0, minimum=0),
        eval_every=t.get("eval_every", float, 0.0, minimum=0),
        eval_every_updates=t.get("eval_every_updates", int, 0, minimum=0),
        batch_size=t.get("batch_size", int, 32, positive=True),
        timeline_until=t.get("timeline_until", float, -1.0),
        target_loss=t.get("target_loss", float, 0.0, minimum=0.0),
        compact_gradients=t.get("compact_gradients", bool, False),
        time_unit=t.get("time_unit", str, "s"),
        eval_rows=t.get("eval_rows", int, 0, minimum=0),
    )
    t.done()
    return spec


def _data(t: Table, path: Path) -> DataSpec:
    source = t.get("source", str, "digits", choices=DATA_SOURCES)
    directory = check_path(t.get("dir", str, None), t.key("dir"))
    if directory is not None:
        directory = str((path.parent / os.path.expanduser(directory)).resolve())
    spec = DataSpec(
        source=source,
        dir=directory,
        labels=t.get(
            "labels",
            str,
            "multiclass" if source == "npz" else LABELLINGS[source][0],
            choices=LABELLINGS[source],
        ),
        test_fraction=t.get("test_fraction", float, 0.2, positive=True, maximum=0.9),
        add_bias=t.get("add_bias", bool, False),
        train_file=check_path(t.get("train_file", str, None), t.key("train_file")),
        test_file=check_path(t.get("test_file", str, None), t.key("test_file")),
        n_features=t.get(
            "n_features",
            int,
            0 if source != "synthetic" else 20,
            minimum=1 if source == "synthetic" else 0,
            maximum=MAX_FEATURES,
        ),
        n_samples=t.get("n_samples", int, 2000, minimum=2, maximum=MAX_SAMPLES),
        n_classes=t.get("n_classes", int, 2, minimum=2, maximum=MAX_CLASSES),
        path=_npz_path(t, path) if source == "npz" else None,
        min_rows=t.get("min_rows", int, 1, positive=True, maximum=MAX_SAMPLES),
    )
    if spec.source == "synthetic" and spec.n_samples * spec.n_features > MAX_VALUES:
        raise ScenarioError(
            t.key("n_samples"),
            f"{spec.n_samples} rows × {spec.n_features} features is more than "
            f"{MAX_VALUES:.0e} values (400 MB); lower n_samples or n_features",
        )
    spec = replace(spec, partition=_partition(t, PartitionSpec(), spec.n_labels()))
    if spec.test_file is not None and spec.train_file is None and spec.source == "libsvm":
        raise ScenarioError(
            t.key("test_file"),
            "needs data.train_file (without it the default a9a and a9a.t are read)",
        )
    if spec.source in ("digits", "mnist") and spec.labels == "binary":
        raise ScenarioError(
            t.key("labels"), f"'binary' does not apply to {source} (allowed: odd_even, multiclass)"
        )
    if spec.source in ("libsvm", "synthetic") and spec.labels == "odd_even":
        raise ScenarioError(
            t.key("labels"),
            f"'odd_even' applies to digit data only (allowed for {source}: binary, multiclass)",
        )
    t.done()
    return spec


def _npz_path(t: Table, path: Path) -> str:
    """``data.path`` of source npz, resolved against the scenario's folder."""
    given = check_path(t.get("path", str), t.key("path"))
    return str((path.parent / os.path.expanduser(given)).resolve())


def _model(t: Table, path: Path) -> ModelSpec:
    backend = t.get("backend", str, "numpy", choices=BACKENDS)
    spec = _torch_model(t, path) if backend == "torch" else _numpy_model(t)
    t.done()
    return spec


def _l2(t: Table, name: str, names) -> float:
    """``l2``: a number >= 0, or a table of them per model name (*names*: the keys allowed)."""
    l2 = t.get("l2", (float, dict), 0.0)
    if isinstance(l2, dict):
        per_model = t.table("l2")
        for key in per_model.data:
            per_model.get(key, float, minimum=0.0)
            if key not in names:
                raise ScenarioError(
                    per_model.key(key), f"unknown model (allowed: {', '.join(names)})"
                )
        return float(per_model.data.get(name, 0.0))
    return float(t.get("l2", float, 0.0, minimum=0.0))


def _widths(t: Table, key: str, default: list, lo: int, hi: int | None) -> tuple[int, ...]:
    """A list of *lo*..*hi* (None: any number of) positive integers."""
    widths = t.get(key, list, default)
    if not lo <= len(widths) <= (hi or len(widths)) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in widths
    ):
        count = f"{lo} or {hi}" if hi else f"{lo} or more"
        raise ScenarioError(t.key(key), f"expected {count} layer widths > 0, got {widths!r}")
    return tuple(widths)


def _numpy_model(t: Table) -> ModelSpec:
    name = t.get("name", str, "logistic", choices=MODEL_NAMES)
    l2 = _l2(t, name, MODEL_NAMES)
    init = t.get("init", str, "he" if name == "mlp" else "zeros", choices=INITS)
    if name == "mlp" and init == "zeros":
        raise ScenarioError(
            t.key("init"),
            "'zeros' leaves every hidden unit of the MLP identical (allowed: he, normal)",
        )
    if name != "mlp" and init == "he":
        raise ScenarioError(
            t.key("init"), f"'he' applies to the MLP only (allowed for {name}: zeros, normal)"
        )
    if name != "mlp" and t.has("hidden"):
        raise ScenarioError(t.key("hidden"), f"applies to model 'mlp' only (model is {name!r})")
    hidden = _widths(t, "hidden", [128], 1, 2)
    return ModelSpec(
        name=name,
        l2=l2,
        init=init,
        init_scale=t.get("init_scale", float, 0.01, positive=True),
        hidden=hidden,
    )


def _torch_model(t: Table, path: Path) -> ModelSpec:
    """``[model] backend = "torch"``: a built-in network (*name*) or the user's *module*.
    Its keys are read and checked before PyTorch is looked for, so that a scenario's errors
    and ``netsim keys`` do not depend on whether it is installed."""
    module = t.get("module", str, "")
    if module and t.has("name"):
        raise ScenarioError(
            t.key("name"), "give either name (a built-in network) or module (your own), not both"
        )
    name = "" if module else t.get("name", str, MISSING_NAME, choices=TORCH_NETS)
    if name == MISSING_NAME:
        raise ScenarioError(
            t.key("name"),
            f"missing: a built-in network ({', '.join(TORCH_NETS)}) or "
            "module = 'package.module:ClassName'",
        )
    kwargs = t.get("kwargs", dict, {})
    for key in ("kwargs", "module_dir"):
        if t.has(key) and not module:
            raise ScenarioError(
                t.key(key),
                "applies to module only (the built-in networks take channels, hidden and kernel)",
            )
    module_dir = ""
    if module:  # the scenario's folder by default; a run folder's scenario.toml names it
        given = check_path(t.get("module_dir", str, "."), t.key("module_dir"))
        module_dir = str((path.parent / os.path.expanduser(given)).resolve())
        if t.has("module_dir") and not Path(module_dir).is_dir():
            raise ScenarioError(
                t.key("module_dir"), f"{module_dir} is not a folder (the module's folder)"
            )
    for key, nets in (("channels", ("cnn",)), ("kernel", ("cnn",)), ("hidden", ("cnn", "mlp"))):
        if t.has(key) and name not in nets:
            raise ScenarioError(
                t.key(key), f"applies to name = {' or '.join(map(repr, nets))} only"
            )
    spec = ModelSpec(
        backend="torch",
        name=name,
        module=module,
        module_dir=module_dir,
        kwargs=tuple((k, _freeze(v)) for k, v in sorted(kwargs.items())),
        l2=0.0,
        loss=t.get("loss", str, "cross_entropy", choices=TORCH_LOSSES),
        init=t.get("init", str, "default", choices=TORCH_INITS),
        init_scale=t.get("init_scale", float, 0.01, positive=True),
        hidden=_widths(t, "hidden", [64] if name == "cnn" else [128], 0, None),
        channels=_widths(t, "channels", [16, 32], 1, None),
        kernel=t.get("kernel", int, 3, positive=True, maximum=15),
        dtype=t.get("dtype", str, "float32", choices=TORCH_DTYPES),
        device=t.get("device", str, "cpu", choices=DEVICES),
        threads=t.get("threads", int, 1, positive=True, maximum=MAX_THREADS),
        stack=t.get("stack", bool, False),
    )
    spec = replace(spec, l2=_l2(t, spec.key, (spec.key,)))
    if torch_missing():
        raise ScenarioError(
            t.key("backend"), f"'torch' needs PyTorch, which is not installed: {TORCH_INSTALL}"
        )
    if module:
        from ..workload.torch_nets import load_module_class

        try:
            load_module_class(module, Path(module_dir))
        except ValueError as exc:
            raise ScenarioError(t.key("module"), str(exc)) from None
    if spec.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ScenarioError(
                t.key("device"), "'cuda' but torch sees no CUDA device here (allowed: cpu)"
            )
    return spec


MISSING_NAME = "\0missing"


def _partition(t: Table, base: PartitionSpec, n_labels: int | None) -> PartitionSpec:
    """The partition keys of *t* (``[data]`` or a worker class's ``data``) over *base*."""
    method = t.get("partition", str, base.method, choices=PARTITIONS)
    alpha = t.get("alpha", float, base.alpha, positive=True)
    k = t.get("classes_per_worker", int, base.classes_per_worker, positive=True)
    if method == "shards" and n_labels is not None:
        if why := shards_problem(k, n_labels, t.has("classes_per_worker")):
            raise ScenarioError(t.key("classes_per_worker"), why)
    law = t.get("quantity", str, base.law, choices=QUANTITY_LAWS)
    exponent = t.get("exponent", float, base.exponent, positive=True)
    used = {
        "iid": (),
        "dirichlet": ("alpha",),
        "shards": ("classes_per_worker",),
        "quantity": ("quantity", "alpha" if law == "dirichlet" else "exponent"),
    }[method]
    for key in ("alpha", "classes_per_worker", "quantity", "exponent"):
        if t.has(key) and key not in used:
            raise ScenarioError(
                t.key(key),
                f"does not apply to partition {method!r} "
                f"(keys it reads: {', '.join(used) or 'none'})",
            )
    return PartitionSpec(
        method=method, alpha=alpha, classes_per_worker=k, law=law, exponent=exponent
    )


def _class_data(t: Table, data: DataSpec) -> tuple[PartitionSpec | None, tuple[int, ...] | None]:
    """A worker class's ``data = {labels = [...], partition = ..., ...}``."""
    if not t.has("data"):
        t.known.append("data")
        return None, None
    sub = t.table("data")
    n_labels = data.n_labels()
    labels = sub.get("labels", list, None)
    if labels is not None:
        if not labels or not all(isinstance(c, int) and not isinstance(c, bool) for c in labels):
            raise ScenarioError(
                sub.key("labels"), f"expected a non-empty list of integer labels, got {labels!r}"
            )
        if why := labels_problem(labels, n_labels, data):
            raise ScenarioError(sub.key("labels"), why)
        if len(set(labels)) != len(labels):
            raise ScenarioError(sub.key("labels"), f"a label is named twice in {labels!r}")
        labels = tuple(sorted(labels))
    own = any(
        sub.has(k) for k in ("partition", "alpha", "classes_per_worker", "quantity", "exponent")
    )
    spec = _partition(sub, data.partition, len(labels) if labels else n_labels)
    sub.done()
    return (spec if own else None), labels


def _workers(items: list, data: DataSpec = DataSpec(), base=None) -> tuple[WorkerClass, ...]:
    if not items:
        raise ScenarioError("workers", "at least one [[workers]] class is needed")
    classes, names, total = [], set(), 0
    for i, item in enumerate(items):
        t = Table(item, f"workers[{i}]")
        name = t.get("name", str, f"class{i}")
        if name in names:
            raise ScenarioError(t.key("name"), f"duplicate worker class name {show(name)}")
        names.add(name)
        count = t.get("count", int, 1, positive=True, maximum=MAX_WORKERS)
        total += count
        if total > MAX_WORKERS:
            raise ScenarioError(
                t.key("count"),
                f"{total} workers in the first {i + 1} classes; at most "
                f"{MAX_WORKERS} are allowed in all",
            )
        latency = t.get("latency", float, 0.0, minimum=0.0)
        t.known.append("compute")
        if "compute" not in t.data:
            raise ScenarioError(t.key("compute"), "missing (a time in s, or a table {dist = ...})")
        compute = make_time_model(
            t.data["compute"], t.key("compute"), count, base=base, worker_class=name
        )
        partition, labels = _class_data(t, data)
        hosts = t.get("hosts", list, None)
        if hosts is not None and (
            len(hosts) != count or not all(isinstance(h, str) for h in hosts)
        ):
            raise ScenarioError(
                t.key("hosts"), f"expected {count} host names (one per worker), got {show(hosts)}"
            )
        classes.append(
            WorkerClass(
                name,
                count,
                compute,
                pull_latency=t.get("pull_latency", float, latency, minimum=0.0),
                push_latency=t.get("push_latency", float, latency, minimum=0.0),
                datacenter=t.get("datacenter", int, None, minimum=0),
                hosts=tuple(hosts) if hosts else None,
                partition=partition,
                labels=labels,
            )
        )
        t.done()
    return tuple(classes)


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
            key = "momentum" if rule.update.momentum else "lr_schedule"
            raise ScenarioError(
                sub.key(key),
                f"{name} steps each worker's own model plainly: no learning-rate schedule or "
                "momentum (remove the key)",
            )
        rules[name] = rule
        sub.done()
    if not rules:
        raise ScenarioError(
            "algorithms", f"configure at least one algorithm (allowed: {', '.join(RULES)})"
        )
    return rules
