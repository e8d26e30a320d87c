"""Reading TOML tables with exact, one-line errors; dotted-path overrides."""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Iterable
from typing import Any

from .errors import ScenarioError

__all__ = [
    "Table",
    "apply_overrides",
    "parse_value",
    "set_path",
    "check_value",
    "quote_key",
    "MISSING",
    "MAX_DEPTH",
    "recording",
]

MISSING = object()
MAX_DEPTH = 32
"""Deepest nesting of tables and lists accepted in a scenario (levels)."""
_KIND_NAMES = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a table",
}


_RECORDERS: list[list] = []


class recording:
    """Context manager collecting every key a :class:`Table` is asked for, as
    ``(dotted key, kind, default, choices, positive, minimum, maximum)`` tuples
    (how ``netsim keys`` lists the scenario keys)."""

    def __enter__(self) -> list:
        self.seen: list = []
        _RECORDERS.append(self.seen)
        return self.seen

    def __exit__(self, *exc: object) -> None:
        _RECORDERS.remove(self.seen)


class Table:
    """One TOML table under dotted path *where*; remembers which keys were read.

    ``get`` checks type and range; ``done`` rejects any key never asked for,
    naming the keys that are allowed.
    """

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(where, f"expected a table, got {show(data)}")
        self.data = data
        self.where = where
        self.known: list[str] = []

    def key(self, name: str) -> str:
        name = quote_key(name)
        return f"{self.where}.{name}" if self.where else name

    def has(self, name: str) -> bool:
        return name in self.data

    def get(
        self,
        name: str,
        kind: type | tuple,
        default: Any = MISSING,
        *,
        choices: Iterable[Any] | None = None,
        positive: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        item: type | tuple | None = None,
    ) -> Any:
        """The value of *name*, checked; *default* when absent (MISSING: required).

        *item*: for a list, the kind every element must have.
        """
        self.known.append(name)
        for seen in _RECORDERS:
            seen.append((self.key(name), kind, default, choices, positive, minimum, maximum))
        if name not in self.data:
            if default is MISSING:
                raise ScenarioError(
                    self.key(name), f"missing ({_describe(kind, choices)}){self._misspelt(name)}"
                )
            return default
        value = self.data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ScenarioError(
                self.key(name), f"expected {_describe(kind, choices)}, got {show(value)}"
            )
        if choices is not None and value not in choices:
            raise ScenarioError(
                self.key(name),
                f"{show(value)} is not allowed (allowed: {', '.join(map(str, choices))})",
            )
        if item is not None and isinstance(value, list):
            value = [check_kind(v, item, f"{self.key(name)}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            _check_range(self.key(name), value, positive, minimum, maximum)
        return value

    def _misspelt(self, name: str) -> str:
        """``; found X: did you mean NAME?`` when a key of this table that no reader asked
        for is close to the missing *name* (``[[worker]]`` for ``[[workers]]``), else ``""``."""
        import difflib

        unread = [str(k) for k in self.data if k not in self.known]
        close = difflib.get_close_matches(name, unread, n=1)
        return f"; found {self.key(close[0])}: did you mean {self.key(name)}?" if close else ""

    def unknown(self, known: Iterable[str]) -> None:
        """Raise, with a did-you-mean, on the first key not in *known* that is close to one
        of them (a misspelt table), before the readers ask for what it should have been."""
        import difflib

        names = sorted(known)
        for key in self.data:
            if key not in names and (close := difflib.get_close_matches(str(key), names, n=1)):
                raise ScenarioError(
                    self.key(key),
                    f"unknown key (did you mean {self.key(close[0])}? allowed here: "
                    f"{', '.join(names)})",
                )

    def table(self, name: str, default: Any = MISSING) -> "Table":
        """Sub-table *name* as a Table (an empty one when absent and default is {})."""
        raw = self.get(name, dict, default)
        return Table(raw, self.key(name))

    def done(self) -> None:
        """Raise on the first key that was never read."""
        for name in self.data:
            if name not in self.known:
                import difflib

                allowed = ", ".join(sorted(set(self.known))) or "none"
                close = difflib.get_close_matches(str(name), sorted(set(self.known)), n=1)
                hint = f"did you mean {self.key(close[0])}? " if close else ""
                raise ScenarioError(self.key(name), f"unknown key ({hint}allowed here: {allowed})")


def check_kind(value: Any, kind: type | tuple, key: str) -> Any:
    """*value* if it has *kind* (bool is not an int; an int is accepted as a float)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ScenarioError(key, f"expected {_describe(kind, None)}, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(key, f"{value!r} is not allowed (a finite number)")
    return value


def check_path(value: str | None, key: str) -> str | None:
    """*value* if the OS could take it as a path: no NUL character, no name longer than
    255 bytes, at most 4096 bytes in all; else ScenarioError naming *key*."""
    if value is None:
        return None
    if "\0" in value:
        raise ScenarioError(key, f"{show(value)} is not a path (it holds a NUL character)")
    encoded = value.encode("utf-8", "surrogateescape")
    if len(encoded) > 4096 or any(len(part) > 255 for part in encoded.split(b"/")):
        raise ScenarioError(
            key,
            f"{show(value)} is not a path (a name is longer than 255 bytes or the "
            "path longer than 4096)",
        )
    return value


def show(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to *limit* characters for messages."""
    return _short(repr(value), limit)


def _describe(kind: type | tuple, choices: Iterable[Any] | None) -> str:
    if choices is not None:
        return "one of: " + ", ".join(map(str, choices))
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


def _check_range(
    key: str, value: Any, positive: bool, minimum: float | None, maximum: float | None
) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(key, f"{value!r} is not allowed (a finite number)")
    if positive and value <= 0:
        raise ScenarioError(key, f"{value!r} is not allowed (must be > 0)")
    if minimum is not None and value < minimum:
        raise ScenarioError(key, f"{value!r} is not allowed (must be >= {minimum})")
    if maximum is not None and value > maximum:
        raise ScenarioError(key, f"{value!r} is not allowed (must be <= {maximum})")


def parse_value(text: str, key: str = "--set") -> Any:
    """A command-line value read as TOML (``600``, ``true``, ``[1, 2]``), else a plain string.

    Raises ScenarioError naming *key* when the value is nested too deeply to read.
    """
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except (RecursionError, ValueError) as exc:
        raise ScenarioError(key, f"cannot read the value {_short(text)!r}: {_why(exc)}") from None
    check_value(value, key)
    return value


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"nested too deeply (at most {MAX_DEPTH} levels)"
    return str(exc)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def check_value(value: Any, where: str) -> None:
    """Reject nesting deeper than MAX_DEPTH and integers outside 64 bits, naming the key.

    Iterative, so a pathological value cannot exhaust the Python stack.
    """
    stack = [(value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, bool):
            continue
        if isinstance(node, int) and not -(2**63) <= node < 2**63:
            raise ScenarioError(
                path, f"{_short(str(node))} is not allowed (integers must fit in 64 bits)"
            )
        if isinstance(node, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ScenarioError(path, f"nested more than {MAX_DEPTH} levels deep (not allowed)")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                sub = (
                    f"{path}[{k}]"
                    if isinstance(node, list)
                    else (f"{path}.{quote_key(k)}" if path else quote_key(k))
                )
                stack.append((v, sub, depth + 1))


def apply_overrides(raw: dict, assignments: list[str]) -> dict:
    """Apply ``KEY=VALUE`` strings to a scenario dict (in place) and return it.

    KEY is a dotted path; integer parts index lists (``workers.0.count``).
    Raises ScenarioError naming the assignment when it is malformed.
    """
    for text in assignments:
        if "=" not in text:
            raise ScenarioError(
                f"--set {text!r}", "an override must look like KEY=VALUE (e.g. run.until=600)"
            )
        path, value = text.split("=", 1)
        set_path(raw, path.strip(), parse_value(value, f"--set {path.strip()}"), f"--set {text!r}")
    return raw


def set_path(raw: dict, path: str, value: Any, label: str) -> None:
    """Set the dotted *path* of *raw* to *value*, creating tables on the way.

    Raises ScenarioError (key *label* for a malformed path, else the dotted key)
    when a part is empty, an index is out of range, or a part lies inside a value
    that is not a table or a list.
    """
    parts = path.split(".")
    if not all(parts):
        raise ScenarioError(
            label,
            "the key is empty or has an empty part (KEY=VALUE with a dotted KEY, "
            "e.g. run.until=600)",
        )
    node: Any = raw
    for i, part in enumerate(parts):
        here = ".".join(parts[: i + 1])
        last = i == len(parts) - 1
        if isinstance(node, list):
            index = _index(node, part, here)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ScenarioError(
                ".".join(parts[:i]),
                f"cannot set {part!r} inside {_short(repr(node))} (not a table or a list)",
            )


def _index(node: list, part: str, path: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise ScenarioError(path, f"{part!r} is not an index of a list of {len(node)}")
    return int(part)


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def quote_key(name: Any) -> str:
    """A key as written in TOML: bare when it can be, else quoted and escaped.

    >>> quote_key("until"), quote_key(""), quote_key("a b")
    ('until', '""', '"a b"')
    """
    name = str(name)
    return name if _BARE.fullmatch(name) else json.dumps(name, ensure_ascii=False)
