"""Differentiable models: loss, gradient and prediction on a flat weight vector.

The linear models live here; the MLP in :mod:`netsim.workload.mlp`. A new backend
registers a :class:`Model` subclass in :data:`MODELS`: the engine only calls
``n_params``, ``loss``, ``gradient``, ``predict`` (and ``init_weights`` for ``init = "he"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from .base import Model
from .mlp import MLP

if TYPE_CHECKING:
    from .base import Features

__all__ = [
    "Model",
    "MarginModel",
    "SmoothSVM",
    "Logistic",
    "Softmax",
    "MLP",
    "MODELS",
    "MULTICLASS",
    "BINARY",
    "make_model",
]


class MarginModel(Model):
    """A binary linear model whose residual is an elementwise function of the margins
    ``z = X @ w`` and the labels (:meth:`factor`), so k minibatches stack.

    numpy's matmul of stacked arrays makes, for each item, the same BLAS call as the
    product of that item alone (a matrix-vector product with the same strides), so
    :meth:`gradients` gives the bits of :meth:`gradient` with one call per step instead
    of k.
    """

    stacked = True

    def factor(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The residual from margins *z* and labels *y* of the same shape (..., b), a
        new array; the mean runs over the last axis (b rows)."""
        raise NotImplementedError

    def residual(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        return self.factor(X @ w, y)

    def gradients(self, W: np.ndarray, Xs: np.ndarray, Ys: np.ndarray) -> np.ndarray:
        Z = np.matmul(Xs, W[0]) if len(W) == 1 else np.matmul(Xs, W[:, :, None])[:, :, 0]
        R = self.factor(Z, Ys)
        G = np.matmul(Xs.transpose(0, 2, 1), R[:, :, None])[:, :, 0]
        if self.l2:
            G += self.l2 * W
        return G


class SmoothSVM(MarginModel):
    """Squared-hinge ("smooth") SVM, as in Table 1 of the GSGD paper.

    ``f(w) = l2/2 ||w||^2 + 1/(2N) sum_i max(0, 1 - s_i w^T x_i)^2`` with
    ``s_i = 2 y_i - 1`` in {-1, +1} and ``y_i`` in {0, 1}.
    """

    name = "smooth_svm"

    def loss(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Objective value (float).

        Parameters
        ----------
        w : ndarray of shape (n_features,)
        X : ndarray or CSR matrix of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,), labels in {0, 1}
        """
        s = 2.0 * y - 1.0
        h = np.maximum(1.0 - s * (X @ w), 0.0)
        return 0.5 * float(h @ h) / h.shape[0] + self._penalty(w)

    def factor(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``r`` with data gradient ``X^T r``: ``-max(0, 1 - s_i z_i) s_i / N``, ``z = X @ w``."""
        s = 2.0 * y - 1.0
        r = np.maximum(1.0 - s * z, 0.0)
        r *= s
        r *= -1.0 / r.shape[-1]
        return r


class Logistic(MarginModel):
    """Binary logistic regression.

    ``f(w) = l2/2 ||w||^2 - 1/N sum_i [y_i log sig(z_i) + (1 - y_i) log(1 - sig(z_i))]``
    with ``z_i = w^T x_i`` and ``y_i`` in {0, 1}, evaluated as the equal and
    overflow-free ``mean(logaddexp(0, z) - y z)``.
    """

    name = "logistic"

    def loss(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Objective value (float); finite for any finite margin.

        Parameters
        ----------
        w : ndarray of shape (n_features,)
        X : ndarray or CSR matrix of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,), labels in {0, 1}
        """
        z = X @ w
        return float(np.mean(np.logaddexp(0.0, z) - y * z)) + self._penalty(w)

    def factor(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``r`` with data gradient ``X^T r``: ``(sig(z_i) - y_i) / N``, ``z = X @ w``."""
        r = expit(z)
        r -= y
        r *= 1.0 / r.shape[-1]
        return r


class Softmax(Model):
    """Multinomial logistic regression (softmax + cross-entropy).

    The flat *w* of shape (n_features * n_classes,) is the C-order flattening
    of a matrix ``W`` of shape (n_features, n_classes); scores are ``X @ W``.
    ``f(w) = l2/2 ||w||^2 + 1/N sum_i [logsumexp_c (x_i^T W)_c - (x_i^T W)_{y_i}]``,
    evaluated after subtracting each row's maximum score.
    """

    name = "softmax"
    multiclass = True

    def n_params(self, n_features: int) -> int:
        """``n_features * n_classes``."""
        return n_features * self.n_classes

    def decision_function(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Scores ``X @ W``: ndarray of shape (n_samples, n_classes)."""
        return X @ w.reshape(-1, self.n_classes)

    def predict(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Arg-max class of each row: int64 ndarray of shape (n_samples,)."""
        return np.argmax(self.decision_function(w, X), axis=1).astype(np.int64)

    def _shifted_scores(self, w: np.ndarray, X: Features) -> np.ndarray:
        Z = X @ w.reshape(-1, self.n_classes)
        Z -= Z.max(axis=1, keepdims=True)
        return Z

    def loss(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Objective value (float): mean cross-entropy plus ``l2/2 ||w||^2``.

        Parameters
        ----------
        w : ndarray of shape (n_features * n_classes,)
        X : ndarray or CSR matrix of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,), labels in ``0 .. n_classes - 1``
        """
        Z = self._shifted_scores(w, X)
        n = Z.shape[0]
        lse = np.log(np.exp(Z).sum(axis=1))
        return float(np.mean(lse - Z[np.arange(n), y])) + self._penalty(w)

    def residual(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        """``R = (P - Y) / N`` of shape (n, n_classes); data gradient ``(X^T R).ravel()``."""
        P = self._shifted_scores(w, X)
        np.exp(P, out=P)
        n = P.shape[0]
        P *= (1.0 / n) / P.sum(axis=1, keepdims=True)
        P[np.arange(n), y] -= 1.0 / n
        return P


class CompactGradient:
    """A minibatch data gradient kept as its factors: ``dense() = expand(X[rows], r)``.

    *X* is the shared training matrix, *rows* (b,) the minibatch and *r* the model's
    :meth:`Model.residual` (b,) or (b, n_classes): b·(1 + n_classes) numbers instead of d.
    """

    __slots__ = ("X", "rows", "r")

    def __init__(self, X: Features, rows: np.ndarray, r: np.ndarray) -> None:
        self.X = X
        self.rows = rows
        self.r = r

    def dense(self) -> np.ndarray:
        """The gradient, ndarray (d,), a new array."""
        return Model.expand(self.X[self.rows], self.r)


MODELS: dict[str, type[Model]] = {cls.name: cls for cls in (Logistic, SmoothSVM, Softmax, MLP)}
"""Model classes by registry name."""

MULTICLASS = tuple(name for name, cls in MODELS.items() if cls.multiclass)
"""Models that take any number of classes."""
BINARY = tuple(name for name, cls in MODELS.items() if not cls.multiclass)
"""Models that need exactly 2 classes."""


def make_model(
    name: str, *, l2: float = 0.0, n_classes: int = 2, hidden: tuple[int, ...] = (128,)
) -> Model:
    """Build the model registered as *name*, after checking its settings.

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`: ``"smooth_svm"``, ``"logistic"``, ``"softmax"`` or ``"mlp"``.
    l2 : float, default 0.0
        L2 regularisation strength, finite and >= 0.
    n_classes : int, default 2
        Number of classes: 2 for the binary models, >= 2 for ``"softmax"`` and ``"mlp"``.
    hidden : tuple of 1 or 2 ints > 0, default (128,)
        Hidden-layer widths of ``"mlp"`` (ignored by the linear models).

    Returns
    -------
    Model

    Raises
    ------
    ValueError
        If *name* is unknown or *l2* / *n_classes* are out of range.
    """
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(sorted(MODELS))}")
    if not (np.isfinite(l2) and l2 >= 0):
        raise ValueError(f"l2 must be finite and >= 0, got {l2!r}")
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    if name not in MULTICLASS and n_classes != 2:
        raise ValueError(
            f"model {name!r} is binary and needs n_classes=2, got {n_classes!r}; use 'softmax'"
        )
    if name == "mlp":
        if not 1 <= len(hidden) <= 2 or not all(
            isinstance(h, (int, np.integer)) and h > 0 for h in hidden
        ):
            raise ValueError(f"hidden must be 1 or 2 layer widths > 0, got {hidden!r}")
        return MLP(l2=float(l2), n_classes=int(n_classes), hidden=tuple(int(h) for h in hidden))
    return MODELS[name](l2=float(l2), n_classes=int(n_classes))
