"""netsim: emulate parameter-server distributed SGD in heterogeneous clusters.

The front door is :mod:`netsim.api` (re-exported here); see README.md for the
layout of the subpackages.
"""

from __future__ import annotations

from .api import (
    Comparison,
    Run,
    Runs,
    Sweep,
    compare,
    export_trace,
    figures,
    group,
    init,
    keys,
    load,
    open_run,
    open_runs,
    plot,
    predict,
    real,
    rerun,
    run,
    scenarios,
    sweep,
    topologies,
    topology,
    write_report,
)
from .config.scenario import Scenario, load_scenario
from .errors import ScenarioError
from .rules import RULES
from .sim.engine import Prepared, Simulation, prepare, simulate
from .sim.records import Result, Snapshot, summarize

__all__ = [
    "load_scenario",
    "Scenario",
    "prepare",
    "simulate",
    "Simulation",
    "Prepared",
    "Result",
    "Snapshot",
    "summarize",
    "RULES",
    "ScenarioError",
    "load",
    "run",
    "real",
    "predict",
    "compare",
    "sweep",
    "group",
    "plot",
    "write_report",
    "open_run",
    "open_runs",
    "topologies",
    "topology",
    "Run",
    "Comparison",
    "Sweep",
    "Runs",
    "rerun",
    "init",
    "keys",
    "scenarios",
    "export_trace",
    "figures",
]
__version__ = "0.1.0"
