"""netsim command line: run, compare, sweep, group, plot, report and validate scenario files.

Each command parses its options, calls one function of :mod:`netsim.api` and
renders the result with :mod:`netsim.results.render`; nothing else happens here.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from .errors import RealRunFailed, ScenarioError, one_line
from .results import render
from .results.left import interrupt_line
from .rules import RULES
from .signals import quiet
from .workload.backends import BACKENDS

__all__ = ["app", "main"]


def _lazy(name: str):
    """Module *name*, executed on its first attribute access (the standard library's
    LazyLoader): ``--version``, ``--help`` and bad options answer without importing the
    emulator."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


api = _lazy("netsim.api")


def _exception_types(*names: str) -> tuple:
    """The exception classes named ``module:Class`` that this install has (click's, which newer
    typer vendors with typer's own exceptions as their base, and plain click's)."""
    import importlib

    found = []
    for name in names:
        module, _, cls = name.partition(":")
        try:
            found.append(getattr(importlib.import_module(module), cls))
        except (ImportError, AttributeError):
            pass
    return tuple(found)


_USAGE_ERRORS = _exception_types(
    "typer.exceptions:TyperException", "click.exceptions:ClickException"
)
_ABORTS = _exception_types("typer.exceptions:Abort", "click.exceptions:Abort")

_SAID = {"interrupted": False}
"""Whether the command has said it was interrupted (typer turns a Ctrl-C it meets into
exit status 130 without a word: :class:`_App` then says it)."""


class _App(typer.Typer):
    """The typer app; run as the ``netsim`` script, a usage error (an unknown option, a value
    of the wrong type) and an error of the file system (a path too long, a folder where a
    file is expected, no permission, a missing directory) or memory that no command turned
    into a message print one line instead of a box or a traceback."""

    def __call__(self, *args, **kwargs):
        kwargs.setdefault(
            "standalone_mode", False
        )  # usage errors come back here instead of being drawn
        _SAID["interrupted"] = False
        _SAID["out"] = None
        try:
            status = super().__call__(*args, **kwargs)
        except _USAGE_ERRORS as exc:
            if (
                type(exc).__name__ == "NoArgsIsHelpError"
            ):  # a group called alone: its help, as typer shows it
                from typer import rich_utils

                rich_utils.rich_format_error(exc)
                sys.exit(exc.exit_code)
            ctx = getattr(exc, "ctx", None)
            hint = f" (try '{ctx.command_path} -h')" if ctx is not None else ""
            error_line(exc.format_message() + hint)
            sys.exit(getattr(exc, "exit_code", 2))
        except _ABORTS:
            err_console.print("aborted", highlight=False)
            sys.exit(1)
        except KeyboardInterrupt:  # Ctrl-C before a command's own handling (typer's setup)
            _quit(130, interrupt_line(_SAID["out"]))
        except OSError as exc:  # 1: the disk cannot take it (full, read-only); 2: the path is wrong
            from .results.atomic import disk_status

            where = f": {exc.filename}" if exc.filename else ""
            _quit(disk_status(exc), f"{exc.strerror or exc}{where}")
        except MemoryError as exc:
            error_line(f"out of memory {exc}")
            sys.exit(1)
        status = status if isinstance(status, int) else 0
        _quit(
            status,
            interrupt_line(_SAID["out"]) if status == 130 and not _SAID["interrupted"] else None,
        )


def _quit(status: int, line: str | None) -> None:
    """Say *line* (an error), then exit with *status*; a signal from here on is too late to
    change anything: it only makes the status 130 (:func:`netsim.signals.quiet`)."""
    if line is not None:
        error_line(line)
    quiet(status == 130)
    sys.exit(status)


app = _App(
    add_completion=True,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Emulate parameter-server SGD (SSGD, ASGD, Group SGD, ...) in heterogeneous clusters. "
    "Results go to stdout, progress and messages to stderr.",
)
out_console = Console(
    width=None if sys.stdout.isatty() else 160, emoji=False
)  # user text printed as written
err_console = Console(stderr=True, emoji=False)

ScenarioArg = Annotated[
    str,
    typer.Argument(help="Scenario file, or a preset name (netsim scenarios).", show_default=False),
]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set",
        "-s",
        help="Override a scenario key: KEY=VALUE (dotted path; netsim keys lists them).",
    ),
]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="Override run.seed.")]


def _path(value: str) -> Path:
    """A path option's value; an empty one (an unset shell variable) is refused, not taken as '.'."""
    if not value:
        raise typer.BadParameter(
            "an empty path is not allowed (leave the option out for its default)"
        )
    return Path(value)


def _out_option(help: str):
    """The ``--out``/``-o`` option: a path (an empty one refused), described by *help*."""
    return typer.Option("--out", "-o", parser=_path, metavar="<path>", help=help)


