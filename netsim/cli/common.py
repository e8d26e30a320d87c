"""What every command shares: the app, the consoles, one-line errors and exit statuses,
the tables and figures printed."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    NoReturn,
    Optional,
    Protocol,
    TypedDict,
    TypeVar,
    cast,
)

import typer
import typer.core
from rich.console import Console, RenderableType
from rich.markup import escape

from ..errors import RealRunFailed, ScenarioError, one_line
from ..results import render
from ..results.left import interrupt_line
from ..signals import quiet, signalled

__all__ = [
    "SAID",
    "app",
    "out_console",
    "err_console",
    "version_callback",
    "main",
    "emit_json",
    "print_table",
    "WHOLE_TABLE",
    "table_width",
    "note",
    "error_line",
    "fail",
    "load",
    "check_out",
    "interrupted",
    "stopped",
    "said_interrupted",
    "report_status",
    "guarded",
    "split",
    "split_given",
    "parse_window_opt",
    "draw",
    "print_verdict",
    "api",
]

T = TypeVar("T")


def _lazy(name: str) -> ModuleType:
    """Module *name*, executed on its first attribute access (the standard library's
    LazyLoader): ``--version``, ``--help`` and bad options answer without importing the
    emulator."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from .. import api
    from ..config.scenario import Scenario
    from ..sim.records import Result
    from ..sim.summary import Summary
    from ..workflows.compare import Comparison
else:
    api = _lazy("netsim.api")


def _exception_types(*names: str) -> tuple[type[BaseException], ...]:
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


class _UsageError(Protocol):
    """What the usage errors of :data:`_USAGE_ERRORS` have (click's ``ClickException`` or
    typer's vendored copy of it, a class of a private module that cannot be named)."""

    exit_code: int

    def format_message(self) -> str: ...


_USAGE_ERRORS = _exception_types(
    "typer.exceptions:TyperException", "click.exceptions:ClickException"
)


_ABORTS = _exception_types("typer.exceptions:Abort", "click.exceptions:Abort")


class _Said(TypedDict):
    interrupted: bool
    out: Path | None


SAID: _Said = {"interrupted": False, "out": None}
"""Whether the command has said it was interrupted (typer turns a Ctrl-C it meets into
exit status 130 without a word: :class:`_App` then says it), and the folder the command
writes into (what an interrupt names)."""


class _App(typer.Typer):
    """The typer app; run as the ``netsim`` script, a usage error (an unknown option, a value
    of the wrong type) and an error of the file system (a path too long, a folder where a
    file is expected, no permission, a missing directory) or memory that no command turned
    into a message print one line instead of a box or a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        kwargs.setdefault(
            "standalone_mode", False
        )  # usage errors come back here instead of being drawn
        SAID["interrupted"] = False
        SAID["out"] = None
        try:
            status = super().__call__(*args, **kwargs)
        except _USAGE_ERRORS as caught:
            exc = cast(_UsageError, caught)
            if (
                type(exc).__name__ == "NoArgsIsHelpError"
            ):  # a group called alone: its help, as typer shows it
                from typer import rich_utils

                # typed with typer's vendored ClickException, which this check cannot name
                rich_utils.rich_format_error(caught)  # type: ignore[arg-type]
                sys.exit(exc.exit_code)
            ctx = getattr(exc, "ctx", None)
            hint = f" (try '{ctx.command_path} -h')" if ctx is not None else ""
            error_line(exc.format_message() + hint)
            sys.exit(getattr(exc, "exit_code", 2))
        except _ABORTS:
            err_console.print("aborted", highlight=False)
            sys.exit(1)
        except KeyboardInterrupt:  # Ctrl-C before a command's own handling (typer's setup)
            _quit(130, interrupt_line(SAID["out"]))
        except OSError as exc:  # 1: the disk cannot take it (full, read-only); 2: the path is wrong
            from ..results.atomic import disk_status

            where = f": {exc.filename}" if exc.filename else ""
            _quit(disk_status(exc), f"{exc.strerror or exc}{where}")
        except MemoryError as exc:
            error_line(f"out of memory {exc}")
            sys.exit(1)
        except ImportError:  # an interrupt inside a C extension's import comes out as this
            if not signalled():
                raise
            _quit(130, interrupt_line(SAID["out"]))
        status = status if isinstance(status, int) else 0
        _quit(
            status,
            interrupt_line(SAID["out"]) if status == 130 and not SAID["interrupted"] else None,
        )


def _quit(status: int, line: str | None) -> NoReturn:
    """Say *line* (an error), then exit with *status*; a signal from here on is too late to
    change anything: it only makes the status 130 (:func:`netsim.signals.quiet`)."""
    if line is not None:
        error_line(line)
    quiet(status == 130)
    sys.exit(status)


def _readable(params: list) -> list:
    """*params* as help shows them: a flag (``--json``, ``--help``) with no value after it,
    an argument under its name (``SCENARIO``) without a ``<str>`` type beside it."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif isinstance(param, typer.core.TyperArgument) and param.metavar:
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]
    return params


