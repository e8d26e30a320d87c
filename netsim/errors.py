"""Exceptions that carry enough context for a one-line message."""

from __future__ import annotations

__all__ = ["ScenarioError", "RealRunFailed", "one_line"]


def one_line(text: str) -> str:
    """*text* with every non-printable character (newline, tab, other control and
    separator characters) written as its Python escape, so it prints as one line.

    >>> one_line("a\\nb\\tc é")
    'a\\\\nb\\\\tc é'
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


class ScenarioError(Exception):
    """A scenario value is not allowed.

    Parameters
    ----------
    key : str
        Dotted path of the offending key (``"workers[1].compute.mean"``).
    message : str
        What is wrong and what is allowed.
    file : str, optional
        The scenario file; set by the loader when it knows it.
    """

    def __init__(self, key: str, message: str, file: str | None = None) -> None:
        super().__init__(key, message, file)
        self.key = key
        self.message = message
        self.file = file

    def __str__(self) -> str:
        head = f"{self.file}: " if self.file else ""
        return one_line(f"{head}{self.key}: {self.message}")


class RealRunFailed(RuntimeError):
    """A real run's parameter-server process died before it could write the run's summary
    (the rows it flushed stay in the folder)."""
