"""Torch networks for ``[model] backend = "torch"``: the built-in ones, the user's own
module, and the checks that run before any simulation starts.

Nothing here imports torch at module level: the scenario reader names the built-ins
and checks that torch is installed without paying for its import.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "TORCH_NETS",
    "LOSSES",
    "DTYPES",
    "TORCH_INSTALL",
    "torch_missing",
    "lenet5",
    "cnn",
    "mlp",
    "load_module_class",
    "load_attribute",
    "check_module",
]

TORCH_NETS = ("lenet5", "cnn", "mlp")
"""Built-in networks (``[model] name``)."""

LOSSES = ("cross_entropy", "mse")
"""Objectives a torch model can train: mean cross-entropy of the logits (a single
logit: binary cross-entropy of ``sigmoid``), or mean squared error of the logits
against one-hot targets (torch's ``mse_loss``: the mean over rows and classes)."""

DTYPES = ("float32", "float64")
"""Arithmetic of the module's forward and backward passes (torch dtypes of these names)."""

TORCH_INSTALL = (
    "pip install torch==2.13.0 && pip install -e '.[torch]' (a CPU build; a bare "
    "'pip install torch' may pull several GB of CUDA packages)"
)
"""How to install the torch extra, for error messages."""


def torch_missing() -> bool:
    """Whether torch cannot be imported here."""
    return importlib.util.find_spec("torch") is None


def lenet5(input_shape: tuple[int, ...], n_classes: int) -> nn.Sequential:
    """LeNet-5 for (C, H, W) images: conv 6@5×5 (padding 2) → ReLU → max-pool 2 → conv 16@5×5 →
    ReLU → max-pool 2 → 120 → 84 → *n_classes* logits. On 1×28×28 it has 61,706 parameters."""
    from torch import nn

    c, h, w = _image(input_shape, "lenet5")
    side = lambda s: ((s + 4 - 4) // 2 - 4) // 2  # noqa: E731  conv5 pad 2, pool 2, conv5, pool 2
    if side(h) < 1 or side(w) < 1:
        raise ValueError(f"lenet5 needs images of at least 12×12 pixels, got {h}×{w}")
    return nn.Sequential(
        nn.Conv2d(c, 6, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * side(h) * side(w), 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, n_classes),
    )


def cnn(
    input_shape: tuple[int, ...],
    n_classes: int,
    channels: Sequence[int] = (16, 32),
    hidden: Sequence[int] = (64,),
    kernel: int = 3,
) -> nn.Sequential:
    """A small conv net: per entry of *channels*, conv *kernel*×*kernel* ('same' padding) →
    ReLU → max-pool 2 (while the image is at least 2 pixels wide); then dense ReLU layers of
    widths *hidden* and *n_classes* logits."""
    from torch import nn

    c, h, w = _image(input_shape, "cnn")
    layers: list[nn.Module] = []
    for out in channels:
        layers += [nn.Conv2d(c, out, kernel, padding=kernel // 2), nn.ReLU()]
        h, w = h + 2 * (kernel // 2) - kernel + 1, w + 2 * (kernel // 2) - kernel + 1
        if h >= 2 and w >= 2:
            layers.append(nn.MaxPool2d(2))
            h, w = h // 2, w // 2
        c = out
    layers.append(nn.Flatten())
    return nn.Sequential(*layers, *_dense(c * h * w, hidden, n_classes))


def mlp(
    input_shape: tuple[int, ...], n_classes: int, hidden: Sequence[int] = (128,)
) -> nn.Sequential:
    """Flatten → dense ReLU layers of widths *hidden* (any depth, none for a linear model) →
    *n_classes* logits."""
    from torch import nn

    return nn.Sequential(nn.Flatten(), *_dense(int(np.prod(input_shape)), hidden, n_classes))


def _dense(fan_in: int, hidden: Sequence[int], n_classes: int) -> list[nn.Module]:
    from torch import nn

    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(fan_in, width), nn.ReLU()]
        fan_in = width
    return [*layers, nn.Linear(fan_in, n_classes)]


def _image(shape: tuple[int, ...], name: str) -> tuple[int, int, int]:
    if len(shape) != 3:
        raise ValueError(
            f"{name} needs image data of shape (channels, height, width); this data's "
            f"examples have shape {tuple(shape)} (sources with images: mnist, digits, npz)"
        )
    return shape


@contextmanager
def _on_path(folder: Path | None) -> Iterator[None]:
    """*folder* first on ``sys.path`` for the duration (so a module next to the scenario imports)."""
    added = folder is not None and str(folder) not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        if added:
            sys.path.remove(str(folder))


_IMPORTED: dict[str, tuple[str, int]] = {}
"""Module name → (its file, that file's mtime in ns) when :func:`load_module_class` imported it."""


def _source(mod: ModuleType) -> tuple[str, int] | None:
    """(resolved file, mtime in ns) of an imported module; None without a file."""
    file = getattr(mod, "__file__", None)
    try:
        return (str(Path(file).resolve()), os.stat(file).st_mtime_ns) if file else None
    except OSError:
        return None


def _forget_if_not_this(mod_name: str, folder: Path | None) -> None:
    """Drop *mod_name*'s package from ``sys.modules`` when *folder* holds it and the import
    cached in this process is not that file as it is now: another folder's module of the
    same name (two scenarios' ``model.py``), or the file edited since (in a notebook), so
    that each scenario trains the module its folder holds."""
    top = mod_name.partition(".")[0]
    if folder is None or not any(
        p.is_file() for p in (folder / f"{top}.py", folder / top / "__init__.py")
    ):
        return
    cached = sys.modules.get(mod_name)
    now = _source(cached) if cached is not None else None
    if cached is None or (
        now is not None
        and _IMPORTED.get(mod_name) == now
        and Path(now[0]).is_relative_to(folder.resolve())
    ):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def load_attribute(
    spec: str, folder: Path | None = None, form: str = "package.module:ClassName"
) -> object:
    """The object named by *spec* ``"package.module:name"``, imported from *folder* (the
    scenario's) or the Python path; a module of *folder* is imported again when the one
    imported before in this process is another file or was edited since. Raises
    ValueError saying what is wrong (*form*: how *spec* should look)."""
    mod_name, sep, cls_name = spec.partition(":")
    if not sep or not mod_name or not cls_name:
        raise ValueError(f"{spec!r} is not of the form {form!r}")
    with _on_path(folder):
        try:
            _forget_if_not_this(mod_name, folder)
            mod = importlib.import_module(mod_name)
            if (source := _source(mod)) is not None:
                _IMPORTED[mod_name] = source
        except (Exception, SystemExit) as exc:  # noqa: BLE001  the user's import: no traceback
            raise ValueError(
                f"module {mod_name!r} does not import ({type(exc).__name__}: {exc}); "
                f"looked in {folder} and the Python path"
            ) from None
    found = getattr(mod, cls_name, None)
    if found is None:
        raise ValueError(f"module {mod_name!r} has no {cls_name!r}")
    return found


def load_module_class(spec: str, folder: Path | None = None) -> type[nn.Module]:
    """The ``nn.Module`` subclass named by *spec* ``"package.module:ClassName"``
    (:func:`load_attribute`). Raises ValueError saying what is wrong."""
    import torch

    cls = load_attribute(spec, folder)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise ValueError(f"{spec!r} is not a torch.nn.Module subclass")
    return cls


def check_module(module: nn.Module) -> None:
    """Refuse modules with nothing to train."""
    if not any(p.requires_grad for p in module.parameters()):
        raise ValueError("the module has no trainable parameters")
