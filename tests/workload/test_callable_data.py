"""data.source = "callable": the user's function returns arrays, tensors or torch Datasets;
the run is the run of the same arrays in an npz file; bad functions are refused naming the key."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.sim.engine import prepare, simulate

MAKERS = textwrap.dedent("""
    import numpy as np

    def _arrays():
        rng = np.random.default_rng(0)
        X = rng.normal(size=(120, 1, 4, 4))
        y = (X[:, 0, 0, 0] + X[:, 0, 1, 1] > 0).astype(np.int64) * 3 + 2  # labels 2 and 5
        return X[:90], y[:90], X[90:], y[90:]

    def as_tuple():
        return _arrays()

    def as_tensors():
        import torch
        return dict(zip(("X_train", "y_train", "X_test", "y_test"),
                        (torch.from_numpy(a) for a in _arrays())))

    def as_datasets():
        import torch
        X, y, Xt, yt = (torch.from_numpy(a) for a in _arrays())
        return torch.utils.data.TensorDataset(X, y), torch.utils.data.TensorDataset(Xt, yt)

    def wrong_rows():
        X, y, Xt, yt = _arrays()
        return X, y[:-1], Xt, yt

    def a_string():
        return "data"

    def broken():
        raise RuntimeError("the bucket is gone")

    NOT_A_FUNCTION = 3
""")


def _scenario(tmp_path, function: str, model: dict | None = None, **data):
    (tmp_path / "makers.py").write_text(MAKERS)
    return make_scenario(
        base_raw(
            run={"seed": 2, "algorithm": "asgd", "until": 15.0, "batch_size": 8},
            data={"source": "callable", "function": function, **data},
            model=model or {"name": "logistic", "l2": 0.01},
        ),
        str(tmp_path / "s.toml"),
    )


def test_a_function_of_arrays_runs_as_the_same_arrays_in_an_npz_file(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("makers_copy", tmp_path / "m.py")
    (tmp_path / "m.py").write_text(MAKERS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    X, y, Xt, yt = module.as_tuple()
    np.savez(tmp_path / "d.npz", X_train=X, y_train=y, X_test=Xt, y_test=yt)
    by_function = _scenario(tmp_path, "makers:as_tuple")
    by_file = make_scenario(
        base_raw(
            run={"seed": 2, "algorithm": "asgd", "until": 15.0, "batch_size": 8},
            data={"source": "npz", "path": "d.npz"},
        ),
        str(tmp_path / "n.toml"),
    )
    a, b = simulate(by_function), simulate(by_file)
    assert a.updates == b.updates > 10
    np.testing.assert_array_equal(a.final_w, b.final_w)
    assert a.records.curve == b.records.curve
    prep = prepare(by_function)
    assert prep.dataset.n_classes == 2 and set(prep.dataset.y_train) == {0, 1}  # 2, 5 → 0, 1
    assert prep.dataset.input_shape == (1, 4, 4)


@pytest.mark.parametrize("function", ["makers:as_tensors", "makers:as_datasets"])
def test_tensors_and_torch_datasets_give_the_arrays(tmp_path, function):
    pytest.importorskip("torch")
    model = {"backend": "torch", "name": "mlp", "hidden": [8]}
    expected = prepare(_scenario(tmp_path, "makers:as_tuple", model)).dataset
    got = prepare(_scenario(tmp_path, function, model)).dataset
    assert got.X_train.dtype == np.float32  # kept in the model's dtype
    np.testing.assert_array_equal(got.X_train, expected.X_train)
    np.testing.assert_array_equal(got.y_test, expected.y_test)
    assert got.input_shape == (1, 4, 4)


@pytest.mark.parametrize(
    "function, words",
    [
        ("missing_module:make", "does not import"),
        ("makers:nothing", "has no 'nothing'"),
        ("makers", "not of the form 'package.module:function'"),
        ("makers:NOT_A_FUNCTION", "not a function"),
    ],
)
def test_functions_that_cannot_be_called_are_refused_when_read(tmp_path, function, words):
    with pytest.raises(ScenarioError, match=words) as err:
        _scenario(tmp_path, function)
    assert err.value.key == "data.function"


@pytest.mark.parametrize(
    "function, words",
    [
        ("makers:wrong_rows", r"X_train \(90, 1, 4, 4\) and y_train \(89,\)"),
        ("makers:a_string", "returned a str: expected"),
        ("makers:broken", "RuntimeError: the bucket is gone"),
    ],
)
def test_functions_returning_what_is_not_data_are_refused_naming_the_key(tmp_path, function, words):
    with pytest.raises(ScenarioError, match=words) as err:
        prepare(_scenario(tmp_path, function))
    assert err.value.key == "data.function"


def test_the_command_line_refuses_a_bad_function_in_one_line_with_status_2(tmp_path):
    from typer.testing import CliRunner

    from netsim.cli import app

    (tmp_path / "makers.py").write_text(MAKERS)
    (tmp_path / "s.toml").write_text(
        textwrap.dedent("""
        [run]
        until = 5.0
        [data]
        source = "callable"
        function = "makers:wrong_rows"
        [[workers]]
        name = "w"
        count = 2
        compute = 1.0
        [algorithms.asgd]
        lr = 0.1
    """)
    )
    res = CliRunner().invoke(app, ["validate", str(tmp_path / "s.toml")])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "data.function" in lines[0] and "Traceback" not in res.output
