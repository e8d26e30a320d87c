"""Run folders, written and read here only: one run, a ``compare`` folder or a ``sweep`` folder.

A run folder holds ``summary.json``, ``curve.csv``, ``updates.csv`` and maybe
``timeline.csv`` and ``dropped.csv`` (see docs/OUTPUT.md). Columns are
returned as numpy arrays keyed by their CSV header names.

Writing is safe against interruptions: :class:`RunWriter` claims the folder (a lock
file, and a refusal when it holds results of another run unless told to
overwrite them), streams complete CSV rows while the run goes, and writes
``summary.json`` last, atomically (a temporary file renamed over it). A folder
whose process was killed holds complete rows and no summary; a CSV's unfinished
last line is ignored on reading. All JSON is strict: NaN and infinities become
``null``.

This module gathers the names of its parts: the files, columns, errors and strict JSON
(:mod:`.runfiles`), claiming and naming output folders (:mod:`.outfolder`), writing a run
(:mod:`.runwriter`) and reading runs (:mod:`.runreader`).
"""

from __future__ import annotations

from ..sim.records import PHASES
from .outfolder import (
    LOCK,
    NAME_BYTES,
    Claim,
    check_writable,
    claim,
    clear_results,
    folder_name,
    holds_results,
    latest_folder,
    unique_folder,
)
from .runfiles import (
    CURVE,
    DROPPED,
    RESULT_FILES,
    RUN_FILES,
    SERVER_UPDATES,
    TIMELINE,
    UPDATES,
    FolderError,
    OutputError,
    strict_json,
    summary_json,
    write_atomic,
)
from .runreader import (
    RunData,
    check_complete,
    find_runs,
    from_result,
    read_run,
    relabel,
    short_label,
)
from .runwriter import (
    FLUSH_ROWS,
    FLUSH_SECONDS,
    CompareEntry,
    RunWriter,
    write_compare,
    write_run,
)

__all__ = [
    "RunData",
    "FolderError",
    "OutputError",
    "check_writable",
    "read_run",
    "find_runs",
    "from_result",
    "short_label",
    "relabel",
    "PHASES",
    "RunWriter",
    "claim",
    "write_run",
    "write_compare",
    "summary_json",
    "strict_json",
    "write_atomic",
    "RESULT_FILES",
    "unique_folder",
    "latest_folder",
    # also importable from here, as before the split
    "CURVE",
    "UPDATES",
    "SERVER_UPDATES",
    "DROPPED",
    "TIMELINE",
    "RUN_FILES",
    "LOCK",
    "NAME_BYTES",
    "FLUSH_ROWS",
    "FLUSH_SECONDS",
    "Claim",
    "CompareEntry",
    "check_complete",
    "clear_results",
    "folder_name",
    "holds_results",
]
