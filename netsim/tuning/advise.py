"""The grouping decision without emulation: measure, cluster and rank candidate groupings
by the advisor's closed form (``netsim group --quick``)."""

from __future__ import annotations

from ..config.scenario import Scenario
from ..rng import Streams
from ..rules import SYNC_RULE
from ..rules.gsgd import GSGD
from ..sim.engine import prepare
from ..sim.measurement import measure, unreachable
from .advisor import rank
from .candidates import candidate_groupings

__all__ = ["advise", "merge_same"]


def advise(scenario: Scenario, rounds: int | None = None) -> dict:
    """The grouping decision, laid open: measure, cluster, and rank candidate groupings.

    Returns ``measurement`` (Measurement), ``grouping`` (the Grouping GSGD's method
    makes without emulation; ``silhouette`` when the scenario sets ``hand``, ``auto`` or
    ``race``), ``silhouette`` (K by silhouette), ``lr_sync`` (the synchronous step the
    ranking scales: the scenario's SSGD η when it configures SSGD, else GSGD's) and
    ``ranking`` (advisor Predictions, best first, each with its η) over the candidates
    the race would run (:func:`netsim.tuning.candidates.candidate_groupings`) and the
    silhouette's. No pilot emulation: :mod:`netsim.tuning.race` races them.
    """
    rule = scenario.grouping_rule()
    if not isinstance(rule, GSGD):  # GROUPING_RULE names GSGD
        raise TypeError(f"the grouping rule is {type(rule).__name__}, not GSGD")
    spec = rule.grouping
    n_params = _n_params(scenario)
    m = measure(scenario, n_params, rounds or spec.probe_rounds, Streams(scenario.run.seed))
    error = unreachable(m, scenario)
    if error is not None:
        raise error
    seed = scenario.run.seed
    auto = rule.choose(m.iteration, seed, "silhouette")
    chosen = auto if spec.method in ("hand", "auto", "race") else rule.choose(m.iteration, seed)
    candidates = dict(
        candidate_groupings(m.iteration, hand=rule.groups, k_max=spec.k_max, seed=seed)
    )
    candidates["silhouette"] = auto.groups
    sync = scenario.rules.get(SYNC_RULE)
    lr_sync = sync.lr if sync is not None else rule.lr
    return {
        "measurement": m,
        "grouping": chosen,
        "silhouette": auto,
        "lr_sync": lr_sync,
        "ranking": rank(merge_same(candidates), m.iteration, lr_sync=lr_sync, seed=seed),
    }


def merge_same(candidates: dict) -> dict:
    """One entry per distinct partition; names of identical ones joined with `` = ``.

    >>> merge_same({"hand": [[0, 1], [2]], "auto": [[2], [1, 0]], "one": [[0, 1, 2]]})
    {'hand = auto': [[0, 1], [2]], 'one': [[0, 1, 2]]}
    """
    seen: dict = {}
    for name, groups in candidates.items():
        key = tuple(sorted(tuple(sorted(g)) for g in groups))
        if key in seen:
            seen[key] = (f"{seen[key][0]} = {name}", seen[key][1])
        else:
            seen[key] = (name, groups)
    return {name: groups for name, groups in seen.values()}


def _n_params(scenario: Scenario) -> int:
    """Model size without loading the training data when the network does not need it."""
    if scenario.network is None or scenario.network.message_bytes:
        return 1
    return prepare(scenario).w0.size
