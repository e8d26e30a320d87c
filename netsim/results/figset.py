"""Which figures a set of runs gets, and what is drawn on them (pure: no matplotlib).

- The per-label figures (``bias``, ``labels``) are drawn only for runs whose workers hold
  their labels in other proportions than the training set as a whole: on IID data every
  label is learnt alike and they show nothing, so they are skipped, with the reason.
- ``netsim plot --window`` redraws the timeline only (:data:`WINDOW_ONLY`).
- The loss curves carry the target loss as a line when one is known: the one given
  (``--target``), else the runs' ``run.target_loss``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

__all__ = [
    "Drawn",
    "FIGURE_NAMES",
    "WINDOW_ONLY",
    "IID_REASON",
    "label_skew",
    "skewed_runs",
    "loss_targets",
    "check_only",
    "skipped_text",
    "one_unit",
]

FIGURE_NAMES = (
    "loss_vs_updates",
    "loss_vs_time",
    "accuracy_vs_updates",
    "accuracy_vs_time",
    "timeline",
    "staleness",
    "update_rate",
    "bias",
    "labels",
    "consensus",
)
"""Every figure ``netsim plot`` can draw, by file stem."""

WINDOW_ONLY = ("timeline",)
"""What ``netsim plot --window`` redraws: the one figure the window applies to."""

IID_REASON = (
    "every worker holds the labels in the training set's proportions (IID data), "
    "so per-label accuracy shows nothing"
)

SKEW_LEVEL = 1e-6
"""Chance that a worker of IID data is taken for a skewed one (chi-square test per worker)."""


Only = str | Iterable[str] | None
"""Figure names to draw (a list, or ``"a,b"``); None: every figure."""


class Drawn(list):
    """The paths of the figures written (a list of :class:`~pathlib.Path`) and ``skipped``:
    figure name → why it was not drawn."""

    def __init__(
        self, paths: Iterable[str | Path] = (), skipped: dict[str, str] | None = None
    ) -> None:
        super().__init__(Path(p) for p in paths)
        self.skipped = dict(skipped or {})


def label_skew(summary: dict, level: float = SKEW_LEVEL) -> bool | None:
    """Whether some worker holds its training labels in other proportions than the
    training set as a whole: a chi-square test of each worker's label counts against the
    pooled shares, at false-alarm chance *level* per worker. None when the summary has no
    ``data.label_histogram`` (workers × labels counts).

    >>> label_skew({"data": {"label_histogram": [[50, 50], [48, 52]]}})
    False
    >>> label_skew({"data": {"label_histogram": [[100, 0], [0, 100]]}})
    True
    """
    hist = summary.get("data", {}).get("label_histogram")
    if not hist:
        return None
    counts = np.asarray(hist, dtype=float)  # (workers, labels)
    pooled = counts.sum(axis=0)
    held = pooled > 0
    if held.sum() < 2:
        return False
    share = pooled[held] / pooled.sum()
    expected = counts.sum(axis=1, keepdims=True) * share  # (workers, held labels)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (counts[:, held] - expected) ** 2 / expected, 0.0)
    from scipy.stats import chi2

    return bool((terms.sum(axis=1) > chi2.isf(level, int(held.sum()) - 1)).any())


def skewed_runs(runs: list) -> list:
    """The runs (:class:`~netsim.results.runfolder.RunData`) whose per-label figures
    show something: label skew across workers, or no histogram to tell."""
    return [r for r in runs if label_skew(r.summary) is not False]


def loss_targets(runs: list, given: float | None = None) -> list[float]:
    """The target losses to draw on the loss curves: *given*, else the distinct
    ``target_loss`` values of the runs' summaries (``run.target_loss``), else none."""
    if given is not None:
        return [float(given)]
    found = (r.summary.get("target_loss") for r in runs)
    return list(dict.fromkeys(float(t) for t in found if t))


def check_only(only: Only) -> tuple[str, ...] | None:
    """*only* (names or ``"a,b"``; None: every figure) as a tuple of known figure names;
    ValueError naming the allowed ones otherwise."""
    if only is None:
        return None
    names = tuple(n.strip() for n in only.split(",")) if isinstance(only, str) else tuple(only)
    unknown = [n for n in names if n not in FIGURE_NAMES]
    if unknown or not names:
        raise ValueError(
            f"figures: {', '.join(map(repr, unknown)) or 'none given'} "
            f"(allowed: {', '.join(FIGURE_NAMES)})"
        )
    return names


def skipped_text(skipped: dict[str, str], only: Only = None) -> list[str]:
    """Lines saying which figures were not drawn and why (figures sharing a reason on one
    line), and, with *only*, that the others were left as they were.

    >>> skipped_text({"bias": "IID", "labels": "IID"})
    ['skipped bias, labels: IID']
    >>> skipped_text({}, ("timeline",))
    ['drew only timeline (--window); the other figures were left as they were']
    """
    by_reason: dict[str, list[str]] = {}
    for name, why in skipped.items():
        by_reason.setdefault(why, []).append(name)
    lines = [f"skipped {', '.join(names)}: {why}" for why, names in by_reason.items()]
    if only:
        lines.append(
            f"drew only {', '.join(only)} (--window); the other figures were left as they were"
        )
    return lines


def one_unit(unit: str) -> str:
    """The singular of a time unit's name, for rates (``updates per time unit``).

    >>> one_unit("time units"), one_unit("units"), one_unit("s")
    ('time unit', 'unit', 's')
    """
    return unit[:-1] if unit.endswith("units") else unit
