"""The scenario and topology presets shipped with netsim, found by name wherever netsim is installed.

The files live in the repository's ``scenarios/`` and ``topologies/`` folders;
the wheel installs them as the package data ``netsim/presets/scenarios`` and
``netsim/presets/topologies`` (see pyproject.toml). In a checkout run without
installing, the repository folders are used directly.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["preset_dir", "scenario_dirs", "find_scenario", "list_scenarios", "KINDS"]

KINDS = ("scenarios", "topologies")
_CHECKOUT = Path(__file__).resolve().parents[2]


def preset_dir(kind: str) -> Path | None:
    """The folder of the shipped presets of *kind* (``scenarios`` or ``topologies``), or None."""
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not allowed (allowed: {', '.join(KINDS)})")
    try:
        shipped = Path(str(resources.files(f"netsim.presets.{kind}")))
        if shipped.is_dir() and any(shipped.glob("*.toml")):
            return shipped
    except (ModuleNotFoundError, TypeError):
        pass
    local = Path(__file__).resolve().parent / kind
    if local.is_dir():
        return local
    checkout = _CHECKOUT / kind
    return checkout if checkout.is_dir() else None


def scenario_dirs(base: Path | None = None) -> list[Path]:
    """Where a scenario name is looked up: *base* (default: the working directory),
    ``<base>/scenarios``, then the shipped presets."""
    base = Path.cwd() if base is None else Path(base)
    dirs = [base, base / "scenarios"]
    shipped = preset_dir("scenarios")
    if shipped is not None:
        dirs.append(shipped)
    return list(dict.fromkeys(d.resolve() for d in dirs))


def find_scenario(name: str, base: Path | None = None) -> Path | None:
    """The file of the scenario *name* (``gsgd_paper`` or ``gsgd_paper.toml``), or None.

    A bare name (no folder part) is looked up in :func:`scenario_dirs`; an
    existing path is returned as it is.
    """
    path = Path(name)
    if path.is_file():
        return path
    if len(path.parts) != 1:
        return None
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    for directory in scenario_dirs(base):
        candidate = directory / f"{stem}.toml"
        if candidate.is_file():
            return candidate
    return None


def list_scenarios(base: Path | None = None) -> dict[str, Path]:
    """Scenario presets by name: ``<base>/scenarios`` first, then the shipped ones."""
    seen: dict[str, Path] = {}
    for directory in scenario_dirs(base)[1:]:
        if directory.is_dir():
            for f in sorted(directory.glob("*.toml")):
                seen.setdefault(f.stem, f)
    return dict(sorted(seen.items()))
