"""Writing a scenario dict back as TOML text (the resolved ``scenario.toml`` of a run folder).

Only what scenario files hold: tables, arrays of tables, and values that are
strings, booleans, integers, floats, lists or inline tables. Floats are written
with ``repr`` so that reading the text back gives the same float, bit for bit.
"""

from __future__ import annotations

import json
import re

from .grid import toml_value

__all__ = ["dumps"]

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _value(v: object) -> str:
    """One TOML value.

    >>> _value(0.1), _value(True), _value([1, "a"]), _value({"dist": "constant", "value": 2.0})
    ('0.1', 'true', '[1, "a"]', '{ dist = "constant", value = 2.0 }')
    """
    if isinstance(v, dict):
        return (
            "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }" if v else "{}"
        )
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return toml_value(v)


def _is_table_array(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _section(out: list[str], path: list[str], table: dict) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict) and not _is_table_array(v)}
    for k, v in scalars.items():
        out.append(f"{_key(k)} = {_value(v)}")
    for k, v in table.items():
        if isinstance(v, dict):
            out.append("")
            out.append("[" + ".".join(_key(p) for p in path + [k]) + "]")
            _section(out, path + [k], v)
        elif _is_table_array(v):
            for item in v:
                out.append("")
                out.append("[[" + ".".join(_key(p) for p in path + [k]) + "]]")
                _section(out, path + [k], item)


def dumps(data: dict, header: str = "") -> str:
    """TOML text of *data*; *header* lines become ``#`` comments at the top.

    >>> import tomllib
    >>> raw = {"name": "x", "run": {"until": 0.1}, "workers": [{"count": 2, "compute": {"dist": "constant", "value": 1.5}}]}
    >>> tomllib.loads(dumps(raw)) == raw
    True
    """
    out = [f"# {line}" if line else "#" for line in header.splitlines()]
    _section(out, [], data)
    return "\n".join(out).strip("\n") + "\n"
