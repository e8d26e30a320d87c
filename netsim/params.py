"""Reading TOML tables with exact, one-line errors; dotted-path overrides."""
from __future__ import annotations

import math
import tomllib
from typing import Any

from .errors import ScenarioError

__all__ = ["Table", "apply_overrides", "parse_value", "MISSING", "recording"]

MISSING = object()
_KIND_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
               list: "a list", dict: "a table"}


_RECORDERS: list[list] = []


class recording:
    """Context manager collecting every key a :class:`Table` is asked for, as
    ``(dotted key, kind, default, choices, positive, minimum, maximum)`` tuples
    (how ``netsim keys`` lists the scenario keys)."""

    def __enter__(self) -> list:
        self.seen: list = []
        _RECORDERS.append(self.seen)
        return self.seen

    def __exit__(self, *exc) -> None:
        _RECORDERS.remove(self.seen)


class Table:
    """One TOML table under dotted path *where*; remembers which keys were read.

    ``get`` checks type and range; ``done`` rejects any key never asked for,
    naming the keys that are allowed.
    """

    def __init__(self, data: Any, where: str):
        if not isinstance(data, dict):
            raise ScenarioError(where, f"expected a table, got {data!r}")
        self.data = data
        self.where = where
        self.known: list[str] = []

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, kind: type | tuple, default: Any = MISSING, *, choices=None,
            positive: bool = False, minimum: float | None = None, maximum: float | None = None) -> Any:
        """The value of *name*, checked; *default* when absent (MISSING: required)."""
        self.known.append(name)
        for seen in _RECORDERS:
            seen.append((self.key(name), kind, default, choices, positive, minimum, maximum))
        if name not in self.data:
            if default is MISSING:
                raise ScenarioError(self.key(name), f"missing ({_describe(kind, choices)})")
            return default
        value = self.data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ScenarioError(self.key(name), f"expected {_describe(kind, choices)}, got {value!r}")
        if choices is not None and value not in choices:
            raise ScenarioError(self.key(name), f"{value!r} is not allowed (allowed: {', '.join(map(str, choices))})")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            _check_range(self.key(name), value, positive, minimum, maximum)
        return value

    def table(self, name: str, default: Any = MISSING) -> "Table":
        """Sub-table *name* as a Table (an empty one when absent and default is {})."""
        raw = self.get(name, dict, default)
        return Table(raw, self.key(name))

    def done(self) -> None:
        """Raise on the first key that was never read."""
        for name in self.data:
            if name not in self.known:
                allowed = ", ".join(sorted(set(self.known))) or "none"
                raise ScenarioError(self.key(name), f"unknown key (allowed here: {allowed})")


def _describe(kind, choices) -> str:
    if choices is not None:
        return "one of: " + ", ".join(map(str, choices))
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


def _check_range(key, value, positive, minimum, maximum) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(key, f"{value!r} is not allowed (a finite number)")
    if positive and value <= 0:
        raise ScenarioError(key, f"{value!r} is not allowed (must be > 0)")
    if minimum is not None and value < minimum:
        raise ScenarioError(key, f"{value!r} is not allowed (must be >= {minimum})")
    if maximum is not None and value > maximum:
        raise ScenarioError(key, f"{value!r} is not allowed (must be <= {maximum})")


def parse_value(text: str) -> Any:
    """A command-line value read as TOML (``600``, ``true``, ``[1, 2]``), else a plain string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(raw: dict, assignments: list[str]) -> dict:
    """Apply ``KEY=VALUE`` strings to a scenario dict (in place) and return it.

    KEY is a dotted path; integer parts index lists (``workers.0.count``).
    Raises ScenarioError naming the assignment when it is malformed.
    """
    for text in assignments:
        if "=" not in text:
            raise ScenarioError(text, "an override must look like KEY=VALUE (e.g. run.until=600)")
        path, value = text.split("=", 1)
        parts = [p for p in path.strip().split(".")]
        if not all(parts):
            raise ScenarioError(path, "an empty part in the dotted key")
        node: Any = raw
        for i, part in enumerate(parts[:-1]):
            node = _child(node, part, ".".join(parts[: i + 1]))
        last = parts[-1]
        if isinstance(node, list):
            node[_index(node, last, path)] = parse_value(value)
        else:
            node[last] = parse_value(value)
    return raw


def _index(node: list, part: str, path: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise ScenarioError(path, f"{part!r} is not an index of a list of {len(node)}")
    return int(part)


def _child(node: Any, part: str, path: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, path)]
    if not isinstance(node, dict):
        raise ScenarioError(path, f"cannot set a key inside {node!r}")
    return node.setdefault(part, {})