class Command(typer.core.TyperCommand):
    """A command whose help reads well (:func:`_readable`)."""

    def get_params(self, ctx: Any) -> list:
        return _readable(super().get_params(ctx))


class Group(typer.core.TyperGroup):
    """A group of commands whose help reads well (:func:`_readable`)."""

    def get_params(self, ctx: Any) -> list:
        return _readable(super().get_params(ctx))


app = _App(
    cls=Group,
    add_completion=True,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Emulate parameter-server SGD (SSGD, ASGD, Group SGD, ...) in heterogeneous clusters. "
    "Results go to stdout, progress and messages to stderr.",
)


def _asked_columns() -> int | None:
    """The width the environment asks for (``COLUMNS``, a positive integer), else None."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return columns if columns > 0 else None


ASKED_COLUMNS = _asked_columns()
"""``COLUMNS`` when set: a pipe or file then gets tables that fit it, as a terminal does."""


def _fits_width() -> bool:
    """Whether stdout's output is fitted to a width: a terminal's, or ``COLUMNS`` when set."""
    return out_console.is_terminal or ASKED_COLUMNS is not None


out_console = Console(
    width=None if sys.stdout.isatty() else ASKED_COLUMNS or 160, emoji=False
)  # user text printed as written


err_console = Console(stderr=True, emoji=False)


def version_callback(value: bool) -> None:
    if value:
        from ..results.provenance import netsim_version  # not the API: answer at once

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


def emit_json(data: object) -> None:
    """Machine-readable results on stdout (no rich formatting)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_table(table: RenderableType, wide: bool) -> None:
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
    """Columns the results table may take: the terminal's width (or ``COLUMNS`` when set), or
    None (every column) with --wide or when stdout is a pipe or file and ``COLUMNS`` is not
    set (it gets the whole table)."""
    return out_console.width if _fits_width() and not wide else None


def note(text: str) -> None:
    """A message for the user (stderr), kept apart from the results on stdout."""
    err_console.print(text, highlight=False, soft_wrap=True, markup=False)


def error_line(message: str) -> None:
    """``error: MESSAGE`` as one line on stderr."""
    err_console.print(
        f"[bold red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True
    )


def fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr, then exit with *code*."""
    error_line(message)
    SAID["interrupted"] = code == 130
    raise typer.Exit(code)


def load(
    path: str | Path,
    sets: list[str] | None,
    seed: int | None,
    data_dir: Path | None,
    algorithm: str | None = None,
) -> Scenario:
    """The scenario at *path* with the ``--set`` overrides *sets*, ``--seed``, ``--data-dir``
    and ``--algorithm``; a bad one: one line, exit status 2."""
    try:
        return api.load(path, sets or [], seed=seed, algorithm=algorithm, data_dir=data_dir)
    except ScenarioError as exc:
        fail(str(exc))


def check_out(out: Path) -> None:
    """Fail (exit 2) before simulating when *out* cannot hold the run's files."""
    from ..results.runfolder import FolderError, check_writable

    try:
        check_writable(out)
    except FolderError as exc:
        fail(f"--out: {exc}")


