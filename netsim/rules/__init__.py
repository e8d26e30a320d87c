"""Update rules, one module each (the rules without a PS share :mod:`.peers`); RULES maps
a rule's name to its class."""

from __future__ import annotations

from .abs import ABS
from .asgd import ASGD
from .backup import Backup
from .base import Push, Rule, RuleContext
from .dcasgd import DCASGDAdaptive, DCASGDConstant
from .gsgd import GSGD
from .kasync import KAsync
from .kbatch_async import KBatchAsync
from .kbatch_sync import KBatchSync
from .ksync import KSync
from .lgc import LGC
from .peers import ADPSGD, AllReduce, GroupAllReduce, PartialAllReduce
from .sa_asgd import SAASGD
from .ssgd import SSGD
from .ssp import SSP

__all__ = ["RULES", "Rule", "RuleContext", "Push", "DEFAULT_RULE", "GROUPING_RULE", "SYNC_RULE"]

RULES: dict[str, type[Rule]] = {
    cls.name: cls
    for cls in (
        SSGD,
        ASGD,
        GSGD,
        Backup,
        ABS,
        LGC,
        DCASGDConstant,
        DCASGDAdaptive,
        SSP,
        KSync,
        KBatchSync,
        KAsync,
        KBatchAsync,
        SAASGD,
        AllReduce,
        ADPSGD,
        PartialAllReduce,
        GroupAllReduce,
    )
}
"""Every rule by name."""

DEFAULT_RULE = GSGD.name
"""The rule a scenario runs when ``run.algorithm`` is not set."""
GROUPING_RULE = GSGD.name
"""The rule whose table holds the grouping settings (``netsim group``, compare's
``--groupings`` and ``--weightings``)."""
SYNC_RULE = SSGD.name
"""The synchronous rule whose η, when the scenario configures it, is the fresh synchronous step
η_sync the grouping advisor scales by staleness."""
