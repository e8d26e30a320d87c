"""Sweep grids: ``KEY=V1,V2,...`` axes and their cartesian product (pure, no I/O).

A grid is a list of :class:`Axis` (a dotted scenario key and its values); its
points are the cartesian product, the first axis varying slowest, the last
fastest (the order of :func:`itertools.product`). Values are TOML values, so
an axis can carry lists (``algorithms.gsgd.groups``) or tables.
"""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from typing import Any

from ..errors import ScenarioError
from ..params import check_value, parse_value

__all__ = [
    "Axis",
    "Point",
    "parse_axis",
    "seed_axis",
    "expand",
    "toml_value",
    "format_value",
    "KEY_ALIASES",
    "SEED_KEY",
]

MAX_RUNS = 100_000
"""Most runs (grid points × seeds) one sweep may plan."""
KEY_ALIASES = {"algorithm": "run.algorithm", "seed": "run.seed"}
"""Short grid keys and the scenario keys they stand for."""
SEED_KEY = "run.seed"


@dataclass(frozen=True)
class Axis:
    """One swept scenario key (dotted path) and its values, in order."""

    key: str
    values: tuple


@dataclass(frozen=True)
class Point:
    """One grid point: its 0-based *index* and ``(key, value)`` pairs in axis order."""

    index: int
    values: tuple

    def overrides(self) -> list[str]:
        """The point as ``KEY=VALUE`` overrides (VALUE as TOML text), for ``--set``."""
        return [f"{key}={toml_value(value)}" for key, value in self.values]

    def as_dict(self) -> dict:
        return dict(self.values)


def parse_axis(text: str) -> Axis:
    """Parse ``KEY=VALUES`` from the command line.

    VALUES are the items of a TOML array written without its brackets:
    ``1,2,3``; ``0.1, 0.2``; ``[["fast"],["slow"]], [["fast","slow"]]``.
    When that is not valid TOML (bare words such as ``ssgd,asgd``), the text is
    split on ``;`` if it holds one, else on ``,``, and each piece is read as a
    TOML value or, failing that, as a plain string. KEY may be ``algorithm``
    (``run.algorithm``) or ``seed`` (``run.seed``).

    Raises
    ------
    ScenarioError
        Naming the ``--grid`` text when KEY or VALUES is missing or empty.
    """
    label = f"--grid {text if len(text) <= 60 else text[:60] + '...'}"
    if "=" not in text:
        raise ScenarioError(label, "expected KEY=V1,V2,... (e.g. run.seed=1,2,3)")
    key, body = (part.strip() for part in text.split("=", 1))
    parts = key.split(".")
    if not key or not all(p.strip() for p in parts):
        raise ScenarioError(label, f"{key!r} is not a dotted scenario key")
    try:
        values = _parse_values(body)
    except (RecursionError, ValueError) as exc:
        raise ScenarioError(
            label,
            f"cannot read the values ({'nested too deeply' if isinstance(exc, RecursionError) else exc})",
        ) from None
    check_value(values, f"--grid {key}")
    if not values:
        raise ScenarioError(label, "no values given")
    key = KEY_ALIASES.get(key, key)
    if len(set(map(toml_value, values))) != len(values):
        raise ScenarioError(label, "a value is repeated")
    return Axis(key, tuple(values))


def _parse_values(body: str) -> list:
    try:
        return list(tomllib.loads(f"v = [{body}]")["v"])
    except tomllib.TOMLDecodeError:
        pass
    sep = ";" if ";" in body else ","
    return [parse_value(piece.strip()) for piece in body.split(sep) if piece.strip()]


def seed_axis(first: int, n: int) -> Axis:
    """``run.seed`` = *first*, *first* + 1, ..., *first* + *n* - 1 (``--seeds N``)."""
    if not 1 <= n <= MAX_RUNS:
        raise ScenarioError("--seeds", f"{n!r} is not allowed (1..{MAX_RUNS})")
    return Axis(SEED_KEY, tuple(range(first, first + n)))


def expand(axes: list[Axis]) -> list[Point]:
    """All points of the grid, first axis slowest; one point (no values) for no axes.

    Raises ScenarioError when a key is swept twice.
    """
    keys = [a.key for a in axes]
    for key in keys:
        if keys.count(key) > 1:
            raise ScenarioError(f"--grid {key}", "swept twice (merge the values into one --grid)")
    total = math.prod(len(a.values) for a in axes)
    if total > MAX_RUNS:
        raise ScenarioError(
            "--grid", f"{total} runs in the grid (with --seeds); at most {MAX_RUNS} are allowed"
        )
    combos = itertools.product(*(a.values for a in axes))
    return [Point(i, tuple(zip(keys, combo))) for i, combo in enumerate(combos)]


def toml_value(value: Any) -> str:
    """*value* (str, int, float, bool, list, dict) as inline TOML text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace(
            "\x7f", "\\u007f"
        )  # TOML forbids a raw DEL
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
            + "}"
        )
    raise TypeError(f"cannot write {value!r} as a TOML value")


def format_value(value: Any) -> str:
    """A value for a CSV cell or a legend: strings bare, anything else as TOML."""
    return value if isinstance(value, str) else toml_value(value)
