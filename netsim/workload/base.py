"""The model contract: stateless math on a flat weight vector (see :class:`Model`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from typing import TypeAlias

    from scipy.sparse import csr_matrix

    from .buffers import Buffers

    Features: TypeAlias = np.ndarray | csr_matrix
    """Data rows, (n_samples, n_features): a float64 ndarray or a scipy.sparse CSR matrix."""

__all__ = ["Model"]


class Model:
    """Base class of the linear models trained by the parameter server.

    A model is stateless math: the weights live outside it, as a flat vector *w*
    that the server owns and the workers copy. Every method takes

    - ``w``: ndarray of shape (n_params,), float64;
    - ``X``: ndarray of shape (n_samples, n_features), float64, or a
      ``scipy.sparse`` CSR matrix of that shape (only ``X @ v`` and ``X.T @ v``
      are used, so both work unchanged);
    - ``y``: ndarray of shape (n_samples,), int64, class labels in
      ``0 .. n_classes - 1``.

    The objective is the mean loss over the rows plus ``l2 / 2 * ||w||^2``.
    There is no bias term (the models use ``w^T x`` as in the GSGD paper); a
    constant feature can be appended by the data set (``add_bias=True`` in
    :func:`netsim.workload.sources.load_dataset`).

    Parameters
    ----------
    l2 : float, default 0.0
        L2 regularisation strength (lambda), >= 0.
    n_classes : int, default 2
        Number of classes; the binary models need 2.

    Notes
    -----
    As in scikit-learn, the constructor only stores its arguments;
    :func:`make_model` is the validating front door.
    """

    name: str = ""
    vectors: Buffers | None = None
    """Where a run's model-sized vectors come from (a :class:`~netsim.workload.buffers.Buffers`,
    set by a model's :meth:`for_run`), or None: new arrays."""
    multiclass: bool = False
    """True when the model takes any number of classes (False: exactly 2)."""
    """Registry key in :data:`MODELS`."""

    def __init__(self, l2: float = 0.0, n_classes: int = 2) -> None:
        self.l2 = l2
        self.n_classes = n_classes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(l2={self.l2!r}, n_classes={self.n_classes!r})"

    def n_params(self, n_features: int) -> int:
        """Length of the flat weight vector for *n_features* input features."""
        return n_features

    def loss(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Objective value: mean loss over the rows of *X* plus ``l2/2 ||w||^2``."""
        raise NotImplementedError

    def gradient(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        """Gradient of :meth:`loss` with respect to *w*: ``X^T r + l2 w`` with ``r`` the
        model's :meth:`residual`; a new ndarray of shape (n_params,).

        smooth SVM: ``l2 w - 1/N sum_i max(0, 1 - s_i w^T x_i) s_i x_i``; logistic:
        ``l2 w + 1/N sum_i (sig(w^T x_i) - y_i) x_i``; softmax: ``l2 w + 1/N X^T (P - Y)``
        flattened in C order.
        """
        r = self.residual(w, X, y)
        g = (
            X.T @ r if r.ndim == 1 else (X.T @ r).ravel()
        )  # expand(X, r), one call less per gradient
        if self.l2:
            g += self.l2 * w
        return g

    def decision_function(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Raw scores ``X @ w``: ndarray of shape (n_samples,)."""
        return X @ w

    def predict(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Predicted labels: int64 ndarray of shape (n_samples,); 1 where ``w^T x > 0``."""
        return (self.decision_function(w, X) > 0).astype(np.int64)

    def accuracy(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Fraction of rows whose predicted label equals *y*, in [0, 1]."""
        return float(np.mean(self.predict(w, X) == y))

    def residual(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        """Per-row factor ``r`` of the data term: its gradient is ``expand(X, r)``.

        A minibatch gradient of a linear model has rank at most the batch size; keeping
        ``r`` (and the rows) instead of the dense gradient is what compact gradients do.
        """
        raise NotImplementedError

    @staticmethod
    def expand(X: Features, r: np.ndarray) -> np.ndarray:
        """The data gradient ``X^T r`` as a flat array (d,) (C order for a matrix ``r``)."""
        return (X.T @ r).ravel()

    def start_run(self, seed: int) -> None:
        """Called as a run starts, with its seed: a model that draws random numbers while
        computing (dropout) restarts its draws here; the numpy models draw none."""

    def export_info(self) -> dict:
        """What a run folder's model file records beside the weights (plain values)."""
        return {"backend": "numpy", "name": self.name}

    def for_run(self, seed: int) -> "Model":
        """The model one run of seed *seed* computes with (:meth:`start_run` called): itself
        for a model without state of its own; a torch model gives a copy with its own
        dropout draws and buffers."""
        self.start_run(seed)
        return self

    def _penalty(self, w: np.ndarray) -> float:
        return 0.5 * self.l2 * float(w @ w) if self.l2 else 0.0

    stacked: bool = False
    """Whether :meth:`gradients` evaluates k minibatches as one stacked product per step
    (else it calls :meth:`gradient` k times)."""

    def gradients(self, W: np.ndarray, Xs: np.ndarray, Ys: np.ndarray) -> np.ndarray:
        """Gradients of k minibatches of b rows, ndarray (k, n_params): row i is
        ``gradient(W[i], Xs[i], Ys[i])`` bit for bit.

        *W* (k, n_params), or (1, n_params) when all k share one model; *Xs* dense
        (k, b, n_features); *Ys* (k, b).
        """
        return np.stack(
            [self.gradient(W[i if len(W) > 1 else 0], Xs[i], Ys[i]) for i in range(len(Xs))]
        )
