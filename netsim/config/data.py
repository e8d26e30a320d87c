"""``[data]`` (and a worker class's ``data``): where examples come from, how they are
labelled and cut, and the checks of the loaded data against the scenario."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import ScenarioError
from ..params import Table, check_path
from ..workload.backends import BACKENDS
from ..workload.datasets import MAX_SAMPLES
from ..workload.partition import PARTITIONS, QUANTITY_LAWS, PartitionSpec
from ..workload.sources import SOURCES, labellings
from ..workload.sources.base import NoKeys
from .model import ModelSpec
from .run import MAX_EVALUATED, RunSpec, Timed, evaluation_horizon

__all__ = [
    "DataSpec",
    "DATA_SOURCES",
    "LABELINGS",
    "binary_problem",
    "labels_problem",
    "shards_problem",
    "check_rows",
    "check_dataset",
]

DATA_SOURCES = tuple(SOURCES)
"""The registered data sources (when this module was imported; readers ask the registry)."""


LABELINGS = labellings()


@dataclass(frozen=True)
class DataSpec:
    """``[data]``: where examples come from and how they are labelled: the keys every
    source reads, and ``own``, the source's own (frozen, hashable: a DataSpec keys memos)."""

    source: str = "digits"
    dir: str | None = None
    labels: str = "odd_even"
    test_fraction: float = 0.2
    add_bias: bool = False
    partition: PartitionSpec = PartitionSpec()
    min_rows: int = 1
    own: Any = NoKeys()
    """The source's own keys: the frozen dataclass its
    :meth:`~netsim.workload.sources.DataSource.read` makes (``SyntheticKeys``, ``NpzKeys``,
    ...; :class:`~netsim.workload.sources.base.NoKeys` for a source that reads none)."""

    def n_labels(self) -> int | None:
        """Number of distinct labels after labelling, when known without reading files."""
        if self.labels in ("odd_even", "binary"):
            return 2
        return SOURCES[self.source].n_labels(self)


def read_data(t: Table, path: Path) -> DataSpec:
    """``[data]``: the keys every source reads, then the source's own
    (:meth:`~netsim.workload.sources.DataSource.read`)."""
    source = SOURCES[t.get("source", str, "digits", choices=tuple(SOURCES))]
    directory = check_path(t.get("dir", str, None), t.key("dir"))
    if directory is not None:
        directory = str((path.parent / os.path.expanduser(directory)).resolve())
    spec = DataSpec(
        source=source.name,
        dir=directory,
        labels=t.get("labels", str, source.default_labels, choices=source.labellings),
        test_fraction=t.get("test_fraction", float, 0.2, positive=True, maximum=0.9),
        add_bias=t.get("add_bias", bool, False),
        own=source.read(t, path),
        min_rows=t.get("min_rows", int, 1, positive=True, maximum=MAX_SAMPLES),
    )
    spec = replace(spec, partition=_partition(t, PartitionSpec(), spec.n_labels()))
    t.done()
    return spec


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


def class_data(t: Table, data: DataSpec) -> tuple[PartitionSpec | None, tuple[int, ...] | None]:
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


def known_train_rows(data: DataSpec) -> int | None:
    """Training rows, when known without reading files (digits, synthetic)."""
    return SOURCES[data.source].train_rows(data)


def check_rows(rows: int, n_workers: int, data: DataSpec) -> None:
    """Every worker needs at least ``data.min_rows`` (default 1) training rows of its own."""
    if n_workers * data.min_rows > rows and data.min_rows > 1:
        raise ScenarioError(
            "data.min_rows",
            f"{data.min_rows} rows for each of {n_workers} workers, but data "
            f"{data.source!r} has only {rows} training rows: lower data.min_rows or use fewer workers",
        )
    if n_workers > rows:
        hint = SOURCES[data.source].rows_hint
        raise ScenarioError(
            "workers",
            f"{n_workers} workers but only {rows} training rows in data "
            f"{data.source!r} (each worker needs a shard of >= 1 row): use fewer workers or {hint}",
        )


def binary_problem(model: ModelSpec, data: DataSpec, n_classes: int) -> str | None:
    """Why a binary model cannot take data of *n_classes* classes (None when it can)."""
    if model.name not in BACKENDS[model.backend].binary_models or n_classes == 2:
        return None
    two = (
        "'odd_even'"
        if "odd_even" in SOURCES[data.source].labellings
        else "'binary' with 2-class data"
    )
    return (
        f"{data.labels!r} gives {n_classes} classes, but model {model.name!r} needs 2 (use "
        f"labels = {two}, or model.name = 'softmax')"
    )


def labels_problem(labels: Sequence[int], n_labels: int | None, data: DataSpec) -> str | None:
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


class Checked(Protocol):
    """What :func:`check_dataset` reads of a scenario (:class:`~netsim.config.scenario.Scenario`)."""

    @property
    def path(self) -> str: ...

    @property
    def n_workers(self) -> int: ...

    @property
    def run(self) -> RunSpec: ...

    @property
    def data(self) -> DataSpec: ...

    @property
    def model(self) -> ModelSpec: ...

    @property
    def workers(self) -> Sequence[Timed]: ...


def check_dataset(
    scenario: Checked, n_train: int, n_classes: int, sets: tuple[tuple[int, int], ...] = ()
) -> None:
    """Refuse what the loaded data cannot support (ScenarioError with the file set):
    fewer training rows than workers, more than 2 classes for a binary model, periodic
    evaluations making more than MAX_EVALUATED multiply-adds in all (*sets*: (entries,
    rows) of the training and test sets; an evaluation reads ``run.eval_rows`` rows of
    each, or all of them)."""
    try:
        check_rows(n_train, scenario.n_workers, scenario.data)
        if why := binary_problem(scenario.model, scenario.data, n_classes):
            raise ScenarioError("data.labels", why)
        run = scenario.run
        entries = evaluated_entries(sets, run.eval_rows)
        if run.eval_every and entries:
            n = evaluation_horizon(run, scenario.workers) / run.eval_every
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


def evaluated_entries(sets: tuple[tuple[int, int], ...], eval_rows: int | None) -> float:
    """Data entries one evaluation reads: of each set's (entries, rows), the share of its
    rows that ``eval_rows`` (None or 0: all) keeps.

    >>> evaluated_entries(((600, 60), (100, 10)), 20)
    300.0
    """
    total = 0.0
    for entries, rows in sets:
        keep = min(rows, eval_rows) if eval_rows else rows
        total += entries * keep / rows if rows else 0.0
    return total


def _eval_width(model: ModelSpec, n_classes: int) -> int:
    """Multiply-adds per data entry of one evaluated row: 1 for the binary models, the
    classes for softmax, the first hidden width for the MLP or a torch network's first
    dense layer (a lower bound for a convolutional one, whose size is known only once built)."""
    return BACKENDS[model.backend].eval_width(model, n_classes)
