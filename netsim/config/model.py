"""``[model]``: the model family (backend), the model, its L2 weight and initial model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ScenarioError
from ..params import Table
from ..rules import RULES
from ..workload.backends import BACKENDS
from ..workload.backends.base import thaw
from ..workload.models import MODELS
from .run import RunSpec

__all__ = ["ModelSpec", "MODEL_NAMES", "read_model", "check_compact"]

MODEL_NAMES = tuple(MODELS)


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
    numpy models, the network's *dtype* by default for torch ones. *mmap_threshold* (torch
    models; bytes, 0: the C library's own): blocks of at least this size get a memory map of
    their own, returned when freed (:mod:`netsim.workload.allocator`).
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
    mmap_threshold: int = 0

    @property
    def key(self) -> str:
        """The model's name in per-model tables (``lr = { <key> = ... }``): *name*, or the
        class name of a user *module*."""
        return self.module.rpartition(":")[2] if self.module else self.name

    def kwargs_dict(self) -> dict:
        """*kwargs* as the keyword arguments of the module's constructor (lists, tables)."""
        return {k: thaw(v) for k, v in self.kwargs}


def read_model(t: Table, path: Path) -> ModelSpec:
    """``[model]``: the family (``backend``), then the keys it reads
    (:meth:`~netsim.workload.backends.Backend.read`)."""
    backend = BACKENDS[t.get("backend", str, "numpy", choices=tuple(BACKENDS))]
    spec = ModelSpec(backend=backend.name, **backend.read(t, path))
    t.done()
    return spec


def check_compact(run: RunSpec, model: ModelSpec, rules: dict) -> None:
    """``run.compact_gradients`` needs L2 = 0, a linear numpy model and no lgc."""
    if not run.compact_gradients:
        return
    if model.l2:
        raise ScenarioError(
            "run.compact_gradients",
            f"needs model.l2 = 0 (got {model.l2!r}): the L2 term of a "
            "gradient is a dense vector of the model the worker read",
        )
    if not BACKENDS[model.backend].low_rank(model):
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
