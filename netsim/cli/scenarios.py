"""``netsim validate``, ``init``, ``keys``, ``scenarios`` and ``topology``: scenario files
and topologies, before any run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ScenarioError
from ..results import render
from .common import (
    Command,
    Group,
    api,
    emit_json,
    fail,
    load,
    note,
    out_console,
)
from .options import (
    DataOpt,
    JsonOpt,
    ScenarioArg,
    SeedOpt,
    SetOpt,
    out_option,
)

__all__ = [
    "topology_app",
    "topology_list",
    "topology_show",
    "validate",
    "init",
    "keys",
    "scenarios",
]


topology_app = typer.Typer(cls=Group, no_args_is_help=True, help="Inspect network topologies.")


@topology_app.command("list", cls=Command)
def topology_list() -> None:
    """List the topology presets (./topologies and those shipped with netsim)."""
    out_console.print(render.topology_list_table(api.topologies()))


@topology_app.command("show", cls=Command)
def topology_show(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Preset name, .toml/.graphml file, or topohub:KEY (e.g. topohub:topozoo/Abilene, topohub:sndlib/polska).",
        ),
    ],
) -> None:
    """Hosts, switches, links, diameter (hops and latency) and bisection bandwidth."""
    from ..net.topology import TopologyError

    try:
        info = api.topology(name)
    except (TopologyError, FileNotFoundError) as exc:
        fail(f"{name}: {exc}")
    out_console.print(render.topology_table(name, info))


def validate(
    scenario: ScenarioArg, set_: SetOpt = None, seed: SeedOpt = None, data_dir: DataOpt = None
) -> None:
    """Check a scenario file without running it (MNIST/LIBSVM files are read and checked too)."""
    sc = load(scenario, set_, seed, data_dir)
    from ..sim.engine import check_data

    try:
        check_data(sc)
    except ScenarioError as exc:
        fail(str(exc))
    out_console.print(
        f"{sc.path}: ok — {sc.n_workers} workers in {len(sc.workers)} classes, "
        f"data {sc.data.source}, model {sc.model.module or sc.model.name}"
        f"{' (torch)' if sc.model.backend == 'torch' else ''}, algorithms {', '.join(sc.rules)}",
        highlight=False,
        soft_wrap=True,  # one line whatever the path's length (scripts read it)
    )


def init(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Scenario name (letters, digits, _ and -), after a folder to write it in "
            "(e.g. scenarios/mine).",
        ),
    ],
    out: Annotated[
        Optional[Path], out_option("File or folder to write (default: NAME.toml).", "PATH")
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


def keys(
    json_: JsonOpt = False,
    schema: Annotated[
        Optional[Path],
        typer.Option(
            "--schema",
            metavar="FILE",
            help="Write a JSON Schema of scenario files to this file ('-': stdout), for editors.",
        ),
    ] = None,
    match: Annotated[
        Optional[str],
        typer.Argument(
            metavar="TEXT", help="Show only keys containing this text, e.g. run. or gsgd."
        ),
    ] = None,
) -> None:
    """List every scenario key with its type, default, allowed values and unit."""
    if schema is not None:
        text = json.dumps(api.json_schema(), indent=2) + "\n"
        if str(schema) == "-":
            sys.stdout.write(text)
        else:
            from ..results.atomic import written

            written(schema, lambda tmp: tmp.write_text(text))
            note(f"wrote {schema} (point your editor's TOML schema setting at it)")
        return
    specs = [k for k in api.keys() if match is None or match in k.key]
    if match is not None and not specs:
        from ..config.schema import no_match_text

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


def scenarios() -> None:
    """List the scenario presets (./scenarios and those shipped with netsim), runnable by name."""
    presets = api.scenarios()
    described = {name: api.scenario_description(path) for name, path in presets.items()}
    out_console.print(render.scenario_list_table(presets, described))
