"""``netsim real``, ``predict`` and ``calibrate``: real runs and netsim held against them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ScenarioError
from ..results import render
from .common import (
    SAID,
    api,
    check_out,
    emit_json,
    fail,
    guarded,
    load,
    note,
    print_table,
    show_run,
    split_given,
    stopped,
    table_width,
)
from .options import (
    DataOpt,
    JsonOpt,
    LiveOpt,
    OutOpt,
    OverwriteOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    WideOpt,
    algorithm_option,
    folder_argument,
    time_scale_option,
)
from .progress import (
    with_progress,
)

__all__ = ["real", "predict", "calibrate", "fit_notes", "show_prediction"]


def real(
    scenario: ScenarioArg,
    algorithm: Annotated[
        Optional[str],
        algorithm_option("Rule: ssgd, asgd, gsgd (hand groups), backup, kasync, ..."),
    ] = None,
    time_scale: Annotated[
        float,
        time_scale_option("Real seconds per scenario time unit."),
    ] = 0.05,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    port: Annotated[
        Optional[int],
        typer.Option(metavar="PORT", help="Rendezvous TCP port (default: a free one)."),
    ] = None,
    json_: JsonOpt = False,
    wide: WideOpt = False,
    overwrite: OverwriteOpt = False,
    paced: Annotated[
        bool,
        typer.Option(
            "--paced/--unpaced",
            help="--unpaced: run a time scale too small for the machine's messages and "
            "server anyway, and say how far it fell behind (hold it against "
            "netsim predict's calibrated variant).",
        ),
    ] = True,
) -> None:
    """Train a scenario for real: a parameter-server process and a process per worker over torch.distributed."""
    sc = load(scenario, set_, seed, data_dir, algorithm)
    out = out or api.default_out(sc, f"real-{sc.run.algorithm}")
    check_out(out)
    result = guarded(
        out,
        lambda: with_progress(
            live,
            lambda progress: api.real(
                sc,
                time_scale=time_scale,
                out=out,
                progress=progress,
                overwrite=overwrite,
                port=port,
                paced=paced,
            ),
        ),
    )
    if result is None:  # a worker's process under torchrun: rank 0 reports the run
        raise typer.Exit(0)
    title = f"{sc.name} for real, {time_scale:g} s per unit (seed {sc.run.seed})"
    show_run(result.summary, out, title, json_, wide)
    if not json_ and (contended := result.summary.get("real", {}).get("contended")):
        note(contended)
    note(f"wrote {out}; netsim predict {out} holds netsim's prediction against it")
    raise typer.Exit(api.exit_status([result.status]))


def predict(
    folder: Annotated[Path, folder_argument("A real run's folder (netsim real's).")],
    out: OutOpt = None,
    variants: Annotated[
        Optional[str],
        typer.Option(
            metavar="VARIANTS",
            help="Emulations to make: scenario, calibrated, replayed (comma-separated).",
        ),
    ] = None,
    target: Annotated[
        Optional[float],
        typer.Option(
            metavar="LOSS",
            help="Loss of the time-to-target row (default: half way from the real run's "
            "initial to its final loss).",
        ),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            metavar="N", help="Emulations of each variant (seeds: the run's, then the next)."
        ),
    ] = 3,
    calibrate_from: Annotated[
        Optional[str],
        typer.Option(
            metavar="FOLDERS",
            help="Real runs' folders the calibrated variant is fitted to, comma-separated "
            "(default: FOLDER itself; others: held out).",
        ),
    ] = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    plots: Annotated[
        bool,
        typer.Option("--plots/--no-plots", help="Draw the figures into OUT/plots.", metavar=""),
    ] = True,
    json_: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Hold netsim's predictions against a real run: emulate its scenario and compare side by side."""
    from ..results.runfolder import FolderError
    from ..testbed.predict import VARIANTS

    names = split_given(variants, "--variants")
    sources = split_given(calibrate_from, "--calibrate-from")
    SAID["out"] = out
    try:
        pred = with_progress(
            live,
            lambda progress: api.predict(
                folder,
                out=out,
                variants=names,
                target=target,
                plots=plots,
                data_dir=data_dir,
                progress=progress,
                seeds=seeds,
                calibrate_from=sources,
            ),
            total=len(names or VARIANTS) * max(seeds, 1),
        )
    except KeyboardInterrupt as exc:
        stopped(exc)
    except (ScenarioError, FolderError) as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    show_prediction(pred, seeds, json_, wide)
    note(f"wrote {pred.path}: the emulated runs" + (" and plots/" if plots else ""))


