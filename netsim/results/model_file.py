"""A run folder's trained model: ``model.npz`` (numpy) and, for torch models, ``model.pt``.

``model.npz`` holds ``w``, the final flat weight vector (n_params,) in the model's
``master_dtype``, ``backend`` ("numpy" | "torch"), and for torch models ``input_shape``,
``n_classes`` and each buffer (batch norm's running statistics) as ``buffer:<name>``.
``model.pt`` is the module's ``state_dict`` (``torch.save``: parameters and buffers), loadable
with ``torch.load(path, weights_only=True)`` into the module the scenario builds. Both are
written atomically (a temporary file beside them, then renamed).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import ScenarioError
from .atomic import written

__all__ = ["MODEL_FILE", "STATE_DICT_FILE", "write_model", "load_model", "state_dict_arrays"]

MODEL_FILE = "model.npz"
STATE_DICT_FILE = "model.pt"


def _atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """``write(binary file)`` into a temporary file beside *path*, then renamed over it
    (:func:`netsim.results.atomic.written`)."""

    def fill(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            write(fh)

    written(path, fill)


def state_dict_arrays(w: np.ndarray, info: dict) -> "OrderedDict[str, np.ndarray]":
    """The module's state dict as arrays, in its order: each parameter a view of *w* (n_params,)
    shaped as in the module, each buffer as recorded in *info* (``export_info``)."""
    params, lo = {}, 0
    for name, shape in info["params"]:
        size = int(np.prod(shape, dtype=np.int64))
        params[name] = w[lo : lo + size].reshape(shape)
        lo += size
    buffers = info["buffers"]
    return OrderedDict(
        (k, params[k] if k in params else buffers[k])
        for k in info["state_keys"]
        if k in params or k in buffers
    )


def write_model(folder: str | Path, w: np.ndarray, info: dict) -> None:
    """Write the model files of the run whose final weights are *w* (n_params,) and whose
    model describes itself as *info* (``Model.export_info()``) into *folder*."""
    folder = Path(folder)
    arrays = {"w": w, "backend": np.array(info["backend"])}
    if info["backend"] == "torch":
        arrays["input_shape"] = np.array(info["input_shape"], dtype=np.int64)
        arrays["n_classes"] = np.array(info["n_classes"], dtype=np.int64)
        arrays.update({f"buffer:{k}": v for k, v in info["buffers"].items()})
    _atomic(folder / MODEL_FILE, lambda fh: np.savez(fh, allow_pickle=True, **arrays))
    if info["backend"] == "torch":
        import torch

        state = OrderedDict(
            (k, torch.from_numpy(np.ascontiguousarray(v)))
            for k, v in state_dict_arrays(w, info).items()
        )
        _atomic(folder / STATE_DICT_FILE, lambda fh: torch.save(state, fh))


def load_model(folder: str | os.PathLike) -> Any:
    """The trained model of run folder *folder*: for a torch model, the ``nn.Module`` its
    scenario builds (``scenario.toml`` in the folder), with the final parameters and
    buffers loaded (in evaluation mode); for a numpy model, the final weight vector
    (ndarray (n_params,), float64). Raises ScenarioError when the folder has no model file
    or its scenario cannot build the module."""
    folder = Path(folder)
    path = folder / MODEL_FILE
    if not path.is_file():
        raise ScenarioError(
            "model", f"{path} not found: a run folder keeps its model once the run ends", str(path)
        )
    with np.load(path, allow_pickle=False) as z:
        w = z["w"]
        if str(z["backend"]) != "torch":
            return w
        input_shape = tuple(int(s) for s in z["input_shape"])
        n_classes = int(z["n_classes"])
    import torch

    from ..config.scenario import load_scenario
    from ..workload.torch_model import build_module

    scenario_file = folder / "scenario.toml"
    if not scenario_file.is_file():
        raise ScenarioError(
            "model", f"{scenario_file} not found: it says which module to build", str(scenario_file)
        )
    spec = load_scenario(scenario_file).model
    try:
        with torch.random.fork_rng(devices=[]):
            module = build_module(spec, input_shape, n_classes)
    except Exception as exc:  # noqa: BLE001  the user's constructor: no traceback
        key = "model.module" if spec.module else "model.name"
        raise ScenarioError(
            key, f"building the module failed ({exc})", str(scenario_file)
        ) from None
    state = torch.load(folder / STATE_DICT_FILE, weights_only=True)
    module = module.to(dtype=getattr(torch, spec.dtype))  # as it trained (load_state_dict casts)
    module.load_state_dict(state)
    return module.eval()
