"""``netsim group --out DIR``: the recommendation as files: ``recommendation.json`` (what
``--json`` prints), ``candidates.csv`` (the candidate table, every column) and
``predicted.png`` (predicted time to target per candidate, with its interval)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from .grouptable import FAR, Recommendation, candidate_rows, plain_name, shape_text
from .runfolder import strict_json, write_atomic
from .tables import to_csv

if TYPE_CHECKING:
    from matplotlib.figure import Figure


__all__ = ["recommendation_dict", "write_recommendation", "predicted_figure"]


def recommendation_dict(rec: Recommendation, classes: list[str] | None = None) -> dict:
    """The recommendation as ``netsim group --json`` prints it: :meth:`Recommendation.as_dict`
    with each candidate's plain name and shape (``one group (SSGD)``, ``8 × 2``)."""
    out = rec.as_dict()
    out["plain_name"] = plain_name(rec.name)
    out["shape"] = shape_text(rec.groups, classes)
    out["candidates"] = [
        {**c, "plain_name": plain_name(c["name"]), "shape": shape_text(c["groups"], classes)}
        for c in out["candidates"]
    ]
    return out


def write_recommendation(
    rec: Recommendation, out: str | Path, classes: list[str] | None = None
) -> list[Path]:
    """Write the three files into *out* (created when missing); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = recommendation_dict(rec, classes)
    header, rows = candidate_rows(rec, classes, members=True)
    csv_rows = [dict(zip(header, r)) for r in rows]
    paths = [out / "recommendation.json", out / "candidates.csv", out / "predicted.png"]
    write_atomic(paths[0], strict_json(data, indent=2) + "\n")
    write_atomic(paths[1], to_csv(csv_rows))
    fig = predicted_figure(rec, classes)
    fig.savefig(paths[2])
    import matplotlib.pyplot as plt

    plt.close(fig)
    return paths


def predicted_figure(
    rec: Recommendation, classes: list[str] | None = None, rows: int = 20
) -> Figure:
    """Horizontal bars: each candidate's predicted time to the target loss (dot) and its
    interval (line), the race's first *rows* candidates, the pick on top; candidates not
    predicted to get there within 100 horizons are left out (named in the title)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranking = rec.ranking()[:rows]
    far = FAR * rec.horizon
    shown = [p for p in ranking if math.isfinite(p.predicted) and p.predicted <= far]
    fig, ax = plt.subplots(figsize=(7.5, 0.35 * max(len(shown), 3) + 1.4))
    for y, p in enumerate(shown):
        lo = p.low if math.isfinite(p.low) else p.predicted
        hi = p.high if math.isfinite(p.high) and p.high <= far else p.predicted
        color = "C3" if p is ranking[0] else "C0"
        ax.plot([lo, hi], [y, y], color=color, linewidth=2)
        ax.plot([p.predicted], [y], "o", color=color)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels(
        [f"{plain_name(p.name)} ({shape_text(p.groups, classes)}), η {p.lr:.3g}" for p in shown],
        fontsize=8,
    )
    ax.invert_yaxis()
    ax.axvline(rec.horizon, color="0.6", linestyle=":", label=f"horizon {rec.horizon:g}")
    ax.set_xlabel(f"predicted time to loss {rec.target:.4g}")
    left = len(ranking) - len(shown)
    ax.set_title(
        "predicted time to target (dot) and interval (line), the pick in red"
        + (f"\n{left} not predicted to get there within {FAR} horizons" if left else ""),
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
