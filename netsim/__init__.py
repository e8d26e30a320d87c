"""netsim: emulate parameter-server distributed SGD in heterogeneous clusters."""
from __future__ import annotations

from .engine import Prepared, Simulation, prepare, simulate
from .errors import DivergenceError, ScenarioError
from .metrics import Result, summarize
from .rules import RULES
from .scenario import Scenario, load_scenario

__all__ = ["load_scenario", "Scenario", "prepare", "simulate", "Simulation", "Prepared", "Result",
           "summarize", "RULES", "ScenarioError", "DivergenceError"]
__version__ = "0.1.0"
