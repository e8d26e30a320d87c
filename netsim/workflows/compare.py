"""A comparison: several rules (and GSGD's groupings and weightings) run one after the
other on the same data, shards, initial model and time draws, into one folder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.scenario import Scenario
from ..errors import ScenarioError
from ..results.progress import LineProgress
from ..results.runfolder import CompareEntry, claim, write_compare
from ..rules import GROUPING_RULE
from ..sim.engine import RunInterrupted, data_bytes, free_cycles, prepare
from ..sim.summary import Summary
from .runs import Run, frame, old_name, run_into, summary_frame

if TYPE_CHECKING:
    import pandas as pd

    from ..sim.records import Snapshot

__all__ = ["Comparison", "Variant", "variants", "name_list", "run_variants"]


class Comparison(dict):
    """Runs by label (``ssgd``, ``gsgd[auto]``, ...), plus ``path`` and the written ``plots``."""

    def __init__(
        self, runs: dict[str, Run], path: Path | None = None, plots: list[Path] | None = None
    ):
        super().__init__(runs)
        self.path = path
        self.plots = plots or []

    @property
    def summaries(self) -> list[Summary]:
        return [r.summary for r in self.values()]

    def to_pandas(self) -> "pd.DataFrame":
        """DataFrame: one row per run with the summary fields (as in sweep.csv)."""
        return summary_frame(self.values())

    frame = old_name("frame", "to_pandas")
    to_frame = old_name("to_frame", "to_pandas")

    def curves_frame(self) -> "pd.DataFrame":
        """DataFrame of every curve, long form, with a ``label`` column."""
        cols: dict[str, list] = {"label": []}
        for name, r in self.items():
            cols["label"] += [name] * len(r.curve["update"])
            for k, v in r.curve.items():
                cols.setdefault(k, []).extend(v.tolist())
        return frame(cols)


@dataclass(frozen=True)
class Variant:
    """One run of a comparison: its ``label``, ``folder`` name, scenario and rule."""

    label: str
    folder: str
    scenario: Scenario
    algorithm: str


def variants(
    scenario: Scenario,
    algorithms: Sequence[str] | str | None = None,
    groupings: Sequence[str] | str | None = None,
    weightings: Sequence[str] | str | None = None,
) -> list[Variant]:
    """The runs a comparison makes: every rule of *algorithms* (default: all
    configured, unless *groupings* or *weightings* are given), then GSGD once per
    grouping of *groupings* (``auto``, ``hand``, ``kmeans:K``, ``equal:K``), labelled
    ``gsgd[auto]``, ..., then GSGD once per group weighting of *weightings*
    (``none``, ``inverse_rate``, ``fedat``), labelled ``gsgd[fedat]``, ... (not the
    scenario's own weighting when plain ``gsgd`` runs too: that run is the same).

    The variants are made from *scenario* by :meth:`~netsim.config.scenario.Scenario.with_rule_keys`
    (its rule's table read again, the rest replaced, not parsed again), equal to the
    scenario with ``--set algorithms.gsgd.grouping=...`` (or ``group_weighting``) and
    ``run.algorithm="gsgd"`` parsed again, and refusing a grouping or weighting not allowed
    with the same key and message.

    Raises ScenarioError for a rule without its ``[algorithms.X]`` table.
    """
    algorithms, groupings, weightings = (name_list(x) for x in (algorithms, groupings, weightings))
    names = (
        list(algorithms)
        if algorithms
        else ([] if groupings or weightings else list(scenario.rules))
    )
    out = [Variant(name, name, scenario.with_algorithm(name), name) for name in names]
    rule = GROUPING_RULE
    for option, values in (("--groupings", groupings), ("--weightings", weightings)):
        if values and rule not in scenario.rules:
            raise ScenarioError(option, f"needs an [algorithms.{rule}] table", scenario.path)
    for g in groupings:
        variant = scenario.with_rule_keys(rule, {"grouping": g})
        out.append(Variant(f"{rule}[{g}]", f"{rule}-" + g.replace(":", "-"), variant, rule))
    for g in weightings:
        variant = scenario.with_rule_keys(rule, {"group_weighting": g})
        if rule in names and variant.rules[rule].grouping == scenario.rules[rule].grouping:
            continue  # the scenario's own weighting: the plain run of the rule is this one
        out.append(Variant(f"{rule}[{g}]", f"{rule}-{g}", variant, rule))
    labels = [v.label for v in out]
    for v in out:
        if labels.count(v.label) > 1:
            raise ScenarioError("--algorithms", f"{v.label!r} is asked for twice", scenario.path)
    return out


def name_list(value: Sequence[str] | str | None) -> list[str]:
    """A list of names from a list or a comma-separated string (``"ssgd,asgd"``).

    >>> name_list("ssgd, asgd"), name_list(["gsgd"]), name_list(None)
    (['ssgd', 'asgd'], ['gsgd'], [])
    """
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    return list(value or [])


def run_variants(
    sc: Scenario,
    plan: Sequence[Variant],
    out: Path | None,
    progress: Callable[[Snapshot], object] | None,
    on_run: Callable[[str, Run], None] | None = None,
    overwrite: bool = False,
) -> Comparison:
    """Run every variant of *plan* (:func:`variants` of *sc*) on the data, shards and
    initial model of *sc*, prepared once, as :func:`netsim.api.compare` describes: into
    ``out/<variant folder>`` and ``out/compare.json`` (rewritten after each run) when *out*
    is given (claimed first); *progress*: a snapshot callback or None; *on_run(label, run)*
    as each run finishes. Call it inside :func:`netsim.signals.held`."""
    prepared = prepare(sc)
    runs: dict[str, Run] = {}
    summaries: list[CompareEntry] = []
    claimed = claim(out, overwrite=overwrite) if out is not None else None
    try:
        for k, v in enumerate(plan):
            if isinstance(progress, LineProgress):
                progress.position = f"[{k + 1}/{len(plan)}]"
            folder = out / v.folder if out is not None else None
            try:
                done = run_into(
                    v.scenario.with_algorithm(v.algorithm), folder, progress, v.label, prepared
                )
            except RunInterrupted as stop:
                if out is not None and stop.summary is not None:
                    write_compare(summaries + [{**stop.summary, "folder": v.folder}], out)
                raise
            if out is not None:
                summaries.append({**done.summary, "folder": v.folder})
                write_compare(summaries, out)
            runs[v.label] = done
            if on_run is not None:
                on_run(v.label, runs[v.label])
    finally:
        if claimed is not None:
            claimed.release()
    size = data_bytes(prepared.dataset)
    del prepared
    free_cycles(size)  # the runs' data, loaded once above
    return Comparison(runs, out)
