"""netsim command line: run, compare, sweep, group, plot, report and validate scenario files.

Each command parses its options, calls one function of :mod:`netsim.api` and
renders the result with :mod:`netsim.results.render`; nothing else happens here. The
commands live in the modules of this package by what they do; they are registered here,
in the order ``netsim --help`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable

from .common import Command, app, main
from .figures import export, plot, report
from .group import group
from .real import calibrate, predict, real
from .runs import compare, rerun, run, sweep
from .scenarios import init, keys, scenarios, topology_app, validate

__all__ = ["app", "main"]

command: Callable[..., None]  # each takes its own options
for command in (run, real, predict, calibrate, rerun, compare, plot, report, export, sweep, group):
    app.command(cls=Command)(command)
app.add_typer(topology_app, name="topology")
for command in (validate, init, keys, scenarios):
    app.command(cls=Command)(command)
