"""Run folders, written and read in one place: one run, a ``compare`` folder or a ``sweep`` folder.

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
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config.grid import SEED_KEY, format_value
from ..sim.records import PHASES, Recorder, Result, bias_rows
from ..sim.summary import Summary, problems, summarize
from .atomic import written
from .model_file import write_model

if TYPE_CHECKING:
    from ..config.scenario import Scenario

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
LOCK = ".netsim.lock"
FLUSH_ROWS = 4096
FLUSH_SECONDS = 0.5
"""Rows are written out once FLUSH_ROWS applied gradients wait, or FLUSH_SECONDS (wall) after the last write."""


class FolderError(ValueError):
    """A folder is missing, holds no run, or holds a malformed file; the message names it."""


def _read_json(path: Path) -> Any:
    """The JSON value in *path*; FolderError naming the file when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise FolderError(f"{path}: not readable JSON ({type(exc).__name__}: {exc})") from None


def _check_summary(summary: Any, path: Path) -> Summary:
    """FolderError naming *path* unless *summary* keeps the contract (:class:`Summary`)."""
    if problem := problems(summary, where=str(path)):
        raise FolderError(problem)
    return summary


_STORAGE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO}
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


def _disk_error(path: Path, exc: OSError) -> OutputError:
    why = exc.strerror or str(exc)
    return OutputError(f"{path}: cannot write: {why}; the complete rows written so far are kept")


