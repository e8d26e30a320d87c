"""The model families (``model.backend``): one :class:`Backend` per family, registered here.

Adding a family: a module with a :class:`Backend` subclass (its name, :meth:`~Backend.read`,
:meth:`~Backend.build`) and one line in :data:`BACKENDS` (docs/DATA.md).
"""

from __future__ import annotations

from .base import Backend
from .numpy_family import Numpy
from .torch_family import Torch

__all__ = ["BACKENDS", "Backend"]

BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Numpy(),
        Torch(),
    )
}
"""Every model family by its ``model.backend`` name; the first is the default."""
