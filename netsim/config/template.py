"""The commented scenario ``netsim init NAME`` writes: a small runnable start with every section explained."""

from __future__ import annotations

from ..rules import RULES
from ..workload.timemodels import TIME_MODELS
from .scenario import DATA_SOURCES, LABELINGS, MODEL_NAMES

__all__ = ["scenario_template"]

TEMPLATE = """\
# {name}: a netsim scenario. Run it with `netsim run {file}` (or `netsim run {name}` from this folder),
# compare rules with `netsim compare {file} --algorithms ssgd,asgd,gsgd`.
# Every key, its type, default, allowed values and unit: `netsim keys`.
name = "{name}"
description = "Describe the experiment here"

[run]
seed = 1                 # one seed drives every random draw: same seed, same bytes
algorithm = "gsgd"       # the rule `netsim run` uses; needs its [algorithms.X] table below
until = 100.0            # simulated horizon
time_unit = "s"          # name of one unit of simulated time in tables and figures ("s", "units", ...)
eval_every = 5.0         # evaluate the loss every this much simulated time (0: only at start and end)
batch_size = 16          # examples per minibatch gradient
# max_updates = 0        # stop after this many model updates (0: no limit)
# timeline_until = -1.0  # record worker phase spans up to this time (-1: whole run, 0: none)

[data]
source = "digits"        # {sources}
labels = "odd_even"      # {labelings}
# dir = "~/data"         # data folder for mnist/libsvm (or --data-dir, or $NETSIM_DATA_DIR)

[model]
name = "logistic"        # {models}
l2 = 0.001               # L2 weight λ (or per model: {{ logistic = 0.001, smooth_svm = 0.01 }})

# One [[workers]] table per class of identical workers. compute is a time per
# gradient, or a distribution: {{ dist = "lognormal", median = 1.0, sigma = 0.1 }}
# (dists: {dists}).
[[workers]]
name = "fast"
count = 2
compute = {{ dist = "lognormal", median = 1.0, sigma = 0.1 }}

[[workers]]
name = "slow"
count = 2
compute = {{ dist = "lognormal", median = 3.0, sigma = 0.1 }}
latency = 0.05           # s per pull and per push (without a [network] table)

# A network instead of fixed latencies (see `netsim topology list`):
# [network]
# topology = "star16"
# placement = "packed"

# Failures and slowdowns during the run:
# [[events]]
# kind = "crash"
# time = 50.0
# worker = "slow"
# duration = 20.0

# One table per rule to run or compare (rules: {rules}).
[algorithms.ssgd]
lr = 0.5

[algorithms.asgd]
lr = 0.05

[algorithms.gsgd]
lr = 0.2
groups = [["fast"], ["slow"]]   # or grouping = "auto": race pilot runs for the best groups and η
"""


def scenario_template(name: str, file: str | None = None) -> str:
    """The commented scenario text for *name* (loads and runs as it is)."""
    return TEMPLATE.format(
        name=name,
        file=file or f"{name}.toml",
        sources=", ".join(DATA_SOURCES),
        labelings=", ".join(LABELINGS),
        models=", ".join(MODEL_NAMES),
        dists=", ".join(TIME_MODELS),
        rules=", ".join(RULES),
    )
