"""The user's arrays in an ``.npz`` file (``data.path``: X_train, y_train, X_test, y_test)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...params import Table, check_path
from ..datasets import load_npz
from .base import Arrays, DataSource, Request, Spec

__all__ = ["Npz", "NpzKeys"]


@dataclass(frozen=True)
class NpzKeys:
    """``data.path``: the file, absolute."""

    path: str


class Npz(DataSource[NpzKeys]):
    name = "npz"
    default_labels = "multiclass"
    error_key = "data.path"
    example = {"path": "data.npz"}

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        X_tr, y_tr, X_te, y_te, k, shape, where = load_npz(request.npz_path)
        return X_tr, y_tr, X_te, y_te, k, where, shape

    def read(self, t: Table, path: Path) -> NpzKeys:
        """``data.path``, resolved against the scenario's folder."""
        given = check_path(t.get("path", str), t.key("path"))
        return NpzKeys(str((path.parent / os.path.expanduser(str(given))).resolve()))

    def request(self, spec: Spec[NpzKeys]) -> dict[str, Any]:
        return {"npz_path": spec.own.path}

    def resolve(self, spec: Spec[NpzKeys], table: dict) -> None:
        table["path"] = spec.own.path  # read from the scenario's folder
