"""Progress of runs started from Python: one line on a text stream, rewritten in place.

For notebooks and scripts that call :mod:`netsim.api` (the CLI has its own live table).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from ..sim.records import Snapshot
from .render import plain_line

__all__ = ["LineProgress", "in_notebook", "resolve"]


def in_notebook() -> bool:
    """True inside a Jupyter (IPython) kernel."""
    return "ipykernel" in sys.modules


class LineProgress:
    """A progress callback that writes :func:`netsim.results.render.plain_line` to *stream*
    (default ``sys.stderr``), carriage-return rewritten at most every *every_s* wall seconds
    and once more, with a newline, when the run is complete.

    *position*: the run's place in a series (``[2/5]``), set by the caller between runs.
    """

    def __init__(
        self, stream: TextIO | None = None, every_s: float = 0.5, position: str = ""
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self.position = position
        self._last = -float("inf")
        self._width = 0

    def __call__(self, snap: Snapshot) -> None:
        now = time.monotonic()
        done = snap.fraction >= 1.0
        if not done and now - self._last < self.every_s:
            return
        self._last = now
        line = plain_line(snap, self.position)
        pad = " " * max(0, self._width - len(line))
        self._width = 0 if done else len(line)
        self.stream.write("\r" + line + pad + ("\n" if done else ""))
        self.stream.flush()


def resolve(progress: object) -> Callable[[Snapshot], object] | None:
    """The callback meant by an API *progress* argument: a callable as given; True → a
    :class:`LineProgress` on stderr; ``"auto"`` → one inside a notebook, else None;
    None/False → None."""
    if progress == "auto":
        progress = in_notebook()
    if progress is True:
        return LineProgress()
    if progress is False or progress is None:
        return None
    if not callable(progress):
        raise ValueError(
            f"progress must be a callable, True, False, None or 'auto', got {progress!r}"
        )
    return progress
