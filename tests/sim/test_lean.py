"""Lean workers change no result, and runs that need a SimPy process get one.

Every rule the lean path accepts (``rule.lean``) runs twice on small digits scenarios,
once with lean workers and once forced onto the worker processes; the run folders
(summary.json without ``wall_s``, updates.csv, curve.csv, bias.csv, timeline.csv,
dropped.csv) must be byte-identical. Three fixed scenarios are built so that what the lean
path changes is exercised: constant compute times make several computations end at one
instant (stacked gradients, several wake-ups per send, several computation ends in one
heap entry), evaluations fall on those instants (the order of evaluation and update), the
timeline is recorded, and one scenario draws random times (no ties). Generated scenarios
(hypothesis) vary all of that at once.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import base_raw, make_scenario
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netsim.results.runfolder import write_run
from netsim.rules import RULES
from netsim.sim import lean
from netsim.sim.engine import Simulation
from netsim.sim.worker import COMM
from netsim.workload.models import Logistic, SmoothSVM, Softmax

LEAN_RULES = sorted(name for name, cls in RULES.items() if cls.lean)
GENERAL_RULES = sorted(name for name, cls in RULES.items() if not cls.lean and not cls.peer)
PEER_RULES = sorted(name for name, cls in RULES.items() if cls.peer)

_ALGORITHMS = {
    "ssgd": {"lr": 0.3},
    "asgd": {"lr": 0.1},
    "gsgd": {"lr": 0.2},
    "dcasgd_c": {"lr": 0.1, "lambda0": 0.04},
    "dcasgd_a": {"lr": 0.1, "lambda0": 2.0, "m": 0.95},
    "ssp": {"lr": 0.1, "s": 1},
    "kasync": {"lr": 0.1, "k": 2},
    "kbatch_async": {"lr": 0.1, "k": 3},
    "sa_asgd": {"lr": 0.1},
    "backup": {"lr": 0.3, "backups": 1},
    "abs": {"lr": 0.1, "k0": 2},
    "lgc": {"lr": 0.3, "k": 3, "blocks": 2},
    "ksync": {"lr": 0.3, "k": 3},
    "kbatch_sync": {"lr": 0.3, "k": 3},
    "allreduce": {"lr": 0.3},
    "adpsgd": {"lr": 0.1},
    "partial_allreduce": {"lr": 0.1, "group_size": 2},
    "group_allreduce": {"lr": 0.2},
}

_TIED = [
    {"name": "fast", "count": 3, "compute": 1.0},
    {"name": "medium", "count": 2, "compute": 2.0},
    {"name": "slow", "count": 2, "compute": 3.0},
]
_RANDOM = [
    {"name": "fast", "count": 3, "compute": {"dist": "exponential", "mean": 1.0}},
    {"name": "slow", "count": 3, "compute": {"dist": "uniform", "low": 2.0, "high": 4.0}},
]

SCENARIOS = {
    "tied": {
        "run": {"seed": 5, "until": 30.0, "batch_size": 8, "eval_every": 2.0, "timeline_until": 9.0}
    },
    "tied_max_updates": {
        "run": {
            "seed": 6,
            "until": 60.0,
            "batch_size": 8,
            "eval_every": 0.0,
            "eval_every_updates": 5,
            "max_updates": 23,
        }
    },
    "random": {
        "run": {"seed": 7, "until": 25.0, "batch_size": 8, "eval_every": 3.0},
        "workers": _RANDOM,
    },
}


def _scenario(case: str, rule: str, **extra):
    sections = {"workers": _TIED, "algorithms": _ALGORITHMS, **SCENARIOS[case], **extra}
    raw = base_raw(**sections)
    raw["run"] = {**raw["run"], "algorithm": rule}
    return make_scenario(raw)


def _folder(sc, rule: str, lean_ok: bool, tmp_path) -> tuple[dict[str, bytes], Simulation]:
    sim = Simulation(sc, rule, lean=lean_ok)
    out = tmp_path / f"{rule}-{lean_ok}"
    write_run(sim.run(), out)
    files = {}
    for path in sorted(out.iterdir()):
        data = path.read_bytes()
        if path.name == "summary.json":
            summary = json.loads(data)
            summary.pop("wall_s")
            data = json.dumps(summary, sort_keys=True).encode()
        files[path.name] = data
    return files, sim


@pytest.mark.parametrize("case", sorted(SCENARIOS))
@pytest.mark.parametrize("rule", LEAN_RULES)
def test_lean_path_gives_the_same_run_folder(rule, case, tmp_path):
    sc = _scenario(case, rule)
    lean_files, lean_sim = _folder(sc, rule, True, tmp_path)
    general_files, general_sim = _folder(sc, rule, False, tmp_path)
    assert lean_sim.general_reason == "" and all(st.process is None for st in lean_sim.states)
    assert general_sim.general_reason and all(st.process is not None for st in general_sim.states)
    assert {"summary.json", "updates.csv", "curve.csv"} <= set(lean_files)
    assert lean_files.keys() == general_files.keys()
    for name in lean_files:
        assert lean_files[name] == general_files[name], name
    assert json.loads(lean_files["summary.json"])["updates"] > 5


_STAR = {"topology": {"builder": "star", "args": {"n_hosts": 8}}, "message_bytes": 2e5}
_NETWORKS = {
    # fixed latencies; the slow class's transfers take no time (instant next to timed)
    "fixed": {
        "workers": [
            {"name": "fast", "count": 3, "compute": 1.0, "latency": 0.25},
            {"name": "medium", "count": 2, "compute": 1.0, "pull_latency": 0.5},
            {"name": "slow", "count": 2, "compute": 3.0},
        ]
    },
    # flows on a star: tied computations start their pushes together (shared links, one
    # path latency), so pulls and pushes end together too
    "star": {"workers": _TIED, "network": _STAR},
    "star_random": {"workers": _RANDOM, "network": {**_STAR, "message_bytes": 1e6}},
}


_TIMES = st.one_of(
    st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]),
    st.builds(lambda m: {"dist": "exponential", "mean": m}, st.sampled_from([0.5, 1.0, 2.0])),
    st.builds(
        lambda lo: {"dist": "uniform", "low": lo, "high": lo + 1.0}, st.sampled_from([0.5, 1.0])
    ),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rule=st.sampled_from(LEAN_RULES),
    classes=st.lists(st.tuples(st.integers(1, 4), _TIMES), min_size=1, max_size=3),
    seed=st.integers(0, 10_000),
    batch=st.sampled_from([4, 8, 16]),
    until=st.sampled_from([8.0, 15.0]),
    eval_every=st.sampled_from([0.0, 1.5, 2.0]),
    max_updates=st.sampled_from([0, 7, 30]),
    timeline=st.sampled_from([0.0, 5.0]),
    stack_bytes=st.sampled_from([1, 1 << 21]),
    transfers=st.sampled_from(["none", "fixed", "star"]),
)
def test_generated_scenarios_give_the_same_run_folder_on_lean_workers(  # noqa: PLR0913  a draw per argument
    rule,
    classes,
    seed,
    batch,
    until,
    eval_every,
    max_updates,
    timeline,
    stack_bytes,
    transfers,
    tmp_path,
    monkeypatch,
):
    """Random small scenarios (1-3 classes of 1-4 workers, constant times that tie often or
    random ones, evaluations by time, an update limit, the timeline, stacks of one
    minibatch or many, transfers that take no time, a fixed time for the first class or
    flows on a star): every lean rule gives the worker processes' run folder, byte for byte."""
    workers = [{"name": f"c{i}", "count": n, "compute": t} for i, (n, t) in enumerate(classes)]
    workers[0]["count"] += max(0, 4 - sum(n for n, _ in classes))  # at least 4: every rule's K fits
    extra = {}
    if transfers == "fixed":
        workers[0]["latency"] = 0.25
    elif transfers == "star":
        extra["network"] = {**_STAR, "topology": {"builder": "star", "args": {"n_hosts": 13}}}
    run = {
        "seed": seed,
        "until": until,
        "batch_size": batch,
        "eval_every": eval_every,
        "max_updates": max_updates,
        "timeline_until": timeline,
        "algorithm": rule,
    }
    sc = make_scenario(
        base_raw(workers=workers, algorithms={rule: _ALGORITHMS[rule]}, run=run, **extra)
    )
    general, _ = _folder(sc, rule, False, tmp_path / "g")
    monkeypatch.setattr(lean, "STACK_BYTES", stack_bytes)
    files, sim = _folder(sc, rule, True, tmp_path / "l")
    assert sim.general_reason == ""
    assert files == general


