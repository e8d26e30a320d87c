"""Tests of netsim.workload.datasets: IDX parsing, the real MNIST / a9a files, digits, synthetic data, shard."""

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_digits

from netsim.workload.datasets import (
    MNIST_FILES,
    DataNotFoundError,
    read_idx,
    shard,
)
from netsim.workload.sources import load_dataset

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
MNIST_DIR = SHARED / "mnist"
A9A_DIR = SHARED / "a9a"
needs_mnist = pytest.mark.skipif(
    not MNIST_DIR.is_dir(), reason=f"real MNIST files not present in {MNIST_DIR}"
)
needs_a9a = pytest.mark.skipif(
    not A9A_DIR.is_dir(), reason=f"real a9a files not present in {A9A_DIR}"
)


def idx_bytes(magic, dims, payload):
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims)
    return header + bytes(payload)


def write(path, data):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as f:
        f.write(data)
    return path


def write_tiny_mnist(directory, gz):
    """2 train images of 2x2 (pixels 0..7), labels 3 8; 1 test image (255s), label 5."""
    ext = ".gz" if gz else ""
    files = dict(
        zip(
            MNIST_FILES,
            [
                idx_bytes(2051, (2, 2, 2), range(8)),
                idx_bytes(2049, (2,), [3, 8]),
                idx_bytes(2051, (1, 2, 2), [255] * 4),
                idx_bytes(2049, (1,), [5]),
            ],
        )
    )
    for name, data in files.items():
        write(directory / (name + ext), data)


# ------------------------------------------------------------------ IDX parser


@pytest.mark.parametrize("ext", ["", ".gz"])
def test_read_idx_known_content(tmp_path, ext):
    path = write(tmp_path / ("x" + ext), idx_bytes(2051, (2, 2, 3), range(12)))
    a = read_idx(path, magic=2051)
    assert a.shape == (2, 2, 3) and a.dtype == np.uint8
    assert a[1, 0, 2] == 8 and a.ravel().tolist() == list(range(12))
    labels = read_idx(
        write(tmp_path / ("y" + ext), idx_bytes(2049, (4,), [9, 0, 255, 7])), magic=2049
    )
    assert labels.tolist() == [9, 0, 255, 7]


def test_read_idx_wider_type(tmp_path):
    # type code 0x0C = big-endian int32, 1 dimension
    payload = (1).to_bytes(4, "big") + (-2).to_bytes(4, "big", signed=True)
    path = write(tmp_path / "i32", idx_bytes(0x0C01, (2,), payload))
    assert read_idx(path).tolist() == [1, -2]


@pytest.mark.parametrize(
    "data,magic,match",
    [
        (idx_bytes(2049, (2, 2), range(4)), 2051, "bad IDX magic number 2049, expected 2051"),
        (
            idx_bytes(2051, (2, 2, 2), range(7)),
            2051,
            "23 bytes, but the header \\(2, 2, 2\\) implies 24",
        ),
        (idx_bytes(2051, (2, 2, 2), range(9)), 2051, "but the header"),
        (b"\x1f\x8b\x08\x08\x00\x00\x00\x00", None, "not an IDX file"),
        (b"\x00\x00", None, "not an IDX file"),
    ],
)
def test_read_idx_rejects_bad_files(tmp_path, data, magic, match):
    path = write(tmp_path / "bad-file", data)
    with pytest.raises(ValueError, match=match) as info:
        read_idx(path, magic=magic)
    assert "bad-file" in str(info.value)


