"""netsim: emulate parameter-server distributed SGD in heterogeneous clusters."""
from __future__ import annotations

from .api import Comparison, Run, Sweep, compare, load, open_run, open_runs, plot, run, sweep, write_report
from .engine import Prepared, Simulation, prepare, simulate
from .errors import DivergenceError, ScenarioError
from .metrics import Result, summarize
from .rules import RULES
from .scenario import Scenario, load_scenario

__all__ = ["load_scenario", "Scenario", "prepare", "simulate", "Simulation", "Prepared", "Result",
           "summarize", "RULES", "ScenarioError", "DivergenceError",
           "load", "run", "compare", "sweep", "plot", "write_report", "open_run", "open_runs", "Run", "Comparison",
           "Sweep"]
__version__ = "0.1.0"
