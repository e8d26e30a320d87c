"""scikit-learn's bundled 8x8 digits (1797 rows, 64 features, 10 classes)."""

from __future__ import annotations

import numpy as np

from ..datasets import DIGITS_ROWS, split, train_rows
from .base import Arrays, DataSource, NoKeys, Request, Spec

__all__ = ["Digits"]


class Digits(DataSource[NoKeys]):
    name = "digits"
    labellings = ("odd_even", "multiclass")
    default_labels = "odd_even"
    sized = True
    classes = 10

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        from sklearn.datasets import load_digits

        digits = load_digits()
        X = digits.data / 16.0 if request.scale else digits.data
        y = digits.target.astype(np.int64)
        X_tr, y_tr, X_te, y_te = split(X, y, request.test_fraction, rng)
        return X_tr, y_tr, X_te, y_te, 10, "sklearn digits", (1, 8, 8)

    def train_rows(self, spec: Spec[NoKeys]) -> int | None:
        return train_rows(DIGITS_ROWS, spec.test_fraction)
