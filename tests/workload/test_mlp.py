"""The MLP: back-propagation against central finite differences, sizes, He init, a short run."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import base_raw, central_differences, make_scenario

from netsim.errors import ScenarioError
from netsim.sim.engine import prepare, simulate
from netsim.workload.models import make_model


@pytest.mark.parametrize("hidden,l2", [((6,), 0.0), ((5, 4), 0.1)])
def test_gradient_matches_finite_differences(hidden, l2):
    rng = np.random.default_rng(0)
    model = make_model("mlp", l2=l2, n_classes=3, hidden=hidden)
    X = rng.normal(size=(7, 4))
    y = rng.integers(0, 3, 7)
    w = rng.normal(0, 0.7, model.n_params(4))
    # keep every pre-activation away from the ReLU kink so the loss is smooth within ±h
    for W, b in model.layers(w, 4)[:-1]:
        b += 0.05
    g = model.gradient(w, X, y)
    fd = central_differences(lambda v: model.loss(v, X, y), w, h=1e-6)
    assert np.abs(g - fd).max() <= 1e-7 * max(1.0, np.abs(fd).max())


def test_sparse_input_gives_the_same_gradient():
    rng = np.random.default_rng(1)
    model = make_model("mlp", n_classes=4, hidden=(8,))
    X = rng.normal(size=(10, 6)) * (rng.random((10, 6)) < 0.4)
    y = rng.integers(0, 4, 10)
    w = model.init_weights(6, rng)
    assert np.allclose(
        model.gradient(w, sp.csr_matrix(X), y), model.gradient(w, X, y), rtol=1e-12, atol=1e-14
    )


def test_sizes_on_mnist_shape():
    model = make_model("mlp", n_classes=10, hidden=(128,))
    assert model.n_params(784) == 784 * 128 + 128 + 128 * 10 + 10 == 101770
    assert (
        make_model("mlp", n_classes=10, hidden=(64, 32)).n_params(784)
        == 785 * 64 + 65 * 32 + 33 * 10
    )


def test_he_init_scale_and_zero_biases():
    model = make_model("mlp", n_classes=10, hidden=(200,))
    w = model.init_weights(400, np.random.default_rng(2))
    (W1, b1), (W2, b2) = model.layers(w, 400)
    assert not b1.any() and not b2.any()
    assert W1.std() == pytest.approx(np.sqrt(2 / 400), rel=0.02)
    assert W2.std() == pytest.approx(np.sqrt(2 / 200), rel=0.05)


def test_mlp_trains_on_digits():
    raw = base_raw(
        data={"source": "digits", "labels": "multiclass"},
        model={"name": "mlp", "hidden": [32]},
        algorithms={"asgd": {"lr": 0.1}},
    )
    raw["run"].update(until=60.0, eval_every=30.0)
    r = simulate(make_scenario(raw))
    assert r.curve[-1][2] < 0.6 * r.curve[0][2] and r.curve[-1][3] > 0.7


def test_initial_model_is_he_from_the_seed():
    raw = base_raw(
        data={"source": "digits", "labels": "multiclass"}, model={"name": "mlp", "hidden": [16]}
    )
    sc = make_scenario(raw)
    a, b = prepare(sc).w0, prepare(sc).w0
    assert a.tobytes() == b.tobytes() and a.size == 65 * 16 + 17 * 10


@pytest.mark.parametrize(
    "model,key",
    [
        ({"name": "mlp", "init": "zeros"}, "model.init"),
        ({"name": "mlp", "hidden": [0]}, "model.hidden"),
        ({"name": "mlp", "hidden": [4, 4, 4]}, "model.hidden"),
        ({"name": "softmax", "hidden": [4]}, "model.hidden"),
        ({"name": "softmax", "init": "he"}, "model.init"),
    ],
)
def test_bad_model_keys(model, key):
    with pytest.raises(ScenarioError) as info:
        make_scenario(base_raw(data={"source": "digits", "labels": "multiclass"}, model=model))
    assert info.value.key == key
