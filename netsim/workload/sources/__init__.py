"""The data sources (``data.source``): one :class:`DataSource` per source, registered here.

Adding a source: a module with a :class:`DataSource` subclass (its name, labellings, its own
keys as a frozen dataclass made by :meth:`~DataSource.read`, :meth:`~DataSource.arrays`) and
one line in :data:`SOURCES` (docs/DATA.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..datasets import Dataset, finish, relabel
from .base import DataSource, Request
from .digits import Digits
from .function import Function
from .libsvm import Libsvm
from .mnist import Mnist
from .npz import Npz
from .synthetic import Synthetic

__all__ = ["SOURCES", "DataSource", "Request", "load_dataset", "labellings"]

SOURCES: dict[str, DataSource] = {
    s.name: s
    for s in (
        Digits(),
        Mnist(),
        Libsvm(),
        Synthetic(),
        Npz(),
        Function(),
    )
}
"""Every data source by its ``data.source`` name, in the order ``netsim keys`` lists them."""


def labellings() -> tuple[str, ...]:
    """Every labelling some source takes, in first-seen order."""
    return tuple(dict.fromkeys(x for s in SOURCES.values() for x in s.labellings))


def load_dataset(
    name: str,
    *,
    labels: str | None = None,
    add_bias: bool = False,
    rng: np.random.Generator | int | None = None,
    sparse: bool = False,
    **request: Any,
) -> Dataset:
    """Load the data source *name* as a train/test :class:`Dataset`.

    *request*: what the source reads (:class:`Request`: ``data_dir``, ``test_fraction``,
    ``n_samples``, ``n_features``, ``n_classes``, ``libsvm_train``, ``libsvm_test``,
    ``n_features_libsvm``, ``scale``, ``npz_path``, ``function``, ``own``). *labels*: ``odd_even``
    (``y = digit % 2``, odd = 1; digit sources), ``multiclass`` or ``binary`` (2-class data
    as is); default odd_even where the source takes it, else binary for 2 classes.
    *add_bias*, *sparse*: a constant-1 column; CSR matrices. *rng*: the split and the
    synthetic data (None: fresh entropy).

    Raises DataNotFoundError (missing files) or ValueError (a value not allowed, a bad file).
    """
    if name not in SOURCES:
        raise ValueError(f"unknown data set {name!r}; allowed: {', '.join(SOURCES)}")
    source = SOURCES[name]
    if labels is not None and labels not in source.labellings:
        raise ValueError(
            f"labels={labels!r} does not apply to {name!r}; allowed: {', '.join(source.labellings)}"
        )
    X_tr, y_tr, X_te, y_te, k, where, shape = source.arrays(
        Request(**request), np.random.default_rng(rng)
    )
    labels = labels or (
        "odd_even" if "odd_even" in source.labellings else "binary" if k == 2 else "multiclass"
    )
    y_tr, y_te, k = relabel(name, labels, y_tr, y_te, k)
    return Dataset(
        name,
        finish(X_tr, add_bias, sparse),
        y_tr,
        finish(X_te, add_bias, sparse),
        y_te,
        k,
        where,
        None if add_bias else shape,
    )
