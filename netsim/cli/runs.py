"""``netsim run``, ``rerun``, ``compare`` and ``sweep``: emulated runs."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich.markup import escape

from ..errors import ScenarioError
from ..results import render
from ..results.left import interrupt_line, partial_compare_line
from ..rules import RULES
from .common import (
    SAID,
    api,
    check_out,
    draw,
    emit_json,
    err_console,
    fail,
    guarded,
    load,
    note,
    out_console,
    parse_window_opt,
    print_table,
    print_verdict,
    report_status,
    said_interrupted,
    show_run,
    split,
    split_given,
    stopped,
    table_width,
)
from .options import (
    AlgorithmsOpt,
    DataOpt,
    GridOpt,
    GroupingsOpt,
    JsonOpt,
    LiveOpt,
    OldWorkersOpt,
    OutOpt,
    OverwriteOpt,
    PlotsOpt,
    ResumeOpt,
    ScenarioArg,
    SchedulerOpt,
    SeedOpt,
    SeedsOpt,
    SetOpt,
    SweepJobsOpt,
    VerdictTargetOpt,
    WeightingsOpt,
    WideOpt,
    WindowOpt,
    algorithm_option,
    folder_argument,
    out_option,
)
from .progress import (
    SweepProgress,
    sweep_bar,
    with_progress,
)

if TYPE_CHECKING:
    from ..sim.summary import Summary
    from ..sweeps.runner import Plan

__all__ = ["run", "rerun", "compare", "sweep"]


def run(
    scenario: ScenarioArg,
    algorithm: Annotated[Optional[str], algorithm_option(f"Rule: {', '.join(RULES)}.")] = None,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    plots: PlotsOpt = False,
    window: WindowOpt = None,
    json_: JsonOpt = False,
    wide: WideOpt = False,
    overwrite: OverwriteOpt = False,
) -> None:
    """Run one scenario with one update rule; write summary.json, curves, scenario.toml and meta.json."""
    window_range = parse_window_opt(window)
    sc = load(scenario, set_, seed, data_dir, algorithm)
    out = out or api.default_out(sc)
    check_out(out)
    result = guarded(
        out,
        lambda: with_progress(
            live, lambda progress: api.run(sc, out=out, progress=progress, overwrite=overwrite)
        ),
    )
    show_run(result.summary, out, f"{sc.name} (seed {sc.run.seed})", json_, wide)
    note(
        f"wrote {out}: summary.json, curve.csv, updates.csv, scenario.toml, meta.json (rerun: netsim rerun {out})"
    )
    if plots:
        draw([out], None, window_range)
    raise typer.Exit(api.exit_status([result.status]))


def rerun(
    folder: Annotated[Path, folder_argument("A run folder (holding scenario.toml).")],
    out: Annotated[
        Optional[Path], out_option("Folder of the new run (default: FOLDER-rerun, numbered).")
    ] = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    json_: JsonOpt = False,
    plots: PlotsOpt = False,
) -> None:
    """Run a run folder's recorded scenario again and check the results are byte-identical (wall times aside)."""
    from ..results.runfolder import FolderError

    SAID["out"] = out
    try:
        again = with_progress(
            live, lambda progress: api.rerun(folder, out=out, progress=progress, data_dir=data_dir)
        )
    except KeyboardInterrupt as exc:
        stopped(exc)
    except (FolderError, ScenarioError) as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    if plots:
        draw([again.run.path], None, None)
    if json_:
        emit_json(
            {
                "original": str(folder),
                "rerun": str(again.run.path),
                "identical": again.identical,
                "differ": again.differ,
                "not_compared": again.not_compared,
            }
        )
    elif again.not_compared:
        out_console.print(
            f"{again.run.path}: rerun; not compared with {folder}: {again.not_compared}",
            highlight=False,
            markup=False,
        )
        return
    elif again.identical:
        out_console.print(
            f"{again.run.path}: identical to {folder} (wall times aside)", highlight=False
        )
    else:
        out_console.print(
            f"{again.run.path}: differs from {folder} in {', '.join(again.differ)}", highlight=False
        )
    if not again.identical and not again.not_compared:
        raise typer.Exit(1)


