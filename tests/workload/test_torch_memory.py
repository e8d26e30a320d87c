"""The memory check of torch networks counts the workers and the widest layer, and a run
leaves torch's global generator as it found it."""

from __future__ import annotations

import textwrap

import pytest
from conftest import base_raw, make_scenario

torch = pytest.importorskip("torch", reason="optional extra: pip install 'netsim[torch]'")

import netsim.workload.torch_model as torch_model  # noqa: E402
from netsim.errors import ScenarioError  # noqa: E402
from netsim.sim.engine import prepare, simulate  # noqa: E402


def _workers(n: int) -> list[dict]:
    return [{"name": "w", "count": n, "compute": 1.0}]


def test_the_memory_check_counts_the_workers(monkeypatch):
    """An MLP of 20,000 hidden units on digits, two classes: 64 × 20,000 + 20,000 + 20,000 × 2
    + 2 = 1,340,002 parameters, float32 passes and server. Each takes at least 4 bytes in the
    module and 4 × (workers + 2) in the server's model, the workers' versions and a gradient:
    with 3 workers 24 bytes (32.2 MB), with 64 workers 268 (359.1 MB); an evaluation chunk
    of 2,048 rows of its 20,000-wide layer adds 163.8 MB. 196 MB fit in 300 MB; 523 MB do
    not."""
    monkeypatch.setattr(torch_model, "physical_memory", lambda: 300_000_000)
    model = {"backend": "torch", "name": "mlp", "hidden": [20_000]}
    prepare(make_scenario(base_raw(model=model)))
    with pytest.raises(ScenarioError) as err:
        prepare(make_scenario(base_raw(model=model, workers=_workers(64))))
    assert "1,340,002 parameters need more than 0.359 GB" in str(err.value)
    assert "268 bytes each at least with 64 workers" in str(err.value)
    assert "(20,000 values an example) 0.164 GB for 2048 examples" in str(err.value)


def test_a_convolution_too_wide_for_an_evaluation_chunk_is_refused(monkeypatch):
    """cnn with channels = [100000] on the 8×8 digits: its convolution ('same' padding) gives
    100,000 × 8 × 8 = 6,400,000 values an example, 52.4 GB for a chunk of 2048 rows in
    float32, although its 1,000,000 + 100,000 × 4 × 4 × 2 + 2 = 4,200,002 parameters fit."""
    monkeypatch.setattr(torch_model, "physical_memory", lambda: 25_000_000_000)
    model = {"backend": "torch", "name": "cnn", "channels": [100_000], "hidden": []}
    with pytest.raises(ScenarioError) as err:
        prepare(make_scenario(base_raw(model=model)))
    assert err.value.key == "model.name"
    assert "4,200,002 parameters" in str(err.value)
    assert "(6,400,000 values an example) 52.4 GB for 2048 examples" in str(err.value)


DROPOUT = textwrap.dedent("""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Flatten(), torch.nn.Linear(64, 16), torch.nn.Dropout(0.5),
                torch.nn.Linear(16, 2))

        def forward(self, x):
            return self.body(x)
""")


def test_a_run_leaves_torchs_global_generator_as_it_was(tmp_path):
    """docs/TORCH.md: netsim draws from generators of its own. After torch.manual_seed(123), a
    run of a network with Dropout leaves torch.initial_seed() at 123 and the next draws
    those that follow manual_seed(123)."""
    (tmp_path / "dropnet.py").write_text(DROPOUT)
    raw = base_raw(model={"backend": "torch", "module": "dropnet:Net"})
    sc = make_scenario(raw, str(tmp_path / "s.toml"))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    simulate(sc)
    assert torch.initial_seed() == 123
    assert torch.equal(torch.rand(3), expected)
