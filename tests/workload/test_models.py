"""Tests of netsim.workload.models against finite differences and hand-computed values."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import central_differences

from netsim.workload.models import (
    MODELS,
    Logistic,
    Model,
    SmoothSVM,
    Softmax,
    make_model,
)


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def random_problem(seed, n_classes, n=9, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, n_classes, n)
    return X, y, rng


# ------------------------------------------------------------------ gradients


@pytest.mark.parametrize(
    "name,n_classes", [("smooth_svm", 2), ("logistic", 2), ("softmax", 2), ("softmax", 4)]
)
@pytest.mark.parametrize("l2", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_central_differences(name, n_classes, l2, seed):
    X, y, rng = random_problem(seed, n_classes)
    model = make_model(name, l2=l2, n_classes=n_classes)
    w = rng.standard_normal(model.n_params(X.shape[1]))
    g = model.gradient(w, X, y)
    fd = central_differences(lambda v: model.loss(v, X, y), w)
    assert g.shape == w.shape
    assert np.linalg.norm(g - fd) / np.linalg.norm(fd) < 1e-6


@pytest.mark.parametrize("name,n_classes", [("smooth_svm", 2), ("logistic", 2), ("softmax", 3)])
def test_gradient_returns_new_array_and_leaves_inputs(name, n_classes):
    X, y, rng = random_problem(5, n_classes)
    model = make_model(name, l2=0.1, n_classes=n_classes)
    w = rng.standard_normal(model.n_params(X.shape[1]))
    w0, X0, y0 = w.copy(), X.copy(), y.copy()
    g1 = model.gradient(w, X, y)
    g2 = model.gradient(w, X, y)
    assert g1 is not g2 and not np.shares_memory(g1, w)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# ------------------------------------------------------------------ closed forms at w = 0


def test_values_at_zero():
    X, y, _ = random_problem(3, 2)
    w = np.zeros(5)
    s = 2 * y - 1
    assert SmoothSVM(l2=1.0).loss(w, X, y) == pytest.approx(0.5)
    assert Logistic(l2=1.0).loss(w, X, y) == pytest.approx(math.log(2))
    np.testing.assert_allclose(SmoothSVM().gradient(w, X, y), -(X * s[:, None]).mean(axis=0))
    np.testing.assert_allclose(Logistic().gradient(w, X, y), ((0.5 - y)[:, None] * X).mean(axis=0))
    for C in (2, 3, 10):
        y_c = np.arange(9) % C
        assert Softmax(n_classes=C).loss(np.zeros(5 * C), X, y_c) == pytest.approx(math.log(C))


# ------------------------------------------------------------------ hand-computed two-sample examples

X2 = np.array([[1.0, 2.0], [3.0, -1.0]])
Y2 = np.array([1, 0])
W2 = np.array([0.5, -0.25])  # scores z = [0, 1.75]


def test_smooth_svm_two_samples():
    # s = [1, -1]; hinge terms 1 - s z = [1, 2.75]
    model = SmoothSVM(l2=0.2)
    assert model.loss(W2, X2, Y2) == pytest.approx(
        (1 + 2.75**2) / 4 + 0.1 * (0.25 + 0.0625)
    )  # 2.171875
    # -(1/2)[1*[1, 2] - 2.75*[3, -1]] + 0.2 w
    np.testing.assert_allclose(model.gradient(W2, X2, Y2), [3.625 + 0.1, -2.375 - 0.05])


def test_smooth_svm_ignores_rows_beyond_the_margin():
    X = np.array([[1.0, 0.0], [0.0, -1.0]])
    w = np.array([2.0, 3.0])  # s z = [2, 3] > 1 for y = [1, 0]
    assert SmoothSVM().loss(w, X, np.array([1, 0])) == 0.0
    np.testing.assert_array_equal(SmoothSVM().gradient(w, X, np.array([1, 0])), [0.0, 0.0])


def test_logistic_two_samples():
    model = Logistic(l2=0.2)
    expected = 0.5 * (math.log(2) + math.log(1 + math.exp(1.75))) + 0.1 * 0.3125
    assert model.loss(W2, X2, Y2) == pytest.approx(expected, rel=1e-12)
    p = sigmoid(1.75)
    grad = 0.5 * (-0.5 * X2[0] + p * X2[1]) + 0.2 * W2
    np.testing.assert_allclose(model.gradient(W2, X2, Y2), grad, rtol=1e-12)


def test_softmax_two_samples():
    X = np.eye(2)
    W = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])  # rows of scores [1,0,0] and [0,2,0]
    y = np.array([0, 2])
    e = math.e
    model = Softmax(n_classes=3)
    expected = 0.5 * ((math.log(e + 2) - 1) + math.log(e**2 + 2))
    assert model.loss(W.ravel(), X, y) == pytest.approx(expected, rel=1e-12)
    p1 = np.array([e, 1, 1]) / (e + 2)
    p2 = np.array([1, e**2, 1]) / (e**2 + 2)
    G = 0.5 * np.array([p1 - [1, 0, 0], p2 - [0, 0, 1]])
    np.testing.assert_allclose(model.gradient(W.ravel(), X, y), G.ravel(), rtol=1e-12)
    np.testing.assert_array_equal(model.predict(W.ravel(), X), [0, 1])
    assert model.accuracy(W.ravel(), X, y) == 0.5


def test_binary_predict_and_accuracy():
    # z = [0, 1.75]: 0 is not > 0, so the predictions are [0, 1]; labels [1, 0] -> none right
    for model in (SmoothSVM(), Logistic()):
        pred = model.predict(W2, X2)
        assert pred.dtype == np.int64
        np.testing.assert_array_equal(pred, [0, 1])
        assert model.accuracy(W2, X2, Y2) == 0.0
        assert model.accuracy(W2, X2, np.array([0, 1])) == 1.0


# ------------------------------------------------------------------ numerical stability


@pytest.mark.parametrize(
    "z,y,expected", [(1000.0, 1, 0.0), (1000.0, 0, 1000.0), (-1000.0, 1, 1000.0), (-1000.0, 0, 0.0)]
)
def test_logistic_huge_margin(z, y, expected):
    X = np.array([[1.0]])
    loss = Logistic().loss(np.array([z]), X, np.array([y]))
    assert loss == pytest.approx(expected, abs=1e-9)
    g = Logistic().gradient(np.array([z]), X, np.array([y]))
    assert np.all(np.isfinite(g)) and abs(g[0]) <= 1.0


def test_softmax_huge_scores():
    X = np.array([[1.0]])
    w = np.array([1000.0, -1000.0, 0.0])  # scores [1000, -1000, 0]
    model = Softmax(n_classes=3)
    assert model.loss(w, X, np.array([0])) == pytest.approx(0.0, abs=1e-9)
    assert model.loss(w, X, np.array([2])) == pytest.approx(1000.0)
    assert model.loss(w, X, np.array([1])) == pytest.approx(2000.0)
    g = model.gradient(w, X, np.array([1]))
    np.testing.assert_allclose(g, [1.0, -1.0, 0.0], atol=1e-12)


def test_smooth_svm_huge_margin_is_finite():
    X = np.array([[1.0]])
    assert SmoothSVM().loss(np.array([1e6]), X, np.array([0])) == pytest.approx(
        0.5 * (1 + 1e6) ** 2
    )
    assert SmoothSVM().loss(np.array([1e6]), X, np.array([1])) == 0.0


# ------------------------------------------------------------------ sparse input


@pytest.mark.parametrize("name,n_classes", [("smooth_svm", 2), ("logistic", 2), ("softmax", 3)])
def test_sparse_matches_dense(name, n_classes):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((20, 6)) * (rng.random((20, 6)) < 0.3)
    y = rng.integers(0, n_classes, 20)
    model = make_model(name, l2=0.05, n_classes=n_classes)
    w = rng.standard_normal(model.n_params(6))
    Xs = sp.csr_matrix(X)
    assert model.loss(w, Xs, y) == pytest.approx(model.loss(w, X, y), rel=1e-12)
    gs = model.gradient(w, Xs, y)
    assert isinstance(gs, np.ndarray) and gs.shape == w.shape
    np.testing.assert_allclose(gs, model.gradient(w, X, y), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(model.predict(w, Xs), model.predict(w, X))


# ------------------------------------------------------------------ registry


def test_registry_and_n_params():
    from netsim.workload.mlp import MLP

    assert MODELS == {"smooth_svm": SmoothSVM, "logistic": Logistic, "softmax": Softmax, "mlp": MLP}
    for name, cls in MODELS.items():
        assert cls.name == name and issubclass(cls, Model)
    assert make_model("logistic", l2=0.5).n_params(123) == 123
    assert make_model("softmax", l2=0.0, n_classes=10).n_params(784) == 7840
    m = make_model("smooth_svm", l2=1e-3)
    assert (type(m), m.l2, m.n_classes) == (SmoothSVM, 1e-3, 2)


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        (dict(name="svm"), "'svm'"),
        (dict(name="logistic", l2=-1.0), "-1.0"),
        (dict(name="logistic", l2=float("nan")), "nan"),
        (dict(name="logistic", n_classes=3), "3"),
        (dict(name="softmax", n_classes=1), "1"),
    ],
)
def test_make_model_rejects(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        make_model(kwargs.pop("name"), **kwargs)