def interrupted(result: Result, out: Path | None) -> NoReturn:
    """One line for a run ended by Ctrl-C or SIGTERM (*result*: what it recorded), then exit
    status 130."""
    said_interrupted(
        f"{result.label}: {result.message}; what it recorded is in {out} (status interrupted)"
    )


def stopped(exc: KeyboardInterrupt) -> NoReturn:
    """One line for a command of several steps (predict, rerun) ended by Ctrl-C or SIGTERM:
    what its folder (``exc.folder`` when the API named it) holds; exit status 130."""
    out = getattr(exc, "folder", None) or SAID["out"]
    said_interrupted(interrupt_line(out))


def said_interrupted(message: str) -> NoReturn:
    """*message* (what an interrupt left) on stderr, then exit status 130."""
    note(message)
    SAID["interrupted"] = True
    raise typer.Exit(130)


def report_status(summary: Summary, out: Path | None) -> None:
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
            SAID["interrupted"] = True
        where = f"; files so far kept in {out}" if out is not None else ""
        err_console.print(
            f"[bold red]{escape(summary['label'])}:[/] {escape(summary['message'])}{escape(where)}",
            highlight=False,
        )


def show_run(summary: Summary, out: Path, title: str, json_: bool, wide: bool) -> None:
    """One finished run: its status line, then its summary as JSON or as a one-row table."""
    report_status(summary, out)
    if json_:
        emit_json({**summary, "folder": str(out)})
    else:
        print_table(render.compare_table([summary], title=title, width=table_width(wide)), wide)


def guarded(out: Path | None, call: Callable[[], T]) -> T:
    """``call()``, with the API's errors turned into one line and the documented exit
    status: 2 bad input, the writer's code for output errors, 130 interrupted."""
    SAID["out"] = out
    try:
        return call()
    except KeyboardInterrupt as stop:  # first: after an interrupt netsim.api may be half loaded
        result = getattr(stop, "result", None)
        if result is not None:  # RunInterrupted: the run's own line
            interrupted(result, out)
        said_interrupted(interrupt_line(out))
    except ScenarioError as exc:
        fail(str(exc))
    except api.OutputError as exc:
        fail(str(exc), exc.code)
    except RealRunFailed as exc:
        fail(str(exc), 1)


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


def parse_window_opt(text: str | None) -> tuple[float, float] | None:
    """``--window START,END`` → (start, end) s, or None; one-line error, exit 2."""
    if text is None:
        return None
    from ..results.timeline import parse_window

    try:
        return parse_window(text)
    except ValueError as exc:
        fail(str(exc))


def draw(
    folders: list[Path],
    out: Path | None,
    window: tuple[float, float] | None,
    formats: str = "png",
    dpi: int | None = None,
    xscale: str = "log",
    target: float | None = None,
    only: tuple[str, ...] | None = None,
) -> list[Path]:
    """Draw every figure of *folders* (*only*: just these); say where they went and which
    were skipped, and why (stderr)."""
    from ..results.runfolder import FolderError

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
        from ..results.atomic import disk_status

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
    from ..results.figset import skipped_text

    skipped = getattr(paths, "skipped", {})
    if only and not paths:  # the one figure asked for cannot be drawn: bad input
        why = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or "no data for it"
        fail(f"{', '.join(map(str, folders))}: nothing to draw ({why})")
    if paths:
        many = "figure" if len(paths) == 1 else "figures"
        note(f"wrote {len(paths)} {many} to {paths[0].parent}: {', '.join(p.name for p in paths)}")
    for line in skipped_text(skipped, only):
        note(line)
    if not paths:
        note("no figure written")
    return paths


def print_verdict(folder: Path | Comparison, target: float | None) -> None:
    """The closing verdict of a compare or sweep folder (:func:`netsim.api.verdict`): one line
    in a pipe (scripts read it), wrapped at words in a terminal or at ``COLUMNS`` when set."""
    out_console.print(
        api.verdict(folder, target),
        highlight=False,
        soft_wrap=not _fits_width(),
        markup=False,
    )
