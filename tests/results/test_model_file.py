"""Run folders keep the trained model: ``model.npz`` (numpy can read it) and, for torch
models, ``model.pt`` (a state dict); ``netsim.load_model`` gives the module back."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import netsim
from netsim.errors import ScenarioError


def _write(tmp_path, model: dict, name="s.toml", extra: str = "") -> str:
    (tmp_path / "bnnet.py").write_text(
        textwrap.dedent("""
        import torch

        class Net(torch.nn.Module):
            def __init__(self, width=8):
                super().__init__()
                self.fc = torch.nn.Linear(64, width)
                self.bn = torch.nn.BatchNorm1d(width)
                self.out = torch.nn.Linear(width, 10)

            def forward(self, x):
                return self.out(torch.relu(self.bn(self.fc(x.flatten(1)))))
        """)
    )
    lines = [f"{k} = {v!r}" if not isinstance(v, dict) else "" for k, v in model.items()]
    text = (
        textwrap.dedent("""
        [run]
        until = 20.0
        seed = 3
        batch_size = 8
        [data]
        source = "digits"
        labels = "multiclass"
        [[workers]]
        name = "w"
        count = 3
        compute = 1.0
        [algorithms.asgd]
        lr = 0.05
    """)
        + "[model]\n"
        + "\n".join(line.replace("'", '"') for line in lines)
        + "\n"
        + extra
    )
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def test_a_numpy_run_keeps_its_weight_vector(tmp_path):
    path = _write(tmp_path, {"name": "softmax"})
    run = netsim.run(path, algorithm="asgd", out=tmp_path / "out")
    w = netsim.load_model(tmp_path / "out")
    assert w.dtype == np.float64 and w.shape == (640,)
    np.testing.assert_array_equal(w, run.result.final_w)
    with np.load(tmp_path / "out" / "model.npz") as z:
        assert str(z["backend"]) == "numpy"
    assert not (tmp_path / "out" / "model.pt").exists()
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_a_torch_run_keeps_its_module_with_weights_and_running_statistics(tmp_path):
    torch = pytest.importorskip("torch")
    path = _write(
        tmp_path, {"backend": "torch", "module": "bnnet:Net"}, extra="kwargs = { width = 8 }\n"
    )
    run = netsim.run(path, algorithm="asgd", out=tmp_path / "out")
    final = run.result.final_w
    module = netsim.load_model(tmp_path / "out")
    assert type(module).__name__ == "Net" and not module.training
    flat = torch.nn.utils.parameters_to_vector(module.parameters()).detach().numpy()
    np.testing.assert_array_equal(flat, final)
    # the state dict holds the run's statistics: 20 s of 3 workers at 1 s = 60 batches
    state = torch.load(tmp_path / "out" / "model.pt", weights_only=True)
    assert int(state["bn.num_batches_tracked"]) == 60
    assert torch.equal(module.bn.running_var, state["bn.running_var"])
    assert not torch.equal(state["bn.running_mean"], torch.zeros(8))
    # numpy reads the same numbers without torch
    with np.load(tmp_path / "out" / "model.npz") as z:
        np.testing.assert_array_equal(z["w"], final)
        np.testing.assert_array_equal(z["buffer:bn.running_mean"], state["bn.running_mean"])
        assert list(z["input_shape"]) == [1, 8, 8] and int(z["n_classes"]) == 10
    # the loaded module (its running statistics too) scores the run's final test accuracy
    prep = netsim.prepare(netsim.load_scenario(path))
    X = torch.from_numpy(prep.dataset.X_test).view(-1, 1, 8, 8)
    with torch.no_grad():
        predicted = module(X).argmax(1).numpy()
    accuracy = float(np.mean(predicted == prep.dataset.y_test))
    assert accuracy == run.result.records.curve[-1][3] > 0.3


def test_a_folder_without_a_model_is_refused_in_one_line(tmp_path):
    with pytest.raises(ScenarioError, match="model.npz not found"):
        netsim.load_model(tmp_path)
