"""The torch backend: the same runs as the numpy models where the functions agree, gradients
at stale versions, batched gradients, user modules, npz data and refused input."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
from conftest import base_raw, make_scenario

torch = pytest.importorskip(
    "torch", reason="the torch backend needs PyTorch (pip install torch==2.13.0)"
)

from netsim.errors import ScenarioError  # noqa: E402
from netsim.sim.engine import prepare, simulate  # noqa: E402
from netsim.workload.torch_model import TorchModel  # noqa: E402
from netsim.workload.torch_nets import cnn, lenet5, mlp  # noqa: E402

# Linear models written as torch modules with the numpy models' parameter layout:
# logistic (one logit, w of shape (d,)) and softmax (W of shape (d, c), C order).
LINEAR = textwrap.dedent("""
    import torch

    class Logistic(torch.nn.Module):
        def __init__(self, n_features):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(n_features, 1, dtype=torch.float64))

        def forward(self, x):
            return x.flatten(1) @ self.w

    class Softmax(torch.nn.Module):
        def __init__(self, n_features, n_classes):
            super().__init__()
            self.W = torch.nn.Parameter(torch.zeros(n_features, n_classes, dtype=torch.float64))

        def forward(self, x):
            return x.flatten(1) @ self.W

    class NotAModule:
        pass

    class IntLogits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 2)

        def forward(self, x):
            return self.lin(x.flatten(1)).long()

    class TwoOutputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 3)

        def forward(self, x):
            return self.lin(x.flatten(1))
