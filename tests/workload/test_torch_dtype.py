"""The server works in the model's own dtype (``model.master_dtype``): every rule, schedule,
momentum, DC-ASGD and LGC keeps a float32 model float32, and a float32 run is a plain
float32 loop replaying the same updates."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import base_raw, make_scenario

torch = pytest.importorskip(
    "torch", reason="the torch backend needs PyTorch (pip install torch==2.13.0)"
)

from netsim.errors import ScenarioError  # noqa: E402
from netsim.rules import RULES  # noqa: E402
from netsim.sim.engine import prepare, simulate  # noqa: E402

WORKERS = [
    {"name": "fast", "count": 2, "compute": {"dist": "exponential", "mean": 1.0}},
    {"name": "slow", "count": 2, "compute": {"dist": "uniform", "low": 2.0, "high": 3.0}},
]
EVERY_RULE = {
    "ssgd": {"lr": 0.1, "momentum": 0.9, "nesterov": True},
    "asgd": {"lr": 0.05, "lr_schedule": "inverse_time", "lr_decay": 0.01, "lr_warmup": 3},
    "gsgd": {"lr": 0.1, "groups": [["fast"], ["slow"]], "group_weighting": "fedat"},
    "backup": {"lr": 0.1, "backups": 1},
    "abs": {"lr": 0.1, "k0": 2},
    "lgc": {"lr": 0.1, "k": 2, "blocks": 2},
    "dcasgd_c": {"lr": 0.05},
    "dcasgd_a": {"lr": 0.05},
    "ssp": {"lr": 0.05, "s": 2},
    "ksync": {"lr": 0.1, "k": 2},
    "kbatch_sync": {"lr": 0.1, "k": 2},
    "kasync": {"lr": 0.1, "k": 2},
    "kbatch_async": {"lr": 0.1, "k": 2},
    "sa_asgd": {"lr": 0.1},
    "allreduce": {"lr": 0.1},
    "adpsgd": {"lr": 0.1},
    "partial_allreduce": {"lr": 0.1, "group_size": 2},
    "group_allreduce": {"lr": 0.1},
}


def _scenario(model: dict, rules: dict, **run):
    return make_scenario(
        base_raw(
            run={"seed": 4, "algorithm": "asgd", "until": 20.0, "batch_size": 8, **run},
            data={"source": "digits", "labels": "multiclass"},
            model={"backend": "torch", "name": "mlp", "hidden": [16], **model},
            workers=WORKERS,
            algorithms=rules,
        )
    )


def test_every_rule_is_configured_here():
    assert set(EVERY_RULE) == set(RULES)


@pytest.mark.parametrize("rule", sorted(EVERY_RULE))
def test_every_rule_keeps_a_float32_model_float32(rule):
    """No step of any rule, schedule, momentum or compensation upcasts the model: a single
    float64 step would leave the model float64 from then on."""
    sc = _scenario({}, {rule: EVERY_RULE[rule]}, algorithm=rule)
    assert sc.model.master_dtype == "float32"
    result = simulate(sc, rule)
    assert result.updates > 5
    assert result.final_w.dtype == np.float32
    assert np.isfinite(result.final_w).all()


def test_numpy_models_stay_float64_and_torch_models_may_choose():
    assert make_scenario(base_raw()).model.master_dtype == "float64"
    assert _scenario({"dtype": "float64"}, {"asgd": {"lr": 0.1}}).model.master_dtype == "float64"
    sc = _scenario({"master_dtype": "float64"}, {"asgd": {"lr": 0.1}})
    prep = prepare(sc)
    assert prep.w0.dtype == np.float64 and prep.dataset.X_train.dtype == np.float32
    assert simulate(sc, "asgd", prepared=prep).final_w.dtype == np.float64


def test_a_float32_asgd_run_is_a_float32_loop_replaying_its_updates():
    """Each update w ← w − η·g in float32, g the float32 gradient torch gives at the version
    the worker read on its minibatch: the run's model, bit for bit."""
    from netsim.rng import Streams
    from netsim.sim.worker import BatchSampler

    sc = _scenario({"init": "default"}, {"asgd": {"lr": 0.05}}, until=15.0)
    prep = prepare(sc)
    result = simulate(sc, "asgd", prepared=prep)
    module = prep.model.module
    params = list(module.parameters())
    X, y = prep.dataset.X_train, prep.dataset.y_train
    streams = Streams(sc.run.seed)
    samplers = [
        BatchSampler(prep.shards[i], sc.run.batch_size, streams.rng("batch", i))
        for i in range(sc.n_workers)
    ]
    models = [prep.w0]
    rec = result.records
    for k in range(len(rec.worker)):
        read = rec.version[k] - 1 - rec.staleness[k]
        rows = samplers[rec.worker[k]].next()
        torch.nn.utils.vector_to_parameters(torch.from_numpy(models[read].copy()), params)
        loss = torch.nn.functional.cross_entropy(
            module(torch.from_numpy(X[rows])), torch.from_numpy(y[rows])
        )
        g = torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, params)]).numpy()
        models.append(models[-1] - np.float32(0.05) * g)
    assert models[-1].dtype == np.float32 and len(models) > 20
    np.testing.assert_array_equal(result.final_w, models[-1])


@pytest.mark.parametrize(
    "model, words",
    [
        ({"backend": "torch", "name": "mlp", "master_dtype": "float16"}, "allowed: float32"),
        ({"name": "logistic", "master_dtype": "float32"}, "needs backend = 'torch'"),
    ],
)
def test_bad_master_dtypes_are_refused_naming_the_key(model, words):
    with pytest.raises(ScenarioError, match=words) as err:
        make_scenario(base_raw(model=model))
    assert err.value.key == "model.master_dtype"


def test_a_gradient_reads_the_model_and_minibatch_without_copying_them():
    """The flat vector and float32 examples reach torch as they are (no copy per gradient)."""
    sc = _scenario({}, {"asgd": {"lr": 0.1}})
    prep = prepare(sc)
    model, w = prep.model, prep.w0
    assert np.shares_memory(model._tensor(w).numpy(), w)
    rows = prep.dataset.X_train[:8]
    assert np.shares_memory(model._inputs(rows).numpy(), rows)
    assert model.gradient(w, rows, prep.dataset.y_train[:8]).dtype == np.float32
