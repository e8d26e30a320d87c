"""The closed-form advice on grouping (``netsim group --quick``): measure, cluster, rank."""

from __future__ import annotations

from ..config.scenario import MAX_GRADIENTS, Scenario
from ..errors import ScenarioError
from ..tuning.advise import advise
from .runs import Overrides, PathArg, scenario_of

__all__ = ["advise_info", "check_rounds", "quick_dict"]


def advise_info(
    scenario: Scenario | PathArg,
    rounds: int | None = None,
    *,
    overrides: Overrides = None,
    seed: int | None = None,
    data_dir: PathArg | None = None,
) -> dict:
    """The closed-form advisor's evidence: measure the workers, cluster them and rank
    candidate groupings (see :func:`netsim.tuning.advise.advise`); also ``classes`` and
    ``hosts`` per worker (the tables of ``netsim group --quick``)."""
    sc = scenario_of(scenario, overrides, seed, data_dir)
    check_rounds(sc, rounds)
    info = advise(sc, rounds)
    info["classes"] = sc.worker_class_names()
    info["hosts"] = list(sc.network.worker_hosts) if sc.network else [""] * sc.n_workers
    return info


def check_rounds(sc: Scenario, rounds: int | None) -> None:
    most = max(1, int(MAX_GRADIENTS // sc.n_workers))
    if rounds is not None and not 1 <= rounds <= most:
        raise ScenarioError(
            "--rounds",
            f"{rounds!r} is not allowed (1..{most}: at most {MAX_GRADIENTS:.0e} "
            "probe iterations over all workers)",
            sc.path,
        )


def quick_dict(info: dict) -> dict:
    """What ``netsim group --quick --json`` prints, from :func:`advise_info`'s *info*: the
    chosen clustering, η_sync and the advisor's ranking."""
    chosen = info["grouping"]
    return {
        "method": "quick",
        "chosen": {
            "method": chosen.method,
            "k": chosen.k,
            "groups": [list(g) for g in chosen.groups],
            "reason": chosen.reason,
        },
        "lr_sync": info["lr_sync"],
        "ranking": [p.as_dict() for p in info["ranking"]],
    }