@pytest.mark.parametrize("stack_bytes", [1, 2 * 8 * 65 * 8])
@pytest.mark.parametrize("rule", ["ssgd", "asgd", "gsgd"])
def test_small_stacks_give_the_same_run_folder(rule, stack_bytes, tmp_path, monkeypatch):
    """Stacks split evenly when the rows exceed :data:`lean.STACK_BYTES` (here: one, or two
    minibatches of 8 rows of 65 float64 features each)."""
    sc = _scenario("tied", rule)
    general, _ = _folder(sc, rule, False, tmp_path)
    monkeypatch.setattr(lean, "STACK_BYTES", stack_bytes)
    assert _folder(sc, rule, True, tmp_path)[0] == general


@pytest.mark.parametrize("rule", ["ssgd", "gsgd"])
def test_minibatches_of_different_sizes_give_the_same_run_folder(rule, tmp_path, monkeypatch):
    """A batch size above every shard clips each worker's minibatch to its shard (206 rows
    for workers 0-2, 205 for 3-6): the fast class (0-3) then ends together with minibatches
    of different sizes, which are evaluated one by one, not stacked."""
    classes = [
        {"name": "fast", "count": 4, "compute": 1.0},
        {"name": "slow", "count": 3, "compute": 2.0},
    ]
    sc = _scenario("tied", rule, workers=classes)
    sc = replace(sc, run=replace(sc.run, batch_size=100_000))
    general, _ = _folder(sc, rule, False, tmp_path)
    together, stacked = [], []
    stacks, gradients = lean.InstantBatch._stacks, Logistic.gradients
    monkeypatch.setattr(
        lean.InstantBatch,
        "_stacks",
        lambda self, ws: together.append({w.sampler.size for w in ws}) or stacks(self, ws),
    )
    monkeypatch.setattr(
        Logistic,
        "gradients",
        lambda self, W, Xs, Ys: stacked.append(Xs.shape) or gradients(self, W, Xs, Ys),
    )
    files, sim = _folder(sc, rule, True, tmp_path)
    assert files == general and sim.general_reason == ""
    assert any(
        len(sizes) > 1 for sizes in together
    )  # some workers ended together with different sizes
    assert len(stacked) == sum(
        len(sizes) == 1 for sizes in together
    )  # only those of one size were stacked


