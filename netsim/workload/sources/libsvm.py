"""LIBSVM text files (default ``a9a`` and ``a9a.t`` in the data folder)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...params import Table, check_path
from ..datasets import DATA_ENV, DataNotFoundError, data_dirs, load_libsvm, split
from .base import Arrays, DataSource, Request, Spec

__all__ = ["Libsvm", "LibsvmKeys", "data_file"]

SUBDIR = "a9a"


@dataclass(frozen=True)
class LibsvmKeys:
    """``data.train_file`` and ``data.test_file`` as given (None: the default a9a and
    a9a.t; no test file: test_fraction of the training file)."""

    train_file: str | None = None
    test_file: str | None = None


class Libsvm(DataSource[LibsvmKeys]):
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

    def read(self, t: Table, path: Path) -> LibsvmKeys:
        """``train_file`` and ``test_file`` (found when the data loads); a test file needs
        a training file."""
        keys = LibsvmKeys(
            train_file=check_path(t.get("train_file", str, None), t.key("train_file")),
            test_file=check_path(t.get("test_file", str, None), t.key("test_file")),
        )
        if keys.test_file is not None and keys.train_file is None:
            raise ScenarioError(
                t.key("test_file"),
                "needs data.train_file (without it the default a9a and a9a.t are read)",
            )
        return keys

    def request(self, spec: Spec[LibsvmKeys]) -> dict[str, Any]:
        train = data_file(spec.own.train_file, spec)
        return {
            "libsvm_train": train,
            "libsvm_test": data_file(spec.own.test_file, spec, "data.test_file"),
        }

    def load_error_key(self, spec: Spec[LibsvmKeys]) -> str:
        return "data.train_file" if spec.own.train_file else self.error_key

    def resolve(self, spec: Spec[LibsvmKeys], table: dict) -> None:
        for key, name in (("train_file", spec.own.train_file), ("test_file", spec.own.test_file)):
            try:  # as read: data folder, then here
                found = data_file(name, spec, f"data.{key}")
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