def calibrate(
    folders: Annotated[
        list[Path],
        typer.Argument(
            metavar="FOLDER...",
            help="Real runs' folders (netsim real's); several sizes fit per-parameter parts.",
        ),
    ],
    time_scale: Annotated[
        Optional[float],
        time_scale_option("Give the keys in units of this scale (default: the first run's)."),
    ] = None,
    receiving: Annotated[
        bool,
        typer.Option(
            "--receiving",
            help="Fit a receiving thread (receive_time) instead of leaving it in the overheads.",
        ),
    ] = False,
    cpu: Annotated[
        bool,
        typer.Option(
            "--cpu",
            help="Fit the [server] keys from the server's CPU time: a server with cores of its own.",
        ),
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """Fit the [server] keys and per-class overheads to real runs; print them to paste into a scenario."""
    try:
        fit = api.calibrate(folders, time_scale=time_scale, receiving=receiving, cpu=cpu)
    except (ScenarioError, api.FolderError) as exc:
        fail(str(exc))
    if json_:
        emit_json({k: v for k, v in fit.items() if k != "calibration"})
        return
    sys.stdout.write(fit["toml"])
    fit_notes(fit)


def fit_notes(fit: dict, head: str = "") -> None:
    """How well a calibration's fit holds, one line per run (stderr)."""
    for folder, q in fit["quality"].items():
        r2 = "-" if q["r2"] is None else f"{q['r2']:.3f}"
        note(
            f"{head}{folder}: service fitted on {q['jobs']} updates ({q['how']}), R^2 {r2}, "
            f"residuals {q['rel_rms']:.1%} of the mean; {q['sends']} model messages, "
            f"their times vary by {q['send_cv']:.0%} (coefficient of variation)"
        )
        if q.get("handovers") or q.get("snapshots") or q.get("average_s"):
            note(
                f"{head}{folder}: the server's own time beside its jobs: {q['handovers']} "
                f"hand-overs while a push waited ({q['handover_s']:.3g} s each, added to the "
                f"job after), {q['snapshots']} copies for the curve ({q['snapshot_s']:.3g} s "
                f"each), {q['average_s']:.3g} s per gradient averaged"
            )
        if q.get("server_cpu_share") is not None:
            fitted = (
                "fitted on it (--cpu)" if q["cpu"] else "its wall time fitted (--cpu: its CPU time)"
            )
            gradients = q.get("compute_cpu_share")
            shown = "" if gradients is None else f"; the gradients {100 * gradients:.0f} %"
            note(
                f"{head}{folder}: the server's jobs had a core {100 * q['server_cpu_share']:.0f} "
                f"% of their time, {fitted}{shown}"
            )
        if "receive_s" in q:
            used = "fitted" if q["receiving"] else "left in the overheads (--receiving fits it)"
            note(
                f"{head}{folder}: receiving, {used}: {q['receive_pushes']} pushes, "
                f"{q['receive_s']:.3g} s each one at a time after {q['latency_s']:.3g} s of "
                f"their own predict arrivals within {q['receive_mae']:.3g} s on average "
                f"({q['receive_mae_without']:.3g} s without a receiving thread)"
            )


def show_prediction(pred: api.Prediction, seeds: int, json_: bool, wide: bool) -> None:
    """netsim predict's answer: JSON, or the table and how well the calibration holds."""
    if json_:
        emit_json(
            {
                "target": pred.target,
                "n": pred.n,
                "folder": str(pred.path),
                "rows": pred.rows,
                "calibration": pred.calibration,
            }
        )
    else:
        s = pred.real.summary
        title = (
            f"{s['scenario']} {s['label']} for real at {s['real']['time_scale']:g} s per unit, "
            f"against netsim ({seeds} seeds each; time to loss {pred.target:.5g}, "
            f"N = {pred.n})"
        )
        print_table(
            render.prediction_table(pred.rows, list(pred.runs), title, table_width(wide)), wide
        )
    if pred.calibration is not None and not json_:
        fit_notes(pred.calibration, "calibrated from ")
    if not json_ and (contended := pred.real.summary.get("real", {}).get("contended")):
        note(f"the real run: {contended}")
    if pred.skipped:
        note(pred.skipped)
