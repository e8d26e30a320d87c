"""A real worker's warm-up pass: one gradient at the initial model on its shard's first rows,
drawing from no stream, the model's own draws and buffers restarted after it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from netsim.testbed.worker import warm_up


class _Recording:
    def __init__(self):
        self.calls = []

    def gradient(self, w, X, y):
        self.calls.append((w.copy(), X.copy(), y.copy()))
        return np.zeros_like(w)


def test_one_pass_at_the_initial_model_on_the_first_rows_of_the_shard():
    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20.0)
    model = _Recording()
    spec = SimpleNamespace(
        prepared=SimpleNamespace(
            shards=[np.array([5, 7, 9, 11, 13]), np.array([2, 4, 6])],
            w0=np.array([0.5, -1.0], dtype=np.float32),
            dataset=SimpleNamespace(X_train=X, y_train=y),
            model=model,
        ),
        scenario=SimpleNamespace(run=SimpleNamespace(batch_size=3)),
    )
    warm_up(spec, 0)
    ((w, Xb, yb),) = model.calls
    assert w.dtype == np.float64 and w.tolist() == [0.5, -1.0]
    assert Xb.tolist() == [[10.0, 11.0], [14.0, 15.0], [18.0, 19.0]]
    assert yb.tolist() == [5.0, 7.0, 9.0]


def test_a_batchnorm_network_starts_its_run_with_the_modules_own_statistics():
    torch = pytest.importorskip("torch")
    from netsim.workload.torch_model import TorchModel

    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    before = {k: v.clone() for k, v in net.state_dict().items() if "running" in k}
    model = TorchModel(net, input_shape=(3,), n_classes=2)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 3)), rng.integers(0, 2, 8).astype(float)
    model.gradient(model.initial_weights().astype(np.float64), X, y)
    moved = {k: v for k, v in model._buffers.items() if "running" in k}
    assert not all(torch.equal(moved[k], before[k]) for k in moved)  # the pass moved them
    model.start_run(3)
    kept = {k: v for k, v in model._buffers.items() if "running" in k}
    assert kept.keys() == before.keys()
    assert all(torch.equal(kept[k], before[k]) for k in kept)