@pytest.mark.parametrize("gz", [False, True])
def test_tiny_mnist_directory(tmp_path, gz):
    write_tiny_mnist(tmp_path, gz)
    d = load_dataset("mnist", data_dir=tmp_path, labels="multiclass")
    assert d.X_train.shape == (2, 4) and d.X_train.dtype == np.float64
    np.testing.assert_allclose(
        d.X_train, [[0, 1 / 255, 2 / 255, 3 / 255], [4 / 255, 5 / 255, 6 / 255, 7 / 255]]
    )
    np.testing.assert_array_equal(d.X_test, np.ones((1, 4)))
    assert d.y_train.tolist() == [3, 8] and d.y_test.tolist() == [5] and d.n_classes == 10
    odd = load_dataset("mnist", data_dir=tmp_path, add_bias=True, scale=False)
    assert odd.y_train.tolist() == [1, 0] and odd.y_test.tolist() == [1] and odd.n_classes == 2
    np.testing.assert_array_equal(odd.X_train, [[0, 1, 2, 3, 1], [4, 5, 6, 7, 1]])


def test_mnist_found_through_env_var_and_subdir(tmp_path, monkeypatch):
    (tmp_path / "mnist").mkdir()
    write_tiny_mnist(tmp_path / "mnist", gz=True)
    monkeypatch.setenv("NETSIM_DATA_DIR", str(tmp_path))
    assert load_dataset("mnist").X_train.shape == (2, 4)


def test_mnist_missing_files(tmp_path, monkeypatch):
    monkeypatch.delenv("NETSIM_DATA_DIR", raising=False)
    write(tmp_path / "train-labels-idx1-ubyte.gz", idx_bytes(2049, (1,), [1]))
    for kwargs in (dict(data_dir=tmp_path / "nowhere"), dict(data_dir=tmp_path), {}):
        with pytest.raises(DataNotFoundError) as info:
            load_dataset("mnist", **kwargs)
        msg = str(info.value)
        assert "NETSIM_DATA_DIR" in msg and "t10k-images-idx3-ubyte" in msg
    with pytest.raises(DataNotFoundError) as info:
        load_dataset("mnist", data_dir=tmp_path)
    msg = str(info.value)
    assert str(tmp_path) in msg
    for name in MNIST_FILES:
        assert name in msg
    assert (
        "lacks train-images-idx3-ubyte, t10k-images" in msg
    )  # the labels file that exists is not listed


# ------------------------------------------------------------------ real MNIST


@pytest.fixture(scope="module")
def mnist():
    return load_dataset("mnist", data_dir=MNIST_DIR, labels="multiclass")


@needs_mnist
def test_real_mnist(mnist):
    assert mnist.X_train.shape == (60000, 784) and mnist.X_test.shape == (10000, 784)
    assert mnist.X_train.dtype == np.float64 and mnist.X_train.flags.c_contiguous
    assert mnist.y_train.dtype == np.int64
    assert mnist.y_train[:5].tolist() == [5, 0, 4, 1, 9]
    assert mnist.y_test[:5].tolist() == [7, 2, 1, 0, 4]
    assert mnist.X_train.mean() == pytest.approx(0.1307, abs=5e-5)
    assert mnist.X_test.mean() == pytest.approx(0.1325, abs=5e-5)
    assert 0.0 == mnist.X_train.min() and mnist.X_train.max() == 1.0
    assert np.bincount(mnist.y_train).tolist() == [
        5923,
        6742,
        5958,
        6131,
        5842,
        5421,
        5918,
        6265,
        5851,
        5949,
    ]
    assert mnist.n_classes == 10


@needs_mnist
def test_real_mnist_odd_even(mnist):
    d = load_dataset("mnist", data_dir=SHARED)  # parent directory; odd_even is the default
    assert d.n_classes == 2
    np.testing.assert_array_equal(d.y_train, mnist.y_train % 2)
    np.testing.assert_array_equal(d.y_test, mnist.y_test % 2)
    assert d.y_train.sum() == 6742 + 6131 + 5421 + 6265 + 5949  # digits 1, 3, 5, 7, 9


# ------------------------------------------------------------------ LIBSVM


