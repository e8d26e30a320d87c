"""The torch model family: a built-in network (LeNet-5, CNN, MLP) or the user's nn.Module."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table, check_path
from ..allocator import DEFAULT_THRESHOLD, MAX_THRESHOLD, huge_pages_for_torch
from ..torch_nets import DTYPES as TORCH_DTYPES
from ..torch_nets import LOSSES as TORCH_LOSSES
from ..torch_nets import TORCH_INSTALL, TORCH_NETS, torch_missing
from .base import Backend, freeze, read_l2, read_widths

__all__ = ["Torch"]

TORCH_INITS = ("default", "zeros", "normal")
DEVICES = ("cpu", "cuda")
MAX_THREADS = 256
MISSING_NAME = "\0missing"


class Torch(Backend):
    name = "torch"
    shapes_known = True
    tag = " (torch)"

    def read(self, t: Table, path: Path) -> dict:
        """``[model] backend = "torch"``: a built-in network (*name*) or the user's *module*.
        Its keys are read and checked before PyTorch is looked for, so that a scenario's errors
        and ``netsim keys`` do not depend on whether it is installed."""
        module = t.get("module", str, "")
        if module and t.has("name"):
            raise ScenarioError(
                t.key("name"),
                "give either name (a built-in network) or module (your own), not both",
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
            module_dir = str((path.parent / os.path.expanduser(str(given))).resolve())
            if t.has("module_dir") and not Path(module_dir).is_dir():
                raise ScenarioError(
                    t.key("module_dir"), f"{module_dir} is not a folder (the module's folder)"
                )
        for key, nets in (("channels", ("cnn",)), ("kernel", ("cnn",)), ("hidden", ("cnn", "mlp"))):
            if t.has(key) and name not in nets:
                raise ScenarioError(
                    t.key(key), f"applies to name = {' or '.join(map(repr, nets))} only"
                )
        spec = dict(
            name=name,
            module=module,
            module_dir=module_dir,
            kwargs=tuple((k, freeze(v)) for k, v in sorted(kwargs.items())),
            l2=0.0,
            loss=t.get("loss", str, "cross_entropy", choices=TORCH_LOSSES),
            init=t.get("init", str, "default", choices=TORCH_INITS),
            init_scale=t.get("init_scale", float, 0.01, positive=True),
            hidden=read_widths(t, "hidden", [64] if name == "cnn" else [128], 0, None),
            channels=read_widths(t, "channels", [16, 32], 1, None),
            kernel=t.get("kernel", int, 3, positive=True, maximum=15),
            dtype=(dtype := t.get("dtype", str, "float32", choices=TORCH_DTYPES)),
            master_dtype=t.get("master_dtype", str, dtype, choices=TORCH_DTYPES),
            device=t.get("device", str, "cpu", choices=DEVICES),
            threads=t.get("threads", int, 1, positive=True, maximum=MAX_THREADS),
            stack=t.get("stack", bool, False),
            mmap_threshold=t.get(
                "mmap_threshold", int, DEFAULT_THRESHOLD, minimum=0, maximum=MAX_THRESHOLD
            ),
        )
        key = module.rpartition(":")[2] if module else name
        spec["l2"] = read_l2(t, key, (key,))
        _check_here(t, spec)
        return spec

    def build(
        self, spec: Any, dataset: Any, rng: np.random.Generator, n_workers: int
    ) -> tuple[Any, np.ndarray | None, int]:
        from ..torch_model import make_torch_model

        seed = int(rng.integers(2**63))  # the module's own initialisation, under torch's generator
        model = make_torch_model(spec, dataset.input_shape, dataset.n_classes, seed, n_workers)
        w0 = model.initial_weights() if spec.init == "default" else None
        return model, w0, model.n_params()

    def eval_width(self, spec: Any, n_classes: int) -> int:
        return int(spec.hidden[0]) if spec.name == "mlp" and spec.hidden else 1

    def examples(self, dataset: Any, model: Any) -> Any:
        from ..torch_model import examples_in_dtype

        return examples_in_dtype(dataset, model)


def _check_here(t: Table, spec: dict) -> None:
    """What a torch model *spec* (read from *t*) needs of this machine: PyTorch, the user's
    module importable, a CUDA device if asked for; and, with a memory-map threshold, torch
    asked for huge pages before its first allocation (before the data is loaded)."""
    if spec["mmap_threshold"]:  # torch reads it at its first allocation: before the data's
        huge_pages_for_torch()
    if torch_missing():
        raise ScenarioError(
            t.key("backend"), f"'torch' needs PyTorch, which is not installed: {TORCH_INSTALL}"
        )
    if spec["module"]:
        from ..torch_nets import load_module_class

        try:
            load_module_class(spec["module"], Path(spec["module_dir"]))
        except ValueError as exc:
            raise ScenarioError(t.key("module"), str(exc)) from None
    if spec["device"] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ScenarioError(
                t.key("device"), "'cuda' but torch sees no CUDA device here (allowed: cpu)"
            )
