"""PS update rules, one module each; RULES maps a rule's name to its class."""
from __future__ import annotations

from .asgd import ASGD
from .base import Push, Rule, RuleContext
from .gsgd import GSGD
from .ssgd import SSGD

__all__ = ["RULES", "Rule", "RuleContext", "Push"]

RULES: dict[str, type[Rule]] = {cls.name: cls for cls in (SSGD, ASGD, GSGD)}
