"""LIBSVM text files (default ``a9a`` and ``a9a.t`` in the data folder)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table
from ..datasets import DATA_ENV, DataNotFoundError, data_dirs, load_libsvm, split
from .base import Arrays, DataSource, Request

__all__ = ["Libsvm", "data_file"]

SUBDIR = "a9a"


class Libsvm(DataSource):
    name = "libsvm"
    subdir = SUBDIR
    error_key = "data.dir"

    def arrays(self, request: Request, rng: np.random.Generator) -> Arrays:
        X_tr, y_tr, X_te, y_te, k, where = load_libsvm(
            request.data_dir, request.libsvm_train, request.libsvm_test, request.n_features_libsvm
        )
        if X_te is None or y_te is None:  # no test file: both None
            X_tr, y_tr, X_te, y_te = split(X_tr, y_tr, request.test_fraction, rng)
        return X_tr, y_tr, X_te, y_te, k, where, None

    def check(self, spec: Any, t: Table) -> None:
        if spec.test_file is not None and spec.train_file is None:
            raise ScenarioError(
                t.key("test_file"),
                "needs data.train_file (without it the default a9a and a9a.t are read)",
            )

    def files(self, spec: Any) -> tuple[str | None, str | None]:
        return data_file(spec.train_file, spec), data_file(spec.test_file, spec, "data.test_file")

    def resolve(self, spec: Any, table: dict) -> None:
        for key in ("train_file", "test_file"):  # as read: data folder, then here
            try:
                found = data_file(getattr(spec, key), spec, f"data.{key}")
            except DataNotFoundError:
                found = None  # not there: written as given, refused when loaded
            if found is not None:
                table[key] = str(Path(found).resolve())


def data_file(name: str | None, spec: Any, key: str = "data.train_file") -> str | None:
    """Where a LIBSVM file *name* of *spec* (``data.train_file`` / ``test_file``) is read:
    as given when absolute; else the first that exists of it under the data folder
    (``data.dir``, ``--data-dir`` or ``$NETSIM_DATA_DIR``), under that folder's ``a9a/``
    and from the working directory; None without a file. Raises DataNotFoundError (of
    *key*) naming every place looked at when none holds it."""
    if name is None:
        return None
    given = Path(os.path.expanduser(name))
    folders = [] if given.is_absolute() else data_dirs(spec.dir, SUBDIR)
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
