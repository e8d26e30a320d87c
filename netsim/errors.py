"""Exceptions that carry enough context for a one-line message."""
from __future__ import annotations

__all__ = ["ScenarioError"]


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

    def __init__(self, key: str, message: str, file: str | None = None):
        super().__init__(key, message, file)
        self.key = key
        self.message = message
        self.file = file

    def __str__(self) -> str:
        head = f"{self.file}: " if self.file else ""
        return f"{head}{self.key}: {self.message}"
