"""Output folders: claimed by one process (a lock file), cleared of earlier results on
request, named by default without overwriting, checked writable before a run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import ModuleType

from .runfiles import RESULT_FILES, STORAGE_ERRNOS, FolderError, OutputError

__all__ = [
    "LOCK",
    "NAME_BYTES",
    "Claim",
    "claim",
    "holds_results",
    "clear_results",
    "folder_name",
    "unique_folder",
    "latest_folder",
    "check_writable",
]

LOCK = ".netsim.lock"


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
        code = 1 if exc.errno in STORAGE_ERRNOS else 2  # the disk's state, else the path given
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
