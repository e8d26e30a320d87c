"""Whether netsim's pick trains fastest for real: the arithmetic of
``benchmarks/real_decisions.py`` (no I/O, no SimPy).

A scenario's configurations (:class:`Config`: a rule, its η and, for a grouping rule, its
groups) are the race's finalists and the baselines beside them (:func:`configs`); each is
trained for real and emulated on the same seeds, and its mean time to target on each side
(:func:`mean_time`) feeds the scenario's verdict (:func:`verdict`): the real best, the real
regret of the pick and of the hand groups, Kendall's τ (:func:`kendall_tau`) between the
predicted and the real times, and whether the real best is among the finalists the race
could not separate from its pick.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .predict import mean_ci

__all__ = [
    "Config",
    "finalists",
    "configs",
    "own_configs",
    "merge_singletons",
    "mean_time",
    "regret",
    "contenders",
    "kendall_tau",
    "verdict",
    "config_rows",
]


@dataclass(frozen=True)
class Config:
    """One configuration trained and emulated: *rule* at step *lr*, with *groups* (worker
    ids, a grouping rule only; None keeps the scenario's), *name* (the grouping's, e.g.
    ``2 groups``) and *tags*: ``pick``, ``close`` (a finalist the race did not separate from
    its pick), ``finalist``, ``hand`` (the scenario's own groups), ``race η``, ``scenario η``."""

    rule: str
    lr: float
    groups: tuple | None = None
    name: str = ""
    tags: tuple = ()

    @property
    def label(self) -> str:
        """``rule[grouping] η=…``, e.g. ``gsgd[2 groups] η=0.08``."""
        grouping = f"[{self.name}]" if self.name else ""
        return f"{self.rule}{grouping} η={self.lr:.3g}"

    @property
    def key(self) -> tuple:
        """What two equal configurations share: rule, groups (sorted), η."""
        groups = (
            None if self.groups is None else tuple(sorted(tuple(sorted(g)) for g in self.groups))
        )
        return (self.rule, groups, round(float(self.lr), 12))

    def overrides(self) -> list[str]:
        """The ``--set`` assignments that make a scenario run this configuration."""
        table = f"algorithms.{self.rule}"
        out = [f"{table}.lr={float(self.lr)!r}"]
        if self.groups is not None:
            out.append(f"{table}.groups={[sorted(int(w) for w in g) for g in self.groups]}")
        return out


def finalists(rec: Any) -> list:
    """The finalists of a Recommendation *rec*: its ``finals`` (the candidates it ran with
    replicates to the last rung's end) when it names them, else the pilots at its last rung
    that it ran with replicates (when more than its number of finalists reached that rung,
    it replicates the best of them only; every one there when none was replicated); best
    first by predicted time to target."""
    if getattr(rec, "finals", None):
        return sorted(rec.finals, key=lambda p: (p.predicted, p.label))
    if not rec.pilots:
        return []
    last = max(p.rung for p in rec.pilots)
    there = [p for p in rec.pilots if p.rung == last]
    replicated = [p for p in there if len(p.curves) > 1] or there
    return sorted(replicated, key=lambda p: (p.predicted, p.label))


def configs(
    rec: Any, rule: str, hand: Sequence, baselines: dict[str, float | None], scenario_lr: float
) -> list[Config]:
    """A scenario's configurations: the finalists of *rec* (a Recommendation of grouping
    rule *rule*), then *rule* with the *hand* groups and each rule of *baselines* (rule →
    its η in the scenario, None when it has none), each at the race's η and at the
    scenario's (*scenario_lr* for *rule*). Equal configurations (:attr:`Config.key`) are listed once, their tags joined."""
    close = {(p.name, p.lr) for p in rec.close}
    found: list[Config] = [
        Config(
            rule,
            p.lr,
            tuple(tuple(g) for g in p.groups),
            p.name,
            ("pick",)
            if (p.name, p.lr) == (rec.name, rec.lr)
            else ("close",)
            if (p.name, p.lr) in close
            else ("finalist",),
        )
        for p in finalists(rec)
    ]
    own = own_configs(rule, hand, baselines, scenario_lr)
    found += [Config(rule, rec.lr, own[0].groups, "hand", ("hand", "race η")), own[0]]
    for other in baselines:
        found += [Config(other, rec.lr, tags=("race η",))]
        found += [c for c in own[1:] if c.rule == other]
    return _merged(found, lambda c: c.key)


def _merged(found: Sequence[Config], key: Callable[[Config], tuple]) -> list[Config]:
    """*found* with the configurations of equal *key* listed once: the first kept, their
    tags joined in order."""
    merged: dict[tuple, Config] = {}
    for c in found:
        k = key(c)
        if k in merged:
            old = merged[k]
            tags = old.tags + tuple(t for t in c.tags if t not in old.tags)
            merged[k] = Config(old.rule, old.lr, old.groups, old.name, tags)
        else:
            merged[k] = c
    return list(merged.values())


def merge_singletons(found: Sequence[Config], grouping: str, asynchronous: str) -> list[Config]:
    """*found* with each configuration of the *grouping* rule whose groups are all of one
    worker merged into the *asynchronous* rule's at the same η (the first of the two kept,
    their tags joined): with nothing but η and groups set, a rule of one-worker groups is
    the asynchronous rule, update for update (tests/sim/test_equivalence.py), so the two are
    one configuration, not two to rank.

    >>> a = Config("g", 0.1, ((0,), (1,)), "singletons", ("pick",))
    >>> [c.label + " " + ",".join(c.tags) for c in merge_singletons([a, Config("s", 0.1, tags=("race η",))], "g", "s")]
    ['g[singletons] η=0.1 pick,race η']
    """

    def canonical(c: Config) -> tuple:
        if c.rule == grouping and c.groups is not None and all(len(g) == 1 for g in c.groups):
            return (asynchronous, None, round(float(c.lr), 12))
        return c.key

    return _merged(found, canonical)


def own_configs(
    rule: str, hand: Sequence, baselines: dict[str, float | None], scenario_lr: float
) -> list[Config]:
    """A scenario's own configurations, at its own η: grouping rule *rule* with the *hand*
    groups (at *scenario_lr*), then each rule of *baselines* that has an η in the scenario
    (rule → its η, or None)."""
    hand_groups = tuple(tuple(g) for g in hand)
    own = [Config(rule, scenario_lr, hand_groups, "hand", ("hand", "scenario η"))]
    return own + [
        Config(r, lr, tags=("scenario η",)) for r, lr in baselines.items() if lr is not None
    ]


def mean_time(times: Iterable[float | None]) -> tuple[float, float | None]:
    """(mean, half-width of its 95 % interval) of the seeds' times to target; (inf, None)
    when a seed never reached the target (or there is none).

    >>> mean_time([10.0, 12.0]), mean_time([10.0, None])
    ((11.0, 12.706), (inf, None))
    """
    values = list(times)
    if not values or any(t is None or not math.isfinite(t) for t in values):
        return math.inf, None
    mean, ci = mean_ci(values)
    return float(mean), ci  # type: ignore[arg-type]


def regret(time: float, best: float) -> float:
    """How much later than *best* a configuration of time to target *time* gets there
    (0.05: 5 % later); inf when it never does, nan when nothing does.

    >>> regret(105.0, 100.0), regret(math.inf, 100.0)
    (0.05, inf)
    """
    if not math.isfinite(best):
        return math.nan
    return math.inf if not math.isfinite(time) else round(time / best - 1.0, 12)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b of the paired values *x* and *y* (equal values, inf among them, are
    ties): (C − D) / √((C + D + Tx)(C + D + Ty)) over the pairs, C concordant, D
    discordant, Tx tied in *x* only, Ty in *y* only. None when either has no two different
    values.

    >>> kendall_tau([1, 2, 3], [3, 2, 1])
    -1.0
    """
    if len(x) != len(y):
        raise ValueError(f"{len(x)} values against {len(y)}")
    c = d = tx = ty = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            sx = (x[i] > x[j]) - (x[i] < x[j])
            sy = (y[i] > y[j]) - (y[i] < y[j])
            if sx and sy:
                c, d = (c + 1, d) if sx == sy else (c, d + 1)
            elif sx:
                ty += 1
            elif sy:
                tx += 1
    denominator = math.sqrt((c + d + tx) * (c + d + ty))
    return None if denominator == 0 else (c - d) / denominator


def contenders(times: dict[Any, tuple[float, float | None]]) -> list[Any]:
    """The keys of *times* (key → (mean time to target, half-width of its 95 % interval),
    as :func:`mean_time` gives them) that a verdict on these runs cannot tell from the
    fastest: the fastest itself and every one whose interval meets its interval (a
    configuration that never reached the target is never one). Empty when none reached it.

    >>> contenders({"a": (10.0, 2.0), "b": (13.0, 1.5), "c": (14.0, 1.0), "d": (math.inf, None)})
    ['a', 'b']
    """
    reached = {k: v for k, v in times.items() if math.isfinite(v[0])}
    if not reached:
        return []
    best = min(reached, key=lambda k: reached[k][0])
    m, h = reached[best][0], reached[best][1] or 0.0
    return [k for k, (t, e) in reached.items() if t - (e or 0.0) <= m + h]


def verdict(rows: Sequence[dict]) -> dict:
    """A scenario's figures from its *rows* (one per configuration: ``config`` a
    :class:`Config`, ``real`` and ``predicted`` its mean times to target, inf when not
    reached, ``real_ci``): ``best`` (the row of the lowest real time), ``emulated_first``
    (the row the emulation predicts fastest to the same target) and ``emulated_regret`` (its
    real regret: what choosing by netsim's time to that target costs), ``pick_regret``,
    ``hand_regret`` (the hand groups at the scenario's η), ``tau`` (predicted against real,
    every row), ``best_close`` (the real best is the pick or a finalist the race did not
    separate from it); a regret is None when its row is missing. ``pick_emulated_regret``:
    the pick's regret by the emulation's own times (what the race's short pilots cost
    against full emulated runs). With a ``second`` time in every row (the emulation again,
    on as many other seeds), ``second_first`` (its fastest) and ``second_regret``: that
    row's regret judged by the first emulation, the resolution of a verdict on this many
    seeds (a predictor as good as the emulation itself, judged by it on other seeds)."""
    best = min(rows, key=lambda r: (r["real"], r["config"].label))

    def regret_of(*tags: str) -> float | None:
        row = next((r for r in rows if all(t in r["config"].tags for t in tags)), None)
        return None if row is None else regret(row["real"], best["real"])

    first = min(rows, key=lambda r: (r["predicted"], r["config"].label))
    out = {
        "best": best,
        "emulated_first": first,
        "emulated_regret": regret(first["real"], best["real"]),
        "pick_regret": regret_of("pick"),
        "hand_regret": regret_of("hand", "scenario η"),
        "tau": kendall_tau([r["predicted"] for r in rows], [r["real"] for r in rows]),
        "best_close": any(t in best["config"].tags for t in ("pick", "close")),
    }
    pick = next((r for r in rows if "pick" in r["config"].tags), None)
    out["pick_emulated_regret"] = (
        None if pick is None else regret(pick["predicted"], first["predicted"])
    )
    if all(r.get("second") is not None for r in rows):
        second = min(rows, key=lambda r: (r["second"], r["config"].label))
        out["second_first"] = second
        out["second_regret"] = regret(second["predicted"], first["predicted"])
    if all(r.get("calibrated") is not None for r in rows):
        first = min(rows, key=lambda r: (r["calibrated"], r["config"].label))
        out["calibrated_tau"] = kendall_tau(
            [r["calibrated"] for r in rows], [r["real"] for r in rows]
        )
        out["calibrated_first"] = first
        out["calibrated_regret"] = regret(first["real"], best["real"])
    return out


def _time(mean: float, ci: float | None) -> str:
    if not math.isfinite(mean):
        return "not reached"
    return f"{mean:.4g}" + (f" ± {ci:.2g}" if ci else "")


def _share(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return "never" if math.isinf(value) else f"{value:+.1%}"


def config_rows(rows: Sequence[dict]) -> list[str]:
    """The markdown table of a scenario's *rows* (as for :func:`verdict`, with
    ``predicted_ci``), best real time first: configuration, its tags, real and emulated
    time to target (mean ± 95 % half-width), the calibrated emulation's when every row has
    one, real regret."""
    best = min(r["real"] for r in rows)
    calibrated = all(r.get("calibrated") is not None for r in rows)
    extra = " calibrated |" if calibrated else ""
    lines = [
        f"| configuration | role | real time to target | emulated |{extra} real regret |",
        "|---|---|---:|---:|" + ("---:|" if calibrated else "") + "---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["real"], r["predicted"], r["config"].label)):
        c = r["config"]
        cal = f" {_time(r['calibrated'], r.get('calibrated_ci'))} |" if calibrated else ""
        lines.append(
            f"| {c.label} | {', '.join(c.tags)} | {_time(r['real'], r.get('real_ci'))} | "
            f"{_time(r['predicted'], r.get('predicted_ci'))} |{cal} "
            f"{_share(regret(r['real'], best))} |"
        )
    return lines
