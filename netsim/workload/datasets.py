"""Training data: the sklearn digits, MNIST IDX files, LIBSVM files, synthetic problems, and sharding."""

from __future__ import annotations

import gzip
import os
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import scipy.sparse as sp

from ..errors import ScenarioError
from .partition import iid

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

    from .base import Features

__all__ = [
    "Dataset",
    "DataNotFoundError",
    "data_dirs",
    "read_idx",
    "shard",
    "train_rows",
    "DATA_ENV",
    "load_mnist",
    "load_libsvm",
    "load_npz",
    "load_callable",
    "synthetic",
    "split",
    "finish",
    "relabel",
    "MNIST_FILES",
    "DIGITS_ROWS",
]


MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
"""The four files of the original MNIST distribution, each plain or with ``.gz``."""

DATA_ENV = "NETSIM_DATA_DIR"
"""The environment variable naming the data folder."""

LIBSVM_DEFAULT_FILES = ("a9a", "a9a.t")
"""Train and test file names looked for when only a data directory is given."""

MAX_FEATURES = 1_000_000
"""Most features a dataset may have (synthetic ``n_features``; a LIBSVM file's largest index):
a model of 1e6 parameters is 8 MB, and every worker holds a snapshot."""

MAX_SAMPLES = 10_000_000
"""Most rows a scenario may ask for (synthetic ``n_samples``, ``data.min_rows``)."""

DIGITS_ROWS = 1797
"""Rows of scikit-learn's bundled digits data set."""

SYNTHETIC_NOISE = 0.1
"""Std of the Gaussian noise added to the unit-variance teacher scores."""

NPZ_KEYS = ("X_train", "y_train", "X_test", "y_test")
"""Arrays an ``.npz`` data file holds: examples (n, ...) of any shape, labels (n,)."""

# IDX type code -> big-endian numpy dtype (the MNIST files use 0x08).
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclass(frozen=True, eq=False)
class Dataset:
    """A train/test split ready for training (``eq=False``: arrays do not compare as one bool).

    Attributes
    ----------
    name : str
        Source name (one of :data:`netsim.workload.sources.SOURCES`).
    X_train : ndarray of shape (n_train, n_features), float64, C-contiguous, or CSR matrix
    y_train : ndarray of shape (n_train,), int64, labels in ``0 .. n_classes - 1``
    X_test : ndarray of shape (n_test, n_features), float64, or CSR matrix
    y_test : ndarray of shape (n_test,), int64
    n_classes : int
    source : str
        Where the data came from: file paths, ``"sklearn digits"`` or ``"synthetic"``.
    shape : tuple of int, optional
        The shape of one example before flattening into a row (images: (channels,
        height, width)); None: a flat vector of ``n_features``.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    source: str
    shape: tuple[int, ...] | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one example as a model reads it: :attr:`shape`, else (n_features,)."""
        return self.shape if self.shape is not None else (self.n_features,)

    @property
    def n_features(self) -> int:
        """Number of columns of ``X_train``."""
        return self.X_train.shape[1]


class DataNotFoundError(ScenarioError):
    """Data files are missing; the message names them, where they were looked for, and how to get them.

    A :class:`ScenarioError` of the key *key* (default ``data.dir``): whoever knows the
    scenario file sets ``file``.
    """

    def __init__(self, message: str, file: str | None = None, key: str = "data.dir") -> None:
        super().__init__(key, message, file)


# ---------------------------------------------------------------- IDX (MNIST) files


