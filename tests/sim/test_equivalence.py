"""Exact equivalences: GSGD with one group is SSGD, with singleton groups is ASGD."""

from __future__ import annotations

import numpy as np
from conftest import base_raw, make_scenario

from netsim.sim.engine import prepare, simulate


def heterogeneous(groups):
    raw = base_raw(
        workers=[
            {
                "name": "a",
                "count": 3,
                "compute": {"dist": "exponential", "mean": 1.0},
                "latency": 0.01,
            },
            {
                "name": "b",
                "count": 2,
                "compute": {"dist": "lognormal", "median": 2.0, "sigma": 0.3},
            },
            {
                "name": "c",
                "count": 2,
                "compute": {"dist": "pareto", "shape": 1.5, "scale": 1.0},
                "pull_latency": 0.2,
            },
        ],
        algorithms={
            "ssgd": {"lr": 0.3},
            "asgd": {"lr": 0.3},
            "gsgd": {"lr": 0.3, "groups": groups},
        },
    )
    raw["run"].update(until=60.0, eval_every=5.0)
    return make_scenario(raw)


def same_run(r1, r2):
    assert r1.final_w.tobytes() == r2.final_w.tobytes()
    a, b = r1.records, r2.records
    assert (a.time, a.worker, a.staleness, a.version) == (b.time, b.worker, b.staleness, b.version)
    assert a.curve == b.curve
    assert [(w.compute_s, w.comm_s, w.idle_s) for w in r1.workers] == [
        (w.compute_s, w.comm_s, w.idle_s) for w in r2.workers
    ]


def test_one_group_is_ssgd():
    sc = heterogeneous([list(range(7))])
    prep = prepare(sc)
    ssgd, gsgd = simulate(sc, "ssgd", prepared=prep), simulate(sc, "gsgd", prepared=prep)
    assert ssgd.updates > 10
    same_run(ssgd, gsgd)


def test_singleton_groups_are_asgd():
    sc = heterogeneous([[i] for i in range(7)])
    prep = prepare(sc)
    asgd, gsgd = simulate(sc, "asgd", prepared=prep), simulate(sc, "gsgd", prepared=prep)
    assert asgd.updates > 100
    same_run(asgd, gsgd)


def test_common_random_numbers_across_rules():
    # Same seed: the k-th compute time of a worker is the same draw under every rule, so a
    # worker that is never idle (the slowest, in its own group) pushes at the same times.
    raw = base_raw(
        workers=[
            {"name": "a", "count": 2, "compute": {"dist": "exponential", "mean": 1.0}},
            {"name": "b", "count": 1, "compute": {"dist": "exponential", "mean": 5.0}},
        ]
    )
    raw["run"]["until"] = 50.0
    sc = make_scenario(raw)
    prep = prepare(sc)
    pushes = {}
    for name in ("asgd", "gsgd"):
        r = simulate(sc, name, prepared=prep)
        pushes[name] = [t for t, w in zip(r.records.time, r.records.worker) if w == 2]
    assert len(pushes["asgd"]) > 3
    assert pushes["asgd"] == pushes["gsgd"]


def test_different_seeds_differ():
    sc = heterogeneous([[0, 1, 2], [3, 4], [5, 6]])
    r1 = simulate(sc, "gsgd")
    raw = dict(sc.raw)
    raw["run"] = dict(raw["run"], seed=4)
    r2 = simulate(make_scenario(raw), "gsgd")
    assert not np.array_equal(r1.final_w, r2.final_w)


PREEMPTING = {
    "ksync": {"lr": 0.3, "k": 2},
    "kbatch_sync": {"lr": 0.3, "k": 3},
    "backup": {"lr": 0.3, "backups": 2, "late_policy": "cancel"},
}


def test_compact_gradients_change_nothing():
    # Low-rank factors instead of dense gradients (L2 = 0): the same numbers, bit for bit,
    # also under rules that pre-empt (whose workers evaluate the factors when they finish).
    for model in ("logistic", "softmax"):
        base = heterogeneous([[0, 1, 2], [3, 4], [5, 6]])
        raw = dict(base.raw)
        raw["algorithms"] = {**raw["algorithms"], **PREEMPTING}
        raw["model"] = {"name": model, "l2": 0.0}
        raw["data"] = {
            "source": "digits",
            "labels": "multiclass" if model == "softmax" else "odd_even",
        }
        dense = make_scenario(raw)
        raw["run"] = dict(raw["run"], compact_gradients=True)
        compact = make_scenario(raw)
        prep = prepare(dense)
        for rule in ("ssgd", "asgd", "gsgd", *PREEMPTING):
            same_run(simulate(dense, rule, prepared=prep), simulate(compact, rule, prepared=prep))


def test_compact_gradients_need_no_l2():
    import pytest

    from netsim.errors import ScenarioError

    raw = base_raw()
    raw["run"]["compact_gradients"] = True
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == "run.compact_gradients" and "model.l2 = 0" in err.value.message


def test_compact_factors_of_preempted_computations_are_never_evaluated(monkeypatch):
    # K-sync with K = 1 of 7 pre-empts six computations per step. With compact gradients
    # the factors are evaluated once per computation that ends (a push: applied or
    # dropped); evaluated as the model arrives (the rule not reading the current model
    # only), the pre-empted computations would have evaluated theirs too.
    from dataclasses import replace

    from netsim.rules.ksync import KSync

    base = heterogeneous([[0, 1, 2], [3, 4], [5, 6]])
    raw = dict(base.raw)
    raw["model"] = {"name": "logistic", "l2": 0.0}
    raw["algorithms"] = {**raw["algorithms"], "ksync": {"lr": 0.3, "k": 1}}
    raw["run"] = dict(raw["run"], compact_gradients=True)
    sc = make_scenario(raw)
    prep = prepare(sc)
    model = prep.model
    calls = []

    class Counting(type(model)):
        def residual(self, *args):
            calls.append(1)
            return super().residual(*args)

    counting = Counting.__new__(Counting)
    counting.__dict__.update(model.__dict__)
    late = simulate(sc, "ksync", prepared=replace(prep, model=counting))
    pushed = len(late.records.time) + len(late.records.drop_time)
    assert late.updates > 50 and len(calls) == pushed
    calls.clear()
    monkeypatch.setattr(KSync, "reads_current", lambda self: False)
    eager = simulate(sc, "ksync", prepared=replace(prep, model=counting))
    same_run(late, eager)
    assert len(calls) > 2 * pushed
