"""``[model]``: the model family (backend), the model, its L2 weight and initial model."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ScenarioError
from ..params import Table, check_path
from ..rules import RULES
from ..workload.models import BINARY, MODELS
from ..workload.torch_nets import DTYPES as TORCH_DTYPES
from ..workload.torch_nets import LOSSES as TORCH_LOSSES
from ..workload.torch_nets import TORCH_INSTALL, TORCH_NETS, torch_missing

__all__ = ["ModelSpec", "MODEL_NAMES", "BACKENDS"]

MODEL_NAMES = tuple(MODELS)


BACKENDS = ("numpy", "torch")


TORCH_INITS = ("default", "zeros", "normal")


DEVICES = ("cpu", "cuda")


MAX_THREADS = 256


INITS = ("zeros", "normal", "he")


BINARY_MODELS = BINARY


@dataclass(frozen=True)
class ModelSpec:
    """``[model]``: the model, its L2 weight λ and its initial model.

    ``backend = "numpy"`` (default): *name* is one of :data:`MODEL_NAMES`, *hidden* the
    MLP's widths (``init = "he"``: He normal weights, zero biases; the MLP's default).
    ``backend = "torch"``: a built-in network *name* (:data:`TORCH_NETS`: ``hidden`` for
    ``mlp``; ``channels``, ``hidden``, ``kernel`` for ``cnn``) or the user's *module*
    ``"package.module:ClassName"`` built with *kwargs*, imported from the folder
    *module_dir* first (absolute; default the scenario's folder); trained on *loss* in *dtype* on
    *device* with *threads* intra-op threads; ``init = "default"`` keeps the module's own
    initialisation (seeded from the scenario); *stack* evaluates the gradients of workers
    that finish together in one ``vmap`` call. *master_dtype*: the dtype of the model the
    parameter server keeps (and of every gradient, step and optimizer state): float64 for
    numpy models, the network's *dtype* by default for torch ones.
    """

    name: str = "logistic"
    l2: float = 0.0
    init: str = "zeros"
    init_scale: float = 0.01
    hidden: tuple[int, ...] = (128,)
    backend: str = "numpy"
    module: str = ""
    kwargs: tuple = ()
    loss: str = "cross_entropy"
    channels: tuple[int, ...] = (16, 32)
    kernel: int = 3
    dtype: str = "float32"
    device: str = "cpu"
    threads: int = 1
    stack: bool = False
    module_dir: str = ""
    master_dtype: str = "float64"

    @property
    def key(self) -> str:
        """The model's name in per-model tables (``lr = { <key> = ... }``): *name*, or the
        class name of a user *module*."""
        return self.module.rpartition(":")[2] if self.module else self.name

    def kwargs_dict(self) -> dict:
        """*kwargs* as the keyword arguments of the module's constructor (lists, tables)."""
        return {k: _thaw(v) for k, v in self.kwargs}


def _freeze(value):
    """A TOML value as a hashable one (tables → sorted pairs tagged ``dict``, arrays → tuples)."""
    if isinstance(value, dict):
        return ("__dict__", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value):
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "__dict__":
        return {k: _thaw(v) for k, v in value[1]}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def read_model(t: Table, path: Path) -> ModelSpec:
    backend = t.get("backend", str, "numpy", choices=BACKENDS)
    spec = _torch_model(t, path) if backend == "torch" else _numpy_model(t)
    t.done()
    return spec


def _l2(t: Table, name: str, names) -> float:
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


def _widths(t: Table, key: str, default: list, lo: int, hi: int | None) -> tuple[int, ...]:
    """A list of *lo*..*hi* (None: any number of) positive integers."""
    widths = t.get(key, list, default)
    if not lo <= len(widths) <= (hi or len(widths)) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in widths
    ):
        count = f"{lo} or {hi}" if hi else f"{lo} or more"
        raise ScenarioError(t.key(key), f"expected {count} layer widths > 0, got {widths!r}")
    return tuple(widths)


def _numpy_model(t: Table) -> ModelSpec:
    name = t.get("name", str, "logistic", choices=MODEL_NAMES)
    l2 = _l2(t, name, MODEL_NAMES)
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
    hidden = _widths(t, "hidden", [128], 1, 2)
    if t.get("master_dtype", str, "float64", choices=TORCH_DTYPES) != "float64":
        raise ScenarioError(
            t.key("master_dtype"),
            "'float32' needs backend = 'torch' (numpy models compute in float64; allowed: float64)",
        )
    return ModelSpec(
        name=name,
        l2=l2,
        init=init,
        init_scale=t.get("init_scale", float, 0.01, positive=True),
        hidden=hidden,
    )


