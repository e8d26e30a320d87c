"""Gaussian features labelled by a noisy linear teacher (``n_samples`` × ``n_features``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table
from ..datasets import MAX_FEATURES, MAX_SAMPLES, split, synthetic, train_rows
from .base import Arrays, DataSource, Request, Spec

__all__ = ["Synthetic", "SyntheticKeys", "MAX_VALUES", "MAX_CLASSES"]

MAX_VALUES = 50_000_000
"""Most rows × features (400 MB of float64)."""

MAX_CLASSES = 1000
"""Most ``data.n_classes``."""


@dataclass(frozen=True)
class SyntheticKeys:
    """``data.n_samples`` rows (train and test) of ``n_features`` features, ``n_classes``
    classes."""

    n_samples: int = 2000
    n_features: int = 20
    n_classes: int = 2


class Synthetic(DataSource[SyntheticKeys]):
    name = "synthetic"
    rows_hint = "raise data.n_samples"

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        X, y = synthetic(rng, request.n_samples, request.n_features, request.n_classes)
        X_tr, y_tr, X_te, y_te = split(X, y, request.test_fraction, rng)
        return X_tr, y_tr, X_te, y_te, request.n_classes, "synthetic", None

    def read(self, t: Table, path: Path) -> SyntheticKeys:
        """``n_features``, ``n_samples``, ``n_classes``: at most :data:`MAX_VALUES` values."""
        keys = SyntheticKeys(
            n_features=t.get("n_features", int, 20, minimum=1, maximum=MAX_FEATURES),
            n_samples=t.get("n_samples", int, 2000, minimum=2, maximum=MAX_SAMPLES),
            n_classes=t.get("n_classes", int, 2, minimum=2, maximum=MAX_CLASSES),
        )
        if keys.n_samples * keys.n_features > MAX_VALUES:
            raise ScenarioError(
                t.key("n_samples"),
                f"{keys.n_samples} rows × {keys.n_features} features is more than "
                f"{MAX_VALUES:.0e} values (400 MB); lower n_samples or n_features",
            )
        return keys

    def request(self, spec: Spec[SyntheticKeys]) -> dict[str, Any]:
        own = spec.own
        return {
            "n_samples": own.n_samples,
            "n_features": own.n_features,
            "n_classes": own.n_classes,
        }

    def n_labels(self, spec: Spec[SyntheticKeys]) -> int | None:
        return int(spec.own.n_classes)

    def train_rows(self, spec: Spec[SyntheticKeys]) -> int | None:
        return train_rows(spec.own.n_samples, spec.test_fraction)
