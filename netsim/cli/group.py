"""``netsim group``: the grouping and η recommended, by racing pilots or in closed form."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import ScenarioError
from ..results import render
from .common import (
    api,
    emit_json,
    fail,
    guarded,
    load,
    note,
    out_console,
    print_table,
    table_width,
)
from .options import (
    AlikeOpt,
    BudgetOpt,
    DataOpt,
    GroupOutOpt,
    JsonOpt,
    LrsOpt,
    MembersOpt,
    QuickOpt,
    RaceJobsOpt,
    RaceOpt,
    RoundsOpt,
    ScenarioArg,
    SchedulerOpt,
    SeedOpt,
    SetOpt,
    TargetOpt,
    VerifyOpt,
    WideOpt,
)
from .progress import (
    RaceEta,
)

if TYPE_CHECKING:
    from ..config.scenario import Scenario

__all__ = ["group"]


def group(
    scenario: ScenarioArg,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    data_dir: DataOpt = None,
    rounds: RoundsOpt = None,
    quick: QuickOpt = False,
    race: RaceOpt = False,
    lrs: LrsOpt = "",
    verify: VerifyOpt = 0,
    budget: BudgetOpt = None,
    target: TargetOpt = None,
    alike: AlikeOpt = 0.0,
    jobs: RaceJobsOpt = None,
    json_: JsonOpt = False,
    wide: WideOpt = False,
    members: MembersOpt = False,
    out: GroupOutOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Recommend a grouping and η by racing short pilot emulations of the candidates.

    Shows each (grouping, η) candidate's predicted time to the target loss; the pick is what grouping = "auto" uses. With --quick, only measure, cluster and rank by the advisor's closed form."""
    from ..tuning.race import RecommendError

    sc = load(scenario, set_, seed, data_dir)
    if quick:
        if race or lrs or verify or alike or {budget, target, jobs, out, scheduler} != {None}:
            fail(
                "--quick takes none of --race, --lrs, --verify, --budget, --target, --alike, --jobs, --out and --scheduler"
            )
        _group_quick(sc, rounds, json_)
        return
    grid = _race_options(lrs, verify, alike, jobs)
    eta = RaceEta()
    try:
        rec = api.recommend(
            sc,
            lrs=grid,
            verify=verify,
            budget_s=budget,
            target=target,
            rounds=rounds,
            alike=alike,
            jobs=jobs,
            on_rung=lambda r, n, k: note(
                f"{sc.name}: racing rung {r + 1} of {n}, {k} (grouping, η) candidates{eta.text()}"
            ),
            on_progress=eta.update,
            scheduler=scheduler,
        )
    except RecommendError as exc:
        fail(f"{sc.path}: {exc}")
    except ScenarioError as exc:
        fail(str(exc))
    classes = sc.worker_class_names()
    if out is not None:
        from ..results.groupout import write_recommendation

        guarded(out, lambda: write_recommendation(rec, out, classes))
        note(f"wrote {out}/recommendation.json, candidates.csv and predicted.png")
    if json_:
        emit_json(api.recommendation_dict(rec, classes))
        return
    hosts = list(sc.network.worker_hosts) if sc.network else None
    width = table_width(wide)
    for renderable in render.recommendation_tables(
        rec,
        sc.name,
        classes,
        hosts,
        rows=None if wide else render.MAX_ROWS,
        width=width,
        members=members,
    ):
        print_table(renderable, wide)


def _race_options(lrs: str, verify: int, alike: float, jobs: int | None) -> list[float] | None:
    """The η grid of ``--lrs`` (None: the race's own); one line and exit 2 for a value out
    of range."""
    try:
        grid = [float(x) for x in lrs.split(",") if x.strip()] or None
    except ValueError:
        fail(f"--lrs: {lrs!r} is not a comma-separated list of numbers")
    if verify < 0:
        fail(f"--verify: {verify} is not allowed (>= 0)")
    if not (alike >= 0 and math.isfinite(alike)):
        fail(f"--alike: {alike} is not allowed (a finite number >= 0)")
    if jobs is not None and jobs < 1:
        fail(f"--jobs: {jobs} is not allowed (>= 1)")
    return grid


def _group_quick(sc: Scenario, rounds: int | None, json_: bool) -> None:
    """``netsim group --quick``: measure, cluster and rank by the advisor's closed form."""
    try:
        info = api.advise_info(sc, rounds)
    except ScenarioError as exc:
        fail(str(exc))
    m, chosen = info["measurement"], info["grouping"]
    if json_:
        emit_json(api.quick_dict(info))
        return
    out_console.print(
        render.measurement_table(
            info,
            f"{sc.name}: measured over {m.iteration.shape[1]} probe "
            f"rounds ({m.duration:.4g} s of simulated time)",
        )
    )
    out_console.print(render.silhouette_table(info["silhouette"]))
    out_console.print(
        f"chosen ({chosen.method}): K = {chosen.k}, groups {[list(g) for g in chosen.groups]} — "
        f"{chosen.reason}",
        highlight=False,
        soft_wrap=True,
    )
    out_console.print(render.ranking_table(info["ranking"]))
    top = info["ranking"][0]
    out_console.print(
        f"advisor's pick: {top.name}, η = {top.lr:.3g} (η_sync {info['lr_sync']:g} / "
        f"(1 + mean staleness {top.mean_staleness:.3g})); race the candidates (without --quick) "
        f"for a pick from emulation",
        highlight=False,
        soft_wrap=True,
    )
    return
