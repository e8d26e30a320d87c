"""From a scenario's [data] table to a loaded Dataset (data-directory resolution)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .datasets import DataNotFoundError, Dataset, data_dirs, load_dataset

__all__ = ["load_data", "data_file", "resolve_data_dir", "DATA_ENV"]

DATA_ENV = "NETSIM_DATA_DIR"
_SUBDIR = {"mnist": "mnist", "libsvm": "a9a"}


def resolve_data_dir(spec) -> str | None:
    """The directory to read for *spec* (a scenario's ``DataSpec``): ``data.dir`` (or ``--data-dir``), else ``$NETSIM_DATA_DIR``.

    A directory holding a subfolder named after the source (``mnist/``, ``a9a/``)
    is accepted too, so one data root can serve every source.
    """
    base = spec.dir or os.environ.get(DATA_ENV)
    if base is None:
        return None
    sub = Path(base) / _SUBDIR.get(spec.source, spec.source)
    return str(sub) if sub.is_dir() else str(base)


def data_file(name: str | None, spec, key: str = "data.train_file") -> str | None:
    """Where a LIBSVM file *name* of *spec* (``data.train_file`` / ``test_file``) is read:
    as given when absolute; else the first that exists of it under the data folder
    (``data.dir``, ``--data-dir`` or ``$NETSIM_DATA_DIR``), under that folder's source
    subfolder (:func:`~netsim.workload.datasets.data_dirs`) and from the working directory;
    None without a file or for a source other than libsvm (which reads none). Raises
    DataNotFoundError (of *key*) naming every place looked at when none holds it."""
    if name is None or spec.source != "libsvm":  # only libsvm reads them
        return None
    given = Path(os.path.expanduser(name))
    folders = [] if given.is_absolute() else data_dirs(spec.dir, _SUBDIR["libsvm"])
    places = [folder / given for folder in folders] + [given]
    found = next((p for p in places if p.is_file()), None)
    if found is None:
        raise DataNotFoundError(
            f"LIBSVM file {name!r} not found: looked at {', '.join(map(str, places))} "
            "(a relative path is read from the data folder: data.dir, --data-dir or "
            f"${DATA_ENV}, then from the working directory)",
            key=key,
        )
    return str(found)


def load_data(spec, rng: np.random.Generator) -> Dataset:
    """Load the examples a scenario names. Raises DataNotFoundError when files are missing."""
    directory = resolve_data_dir(spec)
    return load_dataset(
        spec.source,
        data_dir=directory,
        labels=spec.labels,
        test_fraction=spec.test_fraction,
        add_bias=spec.add_bias,
        rng=rng,
        n_samples=spec.n_samples,
        n_features=spec.n_features,
        n_classes=spec.n_classes,
        libsvm_train=data_file(spec.train_file, spec),
        libsvm_test=data_file(spec.test_file, spec, "data.test_file"),
        npz_path=spec.path,
        function=(spec.function, spec.function_dir) if spec.source == "callable" else None,
    )