OutOpt = Annotated[
    Optional[Path],
    _out_option(
        "Output folder (default: runs/<scenario>-<kind>, numbered -2, -3, ... when taken)."
    ),
]
LiveOpt = Annotated[
    bool,
    typer.Option("--live/--no-live", help="Live display on a terminal (on stderr).", metavar=""),
]
DataOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--data-dir",
        parser=_path,
        metavar="<path>",
        help="Data directory (else data.dir, else $NETSIM_DATA_DIR).",
    ),
]
PlotsOpt = Annotated[
    bool, typer.Option("--plots", help="Also draw the figures into OUT/plots.", metavar="")
]
WindowOpt = Annotated[
    Optional[str], typer.Option("--window", help="Timeline window START,END in simulated time.")
]
OverwriteOpt = Annotated[
    bool,
    typer.Option(
        "--overwrite", help="Replace the results of another run already in --out.", metavar=""
    ),
]
VerdictTargetOpt = Annotated[
    Optional[float],
    typer.Option(
        "--target",
        help="Target loss of the closing verdict, drawn on --plots loss curves too (default: run.target_loss, else half way from the initial loss to the best final loss).",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json", help="Print the results as JSON on stdout instead of tables.", metavar=""
    ),
]
FigFormatOpt = Annotated[
    str, typer.Option("--format", "-f", help="Figure formats, comma-separated: png, pdf, svg.")
]
DpiOpt = Annotated[
    Optional[int],
    typer.Option("--dpi", help="Resolution of PNG figures, dots per inch (default 150)."),
]
XScaleOpt = Annotated[
    str,
    typer.Option("--xscale", help="Axis of the loss/accuracy-vs-updates figures: linear or log."),
]


