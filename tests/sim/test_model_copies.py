"""A run holds at most (workers + 4) copies of the model above what it started with: the
server's model, one version per worker in flight (pulled, or its gradient travelling), and
a few updates being formed. Counted with tracemalloc on a model whose arrays are all
numpy's (so every model-sized buffer is traced), large beside everything else a run holds;
a test never measures time or resident memory."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.rules.optimizers import BLOCK
from netsim.sim.engine import Simulation, prepare
from netsim.workload.base import Model

D = 250_000
"""Parameters: a float32 copy is 1 MB, beside a few kB of records and digits' minibatches."""


class Wide(Model):
    """A model of *D* float32 parameters whose gradient at w is a new array ``0.01·w + s``
    (s the minibatch's mean feature): cheap, deterministic, one new model-sized array."""

    multiclass = True

    def n_params(self, n_features=None) -> int:
        return D

    def gradient(self, w, X, y):
        g = np.multiply(w, np.float32(0.01))
        g += np.float32(X.mean())
        return g

    def loss(self, w, X, y):
        return float(np.abs(w[:10]).sum())

    def predict(self, w, X):
        return np.zeros(X.shape[0], dtype=np.int64)


def _held(rule: str, n_workers: int, network: dict | None = None, optimizer: str = "sgd") -> float:
    """Peak traced bytes of *rule*'s run above those before it, in model copies; *optimizer*
    the server's (for ssgd, asgd and gsgd)."""
    server = {} if optimizer == "sgd" else {"optimizer": optimizer}
    raw = base_raw(
        run={"seed": 2, "algorithm": rule, "until": 40.0, "batch_size": 4, "eval_every": 10.0},
        workers=[
            {"name": "a", "count": n_workers // 2, "compute": {"dist": "exponential", "mean": 1}},
            {"name": "b", "count": n_workers - n_workers // 2, "compute": 2.5, **(network or {})},
        ],
        algorithms={
            "ssgd": {"lr": 0.1, **server},
            "asgd": {"lr": 0.1, **server},
            "gsgd": {"lr": 0.1, **server},
            "dcasgd_c": {"lr": 0.1},
        },
    )
    prep = prepare(make_scenario(raw))
    prep = replace(prep, model=Wide(), w0=np.ones(D, dtype=np.float32))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sim = Simulation(prep_scenario := make_scenario(raw), rule, prep)
        result = sim.run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert prep_scenario.n_workers == n_workers and result.updates > 10
    assert result.final_w.dtype == np.float32
    return (peak - before) / (4 * D)


@pytest.mark.parametrize("rule", ["ssgd", "asgd", "gsgd", "dcasgd_c"])
@pytest.mark.parametrize("n_workers", [2, 8])
def test_a_run_holds_at_most_workers_plus_four_models(rule, n_workers):
    assert _held(rule, n_workers) <= n_workers + 4


@pytest.mark.parametrize("rule", ["ssgd", "asgd"])
def test_gradients_in_transit_take_the_place_of_the_models_they_were_read_from(rule):
    """Pulls and pushes that take time (a latency): a worker whose gradient travels no
    longer holds the model it read."""
    assert _held(rule, 8, {"latency": 0.4}) <= 8 + 4


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
@pytest.mark.parametrize("rule", ["ssgd", "asgd", "gsgd"])
def test_adam_adds_its_two_moments_and_no_temporary_beyond(rule, optimizer):
    """Adam's m and v are two copies, and its scratch block (BLOCK entries) a fraction of
    one; its step takes the rule's own new array for the gradient and returns it as the
    step, which becomes the new model, so nothing else is model-sized."""
    assert _held(rule, 8, optimizer=optimizer) <= _held(rule, 8) + 2 + BLOCK / D + 0.05