def compare(
    scenario: ScenarioArg,
    algorithms: AlgorithmsOpt = None,
    groupings: GroupingsOpt = "",
    weightings: WeightingsOpt = "",
    set_: SetOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    plots: PlotsOpt = False,
    window: WindowOpt = None,
    json_: JsonOpt = False,
    wide: WideOpt = False,
    overwrite: OverwriteOpt = False,
    target: VerdictTargetOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Run several rules on the same shards, initial model and time draws; print one table and the verdict."""
    window_range = parse_window_opt(window)
    names = split_given(algorithms, "--algorithms") or []
    sc = load(scenario, set_, seed, data_dir)
    for name in names:
        if name not in sc.rules:
            fail(
                f"{sc.path}: --algorithms: {name!r} has no [algorithms.{name}] table "
                f"(configured: {', '.join(sc.rules)}; known rules: {', '.join(api.RULES)})"
            )
    out = out or api.default_out(sc, "compare")
    check_out(out)
    plan = guarded(out, lambda: api.variants(sc, names, split(groupings), split(weightings)))

    def go(progress: Any, on_run: Callable[[str, api.Run], None]) -> api.Comparison:
        return api.compare(
            sc,
            names,
            groupings=split(groupings),
            weightings=split(weightings),
            out=out,
            progress=progress,
            overwrite=overwrite,
            on_run=on_run,
            scheduler=scheduler,
        )

    if scheduler is not None:
        cmp = _compare_on_dask(go, len(plan), out, scheduler, live)
    else:
        cmp = guarded(out, lambda: with_progress(live, lambda p: go(p, _shown), total=len(plan)))
    if json_:
        emit_json({"folder": str(out), "runs": cmp.summaries})
    else:
        print_table(
            render.compare_table(
                cmp.summaries,
                title=f"{sc.name}: seed {sc.run.seed}, T = {sc.run.until:g}",
                width=table_width(wide),
            ),
            wide,
        )
        print_verdict(cmp, target)
    note(f"wrote {out}/compare.json and one folder per run")
    if plots:
        draw([out], None, window_range, target=target)
    raise typer.Exit(api.exit_status([r.status for r in cmp.values()]))


def _compare_on_dask(
    go: Callable[[Any, Callable[[str, api.Run], None]], api.Comparison],
    total: int,
    out: Path,
    scheduler: str,
    live: bool,
) -> api.Comparison:
    """``go(None, on_run)``: a comparison of *total* runs on the Dask cluster at *scheduler*,
    with a bar of runs done (or a line per run) on stderr; an interrupt says which runs
    finished, exit status 130."""
    if not scheduler.strip():
        fail("--scheduler: '' names no scheduler (give its address, e.g. tcp://HOST:8786)")
    bar = sweep_bar() if live and err_console.is_terminal else None
    progress = SweepProgress(bar, total, "compare")

    def on_run(label: str, run: api.Run) -> None:
        _shown(label, run)
        progress(progress.done + 1, total, label, run.summary, None)

    def call() -> api.Comparison:
        try:
            with bar if bar is not None else nullcontext():
                return go(None, on_run)
        except KeyboardInterrupt:  # the runs not finished are not written
            said_interrupted(partial_compare_line(out, total))
        except api.ClusterFailed as exc:
            fail(str(exc), 1)

    return guarded(out, call)


def _shown(label: str, run: api.Run) -> None:
    report_status(run.summary, run.path)


@dataclass
class _SweepState:
    """What a sweep's callbacks learn as it goes: its folder and, once planned, its progress."""

    out: Path | None
    progress: SweepProgress | None = None


def _sweep_interrupted(where: Path | None, progress: SweepProgress | None) -> NoReturn:
    """The one line of a sweep ended by Ctrl-C or SIGTERM (what is in *where*: None before
    its folder was chosen); exit 130."""
    if where is None:
        said_interrupted(interrupt_line(None))
    if progress is not None and getattr(progress, "done", 0) == progress.total:
        said_interrupted(
            f"interrupted after its {progress.total} runs ended: they are in {where}"
            + ("" if Path(where, "sweep.csv").is_file() else "; --resume writes sweep.csv")
        )
    said_interrupted(
        f"interrupted: finished runs are kept in {where}; run again with "
        "--resume to finish the rest"
    )


def sweep(
    scenario: ScenarioArg,
    grid: GridOpt = None,
    seeds: SeedsOpt = 1,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    jobs: SweepJobsOpt = None,
    workers_old: OldWorkersOpt = None,
    scheduler: SchedulerOpt = None,
    resume: ResumeOpt = False,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    plots: PlotsOpt = False,
    window: WindowOpt = None,
    json_: JsonOpt = False,
    wide: WideOpt = False,
    overwrite: OverwriteOpt = False,
    target: VerdictTargetOpt = None,
) -> None:
    """Run the cartesian product of --grid values × --seeds, one folder per run; write sweep.csv and mean/CI tables."""
    from ..sweeps.executors import ExecutorError
    from ..sweeps.runner import SweepError, SweepFailed

    window_range = parse_window_opt(window)
    jobs = _sweep_jobs(jobs, workers_old)
    bar = sweep_bar() if live and err_console.is_terminal else None
    state = _SweepState(out)

    def on_plan(plan: Plan, where: Path) -> None:
        check_out(Path(where))
        where_text = (
            f"Dask scheduler {scheduler}" if scheduler else f"{jobs or 'all'} local process(es)"
        )
        note(f"sweep {plan.name}: {len(plan.tasks)} run(s) into {where} on {where_text}")
        state.out = where
        state.progress = SweepProgress(bar, len(plan.tasks))

    sets = list(set_ or []) + ([f"run.seed={seed}"] if seed is not None else [])

    def on_done(
        done: int, total: int, folder: str, summary: Summary | None, error: BaseException | None
    ) -> None:
        if state.progress is not None:  # set by on_plan, before the first run
            state.progress(done, total, folder, summary, error)

    def go() -> api.Sweep:
        return api.sweep(
            scenario,
            grid or [],
            out=out,
            seeds=seeds,
            overrides=sets,
            data_dir=data_dir,
            jobs=jobs,
            scheduler=scheduler,
            resume=resume,
            on_plan=on_plan,
            on_done=on_done,
            overwrite=overwrite,
        )

    try:
        with bar if bar is not None else nullcontext():
            outcome = go()
    except KeyboardInterrupt:  # first: after an interrupt netsim.api may be half loaded
        _sweep_interrupted(state.out, state.progress)
    except SweepFailed as exc:
        fail(str(exc), 1)
    except (ScenarioError, SweepError, ExecutorError) as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    warned = state.progress.warned if state.progress is not None else []
    _sweep_report(outcome, json_, wide, plots, window_range, warned, target)
    if not json_ and outcome.rows:
        print_verdict(outcome.path, target)
    raise typer.Exit(
        max(1 if outcome.failures else 0, api.exit_status([row["status"] for row in outcome.rows]))
    )


def _sweep_jobs(jobs: int | None, workers_old: int | None) -> int | None:
    """--jobs, or the old --workers; below 1 refused, naming the option the user typed."""
    flag = "--jobs" if jobs is not None else "--workers"
    jobs = jobs if jobs is not None else workers_old
    if jobs is not None and jobs < 1:
        fail(f"{flag}: {jobs!r} is not allowed (must be >= 1)")
    return jobs


def _sweep_report(
    outcome: api.Sweep,
    json_: bool,
    wide: bool,
    plots: bool,
    window_range: tuple[float, float] | None,
    warned: list[tuple[str, str]],
    target: float | None = None,
) -> None:
    """What ``netsim sweep`` prints when it is done: the table (or JSON), the files written,
    the figures when asked (*target* drawn on the loss curves), each failed run's message
    and the *warned* runs' warnings ([(folder, warning)], the first ten)."""
    if json_:
        emit_json(
            {
                "folder": str(outcome.path),
                "keys": outcome.keys,
                "runs": outcome.rows,
                "points": outcome.table,
                "failures": [{"folder": f, "message": m} for f, m in outcome.failures],
            }
        )
    else:
        print_table(
            render.sweep_table(
                outcome.table,
                outcome.keys,
                f"{outcome.name}: mean ± 95 % CI over seeds",
                width=table_width(wide),
            ),
            wide,
        )
    note(
        f"{outcome.executed} runs executed, {outcome.skipped} already finished; "
        f"wrote {outcome.path}/sweep.csv, sweep_summary.csv"
    )
    if plots and outcome.rows:
        draw([outcome.path], None, window_range, target=target)
    for folder, message in outcome.failures:
        err_console.print(
            f"[bold red]{escape(str(folder))}:[/] {escape(message)}",
            highlight=False,
            soft_wrap=True,
        )
    for folder, warning in sorted(warned)[:10]:
        note(f"{folder}: {warning}")
    if len(warned) > 10:
        note(
            f"... and {len(warned) - 10} more runs whose loss ended above its start (summary.json: warning)"
        )
