"""Files written whole or not at all, and the exit status of a failed write.

:func:`written` lets a writer fill a temporary file beside the target, then renames it
over the target: a full disk, a read-only file system or a kill meanwhile leaves the old
file (or none), never part of one. :func:`disk_status` is the one rule every command
follows for a write that failed: 1 when the disk cannot take it (full, read-only file
system, over quota, failing), 2 when the path given is wrong (no permission, a file on
the way, a missing folder).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["written", "disk_status", "STORAGE_ERRNOS"]

STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO, errno.EFBIG})
"""errno values that say the disk cannot take the output, not that the path is wrong."""


def disk_status(exc: OSError) -> int:
    """Exit status of a command whose write failed with *exc*: 1 the disk's state, 2 the path's.

    >>> disk_status(OSError(errno.ENOSPC, "No space left on device")), disk_status(PermissionError(errno.EACCES, "Permission denied"))
    (1, 2)
    """
    return 1 if exc.errno in STORAGE_ERRNOS else 2


def written(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to fill a temporary file beside *path*, then rename it to *path*;
    on any error the temporary file is removed and the error raised (*path* untouched)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return path
