"""Scenario files: finding one (a path or a preset) and reading its TOML."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from ..errors import ScenarioError
from ..params import MAX_DEPTH, check_value
from ..presets import find_scenario, list_scenarios

__all__ = ["read_toml", "resolve_scenario_path", "MAX_SCENARIO_BYTES"]

MAX_SCENARIO_BYTES = 8 * 2**20
"""Largest scenario file read (8 MiB, about a million replay times): validating a larger
one takes longer than a run."""


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