@needs_a9a
def test_real_a9a():
    d = load_dataset("libsvm", data_dir=A9A_DIR)
    assert d.X_train.shape == (32561, 123) and d.X_test.shape == (16281, 123)
    assert isinstance(d.X_train, np.ndarray) and d.X_train.dtype == np.float64
    assert d.y_train.sum() == 7841 and d.y_test.sum() == 3846
    assert set(np.unique(d.y_train)) == {0, 1} and d.n_classes == 2
    assert set(np.unique(d.X_train)) == {0.0, 1.0}


def test_libsvm_small_files(tmp_path):
    (tmp_path / "tr").write_text("+1 1:0.5 3:2\n-1 2:1\n+1 1:1.5\n")
    (tmp_path / "te").write_text("-1 1:1\n")  # highest index 1: shapes must still agree
    d = load_dataset(
        "libsvm", libsvm_train=tmp_path / "tr", libsvm_test=tmp_path / "te", sparse=True
    )
    assert sp.issparse(d.X_train) and d.X_train.format == "csr"
    np.testing.assert_array_equal(d.X_train.toarray(), [[0.5, 0, 2], [0, 1, 0], [1.5, 0, 0]])
    np.testing.assert_array_equal(d.X_test.toarray(), [[1, 0, 0]])
    assert d.y_train.tolist() == [1, 0, 1] and d.y_test.tolist() == [0]
    wide = load_dataset(
        "libsvm",
        libsvm_train=tmp_path / "tr",
        libsvm_test=tmp_path / "te",
        n_features_libsvm=5,
        add_bias=True,
    )
    np.testing.assert_array_equal(wide.X_test, [[1, 0, 0, 0, 0, 1]])
    biased = load_dataset(
        "libsvm",
        libsvm_train=tmp_path / "tr",
        libsvm_test=tmp_path / "te",
        sparse=True,
        add_bias=True,
    )
    assert biased.X_train.format == "csr"
    np.testing.assert_array_equal(biased.X_train.toarray()[:, -1], [1, 1, 1])


def test_libsvm_multiclass_labels_consistent(tmp_path):
    (tmp_path / "tr").write_text("7 1:1\n1 1:2\n3 1:3\n7 1:4\n")
    (tmp_path / "te").write_text("3 1:5\n7 1:6\n")
    d = load_dataset("libsvm", libsvm_train=tmp_path / "tr", libsvm_test=tmp_path / "te")
    assert d.n_classes == 3
    assert d.y_train.tolist() == [2, 0, 1, 2] and d.y_test.tolist() == [1, 2]
    with pytest.raises(ValueError, match="labels='binary' needs 2 classes"):
        load_dataset(
            "libsvm", libsvm_train=tmp_path / "tr", libsvm_test=tmp_path / "te", labels="binary"
        )


def test_libsvm_without_test_file_is_split(tmp_path):
    (tmp_path / "tr").write_text("".join(f"{1 if i % 3 else -1} 1:{i}\n" for i in range(1, 11)))
    d = load_dataset("libsvm", libsvm_train=tmp_path / "tr", test_fraction=0.3, rng=0)
    assert len(d.y_train) == 7 and len(d.y_test) == 3
    values = sorted(np.concatenate([d.X_train[:, 0], d.X_test[:, 0]]).tolist())
    assert values == list(range(1, 11))


