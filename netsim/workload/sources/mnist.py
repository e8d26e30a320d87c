"""The original MNIST IDX files (60000 + 10000 images of 28x28 pixels, 10 classes)."""

from __future__ import annotations

import numpy as np

from ..datasets import load_mnist
from .base import Arrays, DataSource, NoKeys, Request

__all__ = ["Mnist"]


class Mnist(DataSource[NoKeys]):
    name = "mnist"
    labellings = ("odd_even", "multiclass")
    default_labels = "odd_even"
    subdir = "mnist"
    error_key = "data.dir"
    fixed_split = True
    classes = 10

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        X_tr, y_tr, X_te, y_te, where = load_mnist(request.data_dir, request.scale)
        return X_tr, y_tr, X_te, y_te, 10, where, (1, 28, 28)