def version_callback(value: bool) -> None:
    if value:
        from .results.provenance import netsim_version  # not the API: answer at once

        out_console.print(f"netsim {netsim_version()}", highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        Optional[bool],
        typer.Option(
            "--version",
            "-V",
            callback=version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = None,
) -> None:
    """Emulate parameter-server SGD (SSGD, ASGD, Group SGD, ...) in heterogeneous clusters."""


def emit_json(data) -> None:
    """Machine-readable results on stdout (no rich formatting)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Show every column of the results table, in lines as long as they need "
        "(default on a terminal: the columns that fit).",
        metavar="",
    ),
]


def print_table(table, wide: bool) -> None:
    """Print a results table: on a terminal the columns that fit (its caption names the others),
    with --wide or to a pipe or file every column, lines as long as they need (through a
    console of :data:`WHOLE_TABLE` characters: rich caps a print's width at its console's, and
    would squeeze the columns to fit the terminal or a pipe's default 160)."""
    if table_width(wide):
        out_console.print(table)
    else:
        Console(width=WHOLE_TABLE, emoji=False, file=out_console.file).print(table)


WHOLE_TABLE = 1000
"""Characters a results table may take when it is shown whole (--wide, or not a terminal)."""


def table_width(wide: bool) -> int | None:
    """Columns the results table may take: the terminal's width, or None (every column) with
    --wide or when stdout is not a terminal (a pipe or file gets the whole table)."""
    return out_console.width if out_console.is_terminal and not wide else None


def note(text: str) -> None:
    """A message for the user (stderr), kept apart from the results on stdout."""
    err_console.print(text, highlight=False, soft_wrap=True, markup=False)


def error_line(message: str) -> None:
    """``error: MESSAGE`` as one line on stderr."""
    err_console.print(
        f"[bold red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
    )


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit with *code*."""
    error_line(message)
    _SAID["interrupted"] = code == 130
    raise typer.Exit(code)


def load(path, sets, seed, data_dir, algorithm=None):
    try:
        return api.load(path, sets or [], seed=seed, algorithm=algorithm, data_dir=data_dir)
    except ScenarioError as exc:
        fail(str(exc))


class Progress:
    """Progress callback: a rich Live display on stderr (≤ 10 refreshes per wall
    second) when stderr is a terminal, else a plain stderr line per tenth of each run.

    Rules already finished stay in the live display; each line says which rule of
    how many (*total*) runs, its share done and a wall-clock ETA.
    """

    def __init__(self, live: Live | None, total: int = 1):
        self.live = live
        self.total = total
        self.last = 0.0
        self.next_mark = 0.1
        self.done: list = []
        self.current = None
        self.started = time.perf_counter()

    def position(self) -> str:
        return f"[{len(self.done) + 1}/{self.total}]" if self.total > 1 else ""

    def eta(self, snap) -> float | None:
        elapsed = time.perf_counter() - self.started
        return elapsed * (1 - snap.fraction) / snap.fraction if snap.fraction > 0.02 else None

    def __call__(self, snap) -> None:
        if self.current is not None and snap.label != self.current.label:
            self.done.append(self.current)
            self.next_mark = 0.1
            self.started = time.perf_counter()
        if self.current is not None and self.current.note and not snap.note:
            self.started = (
                time.perf_counter()
            )  # training starts after the grouping race: the ETA counts from here
        self.current = snap
        if self.live is not None:
            now = time.perf_counter()
            if now - self.last >= 0.1 or snap.fraction >= 1.0:
                self.last = now
                self.live.update(
                    render.live_view(
                        snap,
                        done=self.done,
                        position=self.position(),
                        eta=self.eta(snap),
                        size=tuple(self.live.console.size),
                    ),
                    refresh=True,
                )
        elif snap.note:  # before training: each step of the grouping race gets a line
            note(render.plain_line(snap, self.position()))
        elif snap.fraction >= self.next_mark - 1e-9:
            self.next_mark = (int(snap.fraction * 10 + 1e-9) + 1) / 10
            note(render.plain_line(snap, self.position(), self.eta(snap)))


def with_progress(live: bool, call, total: int = 1):
    """Run ``call(progress)`` under a live display on a terminal (stderr), else with plain lines on stderr."""
    if live and err_console.is_terminal:
        with Live(console=err_console, auto_refresh=False, transient=True) as display:
            return call(Progress(display, total))
    return call(Progress(None, total))


def check_out(out: Path) -> None:
    """Fail (exit 2) before simulating when *out* cannot hold the run's files."""
    from .results.runfolder import FolderError, check_writable

    try:
        check_writable(out)
    except FolderError as exc:
        fail(f"--out: {exc}")


def interrupted(stop, out) -> None:
    """One line for a run ended by Ctrl-C or SIGTERM, then exit status 130."""
    said_interrupted(
        f"{stop.result.label}: {stop.result.message}; what it recorded is in {out} "
        "(status interrupted)"
    )


def stopped(exc: KeyboardInterrupt) -> None:
    """One line for a command of several steps (predict, rerun) ended by Ctrl-C or SIGTERM:
    what its folder (``exc.folder`` when the API named it) holds; exit status 130."""
    out = getattr(exc, "folder", None) or _SAID["out"]
    said_interrupted(interrupt_line(out))


def said_interrupted(message: str) -> None:
    """*message* (what an interrupt left) on stderr, then exit status 130."""
    note(message)
    _SAID["interrupted"] = True
    raise typer.Exit(130)


def report_status(summary: dict, out: Path | None) -> None:
    """On stderr: what ``grouping = "auto"`` picked (when the run raced), the run's status when
    not ok, that it made no update when it ended ok without one (its horizon too short), and
    its warning (a loss that ended above its start)."""
    line = render.race_line(summary)
    if line is not None:
        note(line)
    if summary["status"] == "ok" and not summary["updates"]:
        note(
            f"{summary['label']}: no update within {summary['sim_time']:g} s: the model is the "
            "initial one (a longer run.until lets the first round end)"
        )
    if summary.get("warning"):
        note(f"{summary['label']}: {summary['warning']}")
    if summary["status"] != "ok":
        if summary["status"] == "interrupted":
            _SAID["interrupted"] = True
        where = f"; files so far kept in {out}" if out is not None else ""
        err_console.print(
            f"[bold red]{escape(summary['label'])}:[/] {escape(summary['message'])}{escape(where)}",
            highlight=False,
        )


def guarded(out, call):
    """``call()``, with the API's errors turned into one line and the documented exit
    status: 2 bad input, the writer's code for output errors, 130 interrupted."""
    _SAID["out"] = out
    try:
        return call()
    except KeyboardInterrupt as stop:  # first: after an interrupt netsim.api may be half loaded
        if getattr(stop, "result", None) is not None:  # RunInterrupted: the run's own line
            interrupted(stop, out)
        said_interrupted(interrupt_line(out))
    except ScenarioError as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    except RealRunFailed as exc:
        fail(str(exc), 1)


@app.command()
def run(
    scenario: ScenarioArg,
    algorithm: Annotated[
        Optional[str], typer.Option("--algorithm", "-a", help=f"Rule: {', '.join(RULES)}.")
    ] = None,
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
    report_status(result.summary, out)
    if json_:
        emit_json({**result.summary, "folder": str(out)})
    else:
        print_table(
            render.compare_table(
                [result.summary], title=f"{sc.name} (seed {sc.run.seed})", width=table_width(wide)
            ),
            wide,
        )
    note(
        f"wrote {out}: summary.json, curve.csv, updates.csv, scenario.toml, meta.json (rerun: netsim rerun {out})"
    )
    if plots:
        draw([out], None, window_range)
    raise typer.Exit(api.exit_status([result.status]))


@app.command()
def real(
    scenario: ScenarioArg,
    algorithm: Annotated[
        Optional[str],
        typer.Option(
            "--algorithm", "-a", help="Rule: ssgd, asgd, gsgd (hand groups), backup, kasync, ..."
        ),
    ] = None,
    time_scale: Annotated[
        float,
        typer.Option("--time-scale", "-S", help="Real seconds per scenario time unit."),
    ] = 0.05,
    set_: SetOpt = None,
    seed: SeedOpt = None,
    out: OutOpt = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    port: Annotated[
        Optional[int], typer.Option(help="Rendezvous TCP port (default: a free one).")
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
    report_status(result.summary, out)
    if json_:
        emit_json({**result.summary, "folder": str(out)})
    else:
        print_table(
            render.compare_table(
                [result.summary],
                title=f"{sc.name} for real, {time_scale:g} s per unit (seed {sc.run.seed})",
                width=table_width(wide),
            ),
            wide,
        )
    note(f"wrote {out}; netsim predict {out} holds netsim's prediction against it")
    raise typer.Exit(api.exit_status([result.status]))


@app.command()
def predict(
    folder: Annotated[Path, typer.Argument(help="A real run's folder (netsim real's).")],
    out: OutOpt = None,
    variants: Annotated[
        Optional[str],
        typer.Option(help="Emulations to make: scenario, calibrated, replayed (comma-separated)."),
    ] = None,
    target: Annotated[
        Optional[float],
        typer.Option(
            help="Loss of the time-to-target row (default: half way from the real run's "
            "initial to its final loss)."
        ),
    ] = None,
    seeds: Annotated[
        int, typer.Option(help="Emulations of each variant (seeds: the run's, then the next).")
    ] = 3,
    calibrate_from: Annotated[
        Optional[str],
        typer.Option(
            help="Real runs' folders the calibrated variant is fitted to, comma-separated "
            "(default: FOLDER itself; others: held out)."
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
    from .results.runfolder import FolderError
    from .testbed.predict import VARIANTS

    names = split_given(variants, "--variants")
    sources = split_given(calibrate_from, "--calibrate-from")
    _SAID["out"] = out
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


@app.command()
def calibrate(
    folders: Annotated[
        list[Path],
        typer.Argument(
            help="Real runs' folders (netsim real's); several sizes fit per-parameter parts."
        ),
    ],
    time_scale: Annotated[
        Optional[float],
        typer.Option(
            "--time-scale",
            "-S",
            help="Give the keys in units of this scale (default: the first run's).",
        ),
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Fit the [server] keys and per-class latencies to real runs; print them to paste into a scenario."""
    try:
        fit = api.calibrate(folders, time_scale=time_scale)
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


def show_prediction(pred, seeds: int, json_: bool, wide: bool) -> None:
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
    if pred.skipped:
        note(pred.skipped)


@app.command()
def rerun(
    folder: Annotated[Path, typer.Argument(help="A run folder (holding scenario.toml).")],
    out: Annotated[
        Optional[Path], _out_option("Folder of the new run (default: FOLDER-rerun, numbered).")
    ] = None,
    live: LiveOpt = True,
    data_dir: DataOpt = None,
    json_: JsonOpt = False,
    plots: PlotsOpt = False,
) -> None:
    """Run a run folder's recorded scenario again and check the results are byte-identical (wall times aside)."""
    from .results.runfolder import FolderError

    _SAID["out"] = out
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


def split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def split_given(text: str | None, flag: str) -> list[str] | None:
    """The names of a comma-separated *flag* the user gave, None when not given; a flag given
    with no name in it (``--algorithms ""``) is refused with exit status 2."""
    if text is None:
        return None
    names = split(text)
    if not names:
        fail(f"{flag}: {text!r} names nothing (leave the flag out for the default)")
    return names


@app.command()
def compare(
    scenario: ScenarioArg,
    algorithms: Annotated[
        Optional[str],
        typer.Option(
            "--algorithms",
            "-a",
            help="Comma-separated rules, e.g. ssgd,asgd,gsgd (default: every configured rule).",
        ),
    ] = None,
    groupings: Annotated[
        str,
        typer.Option(
            "--groupings", help="GSGD with each grouping, e.g. auto,hand,equal:4,kmeans:2."
        ),
    ] = "",
    weightings: Annotated[
        str,
        typer.Option(
            "--weightings", help="GSGD with each group weighting, e.g. none,inverse_rate,fedat."
        ),
    ] = "",
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
    cmp = guarded(
        out,
        lambda: with_progress(
            live,
            lambda progress: api.compare(
                sc,
                names,
                groupings=split(groupings),
                weightings=split(weightings),
                out=out,
                progress=progress,
                overwrite=overwrite,
                on_run=lambda label, r: report_status(r.summary, r.path),
            ),
            total=len(plan),
        ),
    )
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
        _print_verdict(cmp, target)
    note(f"wrote {out}/compare.json and one folder per run")
    if plots:
        draw([out], None, window_range, target=target)
    raise typer.Exit(api.exit_status([r.status for r in cmp.values()]))


def parse_window_opt(text: str | None):
    """``--window START,END`` → (start, end) s, or None; one-line error, exit 2."""
    if text is None:
        return None
    from .results.timeline import parse_window

    try:
        return parse_window(text)
    except ValueError as exc:
        fail(str(exc))


def draw(
    folders: list[Path],
    out: Path | None,
    window,
    formats: str = "png",
    dpi: int | None = None,
    xscale: str = "log",
    target: float | None = None,
    only: tuple[str, ...] | None = None,
) -> list[Path]:
    """Draw every figure of *folders* (*only*: just these); say where they went and which
    were skipped, and why (stderr)."""
    from .results.runfolder import FolderError

    try:
        paths = api.plot(
            *folders,
            out=out,
            window=window,
            format=split(formats),
            dpi=dpi,
            xscale=xscale,
            target=target,
            only=only,
        )
    except (FolderError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        from .results.atomic import disk_status

        fail(
            f"{', '.join(map(str, folders))}: cannot plot ({exc.strerror or exc})", disk_status(exc)
        )
    except (
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        ValueError,
    ) as exc:  # a malformed folder
        fail(f"{', '.join(map(str, folders))}: cannot plot ({type(exc).__name__}: {exc})")
    folder = paths[0].parent if paths else out
    many = "figure" if len(paths) == 1 else "figures"
    note(f"wrote {len(paths)} {many} to {folder}: {', '.join(p.name for p in paths)}")
    from .results.figset import skipped_text

    for line in skipped_text(getattr(paths, "skipped", {}), only):
        note(line)
    return paths


FoldersArg = Annotated[list[Path], typer.Argument(help="Run, compare or sweep folders.")]


@app.command()
def plot(
    folders: FoldersArg,
    out: Annotated[
        Optional[Path], _out_option("Folder for the figures (default: FOLDER/plots).")
    ] = None,
    window: WindowOpt = None,
    format_: FigFormatOpt = "png",
    dpi: DpiOpt = None,
    xscale: XScaleOpt = "log",
    target: Annotated[
        Optional[float],
        typer.Option(
            "--target", help="Target loss drawn on the loss curves (default: run.target_loss)."
        ),
    ] = None,
) -> None:
    """Draw loss/accuracy curves (mean and 95 % CI band over seeds), worker timeline, staleness and update rates.

    With --window, only the timeline is redrawn (over that window)."""
    span = parse_window_opt(window)
    from .results.figset import WINDOW_ONLY

    draw(folders, out, span, format_, dpi, xscale, target, WINDOW_ONLY if span else None)


@app.command()
def report(
    folder: Annotated[Path, typer.Argument(help="Run, compare or sweep folder.")],
    format_: Annotated[
        str,
        typer.Option(
            "--format", "-f", help="md (PNG files beside it) or html (one self-contained file)."
        ),
    ] = "md",
    out: Annotated[
        Optional[Path], _out_option("Report file (default: FOLDER/report.md|html).")
    ] = None,
    window: WindowOpt = None,
    target: VerdictTargetOpt = None,
) -> None:
    """Write a readable-on-its-own report: parameters, tables and figures of a run, compare or sweep folder."""
    from .results.runfolder import FolderError

    window_range = parse_window_opt(window)
    try:
        path = api.write_report(folder, format=format_, out=out, window=window_range, target=target)
    except (FolderError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        from .results.atomic import disk_status

        fail(f"{folder}: cannot write the report ({exc.strerror or exc})", disk_status(exc))
    except (KeyError, TypeError, IndexError, AttributeError) as exc:  # a malformed folder
        fail(f"{folder}: cannot write the report ({type(exc).__name__}: {exc})")
    note(f"wrote {path} (figures in {path.parent / (path.stem + '_figures')})")
    _print_verdict(folder, target)


@app.command("export")
def export(
    folder: Annotated[Path, typer.Argument(help="Run, compare or sweep folder.")],
    what: Annotated[
        str,
        typer.Option(
            "--to",
            "-t",
            help="trace (Chrome/Perfetto JSON of the worker timelines) "
            "or tensorboard (event files of the curves; needs tensorboardX).",
        ),
    ] = "trace",
    out: Annotated[
        Optional[Path],
        _out_option(
            "File (trace; default FOLDER/trace.json) or folder (tensorboard; default FOLDER/tensorboard)."
        ),
    ] = None,
) -> None:
    """Export timelines as a trace for ui.perfetto.dev / chrome://tracing, or curves for TensorBoard."""
    from .results.runfolder import FolderError

    if what not in ("trace", "tensorboard"):
        fail(f"--to: {what!r} is not allowed (allowed: trace, tensorboard)")
    try:
        if what == "trace":
            path = api.export_trace(folder, out)
            note(f"wrote {path} (open it at https://ui.perfetto.dev or chrome://tracing)")
        else:
            paths = api.export_tensorboard(folder, out)
            note(
                f"wrote {len(paths)} run(s) under {paths[0].parent if paths else out} (tensorboard --logdir ...)"
            )
    except FolderError as exc:
        fail(str(exc))
    except ImportError as exc:
        fail(str(exc))


class SweepProgress:
    """``on_done`` callback of a sweep: a rich progress bar (runs done / total, elapsed,
    ETA) on stderr when it is a terminal, else one plain stderr line per finished run.

    The clock starts when the plan is made and is never reset; the ETA counts only
    the runs executed now (not those skipped by ``--resume``). ``warned`` collects the
    (folder, warning) of the runs whose loss ended above its start.
    """

    def __init__(self, progress, total: int):
        self.progress = progress
        self.total = total
        self.warned: list[tuple[str, str]] = []
        self.start = time.perf_counter()
        self.first = None
        self.task = (
            progress.add_task("sweep", total=total, eta="-") if progress is not None else None
        )

    def __call__(self, done: int, total: int, folder: str, summary, error) -> None:
        self.done = done
        if self.first is None:
            self.first = done - 1  # runs already finished (resume): not counted in the ETA
        status = f"{type(error).__name__}" if error is not None else summary["status"]
        if error is None and summary.get("warning"):
            self.warned.append((folder, summary["warning"]))
        elapsed = time.perf_counter() - self.start
        eta = elapsed / (done - self.first) * (total - done)
        if self.progress is not None:
            self.progress.update(
                self.task,
                completed=done,
                description=f"sweep ({folder} {status})",
                eta=f"{eta:.0f} s",
            )
            return
        note(
            f"sweep: {done}/{total} runs done ({folder} {status}), elapsed {elapsed:.0f} s, eta {eta:.0f} s"
        )


def _sweep_interrupted(where, progress: SweepProgress | None) -> None:
    """The one line of a sweep ended by Ctrl-C or SIGTERM (what is in *where*); exit 130."""
    if progress is not None and getattr(progress, "done", 0) == progress.total:
        said_interrupted(
            f"interrupted after its {progress.total} runs ended: they are in {where}"
            + ("" if Path(where, "sweep.csv").is_file() else "; --resume writes sweep.csv")
        )
    said_interrupted(
        f"interrupted: finished runs are kept in {where}; run again with "
        "--resume to finish the rest"
    )


GridOpt = Annotated[
    Optional[list[str]],
    typer.Option("--grid", "-g", help="KEY=V1,V2,... (TOML values; see docs/CLI.md, Sweeps)."),
]
SeedsOpt = Annotated[
    int, typer.Option("--seeds", help="Seeds per point: run.seed, run.seed+1, ...")
]
SweepJobsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        help="Local processes running the sweep (default: the CPUs; 1: this process). Not \\[\\[workers]], the simulated workers.",
    ),
]
OldWorkersOpt = Annotated[
    Optional[int], typer.Option("--workers", hidden=True, help="Old name of --jobs.")
]
SchedulerOpt = Annotated[
    Optional[str], typer.Option("--scheduler", help="Dask scheduler address (tcp://host:8786).")
]
ResumeOpt = Annotated[
    bool,
    typer.Option("--resume", help="Skip points whose folder holds a summary.json.", metavar=""),
]
"""The options of ``netsim sweep``."""


@app.command()
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
    from .sweeps.executors import ExecutorError
    from .sweeps.runner import SweepError, SweepFailed

    window_range = parse_window_opt(window)
    flag = "--jobs" if jobs is not None else "--workers"  # name the option the user typed
    jobs = jobs if jobs is not None else workers_old
    if jobs is not None and jobs < 1:
        fail(f"{flag}: {jobs!r} is not allowed (must be >= 1)")
    bar = _sweep_bar() if live and err_console.is_terminal else None
    state = {}

    def on_plan(plan, where):
        check_out(Path(where))
        where_text = (
            f"Dask scheduler {scheduler}" if scheduler else f"{jobs or 'all'} local process(es)"
        )
        note(f"sweep {plan.name}: {len(plan.tasks)} run(s) into {where} on {where_text}")
        state["out"] = where
        state["progress"] = SweepProgress(bar, len(plan.tasks))

    sets = list(set_ or []) + ([f"run.seed={seed}"] if seed is not None else [])

    def go():
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
            on_done=lambda *args: state["progress"](*args),
            overwrite=overwrite,
        )

    try:
        if bar is not None:
            with bar:
                outcome = go()
        else:
            outcome = go()
    except KeyboardInterrupt:  # first: after an interrupt netsim.api may be half loaded
        _sweep_interrupted(state.get("out", out), state.get("progress"))
    except SweepFailed as exc:
        fail(str(exc), 1)
    except (ScenarioError, SweepError, ExecutorError) as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    warned = state["progress"].warned if "progress" in state else []
    _sweep_report(outcome, json_, wide, plots, window_range, warned, target)
    if not json_ and outcome.rows:
        _print_verdict(outcome.path, target)
    raise typer.Exit(
        max(1 if outcome.failures else 0, api.exit_status([row["status"] for row in outcome.rows]))
    )


def _print_verdict(folder, target: float | None) -> None:
    """The closing verdict of a compare or sweep folder (:func:`netsim.api.verdict`): one line
    in a pipe (scripts read it), wrapped at words in a terminal."""
    out_console.print(
        api.verdict(folder, target),
        highlight=False,
        soft_wrap=not out_console.is_terminal,
        markup=False,
    )


def _sweep_bar():
    """The live progress bar of a sweep (on stderr, gone when it ends)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    return Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta {task.fields[eta]}"),
        console=err_console,
        transient=True,
    )


def _sweep_report(
    outcome, json_: bool, wide: bool, plots: bool, window_range, warned, target=None
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


RoundsOpt = Annotated[
    Optional[int], typer.Option("--rounds", help="Probe rounds (default: probe_rounds).")
]
QuickOpt = Annotated[
    bool,
    typer.Option(
        "--quick",
        help="No pilot emulations: silhouette clustering and the "
        "advisor's closed-form ranking, each grouping at its own η (seconds, less reliable).",
        metavar="",
    ),
]
RaceOpt = Annotated[
    bool,
    typer.Option("--race", hidden=True, help="The default (kept for old scripts).", metavar=""),
]
LrsOpt = Annotated[
    str,
    typer.Option(
        "--lrs",
        help="η grid, comma-separated, kept to (default: 5 values ×3 apart around GSGD's η, widened where its edge is best).",
    ),
]
VerifyOpt = Annotated[
    int,
    typer.Option("--verify", help="Run the top N candidates in full; print predicted vs emulated."),
]
BudgetOpt = Annotated[
    Optional[float], typer.Option("--budget", help="Cap on the pilots' simulated seconds.")
]
TargetOpt = Annotated[
    Optional[float],
    typer.Option("--target", help="Target loss (default: run.target_loss, else from the pilots)."),
]
AlikeOpt = Annotated[
    float,
    typer.Option(
        "--alike",
        help="Skip groupings whose update rate, staleness and group size are within a factor e**ALIKE of an earlier candidate's (e.g. 0.2: ~30 % cheaper; default 0: race all).",
    ),
]
RaceJobsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        help="Processes the pilots (and the --verify runs) are spread over (default: the CPUs this process may use; 1: this process only). The result is the same for any value.",
    ),
]
MembersOpt = Annotated[
    bool,
    typer.Option(
        "--members",
        help="List every group's worker ids, and the measurement per worker (default: shapes such as 8 × 2 and one row per worker class).",
        metavar="",
    ),
]
GroupOutOpt = Annotated[
    Optional[Path],
    _out_option(
        "Also write the recommendation into this folder: recommendation.json (as --json), candidates.csv, predicted.png."
    ),
]
"""The options of ``netsim group``."""


@app.command()
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
    from .tuning.race import RecommendError

    sc = load(scenario, set_, seed, data_dir)
    if quick:
        if race or lrs or verify or alike or {budget, target, jobs, out, scheduler} != {None}:
            fail(
                "--quick takes none of --race, --lrs, --verify, --budget, --target, --alike, --jobs, --out and --scheduler"
            )
        _group_quick(sc, rounds, json_)
        return
    grid = _race_options(lrs, verify, alike, jobs)
    eta = _RaceEta()
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
        from .results.groupout import write_recommendation

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


class _RaceEta:
    """The race's time left, from the share of its planned work done (``on_progress``:
    :func:`netsim.tuning.halving.done_share`) and the wall time since its first rung began."""

    def __init__(self):
        self.start: float | None = None  # when the first rung began (data and probes before)
        self.share = 0.0

    def update(self, share: float) -> None:
        if self.start is None:
            self.start = time.monotonic()
        self.share = share

    def text(self) -> str:
        """``, about 3 min left`` (empty before anything was spent)."""
        if self.start is None or not self.share > 0:
            return ""
        left = (time.monotonic() - self.start) * (1 - self.share) / self.share
        return f", about {_duration(left)} left"


def _duration(seconds: float) -> str:
    """*seconds* rounded for a person: ``40 s``, ``3 min``, ``1.5 h``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _group_quick(sc, rounds: int | None, json_: bool) -> None:
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


topology_app = typer.Typer(no_args_is_help=True, help="Inspect network topologies.")
app.add_typer(topology_app, name="topology")


@topology_app.command("list")
def topology_list() -> None:
    """List the topology presets (./topologies and those shipped with netsim)."""
    out_console.print(render.topology_list_table(api.topologies()))


@topology_app.command("show")
def topology_show(
    name: Annotated[
        str,
        typer.Argument(
            help="Preset name, .toml/.graphml file, or topohub:KEY (e.g. topohub:topozoo/Abilene, topohub:sndlib/polska)."
        ),
    ],
) -> None:
    """Hosts, switches, links, diameter (hops and latency) and bisection bandwidth."""
    from .net.topology import TopologyError

    try:
        info = api.topology(name)
    except (TopologyError, FileNotFoundError) as exc:
        fail(f"{name}: {exc}")
    out_console.print(render.topology_table(name, info))


@app.command()
def validate(
    scenario: ScenarioArg, set_: SetOpt = None, seed: SeedOpt = None, data_dir: DataOpt = None
) -> None:
    """Check a scenario file without running it (MNIST/LIBSVM files are read and checked too)."""
    sc = load(scenario, set_, seed, data_dir)
    from .sim.engine import check_data

    try:
        check_data(sc)
    except ScenarioError as exc:
        fail(str(exc))
    out_console.print(
        f"{sc.path}: ok — {sc.n_workers} workers in {len(sc.workers)} classes, "
        f"data {sc.data.source}, model {sc.model.module or sc.model.name}"
        f"{BACKENDS[sc.model.backend].tag}, algorithms {', '.join(sc.rules)}",
        highlight=False,
        soft_wrap=True,  # one line whatever the path's length (scripts read it)
    )


@app.command()
def init(
    name: Annotated[
        str,
        typer.Argument(
            help="Scenario name (letters, digits, _ and -), after a folder to write it in "
            "(e.g. scenarios/mine)."
        ),
    ],
    out: Annotated[
        Optional[Path], _out_option("File or folder to write (default: NAME.toml).")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing file.", metavar="")
    ] = False,
) -> None:
    """Write a commented scenario to start from (runs as it is: netsim run NAME.toml)."""
    try:
        path = api.init(name, out=out, overwrite=overwrite)
    except (FileExistsError, ValueError) as exc:
        fail(str(exc))
    note(f"wrote {path}; try: netsim run {path} (netsim keys lists every key)")


@app.command()
def keys(
    json_: JsonOpt = False,
    schema: Annotated[
        Optional[Path],
        typer.Option(
            "--schema",
            help="Write a JSON Schema of scenario files to this file ('-': stdout), for editors.",
        ),
    ] = None,
    match: Annotated[
        Optional[str],
        typer.Argument(help="Show only keys containing this text, e.g. run. or gsgd."),
    ] = None,
) -> None:
    """List every scenario key with its type, default, allowed values and unit."""
    if schema is not None:
        text = json.dumps(api.json_schema(), indent=2) + "\n"
        if str(schema) == "-":
            sys.stdout.write(text)
        else:
            from .results.atomic import written

            written(schema, lambda tmp: tmp.write_text(text))
            note(f"wrote {schema} (point your editor's TOML schema setting at it)")
        return
    specs = [k for k in api.keys() if match is None or match in k.key]
    if match is not None and not specs:
        from .config.schema import no_match_text

        fail(no_match_text(match, [k.key for k in api.keys()]))
    if json_:
        emit_json(
            [
                {
                    "key": k.key,
                    "type": k.type,
                    "default": k.default,
                    "required": k.required,
                    "allowed": k.allowed,
                    "unit": k.unit,
                }
                for k in specs
            ]
        )
    else:
        out_console.print(render.keys_table(specs))


@app.command()
def scenarios() -> None:
    """List the scenario presets (./scenarios and those shipped with netsim), runnable by name."""
    presets = api.scenarios()
    described = {name: api.scenario_description(path) for name, path in presets.items()}
    out_console.print(render.scenario_list_table(presets, described))


if __name__ == "__main__":
    from .signals import install

    install()
    app(prog_name="netsim")
