"""netsim: emulate parameter-server distributed SGD in heterogeneous clusters."""
from __future__ import annotations

from .api import (
           Comparison,
           Run,
           Sweep,
           compare,
           load,
           open_run,
           open_runs,
           plot,
           run,
           sweep,
           write_report,
)
from .config.scenario import Scenario, load_scenario
from .errors import DivergenceError, ScenarioError
from .rules import RULES
from .sim.engine import Prepared, Simulation, prepare, simulate
from .sim.records import Result, summarize

__all__ = ["load_scenario", "Scenario", "prepare", "simulate", "Simulation", "Prepared", "Result",
           "summarize", "RULES", "ScenarioError", "DivergenceError",
           "load", "run", "compare", "sweep", "plot", "write_report", "open_run", "open_runs", "Run", "Comparison",
           "Sweep"]
__version__ = "0.1.0"
