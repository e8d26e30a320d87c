"""The data a user's function returns (``data.function = "package.module:function"``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table, check_path
from ..datasets import load_callable
from .base import Arrays, DataSource, Request, Spec

__all__ = ["Function", "FunctionKeys"]


@dataclass(frozen=True)
class FunctionKeys:
    """``data.function`` (``"package.module:function"``) and ``data.function_dir``, the
    folder its module is imported from first (absolute; default: the scenario's)."""

    function: str
    function_dir: str


class Function(DataSource[FunctionKeys]):
    name = "callable"
    default_labels = "multiclass"
    error_key = "data.function"
    example = {"function": "package.module:make"}

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        X_tr, y_tr, X_te, y_te, k, shape, where = load_callable(request.function)
        return X_tr, y_tr, X_te, y_te, k, where, shape

    def read(self, t: Table, path: Path) -> FunctionKeys:
        """``data.function``, imported from ``data.function_dir`` (default: the scenario's
        folder) first: it must import and be callable (it is called when the data loads)."""
        from ..torch_nets import load_attribute

        function = t.get("function", str)
        given = check_path(t.get("function_dir", str, "."), t.key("function_dir"))
        folder = (path.parent / os.path.expanduser(str(given))).resolve()
        if t.has("function_dir") and not folder.is_dir():
            raise ScenarioError(t.key("function_dir"), f"{folder} is not a folder (the function's)")
        try:
            found = load_attribute(function, folder, "package.module:function")
        except ValueError as exc:
            raise ScenarioError(t.key("function"), str(exc)) from None
        if not callable(found):
            raise ScenarioError(
                t.key("function"), f"{function!r} is a {type(found).__name__}, not a function"
            )
        return FunctionKeys(function, str(folder))

    def request(self, spec: Spec[FunctionKeys]) -> dict[str, Any]:
        return {"function": (spec.own.function, spec.own.function_dir)}

    def resolve(self, spec: Spec[FunctionKeys], table: dict) -> None:
        table["function_dir"] = spec.own.function_dir  # imported from there
