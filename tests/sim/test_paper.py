"""The GSGD paper's finding on MNIST odd/even (Gao & Chen 2020), for both models.

At equal simulated time (T = 600 units) GSGD reaches the lowest training loss;
at an equal number of updates SSGD is best (it never applies a stale gradient).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import ROOT, SHARED_DATA, needs_mnist

from netsim.config.scenario import load_scenario
from netsim.sim.engine import prepare, simulate
from netsim.workload.models import make_model

pytestmark = needs_mnist
PAPER = ROOT / "scenarios" / "gsgd_paper.toml"


@pytest.fixture(scope="module")
def data_dir():
    return str(SHARED_DATA)


@pytest.fixture(scope="module")
def prepared(data_dir):
    return prepare(load_scenario(PAPER, data_dir=data_dir))


@pytest.mark.parametrize("model", ["logistic", "smooth_svm"])
def test_gsgd_lowest_loss_at_equal_time(model, prepared, data_dir):
    sc = load_scenario(PAPER, [f"model.name={model}", "run.eval_every=0"], data_dir=data_dir)
    prep = prepare_like(prepared, sc)
    loss = {
        name: simulate(sc, name, prepared=prep).curve[-1][2] for name in ("ssgd", "asgd", "gsgd")
    }
    assert loss["gsgd"] < loss["ssgd"] and loss["gsgd"] < loss["asgd"], loss


@pytest.mark.parametrize("model", ["logistic", "smooth_svm"])
def test_ssgd_best_per_update(model, prepared, data_dir):
    # 199 updates = the SSGD rounds that fit in T = 600 (a round takes 3 units).
    sc = load_scenario(
        PAPER,
        [f"model.name={model}", "run.eval_every=0", "run.until=100000", "run.max_updates=199"],
        data_dir=data_dir,
    )
    prep = prepare_like(prepared, sc)
    loss = {}
    for name in ("ssgd", "asgd", "gsgd"):
        result = simulate(sc, name, prepared=prep)
        assert result.updates == 199
        loss[name] = result.curve[-1][2]
    assert loss["ssgd"] < loss["gsgd"] < loss["asgd"], loss


def prepare_like(prepared, sc):
    """The same data, shards and initial model with the scenario's model (λ differs per model)."""
    return replace(prepared, model=make_model(sc.model.name, l2=sc.model.l2, n_classes=2))
