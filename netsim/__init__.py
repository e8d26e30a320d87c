"""netsim: emulate parameter-server distributed SGD in heterogeneous clusters.

The front door is :mod:`netsim.api` (re-exported here, imported on first use); see
README.md for the layout of the subpackages.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    **dict.fromkeys(
        (
            "Comparison Run Runs Sweep compare export_trace figures group init keys load "
            "calibrate load_model open_run open_runs plot predict real rerun run scenarios sweep "
            "topologies "
            "topology write_report Inputs RunOptions CompareOptions SweepOptions RealOptions "
            "PredictOptions RaceOptions"
        ).split(),
        ".api",
    ),
    "Scenario": ".config.scenario",
    "load_scenario": ".config.scenario",
    "ScenarioError": ".errors",
    "RULES": ".rules",
    **dict.fromkeys(("Prepared", "Simulation", "prepare", "simulate"), ".sim.engine"),
    **dict.fromkeys(("Result", "Snapshot"), ".sim.records"),
    **dict.fromkeys(("Summary", "summarize"), ".sim.summary"),
}
"""Where each exported name lives: imported on first use, so that ``netsim --version`` and
the subpackages do not pay for the whole API."""


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'netsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


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
    "Summary",
    "RULES",
    "ScenarioError",
    "load",
    "run",
    "real",
    "predict",
    "calibrate",
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