""")

WORKERS = [
    {"name": "fast", "count": 3, "compute": {"dist": "lognormal", "median": 1.0, "sigma": 0.3}},
    {"name": "slow", "count": 3, "compute": {"dist": "lognormal", "median": 2.5, "sigma": 0.3}},
]
RULES = {
    "ssgd": {"lr": 0.3},
    "asgd": {"lr": 0.1},
    "gsgd": {"lr": 0.2, "groups": [["fast"], ["slow"]]},
    "dcasgd_a": {"lr": 0.1},
}


def _pair(tmp_path, numpy_model: dict, torch_model: dict, labels: str):
    (tmp_path / "linear_models.py").write_text(LINEAR)
    common = {
        "run": {"seed": 5, "algorithm": "asgd", "until": 40.0, "eval_every": 10.0, "batch_size": 8},
        "data": {"source": "digits", "labels": labels},
        "workers": WORKERS,
        "algorithms": RULES,
    }
    a = make_scenario(base_raw(**common, model=numpy_model), str(tmp_path / "a.toml"))
    b = make_scenario(base_raw(**common, model=torch_model), str(tmp_path / "b.toml"))
    return a, b


@pytest.mark.parametrize("rule", ["ssgd", "asgd", "gsgd", "dcasgd_a"])
@pytest.mark.parametrize("kind", ["logistic", "softmax"])
def test_a_torch_module_that_is_a_numpy_model_gives_its_run(tmp_path, rule, kind):
    """Same data, minibatches, time draws and rule: the float64 torch run equals the numpy one."""
    if kind == "logistic":
        a, b = _pair(
            tmp_path,
            {"name": "logistic", "l2": 0.01},
            {
                "backend": "torch",
                "module": "linear_models:Logistic",
                "kwargs": {"n_features": 64},
                "dtype": "float64",
                "l2": 0.01,
                "init": "zeros",
            },
            "odd_even",
        )
    else:
        a, b = _pair(
            tmp_path,
            {"name": "softmax", "l2": 0.01},
            {
                "backend": "torch",
                "module": "linear_models:Softmax",
                "kwargs": {"n_features": 64, "n_classes": 10},
                "dtype": "float64",
                "l2": 0.01,
                "init": "zeros",
            },
            "multiclass",
        )
    ra, rb = simulate(a, rule), simulate(b, rule)
    assert ra.updates == rb.updates > 10
    for column in ("time", "worker", "staleness", "version", "weight"):
        assert getattr(ra.records, column) == getattr(rb.records, column)
    np.testing.assert_allclose(rb.final_w, ra.final_w, rtol=0, atol=1e-12)
    la, lb = np.array([c[2] for c in ra.records.curve]), np.array([c[2] for c in rb.records.curve])
    np.testing.assert_allclose(lb, la, rtol=1e-12, atol=0)
    assert [c[3] for c in ra.records.curve] == [c[3] for c in rb.records.curve]


def _lenet_model(dtype="float64"):
    torch.manual_seed(0)
    return TorchModel(
        lenet5((1, 28, 28), 10), input_shape=(1, 28, 28), n_classes=10, dtype=dtype, l2=0.003
    )


def test_gradient_at_a_stale_version_is_autograd_on_a_module_set_to_it():
    model = _lenet_model()
    rng = np.random.default_rng(2)
    versions = [model.initial_weights() + rng.normal(0, 0.05, model.n_params()) for _ in range(3)]
    X, y = rng.random((5, 784)), rng.integers(0, 10, 5)
    for w in versions:
        reference = lenet5((1, 28, 28), 10).double()
        torch.nn.utils.vector_to_parameters(torch.tensor(w), reference.parameters())
        loss = torch.nn.functional.cross_entropy(
            reference(torch.tensor(X).view(5, 1, 28, 28)), torch.tensor(y)
        )
        loss.backward()
        expected = (
            torch.cat([p.grad.reshape(-1) for p in reference.parameters()]).numpy() + 0.003 * w
        )
        np.testing.assert_allclose(model.gradient(w, X, y), expected, rtol=0, atol=1e-13)


def test_loss_is_the_mean_cross_entropy_plus_the_penalty():
    model = _lenet_model()
    rng = np.random.default_rng(3)
    w = model.initial_weights()
    X, y = rng.random((4500, 784)), rng.integers(0, 10, 4500)  # more than one evaluation chunk
    logits = model.decision_function(w, X)
    z = logits - logits.max(axis=1, keepdims=True)
    expected = np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(4500), y]) + 0.0015 * w @ w
    assert model.loss(w, X, y) == pytest.approx(expected, rel=1e-12)
    assert (model.predict(w, X) == np.argmax(logits, axis=1)).all()


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-15), ("float32", 1e-6)])
def test_batched_gradients_equal_one_at_a_time(dtype, tol):
    model = _lenet_model(dtype)
    rng = np.random.default_rng(4)
    k, b = 3, 6
    Xs, Ys = rng.random((k, b, 784)), rng.integers(0, 10, (k, b))
    W = model.initial_weights() + rng.normal(0, 0.02, (k, model.n_params()))
    one = np.stack([model.gradient(W[i], Xs[i], Ys[i]) for i in range(k)])
    scale = np.abs(one).max()
    assert np.abs(model.gradients(W, Xs, Ys) - one).max() <= tol * scale
    shared = np.stack([model.gradient(W[0], Xs[i], Ys[i]) for i in range(k)])
    assert np.abs(model.gradients(W[:1], Xs, Ys) - shared).max() <= tol * scale


def test_stacked_runs_match_one_at_a_time_runs_to_rounding(tmp_path):
    model = {"backend": "torch", "name": "mlp", "hidden": [16], "dtype": "float64"}
    raw = base_raw(
        run={"seed": 1, "algorithm": "gsgd", "until": 20.0, "batch_size": 8},
        workers=[
            {"name": "a", "count": 4, "compute": 1.0},
            {"name": "b", "count": 2, "compute": 2.0},
        ],
        model=model,
    )
    one = simulate(make_scenario(raw), "gsgd")
    raw["model"] = {**model, "stack": True}
    many = simulate(make_scenario(raw), "gsgd")
    assert one.updates == many.updates
    np.testing.assert_allclose(many.final_w, one.final_w, rtol=0, atol=1e-12)


def test_builtin_sizes():
    assert sum(p.numel() for p in lenet5((1, 28, 28), 10).parameters()) == 61706
    assert sum(p.numel() for p in mlp((1, 8, 8), 10, hidden=(32, 16)).parameters()) == (
        64 * 32 + 32
    ) + (32 * 16 + 16) + (16 * 10 + 10)
    # 8×8 → conv 3×3 same → pool → 4×4 with 8 channels → 20 → 10
    assert sum(p.numel() for p in cnn((1, 8, 8), 10, channels=(8,), hidden=(20,)).parameters()) == (
        8 * 9 + 8
    ) + (128 * 20 + 20) + (20 * 10 + 10)


def test_same_seed_same_run_and_initialisation_from_the_scenario(tmp_path):
    raw = base_raw(
        model={"backend": "torch", "name": "cnn", "channels": [4], "hidden": [8]},
        data={"source": "digits", "labels": "multiclass"},
    )
    before = torch.random.get_rng_state()
    a, b = simulate(make_scenario(raw)), simulate(make_scenario(raw))
    assert torch.equal(before, torch.random.get_rng_state())  # torch's global generator untouched
    assert a.records.worker == b.records.worker and np.array_equal(a.final_w, b.final_w)
    other = simulate(make_scenario({**raw, "run": {**raw["run"], "seed": 4}}))
    assert not np.array_equal(
        prepare(make_scenario(raw)).w0,
        prepare(make_scenario({**raw, "run": {**raw["run"], "seed": 4}})).w0,
    )
    assert not np.array_equal(other.final_w, a.final_w)


def test_dropout_runs_are_reproducible():
    (model_raw) = {"backend": "torch", "module": "dropnet:Net"}
    raw = base_raw(model=model_raw, data={"source": "digits", "labels": "multiclass"})
    import sys
    import types

    mod = types.ModuleType("dropnet")
    exec(
        textwrap.dedent("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.ReLU(),
                                                torch.nn.Dropout(0.5), torch.nn.Linear(16, 10))
            def forward(self, x):
                return self.body(x)
    """),
        mod.__dict__,
    )
    sys.modules["dropnet"] = mod
    try:
        a, b = simulate(make_scenario(raw)), simulate(make_scenario(raw))
    finally:
        del sys.modules["dropnet"]
    assert np.array_equal(a.final_w, b.final_w)


