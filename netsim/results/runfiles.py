"""A run folder's files: their names and columns, strict JSON, files written whole, and the
two errors of folders (one that cannot be read, one that cannot be written)."""

from __future__ import annotations

import errno
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..sim.summary import Summary
from .atomic import written

__all__ = [
    "CURVE",
    "UPDATES",
    "SERVER_UPDATES",
    "DROPPED",
    "TIMELINE",
    "RUN_FILES",
    "RESULT_FILES",
    "STORAGE_ERRNOS",
    "FolderError",
    "OutputError",
    "disk_error",
    "strict_json",
    "summary_json",
    "write_atomic",
]

CURVE = ("update", "sim_time", "loss", "test_accuracy")
UPDATES = ("version", "sim_time", "worker", "group", "staleness")
SERVER_UPDATES = UPDATES + ("server_wait", "server_service")
"""``updates.csv``'s columns with a server that takes time (``[server]``)."""
DROPPED = ("sim_time", "worker", "version_read", "reason")
TIMELINE = ("worker", "phase", "start", "end")
RUN_FILES = (
    "summary.json",
    "curve.csv",
    "updates.csv",
    "dropped.csv",
    "timeline.csv",
    "bias.csv",
    "scenario.toml",
    "meta.json",
)
RESULT_FILES = RUN_FILES + (
    "compare.json",
    "sweep.json",
    "sweep.csv",
    "sweep_summary.csv",
    "report.md",
    "report.html",
    "trace.json",
)
"""Files netsim writes; a folder holding one of them (or a subfolder holding a run) holds results."""


class FolderError(ValueError):
    """A folder is missing, holds no run, or holds a malformed file; the message names it."""


STORAGE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO}
"""errno values that say the disk cannot take the output (full, read-only, over quota,
failing), not that the path given is wrong."""


class OutputError(RuntimeError):
    """An output folder cannot be used (``code`` 2: taken by another run or holding
    its results) or written (``code`` 1: disk full, read-only); one-line message."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# -- strict JSON ----------------------------------------------------------------------------
def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, np.generic):
        return _finite(value.item())
    return value


def strict_json(value: object, **kwargs: Any) -> str:
    """JSON text with NaN and ±inf as ``null`` (``allow_nan=False``: never invalid JSON).

    >>> strict_json({"loss": float("nan"), "x": [1.0, float("inf")]})
    '{"loss": null, "x": [1.0, null]}'
    """
    return json.dumps(_finite(value), allow_nan=False, **kwargs)


def summary_json(summary: Summary) -> str:
    """The summary as stable, strict JSON text (same summary → same bytes)."""
    return strict_json(summary, indent=2) + "\n"


def disk_error(path: Path, exc: OSError) -> OutputError:
    why = exc.strerror or str(exc)
    return OutputError(f"{path}: cannot write: {why}; the complete rows written so far are kept")


def write_atomic(path: str | Path, text: str) -> None:
    """Replace *path* by *text* atomically: a temporary file beside it, then renamed over it
    (a process killed meanwhile leaves the old file or the new one, never half of one).

    Raises OutputError when the disk is full or read-only (the old file, if any, stays)."""
    try:
        written(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise disk_error(Path(path), exc) from None
