"""Batch norm and other module buffers: one set of running statistics per run, updated by
every forward pass in training mode in the order the gradients are computed, each at the
parameters its worker read; evaluation reads them. Under SSGD that is a plain loop computing
each round's gradients one after another with one module."""

from __future__ import annotations

import copy
import textwrap

import numpy as np
import pytest
from conftest import base_raw, make_scenario

torch = pytest.importorskip(
    "torch", reason="the torch backend needs PyTorch (pip install torch==2.13.0)"
)

from netsim.errors import ScenarioError  # noqa: E402
from netsim.rng import Streams  # noqa: E402
from netsim.sim.engine import Simulation, prepare  # noqa: E402
from netsim.sim.worker import BatchSampler  # noqa: E402

NETS = textwrap.dedent("""
    import torch

    class BNNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 4 * 4, 16)
            self.bn1 = torch.nn.BatchNorm1d(16)
            self.out = torch.nn.Linear(16, 10)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.out(torch.relu(self.bn1(self.fc(x.flatten(1)))))
""")
REAL_RULES = {
    "ssgd": {"lr": 0.1},
    "asgd": {"lr": 0.05},
    "gsgd": {"lr": 0.1, "groups": [["fast"], ["slow"]]},
    "backup": {"lr": 0.1, "backups": 1},
    "dcasgd_c": {"lr": 0.05},
    "dcasgd_a": {"lr": 0.05},
    "kasync": {"lr": 0.05, "k": 2},
    "kbatch_async": {"lr": 0.05, "k": 2},
    "sa_asgd": {"lr": 0.05},
    "ssp": {"lr": 0.05, "s": 2},
}


def _scenario(tmp_path, rule: str, until: float = 30.0, **model):
    (tmp_path / "bnnets.py").write_text(NETS)
    return make_scenario(
        base_raw(
            run={"seed": 11, "algorithm": rule, "until": until, "batch_size": 16},
            data={"source": "digits", "labels": "multiclass"},
            model={"backend": "torch", "module": "bnnets:BNNet", **model},
            workers=[
                {"name": "fast", "count": 2, "compute": 1.0},
                {"name": "slow", "count": 2, "compute": 1.5},
            ],
            algorithms={rule: REAL_RULES[rule]},
        ),
        str(tmp_path / "s.toml"),
    )


def test_an_ssgd_run_is_a_plain_loop_with_one_module(tmp_path):
    sc = _scenario(tmp_path, "ssgd", until=29.0)  # rounds of 1.5 s: none under way at the end
    prep = prepare(sc)
    sim = Simulation(sc, "ssgd", prep)
    result = sim.run()
    assert result.updates > 10

    module = copy.deepcopy(prep.model.module).train()  # its buffers as built
    params = list(module.parameters())
    X, y = prep.dataset.X_train, prep.dataset.y_train
    streams = Streams(sc.run.seed)
    samplers = [
        BatchSampler(prep.shards[i], sc.run.batch_size, streams.rng("batch", i))
        for i in range(sc.n_workers)
    ]
    rec = result.records
    w = prep.w0.copy()
    k = 0
    while k < len(rec.worker):
        version = rec.version[k]
        grads = {}
        while k < len(rec.worker) and rec.version[k] == version:  # in the order computed
            worker = rec.worker[k]
            torch.nn.utils.vector_to_parameters(torch.from_numpy(w.copy()), params)
            rows = samplers[worker].next()
            loss = torch.nn.functional.cross_entropy(
                module(torch.from_numpy(X[rows]).view(-1, 1, 8, 8)), torch.from_numpy(y[rows])
            )
            grads[worker] = torch.cat(
                [t.reshape(-1) for t in torch.autograd.grad(loss, params)]
            ).numpy()
            k += 1
        ids = sorted(grads)  # summed in worker id order
        total = grads[ids[0]] + grads[ids[1]]
        for i in ids[2:]:
            total += grads[i]
        total /= len(ids)
        total *= 0.1
        w = w - total
    np.testing.assert_array_equal(result.final_w, w)
    run_buffers = sim.model.buffers()
    for name, b in module.named_buffers():
        torch.testing.assert_close(run_buffers[name], b, rtol=0, atol=0)
    assert int(module.bn.num_batches_tracked) == len(rec.worker)
    assert not torch.equal(module.bn.running_mean, torch.zeros(4))


@pytest.mark.parametrize("rule", sorted(REAL_RULES))
def test_a_batch_norm_network_trains_under_every_rule_a_real_run_applies(tmp_path, rule):
    sc = _scenario(tmp_path, rule, until=40.0)
    result = Simulation(sc, rule).run()
    losses = [c[2] for c in result.records.curve]
    assert result.status == "ok" and np.isfinite(losses).all()
    assert losses[-1] < losses[0]


def test_runs_in_one_process_keep_their_own_statistics(tmp_path):
    """Two runs advanced in turn (as a race's paused pilots are) give what each gives alone."""
    sc = _scenario(tmp_path, "asgd")
    prep = prepare(sc)
    alone = Simulation(sc, "asgd", prep)
    alone.run()
    a, b = Simulation(sc, "asgd", prep), Simulation(sc, "asgd", prep)
    for sim in (a, b):
        sim.begin()
    for t in (10.0, 20.0, 30.0):
        a.advance(t)
        b.advance(t)
    ra, rb = a.end(), b.end()
    np.testing.assert_array_equal(ra.final_w, alone.ps.w)
    np.testing.assert_array_equal(rb.final_w, alone.ps.w)
    for name, value in alone.model.buffers().items():
        assert torch.equal(a.model.buffers()[name], value)
        assert torch.equal(b.model.buffers()[name], value)


def test_stacked_gradients_are_refused_with_running_statistics(tmp_path):
    with pytest.raises(ScenarioError, match="running statistics") as err:
        prepare(_scenario(tmp_path, "ssgd", stack=True))
    assert err.value.key == "model.stack"
