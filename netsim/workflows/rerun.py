"""A run folder's scenario run again, and the files compared (``netsim rerun``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from ..results.progress import resolve as resolve_progress
from ..results.provenance import differences
from ..results.runfolder import FolderError, unique_folder
from . import runs as one_run
from .runs import PathArg, Progress, Run, load, naming

__all__ = ["rerun", "Rerun"]


def rerun(
    folder: PathArg,
    *,
    out: PathArg | None = None,
    progress: Progress = "auto",
    data_dir: PathArg | None = None,
) -> "Rerun":
    """Run the scenario a run folder recorded (its ``scenario.toml``, overrides applied)
    again, with the same rule and label, into *out* (default ``<folder>-rerun``, numbered; for a
    run inside a compare or sweep folder, ``<that folder>-<run>-rerun`` beside it).

    Returns a :class:`Rerun`: the new ``run`` and the files that ``differ`` from the
    original (empty when reproduced byte for byte, wall times aside). An original that
    did not end (interrupted, or killed before writing ``summary.json``) is rerun but not
    compared: ``Rerun.not_compared`` says why.
    Raises FolderError when *folder* holds no ``scenario.toml``.
    """
    folder = Path(folder)
    if not (folder / "scenario.toml").is_file():
        raise FolderError(
            f"{folder}: no scenario.toml (not a run folder, or one written before run folders "
            "recorded their scenario; run it again with netsim run)"
        )
    try:
        summary = (
            json.loads((folder / "summary.json").read_text())
            if (folder / "summary.json").is_file()
            else None
        )
        meta = (
            json.loads((folder / "meta.json").read_text())
            if (folder / "meta.json").is_file()
            else {}
        )
        algorithm = summary["algorithm"] if summary is not None else None
        label = summary.get("label") if summary is not None else meta.get("label")
        overrides = tuple(meta.get("overrides", [])) if meta else None
    except (ValueError, OSError, KeyError, TypeError, AttributeError) as exc:
        raise FolderError(
            f"{folder}: summary.json or meta.json is not a run's ({type(exc).__name__}: {exc})"
        ) from None
    sc = load(folder / "scenario.toml", data_dir=data_dir)
    sc = replace(sc, overrides=overrides) if overrides is not None else sc
    home = folder.resolve()  # "." and "sub/.." have no name of their own
    if out is None:  # beside the original; a run of a compare or sweep folder: beside that folder
        parent = home.parent
        grouped = (parent / "compare.json").is_file() or (parent / "sweep.json").is_file()
        base = (
            parent.with_name(f"{parent.name}-{home.name}-rerun")
            if grouped
            else home.with_name(home.name + "-rerun")
        )
        out = unique_folder(base)
    out = Path(out)
    with naming(out):
        sc = sc.with_algorithm(algorithm) if algorithm is not None else sc
        new = one_run.run_into(sc, out, resolve_progress(progress), label)
    if summary is None:
        why = "the original has no summary.json (it was stopped before it ended, e.g. killed)"
    elif summary.get("status") == "interrupted":
        why = (
            f"the original was interrupted at simulated time {summary.get('sim_time', 0):g}, "
            "where the rerun went on to the end"
        )
    else:
        return Rerun(new, folder, differences(folder, out))
    return Rerun(new, folder, [], not_compared=why)


@dataclass(frozen=True)
class Rerun:
    """A rerun: the new ``run``, the ``original`` folder and the files that ``differ``
    (names); ``not_compared``: why the two were not compared ('' : they were)."""

    run: "Run"
    original: Path
    differ: list
    not_compared: str = ""

    @property
    def identical(self) -> bool:
        return not self.differ and not self.not_compared