def test_libsvm_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("NETSIM_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError, match="a9a.t"):
        load_dataset("libsvm", data_dir=tmp_path)
    with pytest.raises(DataNotFoundError, match="nope"):
        load_dataset("libsvm", libsvm_train=tmp_path / "nope")


def test_a_relative_libsvm_file_is_read_from_the_data_folder(tmp_path, monkeypatch):
    """``data.train_file = "a9a/tr"`` with ``--data-dir ROOT`` reads ROOT/a9a/tr (the folder
    first, its source subfolder next, the working directory last); missing, the error names
    the key and every place looked at."""
    from netsim.config.scenario import parse_scenario
    from netsim.errors import ScenarioError
    from netsim.workload.loading import load_data

    monkeypatch.delenv("NETSIM_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "data"
    (root / "a9a").mkdir(parents=True)
    (root / "a9a" / "tr").write_text("+1 1:1\n-1 2:1\n+1 1:2\n-1 2:2\n")
    (root / "a9a" / "te").write_text("+1 1:3\n")

    def raw(**data):
        return {
            "run": {"until": 1.0, "algorithm": "asgd"},
            "data": {"source": "libsvm", **data},
            "workers": [{"name": "a", "count": 1, "compute": 1.0}],
            "algorithms": {"asgd": {"lr": 0.1}},
        }

    def spec(**data):
        return parse_scenario(raw(**data), tmp_path / "s.toml").data

    for data in (
        {"dir": str(root), "train_file": "a9a/tr", "test_file": "a9a/te"},  # under the folder
        {"dir": str(root), "train_file": "tr", "test_file": "te"},  # under its a9a/
        {"train_file": "data/a9a/tr", "test_file": str(root / "a9a" / "te")},  # cwd, absolute
    ):
        d = load_data(spec(**data), np.random.default_rng(0))
        assert d.y_train.tolist() == [1, 0, 1, 0] and d.y_test.tolist() == [1]
    # read by libsvm only: another source refuses it as a key it does not read
    with pytest.raises(ScenarioError) as err:
        parse_scenario(raw(source="digits", train_file="a9a/tr"), tmp_path / "s.toml")
    assert err.value.key == "data.train_file" and "unknown key" in str(err.value)
    with pytest.raises(ScenarioError) as err:
        load_data(spec(dir=str(root), train_file="nope"), np.random.default_rng(0))
    assert err.value.key == "data.train_file"
    for place in (root / "nope", root / "a9a" / "nope", Path("nope")):
        assert str(place) in str(err.value)


# ------------------------------------------------------------------ digits


def sorted_rows(X, y):
    rows = np.column_stack([X, y])
    return rows[np.lexsort(rows.T[::-1])]


def test_digits_split_is_a_partition():
    d = load_dataset("digits", labels="multiclass", rng=np.random.default_rng(3))
    assert len(d.y_train) + len(d.y_test) == 1797
    assert len(d.y_test) == round(0.2 * 1797) == 359
    assert d.X_train.shape[1] == 64 and d.n_classes == 10 and d.source == "sklearn digits"
    assert d.X_train.min() == 0.0 and d.X_train.max() == 1.0
    raw = load_digits()
    got = sorted_rows(np.vstack([d.X_train, d.X_test]) * 16, np.concatenate([d.y_train, d.y_test]))
    np.testing.assert_array_equal(got, sorted_rows(raw.data, raw.target))


def test_digits_reproducible_and_odd_even():
    a = load_dataset("digits", rng=np.random.default_rng(11), labels="multiclass")
    b = load_dataset("digits", rng=np.random.default_rng(11), labels="multiclass")
    c = load_dataset("digits", rng=np.random.default_rng(12), labels="multiclass")
    for field in ("X_train", "y_train", "X_test", "y_test"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.y_train, c.y_train)
    odd = load_dataset("digits", rng=np.random.default_rng(11))
    assert odd.n_classes == 2
    np.testing.assert_array_equal(odd.y_train, a.y_train % 2)
    np.testing.assert_array_equal(odd.X_test, a.X_test)


def test_digits_add_bias_and_unscaled():
    d = load_dataset("digits", rng=0, add_bias=True, scale=False, test_fraction=0.5)
    assert d.X_train.shape == (899, 65) and d.X_test.shape == (898, 65)  # round(898.5) == 898
    np.testing.assert_array_equal(d.X_train[:, -1], 1.0)
    assert d.X_train[:, :-1].max() == 16.0


# ------------------------------------------------------------------ synthetic


def test_synthetic_shapes_reproducible_and_learnable():
    from sklearn.linear_model import LogisticRegression

    a = load_dataset("synthetic", rng=5, n_samples=500, n_features=8, n_classes=3)
    b = load_dataset("synthetic", rng=5, n_samples=500, n_features=8, n_classes=3)
    assert a.X_train.shape == (400, 8) and a.X_test.shape == (100, 8) and a.n_classes == 3
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert set(np.unique(a.y_train)) == {0, 1, 2}
    clf = LogisticRegression(max_iter=1000).fit(a.X_train, a.y_train)
    assert clf.score(a.X_test, a.y_test) > 0.85
    binary = load_dataset("synthetic", rng=1, n_samples=50, labels="binary")
    assert binary.n_classes == 2 and set(np.unique(binary.y_train)) == {0, 1}


# ------------------------------------------------------------------ argument errors


@pytest.mark.parametrize(
    "name,kwargs,match",
    [
        ("cifar", {}, "unknown data set 'cifar'; allowed: digits, mnist, libsvm, synthetic"),
        (
            "digits",
            dict(labels="binary"),
            "labels='binary' does not apply to 'digits'; allowed: odd_even, multiclass",
        ),
        ("synthetic", dict(labels="odd_even"), "allowed: binary, multiclass"),
        ("synthetic", dict(n_classes=3, labels="binary"), "needs 2 classes"),
        ("synthetic", dict(n_samples=1), "got 1, 20, 2"),
        ("digits", dict(test_fraction=1.0), "test_fraction must be in \\(0, 1\\), got 1.0"),
        ("digits", dict(test_fraction=0), "got 0"),
    ],
)
def test_load_dataset_rejects(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_dataset(name, rng=0, **kwargs)


# ------------------------------------------------------------------ shard


def test_shard_example():
    parts = shard(10, 3, np.random.default_rng(0))
    assert [p.shape for p in parts] == [(4,), (3,), (3,)] and all(
        p.dtype == np.int64 for p in parts
    )
    union = np.concatenate(parts)
    assert sorted(union.tolist()) == list(range(10))  # the left-over row goes to worker 0
    again = shard(10, 3, np.random.default_rng(0))
    assert all(np.array_equal(p, q) for p, q in zip(parts, again))


@given(n_rows=st.integers(1, 500), n_workers=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_shard_properties(n_rows, n_workers, seed):
    if n_rows < n_workers:
        with pytest.raises(ValueError, match=f"{n_rows} rows into {n_workers}"):
            shard(n_rows, n_workers, seed)
        return
    parts = shard(n_rows, n_workers, np.random.default_rng(seed))
    assert len(parts) == n_workers
    q, r = divmod(n_rows, n_workers)
    assert [len(p) for p in parts] == [q + 1] * r + [q] * (n_workers - r)
    union = np.concatenate(parts)
    assert len(np.unique(union)) == len(union) == n_rows
    assert union.min() >= 0 and union.max() < n_rows


def test_shard_rejects_zero_workers():
    with pytest.raises(ValueError, match="into 0"):
        shard(5, 0, 0)


def test_a_file_that_is_not_libsvm_is_named_by_line_without_its_content(tmp_path):
    from netsim.workload.sources import load_dataset

    f = tmp_path / "secrets.txt"
    f.write_text("1 3:0.5 7:1\n-1 2:1\nroot:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(ValueError) as err:
        load_dataset("libsvm", libsvm_train=f)
    assert (
        str(err.value) == f"{f}: not in LIBSVM format at line 3 (expected 'label index:value ...')"
    )
    assert "root" not in str(err.value).replace(str(f), "")


def test_a_libsvm_test_file_without_a_train_file_is_refused(tmp_path):
    from netsim.config.scenario import parse_scenario
    from netsim.errors import ScenarioError

    raw = {
        "run": {"until": 1.0, "algorithm": "asgd"},
        "data": {"source": "libsvm", "test_file": "te"},
        "workers": [{"name": "a", "count": 1, "compute": 1.0}],
        "algorithms": {"asgd": {"lr": 0.1}},
    }
    with pytest.raises(ScenarioError) as err:
        parse_scenario(raw, tmp_path / "s.toml")
    assert err.value.key == "data.test_file" and "needs data.train_file" in str(err.value)
