"""What makes a run folder self-describing: ``scenario.toml`` (resolved) and ``meta.json``
(versions, command line, overrides, data checksums, start time), and the check that a
rerun reproduced a folder byte for byte."""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.scenario import Scenario

__all__ = [
    "run_meta",
    "netsim_version",
    "data_checksums",
    "differences",
    "COMPARED_FILES",
    "DEPENDENCIES",
]

DEPENDENCIES = (
    "numpy",
    "scipy",
    "simpy",
    "networkx",
    "scikit-learn",
    "matplotlib",
    "rich",
    "typer",
)
COMPARED_FILES = (
    "summary.json",
    "curve.csv",
    "updates.csv",
    "timeline.csv",
    "dropped.csv",
    "scenario.toml",
)
"""Files a rerun must reproduce byte for byte (summary.json with its wall time left out)."""
WALL_KEYS = ("wall_s",)


def netsim_version() -> str:
    """The installed netsim version (package metadata), or ``unknown`` in an uninstalled checkout."""
    try:
        return metadata.version("netsim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime: float) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_checksums(source: str) -> dict[str, str]:
    """SHA-256 of each data file named in a dataset's *source* (``"a.gz, b.gz"``);
    empty for built-in data (``"sklearn digits"``, ``"synthetic"``)."""
    out = {}
    for part in (p.strip() for p in source.split(",")):
        path = Path(part)
        if part and path.is_file():
            st = path.stat()
            out[str(path.resolve())] = _sha256(str(path.resolve()), st.st_size, st.st_mtime)
    return out


def run_meta(
    scenario: Scenario, data_source: str, started: datetime | None = None, label: str = ""
) -> dict:
    """The ``meta.json`` dict of a run of *scenario* (a Scenario) on data from *data_source*."""
    started = started or datetime.now(timezone.utc)
    return {
        "netsim": netsim_version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": {name: _version(name) for name in DEPENDENCIES},
        "command": list(sys.argv),
        "scenario_file": str(Path(scenario.path).resolve()) if scenario.path else "",
        "overrides": list(scenario.overrides),
        "algorithm": scenario.run.algorithm,
        "label": label or scenario.run.algorithm,
        "seed": scenario.run.seed,
        "data": {"source": data_source, "sha256": data_checksums(data_source)},
        "started_at": started.isoformat(timespec="seconds"),
    }


def _summary_without_wall(path: Path) -> dict:
    """summary.json without its wall-clock fields (``WALL_KEYS`` and, at any depth, keys
    ending in ``wall_s``, e.g. the recommender's pilot costs)."""

    def strip(value: Any) -> Any:  # a JSON value
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not k.endswith("wall_s")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    summary = json.loads(path.read_text())
    for key in WALL_KEYS:
        summary.pop(key, None)
    return strip(summary)


def differences(a: str | Path, b: str | Path) -> list[str]:
    """Names of the :data:`COMPARED_FILES` that differ between run folders *a* and *b*
    (present in one only, or different bytes; summary.json compared without wall times)."""
    a, b = Path(a), Path(b)
    out = []
    for name in COMPARED_FILES:
        fa, fb = a / name, b / name
        if not fa.is_file() and not fb.is_file():
            continue
        if fa.is_file() != fb.is_file():
            out.append(name)
        elif name == "summary.json":
            if _summary_without_wall(fa) != _summary_without_wall(fb):
                out.append(name)
        elif name == "scenario.toml":
            strip = lambda p: [l for l in p.read_text().splitlines() if not l.startswith("#")]  # noqa: E731
            if strip(fa) != strip(fb):
                out.append(name)
        elif fa.read_bytes() != fb.read_bytes():
            out.append(name)
    return out