def read_idx(path: str | os.PathLike[str], *, magic: int | None = None) -> np.ndarray:
    """Read one IDX file (plain, or gzip if the name ends in ``.gz``).

    Parameters
    ----------
    path : str or Path
    magic : int, optional
        Required magic number (2051 for MNIST images, 2049 for labels).

    Returns
    -------
    ndarray of shape given by the header (e.g. (60000, 28, 28)) and the header's dtype.

    Raises
    ------
    ValueError
        If the header is malformed, the magic differs from *magic*, or the file
        size does not match the header's dimensions; the message names the file.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # truncated or damaged gzip
        raise ValueError(
            f"{path}: damaged or truncated gzip file ({exc or type(exc).__name__}); "
            f"download it again"
        ) from None
    if len(data) < 4:
        raise ValueError(f"{path}: not an IDX file (only {len(data)} bytes)")
    found = int.from_bytes(data[:4], "big")
    if magic is not None and found != magic:
        raise ValueError(f"{path}: bad IDX magic number {found}, expected {magic}")
    code, ndim = data[2], data[3]
    if data[:2] != b"\0\0" or code not in _IDX_DTYPES or ndim == 0:
        raise ValueError(f"{path}: not an IDX file (magic number {found:#010x})")
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise ValueError(f"{path}: truncated IDX header ({len(data)} bytes for {ndim} dimensions)")
    shape = tuple(int(d) for d in np.frombuffer(data, ">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_DTYPES[code])
    expected = offset + int(np.prod(shape)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"{path}: {len(data)} bytes, but the header {shape} implies {expected}")
    return np.frombuffer(data, dtype, offset=offset).reshape(shape).astype(dtype.newbyteorder("="))


def _find(names: Sequence[str], dirs: Sequence[Path], what: str, how: str) -> list[Path]:
    """Paths of *names* (plain or ``.gz``) in the first of *dirs* that holds all of them."""
    missing = []
    for d in dirs:
        found = [
            next((d / (n + ext) for ext in ("", ".gz") if (d / (n + ext)).is_file()), None)
            for n in names
        ]
        paths = [f for f in found if f is not None]
        if len(paths) == len(names):
            return paths
        missing.append(f"{d} lacks {', '.join(n for n, f in zip(names, found) if f is None)}")
    where = "; ".join(missing) if dirs else f"no data directory given (need {', '.join(names)})"
    raise DataNotFoundError(f"{what} files (each plain or .gz) not found: {where}. {how}")


def data_dirs(data_dir: str | os.PathLike[str] | None, subdir: str) -> list[Path]:
    """Directories to search: *data_dir* (else ``$NETSIM_DATA_DIR``) and its *subdir*."""
    root = data_dir if data_dir is not None else os.environ.get(DATA_ENV)
    return [] if root is None else [Path(root), Path(root) / subdir]


def load_mnist(
    data_dir: str | os.PathLike[str] | None, scale: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """MNIST's four IDX files in *data_dir* (or its ``mnist/``): (X_train (60000, 784),
    y_train, X_test (10000, 784), y_test, the files read); pixels in [0, 1] when *scale*."""
    dirs = data_dirs(data_dir, "mnist")
    how = (
        f"Download the four *-ubyte.gz files of the original MNIST distribution (Y. LeCun's MNIST page "
        f"or any mirror listing the same md5s) into {dirs[0] if dirs else 'a directory'}, "
        f"or pass --data-dir / set NETSIM_DATA_DIR."
    )
    paths = _find(MNIST_FILES, dirs, "MNIST", how)
    arrays = [read_idx(p, magic=2051 if "images" in p.name else 2049) for p in paths]
    for imgs, labs, p in ((arrays[0], arrays[1], paths[0]), (arrays[2], arrays[3], paths[2])):
        if imgs.ndim != 3 or labs.ndim != 1 or len(imgs) != len(labs):
            raise ValueError(f"{p}: {imgs.shape} images do not match {labs.shape} labels")
    Xs = [np.divide(a.reshape(len(a), -1), 255.0 if scale else 1.0) for a in arrays[::2]]
    return (
        Xs[0],
        arrays[1].astype(np.int64),
        Xs[1],
        arrays[3].astype(np.int64),
        ", ".join(map(str, paths)),
    )


# ---------------------------------------------------------------- other sources


def load_libsvm(
    data_dir: str | os.PathLike[str] | None,
    train: str | os.PathLike[str] | None,
    test: str | os.PathLike[str] | None,
    n_features: int | None,
) -> tuple[Features, np.ndarray, Features | None, np.ndarray | None, int, str]:
    """LIBSVM text files *train* and *test* (default: a9a and a9a.t in *data_dir*): CSR
    rows, labels in 0..k-1 (±1 labels: 0/1), k, the files read; the test set None without a
    *test* file."""
    from sklearn.datasets import load_svmlight_files

    if train is None:
        how = (
            "Get a9a and a9a.t from the LIBSVM data page (binary class, 'a9a') into that directory, "
            "pass --data-dir / set NETSIM_DATA_DIR, or give data.train_file."
        )
        train, test = _find(LIBSVM_DEFAULT_FILES, data_dirs(data_dir, "a9a"), "LIBSVM", how)
    files = [Path(train)] + ([Path(test)] if test is not None else [])
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise DataNotFoundError(f"LIBSVM files not found: {', '.join(missing)}")
    try:
        arrays = load_svmlight_files(
            [str(f) for f in files], n_features=n_features, dtype=np.float64
        )
    except ValueError:  # its message quotes the offending text: name the file and line instead
        raise ValueError(_libsvm_error(files)) from None
    if arrays[0].shape[1] > MAX_FEATURES:
        raise ValueError(
            f"{files[0]}: {arrays[0].shape[1]} features (its largest feature index); at most "
            f"{MAX_FEATURES:,}"
        )
    for f, X in zip(files, arrays[0::2]):
        if not np.isfinite(X.data).all():
            raise ValueError(f"{f}: a feature value is not finite (nan or inf)")
    ys = arrays[1::2]
    y_all = np.concatenate(ys)
    if not np.all(y_all == np.round(y_all)):
        raise ValueError(
            f"{files[0]}: labels are not class labels (e.g. {y_all[y_all != np.round(y_all)][0]!r})"
        )
    classes = np.unique(y_all)
    if np.all(np.isin(classes, (-1.0, 1.0))):
        ys, n_classes = [(y > 0).astype(np.int64) for y in ys], 2
    else:
        ys, n_classes = (
            [np.searchsorted(classes, y).astype(np.int64) for y in ys],
            max(2, len(classes)),
        )
    where = ", ".join(map(str, files))
    if test is None:
        return arrays[0], ys[0], None, None, n_classes, where
    return arrays[0], ys[0], arrays[2], ys[1], n_classes, where


def load_npz(
    path: str | os.PathLike[str] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, tuple[int, ...], str]:
    """The four arrays of :data:`NPZ_KEYS` in *path*: examples flattened to rows, labels
    mapped to 0..k-1 in sorted order; returns (X_tr, y_tr, X_te, y_te, k, shape, source)."""
    if path is None:
        raise ValueError(
            "no file given: set data.path = 'my.npz' (arrays X_train, y_train, X_test, y_test)"
        )
    path = Path(path)
    if path.exists() and not path.is_file():
        raise ValueError(
            f"{path}: not a regular file (an .npz with arrays {', '.join(NPZ_KEYS)}, "
            "as written by numpy.savez)"
        )
    if not path.is_file():
        raise ValueError(
            f"{path}: no such file (an .npz with arrays {', '.join(NPZ_KEYS)}, "
            "as written by numpy.savez)"
        )
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"{path}: not an .npz file (a zip archive of arrays, as numpy.savez writes)"
        )
    try:
        with np.load(path, allow_pickle=False) as f:
            missing = [k for k in NPZ_KEYS if k not in f.files]
            if missing:
                raise ValueError(
                    f"{path}: no array {', '.join(missing)} (it has {', '.join(f.files) or 'none'}; "
                    f"needs {', '.join(NPZ_KEYS)})"
                )
            arrays = []
            for k in NPZ_KEYS:
                try:
                    arrays.append(f[k])
                except ValueError:  # an object array: it would need pickle
                    raise ValueError(
                        f"{path}: {k} is an array of Python objects (netsim reads numeric arrays, "
                        "never pickled data)"
                    ) from None
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:  # truncated, unreadable
        raise ValueError(f"{path}: not a readable .npz file ({type(exc).__name__})") from None
    return (*_checked(arrays, str(path)), str(path))


def _checked(
    arrays: Sequence[np.ndarray], path: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, tuple[int, ...]]:
    """(X_tr, y_tr, X_te, y_te, k, shape) of the four arrays (examples (n, ...), labels (n,))
    of :data:`NPZ_KEYS`: examples flattened to float64 rows, labels mapped to 0..k-1 in
    sorted order; ValueError starting with *path* when they do not fit."""
    X_tr, y_tr, X_te, y_te = arrays
    for X, y, which in ((X_tr, y_tr, "train"), (X_te, y_te, "test")):
        if X.ndim < 2 or y.ndim != 1 or len(X) != len(y) or len(X) == 0:
            raise ValueError(
                f"{path}: X_{which} {X.shape} and y_{which} {y.shape} must be (n, ...) and (n,) "
                "with n >= 1"
            )
        if 0 in X.shape[1:]:
            raise ValueError(
                f"{path}: X_{which} {X.shape} has no feature (each example must hold a value or more)"
            )
        real = X.dtype == bool or (np.issubdtype(X.dtype, np.number) and not np.iscomplexobj(X))
        if not (real and np.isfinite(X).all()):
            raise ValueError(f"{path}: X_{which} must hold finite real numbers (dtype {X.dtype})")
        integral = y.dtype == bool or (
            np.issubdtype(y.dtype, np.number)
            and not np.iscomplexobj(y)
            and np.all(y == np.round(y))
        )
        if not integral:
            raise ValueError(f"{path}: y_{which} must hold integer class labels (dtype {y.dtype})")
    if X_tr.shape[1:] != X_te.shape[1:]:
        raise ValueError(
            f"{path}: X_train examples {X_tr.shape[1:]} and X_test examples {X_te.shape[1:]} differ"
        )
    classes = np.unique(y_tr)
    unseen = np.setdiff1d(np.unique(y_te), classes)
    if len(unseen):
        raise ValueError(
            f"{path}: y_test holds labels that y_train does not ({_some(unseen)}; y_train's: "
            f"{_some(classes)}): a model cannot learn a class it never sees"
        )
    if len(classes) < 2:
        raise ValueError(
            f"{path}: every label is {classes[0]}: a classifier needs two classes or more"
        )
    ys = [np.searchsorted(classes, y).astype(np.int64) for y in (y_tr, y_te)]
    rows = [np.asarray(X, dtype=np.float64).reshape(len(X), -1) for X in (X_tr, X_te)]
    shape = tuple(int(n) for n in X_tr.shape[1:])
    return rows[0], ys[0], rows[1], ys[1], max(2, len(classes)), shape


def load_callable(
    function: tuple[str, str] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, tuple[int, ...], str]:
    """The data the user's function returns (*function*: ``("package.module:name", folder)``,
    imported from the folder first): four arrays or tensors (a tuple in the order of
    :data:`NPZ_KEYS` or a dict of them) or ``(train, test)`` datasets of ``(x, y)`` items
    (a torch ``Dataset``); checked as an npz file's arrays. Returns
    (X_tr, y_tr, X_te, y_te, k, shape, source)."""
    from .torch_nets import load_attribute

    spec, folder = function or ("", "")
    make = load_attribute(spec, Path(folder) if folder else None, "package.module:function")
    if not callable(make):
        raise ValueError(f"{spec!r} is a {type(make).__name__}, not a function")
    try:
        out = make()
    except (Exception, SystemExit) as exc:  # noqa: BLE001  the user's function: no traceback
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise ValueError(f"{spec} failed ({type(exc).__name__}: {text})") from None
    if isinstance(out, dict) and set(NPZ_KEYS) <= set(out):
        out = [out[k] for k in NPZ_KEYS]
    if isinstance(out, (tuple, list)) and len(out) == 2:
        out = [*_items(out[0], spec, "train"), *_items(out[1], spec, "test")]
    if not (isinstance(out, (tuple, list)) and len(out) == 4):
        raise ValueError(
            f"{spec} returned {_what(out)}: expected (X_train, y_train, X_test, y_test) arrays "
            "or tensors, a dict of them, or (train, test) datasets of (x, y) items"
        )
    arrays = [_array(a, spec, k) for a, k in zip(out, NPZ_KEYS)]
    return (*_checked(arrays, spec), f"{spec} (from {folder})")


class Pairs(Protocol):
    """A dataset of ``(x, y)`` items: a length and indexing (a torch ``Dataset``, a list)."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> tuple[object, object]: ...


