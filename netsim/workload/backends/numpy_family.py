"""The numpy model family: logistic, smooth SVM, softmax and the ReLU MLP (float64)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table
from ..models import BINARY, MODELS, make_model
from ..torch_nets import DTYPES
from .base import Backend, read_l2, read_widths

__all__ = ["Numpy"]

NAMES = tuple(MODELS)
INITS = ("zeros", "normal", "he")


class Numpy(Backend):
    name = "numpy"
    binary_models = tuple(BINARY)
    params_known = True

    def read(self, t: Table, path: Path) -> dict:
        name = t.get("name", str, "logistic", choices=NAMES)
        l2 = read_l2(t, name, NAMES)
        init = t.get("init", str, "he" if name == "mlp" else "zeros", choices=INITS)
        if name == "mlp" and init == "zeros":
            raise ScenarioError(
                t.key("init"),
                "'zeros' leaves every hidden unit of the MLP identical (allowed: he, normal)",
            )
        if name != "mlp" and init == "he":
            raise ScenarioError(
                t.key("init"), f"'he' applies to the MLP only (allowed for {name}: zeros, normal)"
            )
        if name != "mlp" and t.has("hidden"):
            raise ScenarioError(t.key("hidden"), f"applies to model 'mlp' only (model is {name!r})")
        hidden = read_widths(t, "hidden", [128], 1, 2)
        if t.get("master_dtype", str, "float64", choices=DTYPES) != "float64":
            raise ScenarioError(
                t.key("master_dtype"),
                "'float32' needs backend = 'torch' (numpy models compute in float64; allowed: float64)",
            )
        return {
            "name": name,
            "l2": l2,
            "init": init,
            "init_scale": t.get("init_scale", float, 0.01, positive=True),
            "hidden": hidden,
        }

    def build(
        self, spec: Any, dataset: Any, rng: np.random.Generator, n_workers: int
    ) -> tuple[Any, np.ndarray | None, int]:
        model: Any = make_model(
            spec.name, l2=spec.l2, n_classes=dataset.n_classes, hidden=spec.hidden
        )
        d = model.n_params(dataset.X_train.shape[1])
        w0 = model.init_weights(dataset.X_train.shape[1], rng) if spec.init == "he" else None
        return model, w0, d

    def low_rank(self, spec: Any) -> bool:
        return bool(spec.name != "mlp")

    def eval_width(self, spec: Any, n_classes: int) -> int:
        return int({"softmax": n_classes, "mlp": spec.hidden[0]}.get(spec.name, 1))

    def n_params(self, spec: Any, features: int, classes: int) -> int:
        model = make_model(spec.name, l2=spec.l2, n_classes=classes, hidden=spec.hidden)
        return int(model.n_params(features))