def test_npz_data_reaches_the_model_with_its_shape(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "mine.npz",
        X_train=rng.random((60, 1, 12, 12)),
        y_train=rng.integers(3, 6, 60),
        X_test=rng.random((20, 1, 12, 12)),
        y_test=rng.integers(3, 6, 20),
    )
    raw = base_raw(
        data={"source": "npz", "path": "mine.npz"},
        model={"backend": "torch", "name": "lenet5"},
        algorithms={"asgd": {"lr": 0.1}},
    )
    sc = make_scenario(raw, str(tmp_path / "s.toml"))
    prep = prepare(sc)
    assert prep.dataset.input_shape == (1, 12, 12) and prep.dataset.n_classes == 3
    assert set(np.unique(prep.dataset.y_train)) <= {0, 1, 2}
    assert simulate(sc, prepared=prep).updates > 0


@pytest.mark.parametrize(
    "model,key,words",
    [
        ({"module": "nowhere_at_all:Net"}, "model.module", "does not import"),
        ({"module": "linear_models:NotAModule"}, "model.module", "not a torch.nn.Module"),
        ({"module": "linear_models:Missing"}, "model.module", "has no 'Missing'"),
        ({"module": "no_colon"}, "model.module", "package.module:ClassName"),
        ({"name": "resnet"}, "model.name", "allowed: lenet5, cnn, mlp"),
        ({"name": "mlp", "channels": [3]}, "model.channels", "applies to name = 'cnn' only"),
        ({"name": "mlp", "module_dir": "."}, "model.module_dir", "applies to module only"),
        ({"module": "in_nets:Net", "module_dir": "nets"}, "model.module_dir", "is not a folder"),
        ({"name": "mlp", "device": "tpu"}, "model.device", "allowed: cpu, cuda"),
        ({"name": "mlp", "loss": "hinge"}, "model.loss", "allowed: cross_entropy, mse"),
    ],
)
def test_bad_model_tables_are_refused_when_read(tmp_path, model, key, words):
    (tmp_path / "linear_models.py").write_text(LINEAR)
    raw = base_raw(model={"backend": "torch", **model})
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw, str(tmp_path / "s.toml"))
    assert err.value.key == key and words in str(err.value)


def test_a_run_of_a_module_beside_its_scenario_reruns_from_elsewhere(tmp_path, monkeypatch):
    """The module is imported from the scenario's folder (or module_dir, relative to it); the
    run folder's scenario.toml names that folder, so the run reruns from any working
    directory: the same bytes, here with the module in a subfolder given by module_dir."""
    from netsim import api
    from netsim.config.tomlwrite import dumps

    (tmp_path / "src" / "nets").mkdir(parents=True)
    (tmp_path / "src" / "nets" / "linear_models.py").write_text(LINEAR)
    raw = base_raw(
        run={"algorithm": "asgd", "until": 6.0},
        model={"backend": "torch", "module": "linear_models:Logistic", "module_dir": "nets",
               "kwargs": {"n_features": 64}},
    )  # fmt: skip
    (tmp_path / "src" / "s.toml").write_text(dumps(raw))
    api.run(api.load(tmp_path / "src" / "s.toml"), out=tmp_path / "run")
    written = (tmp_path / "run" / "scenario.toml").read_text()
    assert f'module_dir = "{(tmp_path / "src" / "nets").resolve()}"' in written
    monkeypatch.chdir(tmp_path)
    assert api.rerun(tmp_path / "run", out=tmp_path / "again").identical
    from typer.testing import CliRunner

    from netsim.cli import app

    res = CliRunner().invoke(app, ["validate", str(tmp_path / "src" / "s.toml")])
    assert res.exit_code == 0 and "model linear_models:Logistic (torch)," in res.stdout