@pytest.mark.parametrize(
    "asgd",
    [
        {"lr": 0.1, "momentum": 0.9},  # the server's optimizer
        {"lr": 0.1, "lr_schedule": "step", "lr_decay": 0.5, "lr_step": 7.0},  # a schedule
        {"lr": 1e160},  # diverges: stops mid-run
    ],
)
@pytest.mark.parametrize("case", ["random", "tied_max_updates"])
def test_asgd_one_call_push_gives_the_general_paths_run_folder(asgd, case, tmp_path):
    """ASGD's lean workers hand pushes to ``ps.apply_solo`` (its ``solo_step``); with
    momentum, a schedule, a divergence or ``max_updates`` it must still be the run of the
    worker processes, which go through ``receive`` and ``on_push``."""
    sc = _scenario(case, "asgd", algorithms={**_ALGORITHMS, "asgd": asgd})
    lean_files, sim = _folder(sc, "asgd", True, tmp_path)
    assert sim.general_reason == ""
    assert lean_files == _folder(sc, "asgd", False, tmp_path)[0]
    if asgd["lr"] > 1:
        assert json.loads(lean_files["summary.json"])["status"] == "diverged"


def test_plain_asgd_pushes_take_the_one_call_path(monkeypatch):
    from netsim.sim.server import ParameterServer

    calls = []
    monkeypatch.setattr(ParameterServer, "receive", lambda ps, push: calls.append(push))
    result = Simulation(_scenario("random", "asgd"), "asgd").run()
    assert result.updates > 5 and calls == []


def test_gsgd_with_measured_groups_timeout_and_regrouping_runs_lean_unchanged(tmp_path):
    gsgd = {"lr": 0.2, "grouping": "silhouette", "group_timeout": 1.5, "regroup_every_s": 9.0}
    sc = _scenario("random", "gsgd", algorithms={**_ALGORITHMS, "gsgd": gsgd})
    lean_files, sim = _folder(sc, "gsgd", True, tmp_path)
    assert sim.general_reason == ""
    assert lean_files == _folder(sc, "gsgd", False, tmp_path)[0]


@pytest.mark.parametrize("rule", GENERAL_RULES)
def test_rules_that_interrupt_or_inspect_workers_take_the_general_path(rule):
    sim = Simulation(_scenario("tied", rule), rule)
    assert sim.general_reason == f"rule {rule} interrupts or inspects workers"


@pytest.mark.parametrize("rule", PEER_RULES)
def test_rules_without_a_ps_take_the_general_path(rule):
    sim = Simulation(_scenario("tied", rule), rule)
    assert (
        sim.general_reason == f"rule {rule} has no parameter server (its workers exchange messages)"
    )