def _torch_model(t: Table, path: Path) -> ModelSpec:
    """``[model] backend = "torch"``: a built-in network (*name*) or the user's *module*.
    Its keys are read and checked before PyTorch is looked for, so that a scenario's errors
    and ``netsim keys`` do not depend on whether it is installed."""
    module = t.get("module", str, "")
    if module and t.has("name"):
        raise ScenarioError(
            t.key("name"), "give either name (a built-in network) or module (your own), not both"
        )
    name = "" if module else t.get("name", str, MISSING_NAME, choices=TORCH_NETS)
    if name == MISSING_NAME:
        raise ScenarioError(
            t.key("name"),
            f"missing: a built-in network ({', '.join(TORCH_NETS)}) or "
            "module = 'package.module:ClassName'",
        )
    kwargs = t.get("kwargs", dict, {})
    for key in ("kwargs", "module_dir"):
        if t.has(key) and not module:
            raise ScenarioError(
                t.key(key),
                "applies to module only (the built-in networks take channels, hidden and kernel)",
            )
    module_dir = ""
    if module:  # the scenario's folder by default; a run folder's scenario.toml names it
        given = check_path(t.get("module_dir", str, "."), t.key("module_dir"))
        module_dir = str((path.parent / os.path.expanduser(given)).resolve())
        if t.has("module_dir") and not Path(module_dir).is_dir():
            raise ScenarioError(
                t.key("module_dir"), f"{module_dir} is not a folder (the module's folder)"
            )
    for key, nets in (("channels", ("cnn",)), ("kernel", ("cnn",)), ("hidden", ("cnn", "mlp"))):
        if t.has(key) and name not in nets:
            raise ScenarioError(
                t.key(key), f"applies to name = {' or '.join(map(repr, nets))} only"
            )
    spec = ModelSpec(
        backend="torch",
        name=name,
        module=module,
        module_dir=module_dir,
        kwargs=tuple((k, _freeze(v)) for k, v in sorted(kwargs.items())),
        l2=0.0,
        loss=t.get("loss", str, "cross_entropy", choices=TORCH_LOSSES),
        init=t.get("init", str, "default", choices=TORCH_INITS),
        init_scale=t.get("init_scale", float, 0.01, positive=True),
        hidden=_widths(t, "hidden", [64] if name == "cnn" else [128], 0, None),
        channels=_widths(t, "channels", [16, 32], 1, None),
        kernel=t.get("kernel", int, 3, positive=True, maximum=15),
        dtype=(dtype := t.get("dtype", str, "float32", choices=TORCH_DTYPES)),
        master_dtype=t.get("master_dtype", str, dtype, choices=TORCH_DTYPES),
        device=t.get("device", str, "cpu", choices=DEVICES),
        threads=t.get("threads", int, 1, positive=True, maximum=MAX_THREADS),
        stack=t.get("stack", bool, False),
    )
    spec = replace(spec, l2=_l2(t, spec.key, (spec.key,)))
    if torch_missing():
        raise ScenarioError(
            t.key("backend"), f"'torch' needs PyTorch, which is not installed: {TORCH_INSTALL}"
        )
    if module:
        from ..workload.torch_nets import load_module_class

        try:
            load_module_class(module, Path(module_dir))
        except ValueError as exc:
            raise ScenarioError(t.key("module"), str(exc)) from None
    if spec.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ScenarioError(
                t.key("device"), "'cuda' but torch sees no CUDA device here (allowed: cpu)"
            )
    return spec


MISSING_NAME = "\0missing"


def check_compact(run, model, rules: dict) -> None:
    """``run.compact_gradients`` needs L2 = 0, a linear numpy model and no lgc."""
    if not run.compact_gradients:
        return
    if model.l2:
        raise ScenarioError(
            "run.compact_gradients",
            f"needs model.l2 = 0 (got {model.l2!r}): the L2 term of a "
            "gradient is a dense vector of the model the worker read",
        )
    if model.name == "mlp" or model.backend == "torch":
        raise ScenarioError(
            "run.compact_gradients",
            "needs a linear numpy model (an MLP's or a torch "
            "model's gradient has no low-rank form)",
        )
    if partial := [name for name in rules if not RULES[name].compact]:
        raise ScenarioError(
            "run.compact_gradients",
            f"not available with {partial[0]}, which reads partial gradients "
            f"at the model each straggler read (remove [algorithms.{partial[0]}] or this key)",
        )
