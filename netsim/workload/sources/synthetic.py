"""Gaussian features labelled by a noisy linear teacher (``n_samples`` × ``n_features``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table
from ..datasets import split, synthetic, train_rows
from .base import Arrays, DataSource, Request

__all__ = ["Synthetic", "MAX_VALUES"]

MAX_VALUES = 50_000_000
"""Most rows × features (400 MB of float64)."""


class Synthetic(DataSource):
    name = "synthetic"
    rows_hint = "raise data.n_samples"
    n_features = (20, 1)

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        X, y = synthetic(rng, request.n_samples, request.n_features, request.n_classes)
        X_tr, y_tr, X_te, y_te = split(X, y, request.test_fraction, rng)
        return X_tr, y_tr, X_te, y_te, request.n_classes, "synthetic", None

    def check(self, spec: Any, t: Table) -> None:
        if spec.n_samples * spec.n_features > MAX_VALUES:
            raise ScenarioError(
                t.key("n_samples"),
                f"{spec.n_samples} rows × {spec.n_features} features is more than "
                f"{MAX_VALUES:.0e} values (400 MB); lower n_samples or n_features",
            )

    def n_labels(self, spec: Any) -> int | None:
        return int(spec.n_classes)

    def train_rows(self, spec: Any) -> int | None:
        return train_rows(spec.n_samples, spec.test_fraction)
