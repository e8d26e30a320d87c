"""Exact equivalences: GSGD with one group is SSGD, with singleton groups is ASGD."""
from __future__ import annotations

import numpy as np
from conftest import base_raw, make_scenario

from netsim.sim.engine import prepare, simulate


def heterogeneous(groups):
    raw = base_raw(workers=[
        {"name": "a", "count": 3, "compute": {"dist": "exponential", "mean": 1.0}, "latency": 0.01},
        {"name": "b", "count": 2, "compute": {"dist": "lognormal", "median": 2.0, "sigma": 0.3}},
        {"name": "c", "count": 2, "compute": {"dist": "pareto", "shape": 1.5, "scale": 1.0}, "pull_latency": 0.2}],
        algorithms={"ssgd": {"lr": 0.3}, "asgd": {"lr": 0.3}, "gsgd": {"lr": 0.3, "groups": groups}})
    raw["run"].update(until=60.0, eval_every=5.0)
    return make_scenario(raw)


def same_run(r1, r2):
    assert r1.final_w.tobytes() == r2.final_w.tobytes()
    a, b = r1.records, r2.records
    assert (a.time, a.worker, a.staleness, a.version) == (b.time, b.worker, b.staleness, b.version)
    assert a.curve == b.curve
    assert [(w.compute_s, w.comm_s, w.idle_s) for w in r1.workers] == \
           [(w.compute_s, w.comm_s, w.idle_s) for w in r2.workers]


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
    raw = base_raw(workers=[{"name": "a", "count": 2, "compute": {"dist": "exponential", "mean": 1.0}},
                            {"name": "b", "count": 1, "compute": {"dist": "exponential", "mean": 5.0}}])
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


def test_compact_gradients_change_nothing():
    # Low-rank factors instead of dense gradients (L2 = 0): the same numbers, bit for bit.
    for model in ("logistic", "softmax"):
        base = heterogeneous([[0, 1, 2], [3, 4], [5, 6]])
        raw = dict(base.raw)
        raw["model"] = {"name": model, "l2": 0.0}
        raw["data"] = {"source": "digits", "labels": "multiclass" if model == "softmax" else "odd_even"}
        dense = make_scenario(raw)
        raw["run"] = dict(raw["run"], compact_gradients=True)
        compact = make_scenario(raw)
        prep = prepare(dense)
        for rule in ("ssgd", "asgd", "gsgd"):
            same_run(simulate(dense, rule, prepared=prep), simulate(compact, rule, prepared=prep))


def test_compact_gradients_need_no_l2():
    import pytest

    from netsim.errors import ScenarioError
    raw = base_raw()
    raw["run"]["compact_gradients"] = True
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == "run.compact_gradients" and "model.l2 = 0" in err.value.message
