"""Server optimizers: Adam and AdamW under SSGD, ASGD and GSGD equal a plain ``torch.optim``
loop replaying the run's updates (each update one optimizer step on the rule's aggregated
gradient), to float32 rounding."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import base_raw, make_scenario

torch = pytest.importorskip(
    "torch", reason="the torch backend needs PyTorch (pip install torch==2.13.0)"
)

from netsim.rng import Streams  # noqa: E402
from netsim.sim.engine import prepare, simulate  # noqa: E402
from netsim.sim.worker import BatchSampler  # noqa: E402

WORKERS = [
    {"name": "fast", "count": 2, "compute": {"dist": "exponential", "mean": 1.0}},
    {"name": "slow", "count": 2, "compute": {"dist": "uniform", "low": 2.0, "high": 3.0}},
]
LR = {"ssgd": 0.01, "asgd": 0.005, "gsgd": 0.01}


def _scenario(rule: str, optimizer: dict):
    extra = {"groups": [["fast"], ["slow"]], "group_weighting": "fedat"} if rule == "gsgd" else {}
    return make_scenario(
        base_raw(
            run={"seed": 7, "algorithm": rule, "until": 25.0, "batch_size": 8},
            data={"source": "digits", "labels": "multiclass"},
            model={"backend": "torch", "name": "mlp", "hidden": [12]},
            workers=WORKERS,
            algorithms={rule: {"lr": LR[rule], **extra, **optimizer}},
        )
    )


def _updates(records):
    """Per update, in order: ([(worker, version read)] in worker id order, the step's scale)."""
    out: dict[int, list] = {}
    for version, worker, stale, weight in zip(
        records.version, records.worker, records.staleness, records.weight
    ):
        out.setdefault(version, []).append((worker, version - 1 - stale, weight))
    return [
        (sorted((w, r) for w, r, _ in items), items[0][2] * len(items))
        for _, items in sorted(out.items())
    ]


def _replay(sc, prep, result, make_optimizer) -> np.ndarray:
    """The run's updates by a module and a torch.optim optimizer: final flat parameters."""
    module = copy.deepcopy(prep.model.module).train()
    probe = copy.deepcopy(module).train()
    params, probe_params = list(module.parameters()), list(probe.parameters())
    optimizer = make_optimizer(params)
    to_vector = torch.nn.utils.parameters_to_vector
    X, y = prep.dataset.X_train, prep.dataset.y_train
    streams = Streams(sc.run.seed)
    samplers = [
        BatchSampler(prep.shards[i], sc.run.batch_size, streams.rng("batch", i))
        for i in range(sc.n_workers)
    ]
    with torch.no_grad():
        versions = [to_vector(params).clone()]
    base = optimizer.param_groups[0]["lr"]
    for items, scale in _updates(result.records):
        total = None
        for worker, read in items:
            rows = samplers[worker].next()
            torch.nn.utils.vector_to_parameters(versions[read], probe_params)
            loss = torch.nn.functional.cross_entropy(
                probe(torch.from_numpy(X[rows])), torch.from_numpy(y[rows])
            )
            g = torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, probe_params)])
            total = g if total is None else total + g
        if len(items) > 1:
            total /= len(items)
        torch.nn.utils.vector_to_parameters(total, [p.grad_buffer for p in params])
        for p in params:
            p.grad = p.grad_buffer
        for group in optimizer.param_groups:
            group["lr"] = base * scale
        optimizer.step()
        with torch.no_grad():
            versions.append(to_vector(params).clone())
    return versions[-1].numpy()


def _grad_buffers(params):
    for p in params:
        p.grad_buffer = torch.empty_like(p)


@pytest.mark.parametrize("rule", ["ssgd", "asgd", "gsgd"])
@pytest.mark.parametrize(
    "name, options",
    [
        ("adam", {}),
        ("adam", {"betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.01}),
        ("adamw", {"weight_decay": 0.05}),
        ("adamw", {"weight_decay": 0.05, "weight_decay_1d": False}),
    ],
)
def test_adam_and_adamw_equal_a_torch_optim_loop_replaying_the_updates(rule, name, options):
    sc = _scenario(rule, {"optimizer": name, **options})
    prep = prepare(sc)
    result = simulate(sc, rule, prepared=prep)
    assert result.updates > 8 and result.final_w.dtype == np.float32
    betas = tuple(options.get("betas", (0.9, 0.999)))
    wd = options.get("weight_decay", 0.0)

    def make(params):
        _grad_buffers(params)
        spare = options.get("weight_decay_1d", True) is False
        groups = [
            {"params": [p for p in params if p.ndim > 1 or not spare], "weight_decay": wd},
            {"params": [p for p in params if p.ndim <= 1 and spare], "weight_decay": 0.0},
        ]
        cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
        return cls(
            [g for g in groups if g["params"]],
            lr=LR[rule],
            betas=betas,
            eps=options.get("eps", 1e-8),
            weight_decay=wd,
            foreach=False,
        )

    expected = _replay(sc, prep, result, make)
    np.testing.assert_allclose(result.final_w, expected, rtol=1e-5, atol=1e-6)
    moved = np.abs(result.final_w - prep.w0).max()
    assert moved > 1e4 * 1e-6  # the comparison is not of two models that barely moved


def test_sgd_weight_decay_is_torch_sgds():
    sc = _scenario("ssgd", {"weight_decay": 0.1, "momentum": 0.9})
    prep = prepare(sc)
    result = simulate(sc, "ssgd", prepared=prep)

    def make(params):
        _grad_buffers(params)
        return torch.optim.SGD(params, lr=LR["ssgd"], momentum=0.9, weight_decay=0.1, foreach=False)

    np.testing.assert_allclose(
        result.final_w, _replay(sc, prep, result, make), rtol=1e-5, atol=1e-6
    )