@pytest.mark.parametrize(
    "change, reason",
    [
        (
            {"events": [{"time": 3.0, "kind": "slowdown", "worker": 0, "factor": 2.0}]},
            "timed events",
        ),
        (
            {
                "run": {"seed": 5, "until": 10.0, "batch_size": 8, "compact_gradients": True},
                "model": {"name": "logistic", "l2": 0.0},
            },
            "compact gradients",
        ),
    ],
)
def test_scenarios_the_lean_worker_cannot_run_take_the_general_path(change, reason):
    raw = base_raw(**change)
    sim = Simulation(make_scenario(raw), "asgd")
    assert sim.general_reason == reason
    sim.run()
    assert all(st.process is not None for st in sim.states)


@pytest.mark.parametrize("case", sorted(_NETWORKS))
@pytest.mark.parametrize("rule", LEAN_RULES)
def test_transfers_that_take_time_give_the_same_run_folder_on_lean_workers(rule, case, tmp_path):
    """Lean workers wait for their pull and push events as the processes do (the same
    callbacks in the same heap entries): fixed latencies with workers whose transfers take
    no time among others whose do, flows that tie on a star, random compute times."""
    sc = _scenario("tied", rule, **_NETWORKS[case])
    lean_files, sim = _folder(sc, rule, True, tmp_path)
    assert sim.general_reason == "" and all(st.process is None for st in sim.states)
    assert lean_files == _folder(sc, rule, False, tmp_path)[0]
    assert json.loads(lean_files["summary.json"])["updates"] > 5
    assert sum(st.spent[COMM] for st in sim.states) > 0  # the transfers took time


def test_base_scenario_runs_lean():
    sim = Simulation(make_scenario(base_raw()), "asgd")
    assert sim.general_reason == ""


@pytest.mark.parametrize("model", [Logistic(l2=0.01), SmoothSVM(l2=0.0), Logistic(l2=0.0)])
@pytest.mark.parametrize("shared", [True, False])
def test_stacked_gradients_are_bitwise_the_gradients_one_by_one(model, shared):
    rng = np.random.default_rng(11)
    k, b, d = 5, 7, 13
    Xs, Ys = rng.random((k, b, d)), rng.integers(0, 2, (k, b))
    W = rng.normal(size=(1 if shared else k, d)) * 3
    one_by_one = np.stack([model.gradient(W[0 if shared else i], Xs[i], Ys[i]) for i in range(k)])
    assert model.stacked
    assert np.array_equal(model.gradients(W, Xs, Ys), one_by_one)


def test_models_that_do_not_stack_compute_gradients_one_by_one():
    model = Softmax(l2=0.01, n_classes=3)
    rng = np.random.default_rng(2)
    Xs, Ys, W = rng.random((3, 4, 5)), rng.integers(0, 3, (3, 4)), rng.normal(size=(1, 15))
    assert not model.stacked
    assert np.array_equal(
        model.gradients(W, Xs, Ys), np.stack([model.gradient(W[0], X, y) for X, y in zip(Xs, Ys)])
    )


def test_tied_scenario_stacks_gradients_and_wakes_several_workers_at_once(monkeypatch):
    """The 'tied' scenario exercises what the lean path changes (else the comparisons prove little)."""
    stacked, woken = [], []
    gradients, due = Logistic.gradients, lean._Wakes._due
    monkeypatch.setattr(
        Logistic,
        "gradients",
        lambda self, W, Xs, Ys: stacked.append(len(Xs)) or gradients(self, W, Xs, Ys),
    )
    monkeypatch.setattr(
        lean._Wakes, "_due", lambda self: woken.append(len(self.workers)) or due(self)
    )
    Simulation(_scenario("tied", "ssgd"), "ssgd").run()
    assert (
        max(stacked) == 3 and max(woken) == 6
    )  # the fast trio ends together; a round wakes all but the last


def test_a_lean_rule_that_reads_a_worker_is_refused_not_silently_wrong():
    from netsim.rules.asgd import ASGD

    class Peeking(ASGD):  # claims lean (inherited) but reads worker iterations
        def on_push(self, ps, push):
            ps.reading(0)

    sim = Simulation(make_scenario(base_raw()), "asgd")
    sim.rule = sim.ps.rule = Peeking(0.1, sim.rule.groups)
    with pytest.raises(RuntimeError, match="must set lean = False"):
        sim.run()