def write_atomic(path: str | Path, text: str) -> None:
    """Replace *path* by *text* atomically: a temporary file beside it, then renamed over it
    (a process killed meanwhile leaves the old file or the new one, never half of one).

    Raises OutputError when the disk is full or read-only (the old file, if any, stays)."""
    try:
        written(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise _disk_error(Path(path), exc) from None


# -- claiming a folder ----------------------------------------------------------------------
def holds_results(path: Path) -> bool:
    """Whether *path* holds files of a netsim run, compare or sweep."""
    if not path.is_dir():
        return False
    for entry in path.iterdir():
        if entry.name in RESULT_FILES:
            return True
        if entry.is_dir() and (entry / "summary.json").is_file():
            return True
    return False


def clear_results(path: Path) -> None:
    """Remove what netsim wrote in *path* (result files, run subfolders, plots); keep the rest."""
    for entry in path.iterdir():
        if entry.name == LOCK:
            continue
        if entry.is_dir():
            if (
                entry.name in ("plots", "report_figures", "tensorboard")
                or holds_results(entry)
                or entry.name.endswith(".partial")
            ):
                shutil.rmtree(entry)
        elif entry.name in RESULT_FILES or (
            entry.name.startswith(".") and entry.name.endswith(".tmp")
        ):
            entry.unlink()


class Claim:
    """An output folder held by this process (an exclusive lock on ``.netsim.lock``).

    The lock goes with the process, however it ends; :meth:`release` frees it earlier.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        """Free the folder: the lock file is removed (while still locked), then the lock."""
        if self._fd is not None:
            try:
                os.unlink(self.path / LOCK)
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None


def claim(out: str | os.PathLike, *, overwrite: bool = False, reuse: bool = False) -> Claim:
    """Take *out* for writing: create it, lock it, and refuse it when it holds results
    of another run, unless *overwrite* (then they are removed first) or *reuse*
    (the caller keeps them, e.g. a resumed sweep).

    Raises OutputError (code 2) when another process writes there, when the folder
    holds results or when the path cannot hold a folder (no permission, a file on the
    way); code 1 when the disk is full or read-only.
    """
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        code = 1 if exc.errno in _STORAGE_ERRNOS else 2  # the disk's state, else the path given
        raise OutputError(
            f"{path}: cannot create the output folder: {exc.strerror or exc}", code
        ) from None
    try:
        import fcntl as posix_locks

        fcntl: ModuleType | None = posix_locks
    except ImportError:  # not POSIX: no locking
        fcntl = None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # its holder may have removed the file between our open and our lock
            if os.fstat(fd).st_ino != os.stat(path / LOCK).st_ino:
                raise OSError("lock file replaced")
        except OSError:
            os.close(fd)
            raise OutputError(
                f"{path}: another netsim process is writing there; wait for it or choose another --out",
                code=2,
            ) from None
    held = Claim(path, fd)
    if holds_results(path) and not reuse:
        if not overwrite:
            held.release()
            raise OutputError(
                f"{path}: holds the results of another run; pass --overwrite to replace them "
                f"or choose another --out",
                code=2,
            )
        try:
            clear_results(path)
        except OSError as exc:
            held.release()
            raise OutputError(
                f"{path}: cannot remove the earlier results: {exc.strerror or exc}"
            ) from None
    return held


# -- writing one run ------------------------------------------------------------------------
@contextmanager
def _unbroken() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (they are delivered after the block) while rows are
    written, so a chunk and the count of rows written never disagree."""
    if (
        not hasattr(signal, "pthread_sigmask")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _Table:
    """One CSV file written row by row, opened on the first row (or at once when *eager*).

    Rows go straight to the file (no buffer); when a write fails (a full disk) the file is
    cut back to its last complete row, so a reader never sees half a row."""

    def __init__(self, path: Path, header: Sequence[str], eager: bool) -> None:
        self.path = path
        self.header = header
        self.fh: io.FileIO | None = None
        self.done = 0
        self.size = 0
        """Bytes of complete rows in the file."""
        if eager:
            self._open()

    def _open(self) -> io.FileIO:
        fh = self.fh = open(self.path, "wb", buffering=0)
        try:
            self._append(fh, (",".join(self.header) + "\n").encode())
        except OSError:  # not even the header: no file rather than an empty one
            fh.close()
            self.fh = None
            try:
                self.path.unlink()
            except OSError:
                pass
            raise
        return fh

    def _append(self, fh: io.FileIO, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[fh.write(view) :]
        except OSError:
            try:
                os.ftruncate(fh.fileno(), self.size)  # drop the part of a row that was written
                fh.seek(self.size)
            except OSError:
                pass
            raise
        self.size += len(data)

    def widen(self, header: Sequence[str]) -> None:
        """Start the file again with *header* when no row is written yet (else nothing)."""
        if self.done == 0 and self.header != header:
            self.close()
            self.header = header
            self.size = 0
            self._open()

    def write(self, rows: Iterable[Iterable[object]]) -> None:
        """Append *rows* (lists of values already formatted) in one write."""
        if not rows:
            return
        fh = self.fh if self.fh is not None else self._open()
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        self._append(fh, text.getvalue().encode())

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


class RunWriter:
    """Write one run into the folder *out* while it goes.

    ``flush(recorder)`` appends the rows recorded since the last call (complete rows
    only) to ``curve.csv``, ``updates.csv`` and, once there is something to put in
    them, ``dropped.csv`` and ``timeline.csv``; ``finish(result)`` appends the
    rest, rewrites the timeline sorted by worker and start, writes ``bias.csv`` (per-label
    accuracy and gradient shares per evaluation) and ``summary.json``
    atomically, releases the folder and returns the summary. The files of a finished
    run are the same bytes as if written at the end.

    Raises OutputError (see :func:`claim`; on a full or read-only disk, code 1).
    """

    def __init__(
        self,
        out: str | Path,
        *,
        overwrite: bool = False,
        lock: bool = True,
        scenario: Scenario | None = None,
        meta: dict | None = None,
    ) -> None:
        self.path = Path(out)
        self.claim = claim(self.path, overwrite=overwrite) if lock else None
        if not lock:
            self.path.mkdir(parents=True, exist_ok=True)
        self.last = time.monotonic()
        try:
            if (
                scenario is not None
            ):  # first, so that even an interrupted run's folder describes itself
                write_atomic(self.path / "scenario.toml", scenario.to_toml())
            if meta is not None:
                write_atomic(self.path / "meta.json", strict_json(meta, indent=2) + "\n")
            self.curve = _Table(self.path / "curve.csv", CURVE, True)
            self.updates = _Table(self.path / "updates.csv", UPDATES, True)
            self.dropped = _Table(self.path / "dropped.csv", DROPPED, False)
            self.timeline = _Table(self.path / "timeline.csv", TIMELINE, False)
        except OSError as exc:
            self._abandon()
            raise _disk_error(self.path, exc) from None
        except OutputError:
            self._abandon()
            raise

    def flush(self, rec: Recorder, force: bool = False) -> None:
        """Write the rows of *rec* (a :class:`~netsim.sim.records.Recorder`) not written yet,
        in chunks: unless *force*, only once :data:`FLUSH_ROWS` wait or
        :data:`FLUSH_SECONDS` have passed since the last write."""
        now = time.monotonic()
        if (
            not force
            and len(rec.version) - self.updates.done < FLUSH_ROWS
            and now - self.last < FLUSH_SECONDS
        ):
            return
        self.last = now
        try:
            with _unbroken():
                self._write(rec)
        except OSError as exc:
            self._abandon()
            raise _disk_error(self.path, exc) from None

    def _write(self, rec: Recorder) -> None:
        n = len(rec.curve)
        self.curve.write(
            [[u, repr(t), repr(l), repr(a)] for u, t, l, a in rec.curve[self.curve.done : n]]
        )
        self.curve.done = n
        n = min(
            len(rec.version), len(rec.time), len(rec.worker), len(rec.group), len(rec.staleness)
        )
        i = self.updates.done
        columns = [
            rec.version[i:n],
            map(repr, rec.time[i:n]),
            rec.worker[i:n],
            rec.group[i:n],
            rec.staleness[i:n],
        ]
        if (
            rec.server_wait is not None and rec.server_service is not None
        ):  # a server that takes time
            self.updates.widen(SERVER_UPDATES)
            n = min(n, len(rec.server_wait), len(rec.server_service))
            columns += [map(repr, rec.server_wait[i:n]), map(repr, rec.server_service[i:n])]
        self.updates.write([list(r) for r in zip(*columns)])
        self.updates.done = n
        n = min(
            len(rec.drop_time), len(rec.drop_worker), len(rec.drop_version), len(rec.drop_reason)
        )
        i = self.dropped.done
        self.dropped.write(
            [
                list(r)
                for r in zip(
                    map(repr, rec.drop_time[i:n]),
                    rec.drop_worker[i:n],
                    rec.drop_version[i:n],
                    rec.drop_reason[i:n],
                )
            ]
        )
        self.dropped.done = n
        n = len(rec.spans)
        self.timeline.write(
            [(w, PHASES[p], repr(a), repr(b)) for w, p, a, b in rec.spans[self.timeline.done : n]]
        )
        self.timeline.done = n

    def finish(self, result: Result) -> Summary:
        """Write everything left and the summary; return the summary dict."""
        rec = result.records
        try:
            with _unbroken():
                self._write(rec)
            for table in (self.curve, self.updates, self.dropped, self.timeline):
                table.close()
            if rec.spans:
                ordered = sorted(rec.spans, key=lambda s: (s[0], s[2]))
                text = io.StringIO()
                writer = csv.writer(text, lineterminator="\n")
                writer.writerow(TIMELINE)
                writer.writerows((w, PHASES[p], repr(a), repr(b)) for w, p, a, b in ordered)
                write_atomic(self.path / "timeline.csv", text.getvalue())
            if rec.class_accuracy:
                header, rows = bias_rows(result)
                text = io.StringIO()
                writer = csv.writer(text, lineterminator="\n")
                writer.writerow(header)
                writer.writerows(
                    [("" if v is None else repr(v) if isinstance(v, float) else v) for v in row]
                    for row in rows
                )
                write_atomic(self.path / "bias.csv", text.getvalue())
        except OSError as exc:
            self._abandon()
            raise _disk_error(self.path, exc) from None
        except OutputError:
            self._abandon()
            raise
        if result.final_w is not None and result.model_info is not None:
            try:
                write_model(self.path, result.final_w, result.model_info)
            except OSError as exc:
                self._abandon()
                raise _disk_error(self.path, exc) from None
        summary = summarize(result)
        try:
            write_atomic(self.path / "summary.json", summary_json(summary))
        finally:
            self._abandon()
        return summary

    def close(self) -> None:
        """Stop writing (the run failed): what was written stays, no summary."""
        self._abandon()

    def _abandon(self) -> None:
        """Close the files and free the folder (what was written stays)."""
        for name in ("curve", "updates", "dropped", "timeline"):
            table = getattr(self, name, None)
            if table is not None:
                try:
                    table.close()
                except OSError:
                    pass
        if self.claim is not None:
            self.claim.release()


def write_run(
    result: Result,
    out_dir: str | Path,
    *,
    overwrite: bool = True,
    lock: bool = True,
    scenario: Scenario | None = None,
    meta: dict | None = None,
) -> Summary:
    """Write a finished run's folder at once (summary.json, curve.csv, updates.csv, bias.csv, and
    dropped.csv / timeline.csv when there is something to put in them; with *scenario*
    (the Scenario that ran) its resolved ``scenario.toml``, with *meta* ``meta.json``);
    return the summary."""
    return RunWriter(out_dir, overwrite=overwrite, lock=lock, scenario=scenario, meta=meta).finish(
        result
    )


NAME_BYTES = 120
"""Most bytes of a scenario name in a default folder name (file systems allow 255 per name)."""


def folder_name(name: str) -> str:
    """*name* (a scenario's) as one safe path component for a default output folder:
    separators, control characters and NUL become ``_``, leading dots are dropped (no
    ``.``/``..``, no hidden folder), at most :data:`NAME_BYTES` bytes of UTF-8; "scenario"
    when nothing is left.

    >>> [folder_name(n) for n in ("paper", "/tmp/x", "../up", "a" + chr(0) + "b", "")]
    ['paper', '_tmp_x', '_up', 'a_b', 'scenario']
    """
    safe = "".join("_" if c in "/\\" or not c.isprintable() else c for c in name).lstrip(".")
    safe = safe.encode()[:NAME_BYTES].decode(errors="ignore")
    return safe or "scenario"


def unique_folder(base: str | Path) -> Path:
    """*base* when it does not exist or is empty, else the first free ``base-2``, ``base-3``, ...

    The default output folder of a command, so that no result is overwritten silently.
    """
    base = Path(base)
    candidate, n = base, 1
    while candidate.exists() and (
        not candidate.is_dir() or any(e.name != LOCK for e in candidate.iterdir())
    ):
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def latest_folder(base: str | Path) -> Path:
    """The last existing folder of the ``base``, ``base-2``, ... series (``base`` if none exists)."""
    base = Path(base)
    found, n = base, 1
    while True:
        n += 1
        nxt = base.with_name(f"{base.name}-{n}")
        if not nxt.exists():
            return found
        found = nxt


def write_compare(summaries: list[CompareEntry], out_dir: str | Path) -> None:
    """compare.json: the list of the compared runs' summaries, each with its
    ``label`` and its ``folder`` (relative to *out_dir*); readers list only these.
    Written atomically, strict JSON."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(out_dir) / "compare.json", strict_json(summaries, indent=2) + "\n")


class CompareEntry(Summary):
    """One run of ``compare.json``: its summary and the ``folder`` it is in."""

    folder: str


@dataclass(frozen=True)
class RunData:
    """One run as plain columns.

    Attributes
    ----------
    summary : :class:`~netsim.sim.summary.Summary`, the run's ``summary.json``.
    curve : dict of ndarray (n_evaluations,): update, sim_time (s), loss, test_accuracy.
    updates : dict of ndarray (n_applied_gradients,): version, sim_time (s), worker, group, staleness.
    timeline : dict of ndarray (n_spans,) or None: worker, phase (index into PHASES), start, end (s).
    label : str, the legend entry of this run; runs sharing *group* share a colour (seeds).
    values : dict, swept ``{key: value}`` when the run is part of a sweep.
    bias : dict of float ndarray (n_evaluations,) or None: the ``bias.csv`` columns
        (update, sim_time, worst_class_accuracy, accuracy_<label>, share_<class>,
        share_group<k>, step_share_<class>; NaN where a label has no test row).
    """

    path: Path | None
    summary: Summary
    curve: dict
    updates: dict
    timeline: dict | None = None
    label: str = ""
    group: str = ""
    values: dict = field(default_factory=dict)
    bias: dict | None = None


def _rows(path: Path) -> list[list[str]]:
    """The data rows of a CSV file; an unfinished last line (a killed writer) is left out.
    FolderError naming the file when it is missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FolderError(f"{path}: not readable ({type(exc).__name__}: {exc})") from None
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    try:
        return list(csv.reader(io.StringIO(text, newline="")))[1:]
    except csv.Error as exc:
        raise FolderError(f"{path}: not readable CSV ({exc})") from None


def _header(path: Path) -> list[str]:
    """The header row of a CSV file ([] when unreadable or empty)."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _columns(path: Path, names: Sequence[str], kinds: Sequence[Callable[[str], Any]]) -> dict:
    """Columns of a CSV file with a header row; FolderError naming the file and line
    when it is unreadable or a cell is not of its column's type."""
    body = _rows(path)
    out = {}
    for i, (name, kind) in enumerate(zip(names, kinds)):
        try:
            out[name] = np.array(
                [kind(r[i]) for r in body], dtype=kind if kind in (int, float) else object
            )
        except (ValueError, IndexError, KeyError, TypeError, OverflowError):
            bad = next(n for n, r in enumerate(body, 2) if not _cell_ok(r, i, kind))
            raise FolderError(
                f"{path}: line {bad}: column {name!r} missing or not {getattr(kind, '__name__', 'valid')}"
            ) from None
    return out


def _cell_ok(row: list[str], i: int, kind: Callable[[str], Any]) -> bool:
    try:
        kind(row[i])
        return True
    except (ValueError, IndexError, KeyError, TypeError, OverflowError):
        return False


def check_complete(path: Path, summary: Summary, curve_rows: int, update_rows: int) -> None:
    """FolderError when the files of run folder *path* disagree with its ``summary.json``:
    ``updates.csv`` must hold one row per applied gradient and ``curve.csv`` at least the
    first evaluation (a truncated or emptied file, or files of another run)."""
    if update_rows != summary["gradients_applied"]:
        raise FolderError(
            f"{path / 'updates.csv'}: {update_rows} rows, but summary.json counts "
            f"{summary['gradients_applied']} applied gradients (a truncated file, or another run's)"
        )
    if curve_rows == 0:
        raise FolderError(
            f"{path / 'curve.csv'}: no evaluation (every run has at least the first); the file is "
            "truncated or emptied"
        )


def read_run(
    path: str | Path, label: str = "", group: str = "", values: dict | None = None
) -> RunData:
    """Read the run folder *path*. Raises FolderError when ``summary.json`` is missing or
    the folder's files disagree with it (:func:`check_complete`)."""
    path = Path(path)
    if not (path / "summary.json").is_file():
        raise FolderError(f"{path}: no summary.json (not a run folder)")
    summary = _check_summary(_read_json(path / "summary.json"), path / "summary.json")
    curve = _columns(path / "curve.csv", CURVE, (int, float, float, float))
    updates = _columns(path / "updates.csv", UPDATES, (int, float, int, int, int))
    if _header(path / "updates.csv") == list(SERVER_UPDATES):
        updates.update(
            _columns(
                path / "updates.csv", SERVER_UPDATES, (int, float, int, int, int, float, float)
            )
        )
    check_complete(path, summary, len(curve["update"]), len(updates["version"]))
    timeline = None
    if (path / "timeline.csv").is_file():
        index = {name: i for i, name in enumerate(PHASES)}
        cols = _columns(
            path / "timeline.csv",
            ("worker", "phase", "start", "end"),
            (int, index.__getitem__, float, float),
        )
        timeline = {**cols, "phase": cols["phase"].astype(int)}
    bias = None
    if (path / "bias.csv").is_file():
        try:  # optional: a damaged bias.csv leaves the run readable without it
            with open(path / "bias.csv", newline="") as fh:
                rows = list(csv.reader(fh))
            bias = _bias_columns(rows[0], rows[1:])
        except (OSError, ValueError, IndexError):
            bias = None
    label = label or summary.get("label", summary["algorithm"])
    return RunData(
        path, summary, curve, updates, timeline, label, group or label, dict(values or {}), bias
    )


def _bias_columns(header: list[str], rows: list[list]) -> dict:
    """bias.csv rows (text or numbers; empty or None = no value) → float columns, NaN for no value."""

    def num(v: str | float | None) -> float:
        return np.nan if v is None or v == "" else float(v)

    return {name: np.array([num(r[i]) for r in rows], dtype=float) for i, name in enumerate(header)}


def from_result(
    result: Result, path: Path | None = None, summary: Summary | None = None
) -> RunData:
    """The same columns straight from an in-memory Result (no files)."""
    rec = result.records
    curve = {name: np.array([row[i] for row in rec.curve]) for i, name in enumerate(CURVE)}
    updates = {
        "version": np.array(rec.version, dtype=int),
        "sim_time": np.array(rec.time, dtype=float),
        "worker": np.array(rec.worker, dtype=int),
        "group": np.array(rec.group, dtype=int),
        "staleness": np.array(rec.staleness, dtype=int),
    }
    if rec.server_wait is not None:
        updates["server_wait"] = np.array(rec.server_wait, dtype=float)
        updates["server_service"] = np.array(rec.server_service, dtype=float)
    timeline = None
    if rec.spans:
        spans = sorted(rec.spans, key=lambda s: (s[0], s[2]))
        timeline = {
            name: np.array([s[i] for s in spans])
            for i, name in enumerate(("worker", "phase", "start", "end"))
        }
    summary = summary if summary is not None else summarize(result)
    bias = _bias_columns(*bias_rows(result)) if rec.class_accuracy else None
    return RunData(
        path, summary, curve, updates, timeline, summary["label"], summary["label"], bias=bias
    )


def short_label(values: dict) -> str:
    """Legend text for swept values: ``gsgd, groups=[[fast],[slow]]`` (seed left out)."""
    parts = []
    for key, value in values.items():
        if key == SEED_KEY:
            continue
        text = format_value(value).replace('"', "").replace(", ", ",")
        parts.append(text if key == "run.algorithm" else f"{key.rsplit('.', 1)[-1]}={text}")
    return ", ".join(parts)


def find_runs(path: str | Path) -> list[RunData]:
    """Every run under *path*: the run itself, the runs a compare folder's
    ``compare.json`` lists (in its order; other subfolders are ignored), a
    sweep's points in grid order, or else each subfolder holding a run.

    Raises FolderError when *path* is missing or holds no run.
    """
    path = Path(path)
    if not path.is_dir():
        raise FolderError(f"{path}: no such folder")
    if (path / "summary.json").is_file():
        return [read_run(path)]
    if (path / "sweep.json").is_file():
        return _sweep_runs(path)
    if (path / "compare.json").is_file():
        listed = _read_json(path / "compare.json")
        if not isinstance(listed, list) or not all(
            isinstance(e, dict) and isinstance(e.get("folder", ""), str) for e in listed
        ):
            raise FolderError(
                f"{path / 'compare.json'}: expected a list of run summaries with their 'folder'"
            )
        runs = [
            read_run(path / entry["folder"])
            for entry in listed
            if entry.get("folder") and (path / entry["folder"] / "summary.json").is_file()
        ]
    else:
        runs = [read_run(sub) for sub in sorted(path.iterdir()) if (sub / "summary.json").is_file()]
    if not runs:
        raise FolderError(
            f"{path}: no run folders (expected summary.json, compare.json or sweep.json)"
        )
    return runs


def _sweep_runs(path: Path) -> list[RunData]:
    where = path / "sweep.json"
    plan = _read_json(where)
    if not isinstance(plan, dict) or not isinstance(plan.get("points"), list):
        raise FolderError(f"{where}: missing 'points' (a list of {{folder, values}})")
    runs = []
    for i, point in enumerate(plan["points"]):
        if not (
            isinstance(point, dict)
            and isinstance(point.get("folder"), str)
            and point["folder"]
            and isinstance(point.get("values"), dict)
        ):
            raise FolderError(
                f"{where}: points[{i}] must be an object with 'folder' (a name) and 'values' (an object)"
            )
        folder = path / point["folder"]
        if not (folder / "summary.json").is_file():
            continue  # not run yet (interrupted sweep)
        values = point["values"]
        group = short_label(values) or str(plan.get("name", "run"))
        seed = values.get(SEED_KEY)
        label = group if seed is None else f"{group} (seed {seed})"
        runs.append(read_run(folder, label=label, group=group, values=values))
    if not runs:
        raise FolderError(f"{path}: the sweep has no finished run yet")
    return runs


def check_writable(out: str | Path) -> None:
    """Raise FolderError unless a run folder can be written at *out*: the path and
    its nearest existing ancestor must be folders, and that ancestor writable.
    Called before simulating, so a bad --out fails at once, not after the run."""
    out = Path(out)
    try:
        _check_writable(out)
    except (OSError, ValueError) as exc:
        if isinstance(exc, FolderError):
            raise
        raise FolderError(f"{out}: not a usable folder path ({exc})") from None


def _check_writable(out: Path) -> None:
    probe = out
    while True:
        if probe.is_symlink() and not probe.exists():
            raise FolderError(
                f"{out}: {probe} is a symbolic link to {os.readlink(probe)}, which does not "
                "exist (create its target or give another folder path)"
            )
        if probe.exists():
            if not probe.is_dir():
                what = (
                    "is a file, not a folder"
                    if probe == out
                    else f"cannot hold a folder: {probe} is a file"
                )
                raise FolderError(f"{out}: {what} (give --out a folder path)")
            if not os.access(probe, os.W_OK | os.X_OK):
                raise FolderError(f"{out}: cannot write into {probe} (permission denied)")
            return
        if probe.parent == probe:
            raise FolderError(f"{out}: no existing parent folder")
        probe = probe.parent


def relabel(runs: list[RunData], prefix_of: Callable[[RunData], str]) -> list[RunData]:
    """Prefix labels and groups with ``prefix_of(run)`` (to tell runs of several folders apart)."""
    return [
        replace(r, label=f"{prefix_of(r)}: {r.label}", group=f"{prefix_of(r)}: {r.group}")
        for r in runs
    ]
