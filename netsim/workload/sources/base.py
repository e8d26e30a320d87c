"""What a data source is: the keys it reads, how it loads, what it knows before loading."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import numpy as np

from ...params import Table

__all__ = ["DataSource", "Request", "Arrays", "NoKeys", "Spec"]

Arrays = tuple[Any, np.ndarray, Any, np.ndarray, int, str, "tuple[int, ...] | None"]
"""(X_train (n, d), y_train (n,) in 0..k-1, X_test, y_test, k, where the data came from,
the shape of one example or None), before labelling."""


@dataclass(frozen=True)
class Request:
    """What a source may read when it loads (see :func:`~netsim.workload.sources.load_dataset`)."""

    data_dir: str | None = None
    test_fraction: float = 0.2
    n_samples: int = 1000
    n_features: int = 20
    n_classes: int = 2
    libsvm_train: Any = None
    libsvm_test: Any = None
    n_features_libsvm: int | None = None
    scale: bool = True
    npz_path: Any = None
    function: tuple[str, str] | None = None
    own: Any = None
    """The scenario's ``DataSpec.own`` (the source's own keys), for a source whose
    :meth:`~DataSource.request` passes them as they are."""


@dataclass(frozen=True)
class NoKeys:
    """The own keys of a source that reads none beyond the common ones."""


K = TypeVar("K")
K_co = TypeVar("K_co", covariant=True)


class Spec(Protocol[K_co]):
    """What a source reads of a scenario's ``[data]`` (:class:`~netsim.config.data.DataSpec`):
    the common keys it needs and ``own``, its own keys as its :meth:`DataSource.read` made them."""

    @property
    def source(self) -> str: ...
    @property
    def dir(self) -> str | None: ...
    @property
    def test_fraction(self) -> float: ...
    @property
    def own(self) -> K_co: ...


class DataSource(Generic[K]):
    """One ``data.source``: subclass, set the attributes, define :meth:`arrays`, and add an
    instance to :data:`~netsim.workload.sources.SOURCES` (one line). *K*: the frozen
    dataclass of its own ``[data]`` keys (:meth:`read`), :class:`NoKeys` when it has none.

    Attributes: *name* (its ``data.source``), *labellings* it takes, *default_labels* (a
    scenario's default), *subdir* (the subfolder of a data root holding its files),
    *error_key* (the key a load error names), *sized* (its rows are known from the scenario
    alone: ``validate`` need not load it), *fixed_split* (its files fix the train/test
    split: the labels a partition cuts do not depend on the seed), *classes* (labels before
    labelling, when known without loading), *rows_hint* (what to do when it has too few
    rows), *example* (own keys ``netsim keys`` reads it with, when it requires some).
    """

    name = ""
    labellings: tuple[str, ...] = ("binary", "multiclass")
    default_labels = "binary"
    subdir: str | None = None
    error_key = "data"
    sized = False
    fixed_split = False
    classes: int | None = None
    rows_hint = "use a larger data set"
    example: dict[str, Any] = {}

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        """The data, split into train and test sets (the split drawn from *rng*)."""
        raise NotImplementedError

    def read(self, t: Table, path: Path) -> K:
        """Its own ``[data]`` keys beyond the common ones (*path*: the scenario file's),
        checked: ScenarioError naming the key for a value it cannot load."""
        return cast(K, NoKeys())

    def request(self, spec: Spec[K]) -> dict[str, Any]:
        """What its :meth:`arrays` reads of *spec*'s own keys, as :class:`Request` fields
        (files found: DataNotFoundError naming the key when one is not); by default the own
        keys as they are (``request.own``)."""
        return {"own": spec.own}

    def n_labels(self, spec: Spec[K]) -> int | None:
        """Labels before labelling, when known without loading (None: not known)."""
        return self.classes

    def train_rows(self, spec: Spec[K]) -> int | None:
        """Training rows, when known without loading."""
        return None

    def load_error_key(self, spec: Spec[K]) -> str:
        """The key a malformed or unreadable file of *spec* is refused under."""
        return self.error_key

    def resolve(self, spec: Spec[K], table: dict) -> None:
        """Make the paths of the raw ``[data]`` *table* stand on their own (absolute)."""