def _what(value: object) -> str:
    return (
        f"{len(value)} values" if isinstance(value, (tuple, list)) else f"a {type(value).__name__}"
    )


def _array(value: object, spec: str, key: str) -> np.ndarray:
    """*value* (an array, a tensor, a list) as a numeric ndarray; ValueError naming *key*."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        out = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{spec}: {key} is not an array ({exc})") from None
    if out.dtype == object:
        raise ValueError(f"{spec}: {key} is an array of Python objects (numbers needed)")
    return out


def _items(dataset: Pairs, spec: str, which: str) -> list[np.ndarray]:
    """``[X, y]`` of a dataset of ``(x, y)`` items (``len`` and indexing: a torch Dataset)."""
    try:
        pairs = [dataset[i] for i in range(len(dataset))]
        xs = np.stack([_array(x, spec, f"X_{which}") for x, _ in pairs])
        ys = np.array([_array(y, spec, f"y_{which}").reshape(()).item() for _, y in pairs])
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError(
            f"{spec}: the {which} dataset is not a sequence of (x, y) items of one shape "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None
    return [xs, ys]


def _some(labels: np.ndarray, most: int = 6) -> str:
    """Up to *most* labels, comma-separated ('...' when there are more)."""
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in labels[:most].tolist())
    return shown + (", ..." if len(labels) > most else "")


def _libsvm_error(files: Sequence[Path]) -> str:
    """Where *files* stop being LIBSVM text: the first file and line (1-based) that is not
    ``label index:value ...`` (a comment after ``#`` allowed), without quoting it."""
    import re

    token = re.compile(rb"^\s*[-+0-9.eE]+(\s+(qid:\d+|\d+:[-+0-9.eEinfINFaA]+))*\s*(#.*)?$")
    for f in files:
        with open(f, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if (
                    line.strip()
                    and not line.lstrip().startswith(b"#")
                    and not token.match(line.rstrip(b"\r\n"))
                ):
                    return f"{f}: not in LIBSVM format at line {number} (expected 'label index:value ...')"
    return f"{', '.join(map(str, files))}: not in LIBSVM format (expected 'label index:value ...' lines)"


def synthetic(
    rng: np.random.Generator, n_samples: int, n_features: int, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """A teacher problem: standard normal rows X (n_samples, n_features) labelled by the
    arg-max of a random linear teacher's scores plus noise (:data:`SYNTHETIC_NOISE`)."""
    if n_samples < 2 or n_features < 1 or n_classes < 2:
        raise ValueError(
            f"synthetic data needs n_samples >= 2, n_features >= 1, n_classes >= 2; "
            f"got {n_samples!r}, {n_features!r}, {n_classes!r}"
        )
    X = rng.standard_normal((n_samples, n_features))
    teacher = rng.standard_normal((n_features, n_classes)) / np.sqrt(n_features)
    scores = X @ teacher + SYNTHETIC_NOISE * rng.standard_normal((n_samples, n_classes))
    return X, np.argmax(scores, axis=1).astype(np.int64)


def train_rows(n: int, test_fraction: float) -> int:
    """Rows left for training when *test_fraction* of *n* >= 2 rows is held out:
    the test share is rounded half-to-even and kept in 1 .. n - 1.

    >>> train_rows(1797, 0.2), train_rows(2, 0.9)
    (1438, 1)
    """
    return n - min(max(int(round(test_fraction * n)), 1), n - 1)


def split(
    X: Features, y: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[Features, np.ndarray, Features, np.ndarray]:
    """(X_train, y_train, X_test, y_test): a random *test_fraction* of the rows held out
    (:func:`train_rows`), each part in row order."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"cannot split {n} row(s) into a training and a test set (need >= 2)")
    n_test = n - train_rows(n, test_fraction)
    perm = rng.permutation(n)
    test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    return X[train], y[train], X[test], y[test]


def finish(X: Features, add_bias: bool, sparse: bool) -> Features:
    """*X* as training reads it: a constant-1 column appended when *add_bias*; float64, as
    a CSR matrix when *sparse*, else a C-contiguous ndarray."""
    if add_bias:
        ones = np.ones((X.shape[0], 1))
        X = sp.hstack([X, ones], format="csr") if sp.issparse(X) else np.hstack([X, ones])
    if sparse:
        return sp.csr_matrix(X, dtype=np.float64)
    dense = cast("csr_matrix", X).toarray() if sp.issparse(X) else X
    return np.ascontiguousarray(dense, dtype=np.float64)


def relabel(
    name: str, labels: str, y_tr: np.ndarray, y_te: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Apply the labelling *labels* (odd_even, multiclass, binary) to data *name* of *k*
    classes: (y_tr, y_te, classes)."""
    if labels == "binary" and k != 2:
        raise ValueError(
            f"labels='binary' needs 2 classes, but {name!r} has {k}; use labels='multiclass'"
        )
    if labels == "odd_even":
        return y_tr % 2, y_te % 2, 2
    return y_tr, y_te, k


# ---------------------------------------------------------------- sharding


def shard(n_rows: int, n_workers: int, rng: np.random.Generator | int) -> list[np.ndarray]:
    """Split row indices ``0 .. n_rows-1`` into *n_workers* disjoint random IID shards.

    Every row belongs to a shard: shards have ``n_rows // n_workers`` rows, and the
    ``n_rows % n_workers`` left-over rows go one each to workers 0, 1, ...
    (see :func:`netsim.workload.partition.iid`). Where nothing is left over the
    shards are the same as before left-over rows were distributed.

    Parameters
    ----------
    n_rows : int
        Number of training rows.
    n_workers : int
        Number of shards, 1 <= n_workers <= n_rows.
    rng : numpy Generator or int

    Returns
    -------
    list of *n_workers* sorted int64 ndarrays.

    Raises
    ------
    ValueError
        If *n_workers* < 1 or *n_rows* < *n_workers*.
    """
    if n_workers < 1 or n_rows < n_workers:
        raise ValueError(f"cannot cut {n_rows!r} rows into {n_workers!r} non-empty shards")
    return iid(np.arange(n_rows, dtype=np.int64), n_workers, np.random.default_rng(rng))
