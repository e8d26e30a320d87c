"""What a model family (``model.backend``) is: the keys it reads, how it builds a model,
what it allows; and the readers the families share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table

__all__ = ["Backend", "read_l2", "read_widths", "freeze", "thaw"]


class Backend:
    """One ``model.backend``: subclass, set the attributes, define :meth:`read` and
    :meth:`build`, and add an instance to :data:`~netsim.workload.backends.BACKENDS`.

    Attributes: *name*; *binary_models* (its model names that need 2 classes);
    *shapes_known* (its parameters' shapes tell the 1-d ones: ``weight_decay_1d``);
    *params_known* (:meth:`n_params` counts a model before it is built); *tag* (shown after
    the model in a run's heading).
    """

    name = ""
    binary_models: tuple[str, ...] = ()
    shapes_known = False
    params_known = False
    tag = ""

    def read(self, t: Table, path: Path) -> dict:
        """The ``[model]`` keys it reads, as ModelSpec fields (*path*: the scenario file's)."""
        raise NotImplementedError

    def build(
        self, spec: Any, dataset: Any, rng: np.random.Generator, n_workers: int
    ) -> tuple[Any, np.ndarray | None, int]:
        """(model, its initial weights or None to draw them from ``init``, parameters)."""
        raise NotImplementedError

    def low_rank(self, spec: Any) -> bool:
        """Whether a minibatch gradient has a low-rank form (``run.compact_gradients``)."""
        return False

    def eval_width(self, spec: Any, n_classes: int) -> int:
        """Multiply-adds per data entry of one evaluated row (a lower bound)."""
        return 1

    def n_params(self, spec: Any, features: int, classes: int) -> int:
        """Parameters of a model of *features* inputs and *classes* outputs, before it is
        built (where *params_known*)."""
        raise NotImplementedError

    def examples(self, dataset: Any, model: Any) -> Any:
        """*dataset* as the model reads it (its dtype)."""
        return dataset


def read_l2(t: Table, name: str, names: Any) -> float:
    """``l2``: a number >= 0, or a table of them per model name (*names*: the keys allowed)."""
    l2 = t.get("l2", (float, dict), 0.0)
    if isinstance(l2, dict):
        per_model = t.table("l2")
        for key in per_model.data:
            per_model.get(key, float, minimum=0.0)
            if key not in names:
                raise ScenarioError(
                    per_model.key(key), f"unknown model (allowed: {', '.join(names)})"
                )
        return float(per_model.data.get(name, 0.0))
    return float(t.get("l2", float, 0.0, minimum=0.0))


def read_widths(t: Table, key: str, default: list, lo: int, hi: int | None) -> tuple[int, ...]:
    """A list of *lo*..*hi* (None: any number of) positive integers."""
    widths = t.get(key, list, default)
    if not lo <= len(widths) <= (hi or len(widths)) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in widths
    ):
        count = f"{lo} or {hi}" if hi else f"{lo} or more"
        raise ScenarioError(t.key(key), f"expected {count} layer widths > 0, got {widths!r}")
    return tuple(widths)


def freeze(value: Any) -> Any:
    """A TOML value as a hashable one (tables → sorted pairs tagged ``dict``, arrays → tuples)."""
    if isinstance(value, dict):
        return ("__dict__", tuple(sorted((k, freeze(v)) for k, v in value.items())))
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "__dict__":
        return {k: thaw(v) for k, v in value[1]}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value
