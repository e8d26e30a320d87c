"""Writing a run folder while the run goes: complete CSV rows in chunks (held against
SIGINT/SIGTERM while written), the summary last and atomically; ``compare.json``."""

from __future__ import annotations

import csv
import io
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..sim.records import PHASES, Recorder, Result, bias_rows
from ..sim.summary import Summary, summarize
from .model_file import write_model
from .outfolder import claim
from .runfiles import (
    CURVE,
    DROPPED,
    SERVER_UPDATES,
    TIMELINE,
    UPDATES,
    OutputError,
    disk_error,
    strict_json,
    summary_json,
    write_atomic,
)

if TYPE_CHECKING:
    from ..config.scenario import Scenario

__all__ = ["FLUSH_ROWS", "FLUSH_SECONDS", "RunWriter", "write_run", "write_compare", "CompareEntry"]

FLUSH_ROWS = 4096
FLUSH_SECONDS = 0.5
"""Rows are written out once FLUSH_ROWS applied gradients wait, or FLUSH_SECONDS (wall) after the last write."""


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
            raise disk_error(self.path, exc) from None
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
            raise disk_error(self.path, exc) from None

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
            raise disk_error(self.path, exc) from None
        except OutputError:
            self._abandon()
            raise
        if result.final_w is not None and result.model_info is not None:
            try:
                write_model(self.path, result.final_w, result.model_info)
            except OSError as exc:
                self._abandon()
                raise disk_error(self.path, exc) from None
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


def write_compare(summaries: list[CompareEntry], out_dir: str | Path) -> None:
    """compare.json: the list of the compared runs' summaries, each with its
    ``label`` and its ``folder`` (relative to *out_dir*); readers list only these.
    Written atomically, strict JSON."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(out_dir) / "compare.json", strict_json(summaries, indent=2) + "\n")


class CompareEntry(Summary):
    """One run of ``compare.json``: its summary and the ``folder`` it is in."""

    folder: str
