"""A PyTorch ``nn.Module`` as a netsim model: stateless math on a flat weight vector.

The parameter server keeps every model as one flat vector, for a torch module in its
``master_dtype`` (float32 unless set): the module's parameters in
``torch.nn.utils.parameters_to_vector`` order (``module.parameters()`` order, each tensor
flattened in C order). A gradient is taken
at any vector with ``torch.func.functional_call``, so a worker computes at the version
it pulled without touching the module's own parameters, and every rule, schedule and
weighting of :mod:`netsim.rules` applies unchanged. torch is imported here only: the
rest of netsim imports this module when a scenario asks for ``backend = "torch"``.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from threadpoolctl import threadpool_limits

from ..errors import ScenarioError
from .allocator import huge_pages_for_torch, map_large_blocks
from .base import Model
from .buffers import Buffers
from .torch_nets import check_module, cnn, lenet5, load_module_class, mlp

if TYPE_CHECKING:
    from .base import Features
    from .datasets import Dataset

try:
    import torch
    from torch.func import functional_call, grad, vmap
except (
    ImportError
):  # only a scenario with backend = "torch" builds a TorchModel, and it checks first
    pass

__all__ = [
    "TorchModel",
    "TorchSettings",
    "make_torch_model",
    "build_module",
    "examples_in_dtype",
    "EVAL_CHUNK_ROWS",
]

EVAL_CHUNK_ROWS = 2048
"""Rows per forward pass when a loss or prediction runs over a whole data set (bounds
the memory of a convolutional net's activations)."""


class TorchSpec(Protocol):
    """What a torch model is built from: a scenario's ``[model]`` table
    (:class:`~netsim.config.model.ModelSpec`, whose fields document these)."""

    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def module_dir(self) -> str: ...
    @property
    def hidden(self) -> tuple[int, ...]: ...
    @property
    def channels(self) -> tuple[int, ...]: ...
    @property
    def kernel(self) -> int: ...
    @property
    def loss(self) -> str: ...
    @property
    def l2(self) -> float: ...
    @property
    def dtype(self) -> str: ...
    @property
    def master_dtype(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def stack(self) -> bool: ...
    @property
    def mmap_threshold(self) -> int: ...

    def kwargs_dict(self) -> dict: ...


@dataclass(frozen=True)
class TorchSettings:
    """How a :class:`TorchModel` computes: its name, objective, dtypes, device and stacking
    (each field as in :class:`TorchModel`'s parameters)."""

    key: str = "torch"
    loss: str = "cross_entropy"
    l2: float = 0.0
    dtype: str = "float32"
    device: str = "cpu"
    stack: bool = False
    master: str | None = None


class TorchModel(Model):
    """An ``nn.Module`` mapping inputs of shape (b, *input_shape*) to logits (b, c),
    trained by the parameter server on the flat vector of its parameters.

    *c* is ``n_classes``, or 1 for two classes (the logit of class 1, trained with
    binary cross-entropy). The objective is the mean loss over the rows plus
    ``l2/2 ||w||^2``. Gradients are computed in training mode (``module.train()``),
    losses and predictions in evaluation mode. The module's buffers (batch norm's running
    statistics) are one set per run (:meth:`for_run`), starting from the module's own:
    every forward pass in training mode updates them in place, in the order the gradients
    are computed, each at the parameters its worker read; evaluation reads them.
    Randomness inside the forward pass (dropout) is drawn from torch's generator seeded
    with ``seed + k`` for the k-th gradient since :meth:`start_run`, so a run is
    reproducible.

    Parameters
    ----------
    module : torch.nn.Module, already built and initialised.
    input_shape : tuple of int, the shape of one example (e.g. (1, 28, 28)).
    n_classes : int >= 2.
    settings : a :class:`TorchSettings` of the ones below, which keywords (*fields*) override.
    key : str, the model's name in per-model tables (``lr = { lenet5 = 0.1 }``).
    loss : one of :data:`netsim.workload.torch_nets.LOSSES`.
    l2 : float >= 0.
    dtype : ``"float32"`` or ``"float64"``: the forward and backward passes.
    master : ``"float32"``, ``"float64"`` or None (*dtype*): the dtype of the flat vectors
        (models, gradients) the server and the rules work with.
    device : ``"cpu"`` or ``"cuda"``.
    stack : bool, default False
        Evaluate the gradients of workers that read one model and finish at one instant
        with one ``torch.func.vmap`` call (:meth:`gradients`) instead of one call each.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        input_shape: tuple[int, ...],
        n_classes: int,
        settings: TorchSettings | None = None,
        **fields: Any,
    ) -> None:
        s = replace(settings or TorchSettings(), **fields)
        key, loss, l2, dtype, device = s.key, s.loss, s.l2, s.dtype, s.device
        stack, master = s.stack, s.master
        super().__init__(l2, n_classes)
        self.name = key
        self.module = module.to(device=device, dtype=getattr(torch, dtype))
        self.input_shape = tuple(int(s) for s in input_shape)
        self.loss_name = loss
        self.dtype_name = dtype
        self.dtype = getattr(torch, dtype)
        self.device = torch.device(device)
        self.master_name = master or dtype
        self.master = np.dtype(self.master_name)
        """numpy dtype of the flat vectors: the model, its gradients."""
        self._master = getattr(torch, self.master_name)
        self.stacked = stack
        named = list(self.module.named_parameters())
        self._names = [n for n, _ in named]
        self._shapes = [tuple(p.shape) for _, p in named]
        self._sizes = [p.numel() for _, p in named]
        self._seed = 0
        self._draws = 0
        self._initial_buffers = {n: b.detach().clone() for n, b in self.module.named_buffers()}
        """The module's buffers as built: each run starts from them."""
        self._buffers = {n: b.clone() for n, b in self._initial_buffers.items()}
        """This run's buffers (passed to every forward pass, updated in place by training ones)."""
        self.running_stats = any(
            isinstance(m, torch.nn.modules.batchnorm._NormBase) and m.track_running_stats
            for m in self.module.modules()
        )
        """Whether a forward pass in training mode changes buffers (batch norm)."""
        self.vectors: Buffers | None = None
        """Where a run's gradients are made (:meth:`for_run`); None: new arrays."""
        self._stochastic = any(
            isinstance(m, torch.nn.modules.dropout._DropoutNd) for m in self.module.modules()
        )

    def __repr__(self) -> str:
        return (
            f"TorchModel({type(self.module).__name__}, n_params={sum(self._sizes)}, "
            f"loss={self.loss_name!r}, dtype={self.dtype_name!r})"
        )

    # -- the flat vector ---------------------------------------------------
    def n_params(self, n_features: int | None = None) -> int:
        """Length of the flat vector: the number of the module's parameters."""
        return sum(self._sizes)

    def initial_weights(self) -> np.ndarray:
        """The module's own parameters as a flat ndarray (n_params,) of :attr:`master`."""
        with torch.no_grad():
            return (
                torch.nn.utils.parameters_to_vector(self.module.parameters())
                .to(self._master)
                .cpu()
                .numpy()
                .copy()
            )

    def one_d_ranges(self) -> list[tuple[int, int]]:
        """``(lo, hi)`` index ranges of the flat vector holding the parameters of at most one
        dimension (biases, norm scales and shifts): those weight decay may spare."""
        out, lo = [], 0
        for shape, size in zip(self._shapes, self._sizes):
            if len(shape) <= 1:
                out.append((lo, lo + size))
            lo += size
        return out

    def _params(self, flat: torch.Tensor) -> dict:
        """Views of *flat* (n_params,) named and shaped as the module's parameters, and the
        run's buffers."""
        out = {
            n: t.view(s)
            for n, t, s in zip(self._names, torch.split(flat, self._sizes), self._shapes)
        }
        if self._buffers:
            out.update(self._buffers)
        return out

    def export_info(self) -> dict:
        """What a run folder's model file records beside the weights: the data's example
        shape and classes (to build the module again), the state dict's keys in order and
        this run's buffers as arrays."""
        return {
            "backend": "torch",
            "input_shape": list(self.input_shape),
            "n_classes": int(self.n_classes),
            "state_keys": list(self.module.state_dict().keys()),
            "params": list(zip(self._names, self._shapes)),
            "buffers": {n: b.detach().cpu().numpy().copy() for n, b in self._buffers.items()},
        }

    def buffers(self) -> dict:
        """This run's buffers, name → tensor (batch norm's running statistics)."""
        return self._buffers

    def _tensor(self, a: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
        """*a* as a tensor of *dtype* (default the module's): its own memory when it already
        is one (a model snapshot, the minibatch scratch rows; never written), else a copy."""
        a = np.asarray(a)
        if not a.flags.writeable:  # torch warns of sharing a read-only array
            return torch.tensor(a, dtype=dtype or self.dtype, device=self.device)
        return torch.as_tensor(a, dtype=dtype or self.dtype, device=self.device)

    def _inputs(self, X: Features) -> torch.Tensor:
        X = X.toarray() if hasattr(X, "toarray") else X
        return self._tensor(X).view(X.shape[0], *self.input_shape)

    # -- the objective -----------------------------------------------------
    def _objective(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean loss of logits *out* (b, c) against labels *y* (b,) int64."""
        if self.loss_name == "mse":
            target = torch.nn.functional.one_hot(y, self.n_classes).to(out.dtype)
            if out.shape[1] == 1:
                target = target[:, 1:]
            return torch.nn.functional.mse_loss(out, target)
        if out.shape[1] == 1:
            return torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], y.to(out.dtype))
        return torch.nn.functional.cross_entropy(out, y)

    def _data_loss(self, flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self._objective(functional_call(self.module, self._params(flat), (x,)), y)

    def start_run(self, seed: int) -> None:
        """Restart the draws of stochastic layers from *seed* (a run's first gradient) and the
        buffers from the module's own."""
        self._seed, self._draws = int(seed), 0
        self._buffers = {n: b.clone() for n, b in self._initial_buffers.items()}

    def for_run(self, seed: int) -> "TorchModel":
        """This model for one run of seed *seed*: the same module and arithmetic, its own
        dropout draws and buffers (so runs of one process, such as paused pilots, never
        share running statistics)."""
        run = copy.copy(self)
        run.start_run(seed)
        run.vectors = Buffers(sum(self._sizes), self.master)
        return run

    @contextmanager
    def _seeded_draws(self) -> Iterator[None]:
        """Stochastic layers draw from the run's seed inside the block; torch's global
        generator is the caller's again after it."""
        if not self._stochastic:
            yield
            return
        state = torch.random.get_rng_state()
        torch.manual_seed(self._seed + self._draws)
        self._draws += 1
        try:
            yield
        finally:
            torch.random.set_rng_state(state)

    def gradient(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        """Gradient of :meth:`loss` at *w* (n_params,) on rows *X* (b, n_features) with
        labels *y* (b,): a new ndarray (n_params,) of :attr:`master` (in a run, one of its
        :class:`~netsim.workload.buffers.Buffers`).

        Each parameter is a leaf sharing *w*'s memory; its gradient (torch's, the only
        model-sized temporary) is copied into the flat vector, as the backward pass of a
        split would, so no second flat vector is made."""
        leaves = [
            t.view(s).detach().requires_grad_(True)
            for t, s in zip(torch.split(self._tensor(w), self._sizes), self._shapes)
        ]
        params = dict(zip(self._names, leaves))
        if self._buffers:
            params.update(self._buffers)
        self.module.train()
        with self._seeded_draws():
            out = functional_call(self.module, params, (self._inputs(X),))
            loss = self._objective(out, self._tensor(y, torch.int64))
            del out
            grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        del loss, params, leaves
        g = self._flat(grads)
        if self.l2:
            g += self.l2 * w
        return g

    def _flat(self, grads: Sequence[torch.Tensor | None]) -> np.ndarray:
        """The parameters' gradients *grads* (None: unused, zero) as one flat vector."""
        flat = (
            np.empty(sum(self._sizes), self.master) if self.vectors is None else self.vectors.take()
        )
        into = torch.from_numpy(flat)
        for part, s, g in zip(torch.split(into, self._sizes), self._shapes, grads):
            if g is None:
                part.zero_()
            else:
                part.view(s).copy_(g)
        return flat

    def gradients(self, W: np.ndarray, Xs: np.ndarray, Ys: np.ndarray) -> np.ndarray:
        """Gradients of k minibatches, ndarray (k, n_params) of :attr:`master`, by one
        ``vmap`` of ``torch.func.grad``: row i equals ``gradient(W[i], Xs[i], Ys[i])``
        to rounding (the batched kernels sum in another order).

        *W* (k, n_params), or (1, n_params) when all share one model; *Xs* (k, b,
        n_features); *Ys* (k, b).
        """
        k, b = Ys.shape
        flats = self._tensor(W)
        xs = self._tensor(Xs).view(k, b, *self.input_shape)
        ys = self._tensor(Ys, torch.int64)
        self.module.train()
        per = vmap(
            grad(self._data_loss), in_dims=(0 if len(W) > 1 else None, 0, 0), randomness="same"
        )
        with self._seeded_draws():
            G = per(flats[0] if len(W) == 1 else flats, xs, ys).to(self._master).cpu().numpy()
        if self.l2:
            G += self.l2 * W
        return G

    def _chunks(self, w: np.ndarray, X: Features) -> Iterator[tuple[int, torch.Tensor]]:
        """Logits of *X* in chunks of :data:`EVAL_CHUNK_ROWS` rows, in evaluation mode."""
        self.module.eval()
        params = self._params(self._tensor(w))
        with torch.no_grad():
            for lo in range(0, X.shape[0], EVAL_CHUNK_ROWS):
                yield (
                    lo,
                    functional_call(
                        self.module, params, (self._inputs(X[lo : lo + EVAL_CHUNK_ROWS]),)
                    ),
                )

    def loss(self, w: np.ndarray, X: Features, y: np.ndarray) -> float:
        """Objective value (float): mean loss over the rows of *X* plus ``l2/2 ||w||^2``."""
        total = 0.0
        for lo, out in self._chunks(w, X):
            rows = out.shape[0]
            total += (
                float(self._objective(out, self._tensor(y[lo : lo + rows], torch.int64))) * rows
            )
        value = total / X.shape[0]
        return value + self._penalty(w) if math.isfinite(value) else value

    def decision_function(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Logits, float64 ndarray (n_samples, c)."""
        return np.concatenate(
            [out.to(torch.float64).cpu().numpy() for _, out in self._chunks(w, X)]
        )

    def predict(self, w: np.ndarray, X: Features) -> np.ndarray:
        """Predicted labels, int64 ndarray (n_samples,): the arg-max logit (a single logit: > 0)."""
        Z = self.decision_function(w, X)
        return (
            (Z[:, 0] > 0).astype(np.int64)
            if Z.shape[1] == 1
            else np.argmax(Z, axis=1).astype(np.int64)
        )

    def residual(self, w: np.ndarray, X: Features, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError(
            "a torch model's gradient has no low-rank form; compact gradients need "
            "a linear numpy model"
        )


def examples_in_dtype(dataset: Dataset, model: TorchModel) -> Dataset:
    """*dataset* with its examples in the module's dtype (float32: half the memory, and no
    conversion per minibatch; the values every gradient reads are the same), or itself."""
    if model.dtype != torch.float32:
        return dataset
    return replace(
        dataset,
        X_train=dataset.X_train.astype(np.float32, copy=False),
        X_test=dataset.X_test.astype(np.float32, copy=False),
    )


def build_module(spec: TorchSpec, input_shape: tuple[int, ...], n_classes: int) -> torch.nn.Module:
    """The ``nn.Module`` of a ``[model]`` table (*spec*, a ModelSpec) for examples of
    *input_shape* and *n_classes* labels, initialised under torch's current generator: a
    built-in network, or the user's class imported from ``spec.module_dir`` first. Raises
    what building raises (ValueError saying what is wrong with the spec)."""
    if spec.module:
        return load_module_class(spec.module, Path(spec.module_dir))(**spec.kwargs_dict())
    if spec.name == "cnn":
        return cnn(
            input_shape, n_classes, channels=spec.channels, hidden=spec.hidden, kernel=spec.kernel
        )
    if spec.name == "mlp":
        return mlp(input_shape, n_classes, hidden=spec.hidden)
    return {"lenet5": lenet5}[spec.name](input_shape, n_classes)


def make_torch_model(
    spec: TorchSpec, input_shape: tuple[int, ...], n_classes: int, seed: int, workers: int = 1
) -> TorchModel:
    """The :class:`~netsim.workload.torch_model.TorchModel` a scenario's ``[model]`` table
    (*spec*, a ModelSpec) describes, for examples of *input_shape* and *n_classes* labels,
    its parameters initialised by the module under torch's generator seeded with *seed*
    (torch's own global generator is left as it was); a user's module is imported from
    ``spec.module_dir`` first. *workers*: the run's, for the memory check.

    Raises ScenarioError naming the ``model.*`` key when the module does not fit in this
    machine's memory, does not import, is not
    an ``nn.Module``, does not fit the input or gives another number of logits.
    """
    if spec.device == "cuda" and not torch.cuda.is_available():
        raise ScenarioError(
            "model.device", "'cuda' but torch sees no CUDA device here (allowed: cpu)"
        )
    torch.set_num_threads(spec.threads)
    # numpy's BLAS too: the parameter server's vector operations on a network's parameters are
    # above OpenBLAS's threading threshold, and its threads waiting for a busy core cost ms per call
    threadpool_limits(spec.threads, user_api="blas")
    torch.use_deterministic_algorithms(True)
    if spec.mmap_threshold:
        huge_pages_for_torch()
        map_large_blocks(spec.mmap_threshold)
    key = "model.module" if spec.module else "model.name"

    def build() -> torch.nn.Module:
        return build_module(spec, input_shape, n_classes)

    try:
        _check_memory(build, key, input_shape, workers, (spec.dtype, spec.master_dtype))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = build()
        if not isinstance(module, torch.nn.Module):
            raise ValueError(
                f"{spec.module!r} built a {type(module).__name__}, not a torch.nn.Module"
            )
        check_module(module)
    except ScenarioError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001  the user's constructor: no traceback
        raise ScenarioError(
            key,
            str(exc)
            if isinstance(exc, ValueError)
            else f"building the module failed ({type(exc).__name__}: {exc})",
        ) from None
    model = TorchModel(
        module,
        input_shape=input_shape,
        n_classes=n_classes,
        key=spec.key,
        loss=spec.loss,
        l2=spec.l2,
        dtype=spec.dtype,
        device=spec.device,
        stack=spec.stack,
        master=spec.master_dtype,
    )
    if model.stacked and model.running_stats:
        raise ScenarioError(
            "model.stack",
            "true cannot evaluate a module with running statistics (batch norm): each "
            "gradient updates them in turn; leave stack out",
        )
    _check_output(model, key, input_shape, n_classes)
    return model


def bytes_per_parameter(workers: int, dtype: str = "float32", master: str = "float32") -> int:
    """Bytes a parameter a run of *workers* workers takes at least: the module's own (in
    *dtype*, the passes'), and in *master* (the server's dtype) the server's model, one
    version per worker and the gradient being formed (workers + 2 copies; a run measured
    workers + 2.6 to workers + 2.8 above the process's baseline, docs/TORCH.md "Memory").

    >>> bytes_per_parameter(2), bytes_per_parameter(16), bytes_per_parameter(16, master="float64")
    (20, 76, 148)
    """
    own, server = np.dtype(dtype).itemsize, np.dtype(master).itemsize
    return int(own + server * (workers + 2))


def physical_memory() -> int | None:
    """Bytes of RAM of this machine; None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_memory(
    build: Callable[[], torch.nn.Module],
    key: str,
    input_shape: tuple[int, ...] | None = None,
    workers: int = 1,
    dtypes: tuple[str, str] = ("float32", "float32"),
) -> None:
    """Refuse (ScenarioError of *key*) a network that cannot fit in this machine's RAM: its
    parameters (:func:`bytes_per_parameter` of *workers* and *dtypes*, the passes' and the
    server's, each) and, given *input_shape*, its
    largest layer output for an evaluation chunk of :data:`EVAL_CHUNK_ROWS` rows (4 bytes a
    value), counted on torch's ``meta`` device before anything is allocated; a module that
    cannot be built or run there is left to be built for real."""
    outputs: list[int] = []
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            module = build()
            n = sum(p.numel() for p in module.parameters())
            if input_shape is not None:
                hooks = [
                    m.register_forward_hook(
                        lambda m, i, o: outputs.append(o.numel() if torch.is_tensor(o) else 0)
                    )
                    for m in module.modules()
                ]
                try:
                    module(torch.zeros((1, *input_shape)))
                except Exception:  # noqa: BLE001  its forward's errors are named by _check_output
                    outputs.clear()
                for hook in hooks:
                    hook.remove()
    except Exception:  # noqa: BLE001  built for real next, where its errors are named
        return
    per = bytes_per_parameter(workers, *dtypes)
    widest = max(outputs, default=0)
    need, have = n * per + widest * EVAL_CHUNK_ROWS * 4, physical_memory()
    if have is not None and need > have:
        layer = (
            f" and its widest layer output ({widest:,} values an example) "
            f"{widest * EVAL_CHUNK_ROWS * 4 / 1e9:.3g} GB for {EVAL_CHUNK_ROWS} examples"
            if widest * EVAL_CHUNK_ROWS * 4 > have / 100
            else ""
        )
        raise ScenarioError(
            key,
            f"{n:,} parameters need more than {n * per / 1e9:.3g} GB ({per:g} bytes each at "
            f"least with {workers} workers: the module, the server's model, a version per "
            f"worker and a gradient){layer}; "
            f"this machine has {have / 1e9:.3g} GB",
        )


def _check_output(
    model: TorchModel, key: str, input_shape: tuple[int, ...], n_classes: int
) -> None:
    """A forward pass on two zero examples: the module must accept them and give
    *n_classes* logits per row (or 1 for two classes)."""
    X, w = np.zeros((2, int(np.prod(input_shape)))), model.initial_weights()
    try:
        out = model.decision_function(w, X)
    except (Exception, SystemExit) as exc:  # noqa: BLE001  a module that does not fit the data
        raise ScenarioError(
            key,
            f"the model does not accept this data's examples of shape {tuple(input_shape)} "
            f"({_first_line(exc)})",
        ) from None
    allowed = (n_classes, 1) if n_classes == 2 else (n_classes,)
    if out.ndim != 2 or out.shape[1] not in allowed:
        raise ScenarioError(
            key,
            f"the model outputs shape {tuple(out.shape[1:])} per example, but the data has "
            f"{n_classes} classes: it needs one logit per class ({n_classes}"
            f"{' or 1 for two classes' if n_classes == 2 else ''})",
        )
    y = np.arange(2) % n_classes
    seeds = model._seed, model._draws  # a run's draws (and buffers) start where they would have
    buffers = {n: b.clone() for n, b in model._buffers.items()}
    try:
        with torch.random.fork_rng(devices=[]):
            model.gradient(w, X, y)
    except (Exception, SystemExit) as exc:  # noqa: BLE001  e.g. integer logits
        raise ScenarioError(
            key,
            "the model's loss or its gradient cannot be computed on this data's examples "
            f"({_first_line(exc)})",
        ) from None
    finally:
        model._seed, model._draws = seeds
        model._buffers = buffers


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` of an error raised by the user's module."""
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
