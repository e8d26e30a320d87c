"""A non-convex model: a multilayer perceptron (ReLU hidden layers, softmax output) in numpy.

The model follows the :class:`netsim.workload.models.Model` interface (stateless math
on a flat weight vector), so the engine treats it like the linear models; another
backend (e.g. a PyTorch module wrapped to read and write a flat vector) could be
registered the same way.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import Model

if TYPE_CHECKING:
    from .base import Features

__all__ = ["MLP", "layer_sizes"]


def layer_sizes(n_features: int, hidden: tuple[int, ...], n_classes: int) -> list[int]:
    """Widths of every layer, input to output: ``[n_features, *hidden, n_classes]``."""
    return [n_features, *hidden, n_classes]


class MLP(Model):
    """``x → ReLU(x W1 + b1) → ... → softmax(h W_L + b_L)`` with mean cross-entropy.

    The flat *w* (n_params,) concatenates, layer by layer, ``W_l`` (C order, shape
    (fan_in, fan_out)) then ``b_l`` (fan_out,). The objective is the mean
    cross-entropy plus ``l2/2 ||w||^2`` (biases included). 784-128-10 on MNIST has
    101,770 parameters.

    Parameters
    ----------
    l2 : float, L2 weight >= 0.
    n_classes : int >= 2.
    hidden : tuple of 1 or 2 ints > 0, the hidden widths (default (128,)).
    """

    name = "mlp"
    multiclass = True

    def __init__(
        self, l2: float = 0.0, n_classes: int = 2, hidden: tuple[int, ...] = (128,)
    ) -> None:
        super().__init__(l2, n_classes)
        self.hidden = tuple(hidden)

    def __repr__(self) -> str:
        return f"MLP(l2={self.l2!r}, n_classes={self.n_classes!r}, hidden={self.hidden!r})"

    def n_params(self, n_features: int) -> int:
        """``Σ_l (fan_in + 1)·fan_out``."""
        sizes = layer_sizes(n_features, self.hidden, self.n_classes)
        return sum((a + 1) * b for a, b in pairwise(sizes))

    def layers(self, w: np.ndarray, n_features: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Views ``(W_l (fan_in, fan_out), b_l (fan_out,))`` into *w*, input layer first."""
        sizes = layer_sizes(n_features, self.hidden, self.n_classes)
        out: list[tuple[np.ndarray, np.ndarray]] = []
        pos = 0
        for a, b in pairwise(sizes):
            W = w[pos : pos + a * b].reshape(a, b)
            pos += a * b
            out.append((W, w[pos : pos + b]))
            pos += b
        if pos != w.size:
            raise ValueError(
                f"weight vector of length {w.size} does not fit layers {sizes} ({pos} parameters)"
            )
        return out

    def init_weights(self, n_features: int, rng: np.random.Generator) -> np.ndarray:
        """He initialisation: ``W_l ~ N(0, 2/fan_in)``, ``b_l = 0``; ndarray (n_params,)."""
        w = np.zeros(self.n_params(n_features))
        for W, _ in self.layers(w, n_features):
            W[...] = rng.normal(0.0, np.sqrt(2.0 / W.shape[0]), W.shape)
        return w

    def _forward(
        self, w: np.ndarray, X: Features
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[Features], np.ndarray]:
        """Activations ``[X, h_1, ..., h_{L-1}]`` and the output scores (n, n_classes)."""
        layers = self.layers(w, X.shape[1])
        acts = [X]
        for W, b in layers[:-1]:
            h = acts[-1] @ W
            h += b
            np.maximum(h, 0.0, out=h)
            acts.append(h)
        W, b = layers[-1]
        Z = acts[-1] @ W
        Z += b
        return layers, acts, Z

    def decision_function(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Output scores (logits), ndarray (n_samples, n_classes)."""
        return self._forward(w, X)[2]

    def predict(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Arg-max class of each row: int64 ndarray (n_samples,)."""
        return np.argmax(self.decision_function(w, X), axis=1).astype(np.int64)

    def loss(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Mean cross-entropy over the rows plus ``l2/2 ||w||^2`` (float)."""
        Z = self.decision_function(w, X)
        Z -= Z.max(axis=1, keepdims=True)
        n = Z.shape[0]
        lse = np.log(np.exp(Z).sum(axis=1))
        return float(np.mean(lse - Z[np.arange(n), y])) + self._penalty(w)

    def gradient(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        """Back-propagated gradient of :meth:`loss`, a new ndarray (n_params,)."""
        layers, acts, Z = self._forward(w, X)
        n = Z.shape[0]
        Z -= Z.max(axis=1, keepdims=True)
        np.exp(Z, out=Z)
        Z *= (1.0 / n) / Z.sum(axis=1, keepdims=True)
        Z[np.arange(n), y] -= 1.0 / n
        delta = Z  # dL/d(scores), (n, fan_out)
        g = np.empty(w.size)
        grads = self.layers(g, X.shape[1])
        for l in range(len(layers) - 1, -1, -1):
            W, _ = layers[l]
            gW, gb = grads[l]
            a = acts[l]
            if sp.issparse(a):
                gW[...] = a.T @ delta
            else:
                np.matmul(a.T, delta, out=gW)
            delta.sum(axis=0, out=gb)
            if l:
                delta = delta @ W.T
                delta *= a > 0  # a = ReLU(z): its derivative is 1 where a > 0
        if self.l2:
            g += self.l2 * w
        return g

    def residual(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError(
            "an MLP gradient has no low-rank form; compact gradients need a linear model"
        )
