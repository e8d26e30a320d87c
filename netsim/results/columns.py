"""Which columns of a text table fit a terminal's width, without cutting a cell (pure)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["COLUMN_PAD", "fit_columns", "text_width"]

COLUMN_PAD = 3
"""Characters a column takes besides its text in a rich Table: a space on each side and a border."""


def fit_columns(
    header: list[str], rows: list[list[str]], width: int | None, priority: Sequence[str] = ()
) -> list[int]:
    """Indices of the columns of a table that fit in *width* characters (None: all), in
    table order, without cutting a cell: each column takes its longest cell or header word
    plus :data:`COLUMN_PAD`. Columns leave by *priority* (header names, most wanted first;
    unnamed ones leave first, the last column of the table before the first); the first
    column always stays."""
    need = [text_width(header, rows, i) + COLUMN_PAD for i in range(len(header))]
    keep = list(range(len(header)))
    if width is None:
        return keep
    rank = {name: k for k, name in enumerate(priority)}
    leaving = sorted(keep[1:], key=lambda i: (rank.get(header[i], len(rank)), i), reverse=True)
    while leaving and sum(need[i] for i in keep) + 1 > width:
        keep.remove(leaving.pop(0))
    return keep


def text_width(header: list[str], rows: list[list[str]], i: int) -> int:
    """Characters column *i* needs so that no cell and no word of its header is cut."""
    return max([len(r[i]) for r in rows] + [max(map(len, header[i].split() or [""])), 1])
