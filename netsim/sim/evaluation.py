"""A run's evaluations: the loss and test accuracy of the server's model, and divergence."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..workload.base import Model
from ..workload.datasets import Dataset
from .records import class_accuracy
from .server import ParameterServer

if TYPE_CHECKING:
    import simpy

__all__ = ["Evaluator", "DIVERGENCE_FACTOR", "divergence_limit", "evaluation_sets"]

DIVERGENCE_FACTOR = 1e6
"""A run has diverged when an evaluated loss exceeds this many times the initial loss (at
least 1): a loss that grew a million-fold is not coming back, and no healthy run of the
shipped scenarios comes near (their losses stay below their initial value)."""


def divergence_limit(initial: float) -> float:
    """The loss above which a run whose first evaluated loss is *initial* has diverged."""
    return DIVERGENCE_FACTOR * max(1.0, initial) if np.isfinite(initial) else np.inf


def evaluation_sets(ds: Dataset, rows: int, rng: np.random.Generator) -> tuple[tuple, tuple]:
    """The (X, y) of the training loss and of the test accuracy: all rows when *rows* is 0
    or at least the set's size, else *rows* of each drawn without replacement by *rng*
    (kept in their order in the set)."""

    def subset(X: Any, y: np.ndarray) -> tuple:
        if not rows or rows >= len(y):
            return X, y
        keep = np.sort(rng.choice(len(y), rows, replace=False))
        return X[keep], y[keep]

    return subset(ds.X_train, ds.y_train), subset(ds.X_test, ds.y_test)


class Evaluator:
    """Evaluates the model of the server *ps* into its recorder's curve (no simulated time).

    ``train``, ``test``: (X, y) the loss is evaluated on, and the test set of the accuracy
    (all rows, or ``run.eval_rows`` of each drawn by *rng*); *eval_set* (X (n, d), y (n,)),
    for a pilot: the loss is evaluated on it instead, and no test accuracy. ``model``: the
    run's model, set by the engine once the run has its own.
    """

    def __init__(
        self,
        ps: ParameterServer,
        dataset: Dataset,
        rows: int,
        rng: np.random.Generator,
        eval_set: tuple | None = None,
    ):
        self.ps = ps
        self.n_classes = dataset.n_classes
        self.eval_set = eval_set
        self.model: Model = None  # type: ignore[assignment]  # set before the first evaluation
        self.train, self.test = evaluation_sets(dataset, rows, rng)
        self._evaluated: tuple | None = (
            None  # (weak reference to the model array, loss, accuracy, per-class)
        )
        # of the last evaluation: a weak one, so an old model is not kept for it

    def evaluate(self) -> None:
        """Append (update, time, training objective, test accuracy); costs no simulated time."""
        ps = self.ps
        model, w, now = self.model, ps.average(), ps.env.now
        curve = ps.recorder.curve
        if curve and curve[-1][0] == ps.version and curve[-1][1] == now:
            return
        X_test, y_test = self.test
        last = self._evaluated
        if last is not None and last[0]() is w and curve[-1][0] == ps.version:
            # the model is the very array evaluated last (no update, no replicas since):
            # its loss and accuracies are the same floats, not computed again
            loss, acc, per_class = last[1:]
        elif self.eval_set is None:
            loss = float(model.loss(w, *self.train))
            pred = model.predict(w, X_test)
            acc = float(np.mean(pred == y_test))  # = model.accuracy, with the predictions kept
            per_class = class_accuracy(pred, y_test, self.n_classes)
        else:  # a pilot: loss on a fixed subsample of the training set, no test accuracy
            loss, acc, per_class = float(model.loss(w, *self.eval_set)), float("nan"), None
        self._evaluated = (
            None if ps.replicas is not None else (weakref.ref(w), loss, acc, per_class)
        )
        curve.append((ps.version, float(now), loss, acc))
        if ps.rule.replicated:  # 0 at the start, before the workers' models part
            ps.recorder.consensus.append(ps.consensus_distance(w))
        if per_class is not None:
            ps.recorder.class_accuracy.append(list(per_class))
        if not np.isfinite(loss):
            ps.finish(f"non-finite loss at update {ps.version}, simulated time {now:g} s")
        elif loss > divergence_limit(curve[0][2]):
            ps.finish(
                f"loss {loss:.3g} at update {ps.version}, simulated time {now:g} s, "
                f"above {DIVERGENCE_FACTOR:.0e} × the initial loss {curve[0][2]:.3g}"
            )

    def every_updates(self, every: int) -> Callable[[ParameterServer], None]:
        """The server's ``on_update`` callback: evaluate after every *every*-th update."""

        def on_update(ps: ParameterServer) -> None:
            if ps.version % every == 0:
                self._due()

        return on_update

    def every(self, every: float) -> Generator[simpy.Event, Any, None]:
        """A SimPy process: evaluate every *every* simulated seconds (and have a server
        that takes time keep a copy of its model: ``snapshot_time``)."""
        env = self.ps.env
        while True:
            yield env.timeout(every)
            self._due()

    def _due(self) -> None:
        """A scheduled evaluation: :meth:`evaluate`, and a server that takes time keeps a
        copy of its model (``snapshot_time``)."""
        self.evaluate()
        if self.ps.service is not None:
            self.ps.service.copy()

    def last_finite(self) -> None:
        """After divergence: the loss of the last finite model, at the time of divergence."""
        if self.ps.last_finite is None:
            return
        version, w = self.ps.last_finite
        loss = float(self.model.loss(w, *self.train))
        acc = float(self.model.accuracy(w, *self.test))
        curve = self.ps.recorder.curve
        if np.isfinite(loss) and not (curve and curve[-1][0] == version):
            curve.append((version, float(self.ps.env.now), loss, acc))