def _n_params_of(tmp_path, folder: str, hidden: int) -> int:
    """Parameters of the module ``same_name:Net`` written into *folder* with *hidden* units
    (the file dated two seconds after any earlier version: Python's bytecode cache tells
    versions apart by their mtime in whole seconds and their size)."""
    (tmp_path / folder).mkdir(exist_ok=True)
    path = tmp_path / folder / "same_name.py"
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(
        textwrap.dedent(f"""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Sequential(
                    torch.nn.Flatten(), torch.nn.Linear(64, {hidden}), torch.nn.Linear({hidden}, 10)
                )
            def forward(self, x):
                return self.body(x)
    """)
    )
    if before:
        os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))
    raw = base_raw(
        model={"backend": "torch", "module": "same_name:Net"},
        data={"source": "digits", "labels": "multiclass"},
    )
    return prepare(make_scenario(raw, str(tmp_path / folder / "s.toml"))).model.n_params()


def test_each_scenario_trains_the_module_its_folder_holds_now(tmp_path):
    """Two folders with a module of the same name, and one module edited between two loads
    in one process (a notebook): each load builds the file it names as it is then."""
    a = _n_params_of(tmp_path, "a", 4)
    assert a == 64 * 4 + 4 + 4 * 10 + 10
    assert _n_params_of(tmp_path, "b", 3) == 64 * 3 + 3 + 3 * 10 + 10
    assert _n_params_of(tmp_path, "a", 4) == a
    assert _n_params_of(tmp_path, "a", 5) == 64 * 5 + 5 + 5 * 10 + 10  # edited


@pytest.mark.parametrize(
    "model,data,words",
    [
        (
            {"module": "linear_models:TwoOutputs"},
            {"labels": "multiclass"},
            "needs one logit per class (10)",
        ),
        ({"name": "lenet5"}, {"labels": "multiclass"}, "at least 12×12"),
        ({"module": "linear_models:Logistic", "kwargs": {"n_features": 50}}, {}, "does not accept"),
        ({"module": "linear_models:IntLogits"}, {}, "its gradient cannot be computed"),
    ],
)
def test_models_that_do_not_fit_the_data_are_refused_before_the_run(tmp_path, model, data, words):
    (tmp_path / "linear_models.py").write_text(LINEAR)
    raw = base_raw(model={"backend": "torch", **model}, data={"source": "digits", **data})
    sc = make_scenario(raw, str(tmp_path / "s.toml"))
    with pytest.raises(ScenarioError) as err:
        prepare(sc)
    assert words in str(err.value) and err.value.file == str(tmp_path / "s.toml")


def test_a_network_larger_than_the_memory_is_refused_before_it_is_allocated(monkeypatch):
    """An MLP of 200,000 hidden units on the 64 pixels of digits, two classes: 64 × 200,000
    + 200,000 + 200,000 × 2 + 2 parameters, 4 + 4 × (3 workers + 2) = 24 bytes each at least
    (0.322 GB), and its 200,000-wide layer for 2048 examples 1.64 GB; on a machine of 1 GB."""
    import netsim.workload.torch_model as torch_model

    monkeypatch.setattr(torch_model, "physical_memory", lambda: 1_000_000_000)
    raw = base_raw(model={"backend": "torch", "name": "mlp", "hidden": [200_000]})
    with pytest.raises(ScenarioError) as err:
        prepare(make_scenario(raw))
    assert err.value.key == "model.name"
    assert "13,400,002 parameters need more than 0.322 GB (24 bytes each" in str(err.value)
    assert "1.64 GB for 2048 examples" in str(err.value)
    assert "this machine has 1 GB" in str(err.value)


