"""The options and arguments the commands share, each defined once (typer ``Annotated`` types)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

__all__ = [
    "ScenarioArg",
    "SetOpt",
    "SeedOpt",
    "out_option",
    "OutOpt",
    "LiveOpt",
    "DataOpt",
    "PlotsOpt",
    "WindowOpt",
    "OverwriteOpt",
    "VerdictTargetOpt",
    "JsonOpt",
    "FigFormatOpt",
    "DpiOpt",
    "XScaleOpt",
    "WideOpt",
    "FoldersArg",
    "GridOpt",
    "SeedsOpt",
    "SweepJobsOpt",
    "OldWorkersOpt",
    "SchedulerOpt",
    "ResumeOpt",
    "RoundsOpt",
    "QuickOpt",
    "RaceOpt",
    "LrsOpt",
    "VerifyOpt",
    "BudgetOpt",
    "TargetOpt",
    "AlikeOpt",
    "RaceJobsOpt",
    "MembersOpt",
    "GroupOutOpt",
]


ScenarioArg = Annotated[
    str,
    typer.Argument(
        metavar="SCENARIO",
        help="Scenario file, or a preset name (netsim scenarios).",
        show_default=False,
    ),
]


SetOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set",
        "-s",
        metavar="KEY=VALUE",
        help="Override a scenario key: KEY=VALUE (dotted path; netsim keys lists them).",
    ),
]


SeedOpt = Annotated[
    Optional[int], typer.Option("--seed", metavar="SEED", help="Override run.seed.")
]


def _path(value: str) -> Path:
    """A path option's value; an empty one (an unset shell variable) is refused, not taken as '.'."""
    if not value:
        raise typer.BadParameter(
            "an empty path is not allowed (leave the option out for its default)"
        )
    return Path(value)


def algorithm_option(help: str) -> Any:
    """The ``--algorithm``/``-a`` option: one rule, described by *help*."""
    return typer.Option("--algorithm", "-a", metavar="RULE", help=help)


def folder_argument(help: str) -> Any:
    """A command's FOLDER argument (a run, compare or sweep folder), described by *help*."""
    return typer.Argument(metavar="FOLDER", help=help)


def time_scale_option(help: str) -> Any:
    """The ``--time-scale``/``-S`` option: real seconds per scenario time unit."""
    return typer.Option("--time-scale", "-S", metavar="SECONDS", help=help)


def out_option(help: str, metavar: str = "DIR") -> Any:
    """The ``--out``/``-o`` option: a path (an empty one refused) shown as *metavar*,
    described by *help*."""
    return typer.Option("--out", "-o", parser=_path, metavar=metavar, help=help)


OutOpt = Annotated[
    Optional[Path],
    out_option("Output folder (default: runs/<scenario>-<kind>, numbered -2, -3, ... when taken)."),
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
        metavar="DIR",
        help="Data directory (else data.dir, else $NETSIM_DATA_DIR).",
    ),
]


PlotsOpt = Annotated[
    bool, typer.Option("--plots", help="Also draw the figures into OUT/plots.", metavar="")
]


WindowOpt = Annotated[
    Optional[str],
    typer.Option(
        "--window", metavar="START,END", help="Timeline window START,END in simulated time."
    ),
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
        metavar="LOSS",
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
    str,
    typer.Option(
        "--format", "-f", metavar="FORMATS", help="Figure formats, comma-separated: png, pdf, svg."
    ),
]


DpiOpt = Annotated[
    Optional[int],
    typer.Option(
        "--dpi", metavar="DPI", help="Resolution of PNG figures, dots per inch (default 150)."
    ),
]


XScaleOpt = Annotated[
    str,
    typer.Option(
        "--xscale",
        metavar="SCALE",
        help="Axis of the loss/accuracy-vs-updates figures: linear or log.",
    ),
]


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="Show every column of the results table, in lines as long as they need "
        "(default on a terminal: the columns that fit).",
        metavar="",
    ),
]


FoldersArg = Annotated[
    list[Path], typer.Argument(metavar="FOLDER...", help="Run, compare or sweep folders.")
]


AlgorithmsOpt = Annotated[
    Optional[str],
    typer.Option(
        "--algorithms",
        "-a",
        metavar="RULES",
        help="Comma-separated rules, e.g. ssgd,asgd,gsgd (default: every configured rule).",
    ),
]

GroupingsOpt = Annotated[
    str,
    typer.Option(
        "--groupings",
        metavar="GROUPINGS",
        help="GSGD with each grouping, e.g. auto,hand,equal:4,kmeans:2.",
    ),
]

WeightingsOpt = Annotated[
    str,
    typer.Option(
        "--weightings",
        metavar="WEIGHTINGS",
        help="GSGD with each group weighting, e.g. none,inverse_rate,fedat.",
    ),
]
"""The variants of ``netsim compare``."""

GridOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--grid",
        "-g",
        metavar="KEY=V1,V2,...",
        help="KEY=V1,V2,... (TOML values; see docs/CLI.md, Sweeps).",
    ),
]


SeedsOpt = Annotated[
    int, typer.Option("--seeds", metavar="N", help="Seeds per point: run.seed, run.seed+1, ...")
]


SweepJobsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
        help="Local processes running the sweep (default: the CPUs; 1: this process). Not \\[\\[workers]], the simulated workers.",
    ),
]


OldWorkersOpt = Annotated[
    Optional[int], typer.Option("--workers", metavar="N", hidden=True, help="Old name of --jobs.")
]


SchedulerOpt = Annotated[
    Optional[str],
    typer.Option(
        "--scheduler", metavar="ADDRESS", help="Dask scheduler address (tcp://host:8786)."
    ),
]


ResumeOpt = Annotated[
    bool,
    typer.Option("--resume", help="Skip points whose folder holds a summary.json.", metavar=""),
]
"""The options of ``netsim sweep``."""


RoundsOpt = Annotated[
    Optional[int],
    typer.Option("--rounds", metavar="N", help="Probe rounds (default: probe_rounds)."),
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
        metavar="ETAS",
        help="η grid, comma-separated, kept to (default: 5 values ×3 apart around GSGD's η, widened where its edge is best).",
    ),
]


VerifyOpt = Annotated[
    int,
    typer.Option(
        "--verify",
        metavar="N",
        help="Run the top N candidates in full; print predicted vs emulated.",
    ),
]


BudgetOpt = Annotated[
    Optional[float],
    typer.Option("--budget", metavar="SECONDS", help="Cap on the pilots' simulated seconds."),
]


TargetOpt = Annotated[
    Optional[float],
    typer.Option(
        "--target",
        metavar="LOSS",
        help="Target loss (default: run.target_loss, else from the pilots).",
    ),
]


AlikeOpt = Annotated[
    float,
    typer.Option(
        "--alike",
        metavar="ALIKE",
        help="Skip groupings whose update rate, staleness and group size are within a factor e**ALIKE of an earlier candidate's (e.g. 0.2: ~30 % cheaper; default 0: race all).",
    ),
]


RaceJobsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
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
    out_option(
        "Also write the recommendation into this folder: recommendation.json (as --json), candidates.csv, predicted.png."
    ),
]
"""The options of ``netsim group``."""
