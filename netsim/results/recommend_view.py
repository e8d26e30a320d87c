"""Rich renderables of a grouping recommendation (``netsim group``); no printing."""
from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text

__all__ = ["recommendation_tables"]


def _s(x) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def _groups(groups, limit: int = 48) -> str:
    text = " ".join("[" + ",".join(map(str, g)) + "]" for g in groups)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def recommendation_tables(rec, name: str, classes: list[str], hosts: list | None = None, rows: int = 20) -> list:
    """Measurement per worker, candidates (predicted time to target with interval, η,
    pilot cost), the pick with its reason, and predicted vs emulated when verified."""
    out = []
    m = rec.measurement
    pick_of = {w: k for k, g in enumerate(rec.groups) for w in g}
    if m is not None:
        t = Table(title=f"{name}: measured over {m.iteration.shape[1]} probe rounds ({m.duration:.4g} s simulated)")
        cols = ["worker", "class"] + (["host"] if hosts else []) + ["iteration (s)", "compute (s)", "comm (s)",
                                                                      "RTT (ms)", "group"]
        for col in cols:
            t.add_column(col, justify="left" if col in ("class", "host") else "right")
        for w in range(len(classes)):
            t.add_row(str(w), classes[w], *([str(hosts[w])] if hosts else []), f"{m.iteration[w].mean():.4g}",
                      f"{m.compute[w].mean():.4g}", f"{m.comm[w].mean():.4g}", f"{m.rtt[w] * 1e3:.4g}",
                      str(pick_of[w]))
        out.append(t)
    ranking = rec.ranking()
    t = Table(title=f"candidates, best first: predicted time to loss {rec.target:.5g} "
                    f"({len(ranking)} pilots, rungs {', '.join(f'{h:.4g}' for h in rec.rungs)} s)")
    for col in ("grouping", "K", "η", "rung", "predicted (s)", "interval (s)", "how", "pilot sim s", "pilot wall s",
                "groups"):
        t.add_column(col, justify="left" if col in ("grouping", "how", "groups") else "right")
    for p in ranking[:rows]:
        t.add_row(("→ " if p is ranking[0] else "") + p.name, str(len(p.groups)), f"{p.lr:.3g}", str(p.rung),
                  _s(p.predicted), f"{_s(p.low)} – {_s(p.high)}", p.how, f"{p.sim_s:.4g}", f"{p.wall_s:.3g}",
                  _groups(p.groups))
    if len(ranking) > rows:
        t.caption = f"{len(ranking) - rows} more candidates stopped at early rungs"
    out.append(t)
    out.append(Text(f"recommended: {rec.name} (K = {len(rec.groups)}), η = {rec.lr:.4g} — {rec.reason}. "
                    f"Target: {rec.target_source}. Cost: {rec.sim_s:.4g} simulated s, {rec.wall_s:.3g} wall s."))
    if rec.verified:
        v = Table(title="verified: predicted vs emulated in full (scenario seed, whole training set)")
        for col in ("grouping", "η", "predicted (s)", "interval (s)", "emulated (s)", "final loss", "wall s"):
            v.add_column(col, justify="left" if col == "grouping" else "right")
        for r in rec.verified:
            v.add_row(r["name"], f"{r['lr']:.3g}", _s(r["predicted_s"]),
                      f"{_s(r['interval_s'][0])} – {_s(r['interval_s'][1])}", _s(r["emulated_s"]),
                      _s(r["final_loss"]), f"{r['wall_s']:.3g}")
        out.append(v)
    return out
