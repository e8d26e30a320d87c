"""What a data source is: the keys it reads, how it loads, what it knows before loading."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...params import Table

__all__ = ["DataSource", "Request", "Arrays"]

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


class DataSource:
    """One ``data.source``: subclass, set the attributes, define :meth:`arrays`, and add an
    instance to :data:`~netsim.workload.sources.SOURCES` (one line).

    Attributes: *name* (its ``data.source``), *labellings* it takes, *default_labels* (a
    scenario's default), *subdir* (the subfolder of a data root holding its files),
    *error_key* (the key a load error names), *sized* (its rows are known from the scenario
    alone: ``validate`` need not load it), *fixed_split* (its files fix the train/test
    split: the labels a partition cuts do not depend on the seed), *classes* (labels before
    labelling, when known without loading), *rows_hint* (what to do when it has too few
    rows), *n_features* (default and least ``data.n_features``).
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
    n_features = (0, 0)

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        """The data, split into train and test sets (the split drawn from *rng*)."""
        raise NotImplementedError

    def read(self, t: Table, path: Path) -> dict:
        """Its own ``[data]`` keys beyond the common ones, as DataSpec fields (*path*: the
        scenario file's)."""
        return {}

    def check(self, spec: Any, t: Table) -> None:
        """Refuse (ScenarioError) what the read *spec* cannot load."""

    def n_labels(self, spec: Any) -> int | None:
        """Labels before labelling, when known without loading (None: not known)."""
        return self.classes

    def train_rows(self, spec: Any) -> int | None:
        """Training rows, when known without loading."""
        return None

    def files(self, spec: Any) -> tuple[str | None, str | None]:
        """The (train, test) files of *spec* as found (None: not given or not read)."""
        return None, None

    def load_error_key(self, spec: Any) -> str:
        """The key a malformed or unreadable file of *spec* is refused under."""
        return "data.train_file" if spec.train_file else self.error_key

    def resolve(self, spec: Any, table: dict) -> None:
        """Make the paths of the raw ``[data]`` *table* stand on their own (absolute)."""
