"""``netsim plot``, ``report`` and ``export``: what a run folder holds, drawn or exported."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import (
    api,
    draw,
    fail,
    note,
    parse_window_opt,
    print_verdict,
)
from .options import (
    DpiOpt,
    FigFormatOpt,
    FoldersArg,
    VerdictTargetOpt,
    WindowOpt,
    XScaleOpt,
    folder_argument,
    out_option,
)

__all__ = ["plot", "report", "export"]


def plot(
    folders: FoldersArg,
    out: Annotated[
        Optional[Path], out_option("Folder for the figures (default: FOLDER/plots).")
    ] = None,
    window: WindowOpt = None,
    format_: FigFormatOpt = "png",
    dpi: DpiOpt = None,
    xscale: XScaleOpt = "log",
    target: Annotated[
        Optional[float],
        typer.Option(
            "--target",
            metavar="LOSS",
            help="Target loss drawn on the loss curves (default: run.target_loss).",
        ),
    ] = None,
) -> None:
    """Draw loss/accuracy curves (mean and 95 % CI band over seeds), worker timeline, staleness and update rates.

    With --window, only the timeline is redrawn (over that window)."""
    span = parse_window_opt(window)
    from ..results.figset import WINDOW_ONLY

    draw(folders, out, span, format_, dpi, xscale, target, WINDOW_ONLY if span else None)


def report(
    folder: Annotated[Path, folder_argument("Run, compare or sweep folder.")],
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="md (PNG files beside it) or html (one self-contained file).",
        ),
    ] = "md",
    out: Annotated[
        Optional[Path], out_option("Report file (default: FOLDER/report.md|html).", "FILE")
    ] = None,
    window: WindowOpt = None,
    target: VerdictTargetOpt = None,
) -> None:
    """Write a readable-on-its-own report: parameters, tables and figures of a run, compare or sweep folder."""
    from ..results.runfolder import FolderError

    window_range = parse_window_opt(window)
    try:
        path = api.write_report(folder, format=format_, out=out, window=window_range, target=target)
    except (FolderError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        from ..results.atomic import disk_status

        fail(f"{folder}: cannot write the report ({exc.strerror or exc})", disk_status(exc))
    except (KeyError, TypeError, IndexError, AttributeError) as exc:  # a malformed folder
        fail(f"{folder}: cannot write the report ({type(exc).__name__}: {exc})")
    note(f"wrote {path} (figures in {path.parent / (path.stem + '_figures')})")
    print_verdict(folder, target)


def export(
    folder: Annotated[Path, folder_argument("Run, compare or sweep folder.")],
    what: Annotated[
        str,
        typer.Option(
            "--to",
            "-t",
            metavar="KIND",
            help="trace (Chrome/Perfetto JSON of the worker timelines) "
            "or tensorboard (event files of the curves; needs tensorboardX).",
        ),
    ] = "trace",
    out: Annotated[
        Optional[Path],
        out_option(
            "File (trace; default FOLDER/trace.json) or folder (tensorboard; default FOLDER/tensorboard).",
            "PATH",
        ),
    ] = None,
) -> None:
    """Export timelines as a trace for ui.perfetto.dev / chrome://tracing, or curves for TensorBoard."""
    from ..results.runfolder import FolderError

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