@pytest.mark.parametrize(
    "arrays,words",
    [
        (
            {"X_train": np.zeros((4, 3)), "y_train": np.zeros(4), "X_test": np.zeros((2, 3))},
            "no array y_test",
        ),
        (
            {
                "X_train": np.zeros((4, 3)),
                "y_train": np.zeros(5),
                "X_test": np.zeros((2, 3)),
                "y_test": np.zeros(2),
            },
            "must be (n, ...) and (n,)",
        ),
        (
            {
                "X_train": np.zeros((4, 3)),
                "y_train": np.zeros(4),
                "X_test": np.zeros((2, 4)),
                "y_test": np.zeros(2),
            },
            "differ",
        ),
        (
            {
                "X_train": np.zeros((4, 3)),
                "y_train": np.full(4, 0.5),
                "X_test": np.zeros((2, 3)),
                "y_test": np.zeros(2),
            },
            "integer class labels",
        ),
        (
            {
                "X_train": np.zeros((4, 3)) * 1j,
                "y_train": np.arange(4) % 2,
                "X_test": np.zeros((2, 3)),
                "y_test": np.zeros(2),
            },
            "finite real numbers (dtype complex128)",
        ),
        (
            {
                "X_train": np.zeros((4, 3)),
                "y_train": np.full(4, 7),
                "X_test": np.zeros((2, 3)),
                "y_test": np.full(2, 7),
            },
            "every label is 7",
        ),
        (
            {
                "X_train": np.zeros((4, 3)),
                "y_train": np.array([[1], 2, 3, 4], dtype=object),
                "X_test": np.zeros((2, 3)),
                "y_test": np.zeros(2),
            },
            "y_train is an array of Python objects",
        ),
        ({}, "not an .npz file"),
    ],
)
def test_bad_npz_files_are_refused_naming_the_key(tmp_path, arrays, words):
    if arrays:
        np.savez(tmp_path / "d.npz", **arrays)
    else:
        (tmp_path / "d.npz").write_text("X_train,y_train\n1,0\n")  # a CSV named .npz
    raw = base_raw(
        data={"source": "npz", "path": "d.npz"},
        model={"backend": "torch", "name": "mlp"},
        workers=[{"name": "a", "count": 1, "compute": 1.0}],
    )
    with pytest.raises(ScenarioError) as err:
        prepare(make_scenario(raw, str(tmp_path / "s.toml")))
    assert err.value.key == "data.path" and words in str(err.value)
    assert str(tmp_path / "d.npz") in str(err.value)


def test_boolean_examples_and_labels_are_read_as_zeros_and_ones(tmp_path):
    X = np.arange(40).reshape(10, 4) % 3 == 0
    y = np.arange(10) % 2 == 0
    np.savez(tmp_path / "d.npz", X_train=X[:8], y_train=y[:8], X_test=X[8:], y_test=y[8:])
    raw = base_raw(
        data={"source": "npz", "path": "d.npz", "labels": "binary"},
        model={"backend": "torch", "name": "mlp"},
        workers=[{"name": "a", "count": 1, "compute": 1.0}],
    )
    ds = prepare(make_scenario(raw, str(tmp_path / "s.toml"))).dataset
    assert np.array_equal(ds.X_train, X[:8].astype(float)) and list(ds.y_train) == [1, 0] * 4


def test_missing_torch_is_refused_with_the_install_command(monkeypatch):
    import netsim.workload.backends.torch_family as scenario_module

    monkeypatch.setattr(scenario_module, "torch_missing", lambda: True)
    with pytest.raises(ScenarioError) as err:
        make_scenario(base_raw(model={"backend": "torch", "name": "mlp"}))
    assert err.value.key == "model.backend" and "pip install torch==2.13.0" in str(err.value)


def test_a_diverging_torch_run_is_reported_with_its_files_kept():
    raw = base_raw(
        model={
            "backend": "torch",
            "name": "mlp",
            "hidden": [8],
            "init": "normal",
            "init_scale": 1.0,
        },
        data={"source": "digits", "labels": "multiclass"},
        algorithms={"asgd": {"lr": 1e300}},
        run={"seed": 1, "algorithm": "asgd", "until": 30.0, "eval_every": 1.0, "batch_size": 8},
    )
    result = simulate(make_scenario(raw))
    assert result.status == "diverged"


@pytest.mark.parametrize(
    "model,words",
    [
        ('module = "not_there:Net"', "model.module"),
        ('name = "lenet5"', "at least 12×12"),
    ],
)
def test_the_command_line_refuses_bad_torch_models_in_one_line_with_status_2(
    tmp_path, model, words
):
    from typer.testing import CliRunner

    from netsim.cli import app

    (tmp_path / "s.toml").write_text(
        textwrap.dedent(f"""
        [run]
        until = 5.0
        [data]
        source = "digits"
        labels = "multiclass"
        [model]
        backend = "torch"
        {model}
        [[workers]]
        name = "w"
        count = 2
        compute = 1.0
        [algorithms.asgd]
        lr = 0.1
    """)
    )
    res = CliRunner().invoke(
        app,
        [
            "run",
            str(tmp_path / "s.toml"),
            "-a",
            "asgd",
            "--no-live",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 2
    assert words in res.output and "Traceback" not in res.output and "s.toml" in res.output
