"""Learning-rate schedules against their closed forms; momentum against hand-worked recurrences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.rng import Streams
from netsim.rules.schedules import Schedule, ServerUpdate
from netsim.sim.engine import prepare, simulate
from netsim.sim.worker import BatchSampler


@pytest.mark.parametrize(
    "schedule,s,expected",
    [
        (Schedule("constant"), 1234, 1.0),
        (Schedule("step", decay=0.5, step=100), 99, 1.0),
        (Schedule("step", decay=0.5, step=100), 100, 0.5),
        (Schedule("step", decay=0.5, step=100), 250, 0.25),
        (Schedule("inverse_time", decay=0.01), 100, 0.5),  # 1/(1 + 1)
        (Schedule("inverse_time", decay=0.01), 300, 0.25),  # 1/(1 + 3)
        (Schedule("inverse_sqrt", decay=0.03), 100, 0.5),  # 1/sqrt(1 + 3)
        (Schedule("inverse_sqrt", decay=0.08), 100, 1 / 3),  # 1/sqrt(1 + 8)
        (Schedule("cosine", horizon=100), 0, 1.0),
        (Schedule("cosine", horizon=100), 50, 0.5),
        (Schedule("cosine", horizon=100, floor=0.2), 50, 0.6),  # 0.2 + 0.8 · (1 + cos(π/2))/2
        (Schedule("cosine", horizon=100, floor=0.2), 100, 0.2),
        (Schedule("cosine", horizon=100, floor=0.2), 400, 0.2),  # stays at the floor after T
        (Schedule("cosine", horizon=120), 40, 0.75),  # (1 + cos(π/3))/2
        (Schedule("constant", warmup=10), 5, 0.5),
        (Schedule("constant", warmup=10), 30, 1.0),
        (Schedule("step", decay=0.1, step=4, warmup=8), 6, 0.1 * 0.75),
    ],
)
def test_schedule_closed_forms(schedule, s, expected):
    assert schedule.factor(s) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def quadratic_run(momentum, nesterov, steps=3, lr=0.1, a=1.0, w0=1.0):
    """Gradient descent on f(w) = a w²/2 through the server's update state."""
    state = ServerUpdate(momentum=momentum, nesterov=nesterov).state()
    w = np.array([w0])
    out = []
    for t in range(1, steps + 1):
        w = w - state.step(lr * a * w, t, float(t))
        out.append(float(w[0]))
    return out


def test_heavy_ball_on_a_quadratic_by_hand():
    # v1 = 0.1, w1 = 0.9; δ2 = 0.09, v2 = 0.9·0.1 + 0.09 = 0.18, w2 = 0.72;
    # δ3 = 0.072, v3 = 0.9·0.18 + 0.072 = 0.234, w3 = 0.486
    assert quadratic_run(0.9, False) == pytest.approx([0.9, 0.72, 0.486], rel=1e-12)


def test_nesterov_on_a_quadratic_by_hand():
    # v1 = 0.1, step 0.9·0.1 + 0.1 = 0.19, w1 = 0.81; δ2 = 0.081, v2 = 0.09 + 0.081 = 0.171,
    # step 0.9·0.171 + 0.081 = 0.2349, w2 = 0.5751; δ3 = 0.05751, v3 = 0.1539 + 0.05751 = 0.21141,
    # step 0.9·0.21141 + 0.05751 = 0.247779, w3 = 0.327321
    assert quadratic_run(0.9, True) == pytest.approx([0.81, 0.5751, 0.327321], rel=1e-12)


def test_zero_momentum_is_plain_gradient_descent():
    assert quadratic_run(0.0, False) == pytest.approx([0.9, 0.81, 0.729], rel=1e-12)


def one_worker(**algo):
    raw = base_raw(
        workers=[{"name": "w", "count": 1, "compute": 1.0}],
        algorithms={"asgd": {"lr": 0.1, **algo}},
    )
    raw["run"].update(until=30.5, algorithm="asgd")
    return make_scenario(raw)


def hand_loop(sc, factor, mu, nesterov):
    """Sequential minibatch SGD with the same batches, schedule and momentum, written out."""
    prep = prepare(sc)
    X, y, model = prep.dataset.X_train, prep.dataset.y_train, prep.model
    sampler = BatchSampler(prep.shards[0], sc.run.batch_size, Streams(sc.run.seed).rng("batch", 0))
    w, v = prep.w0, None
    for s in range(1, 31):
        rows = sampler.next()
        delta = 0.1 * model.gradient(w, X[rows], y[rows])
        delta = factor(s) * delta
        if mu:
            v = delta.copy() if v is None else mu * v + delta
            delta = mu * v + delta if nesterov else v
        w = w - delta
    return w


@pytest.mark.parametrize(
    "keys,factor,mu,nesterov",
    [
        (
            {"lr_schedule": "step", "lr_decay": 0.5, "lr_step": 10},
            lambda s: 0.5 ** (s // 10),
            0.0,
            False,
        ),
        (
            {"lr_schedule": "inverse_sqrt", "lr_decay": 0.2, "momentum": 0.5},
            lambda s: 1 / math.sqrt(1 + 0.2 * s),
            0.5,
            False,
        ),
        ({"momentum": 0.8, "nesterov": True}, lambda s: 1.0, 0.8, True),
        (
            {"lr_schedule": "cosine", "lr_unit": "seconds", "lr_warmup": 4.0},
            lambda s: min(1, s / 4) * 0.5 * (1 + math.cos(math.pi * s / 30.5)),
            0.0,
            False,
        ),
    ],
)
def test_engine_applies_schedule_and_momentum(keys, factor, mu, nesterov):
    sc = one_worker(**keys)  # one worker, 1 s per gradient: update s happens at time s
    r = simulate(sc)
    assert r.updates == 30
    w = hand_loop(sc, factor, mu, nesterov)
    assert np.allclose(r.final_w, w, rtol=1e-12, atol=1e-15)


def test_constant_schedule_keys_change_nothing():
    a = simulate(one_worker())
    b = simulate(one_worker(lr_schedule="constant", momentum=0.0))
    assert a.final_w.tobytes() == b.final_w.tobytes()


@pytest.mark.parametrize(
    "keys,key",
    [
        ({"momentum": 1.0}, "momentum"),
        ({"momentum": -0.1}, "momentum"),
        ({"lr_schedule": "step", "lr_decay": 0.5, "lr_step": 0}, "lr_step"),
        ({"lr_schedule": "step", "lr_decay": 0.0, "lr_step": 5}, "lr_decay"),
        ({"lr_schedule": "inverse_time", "lr_decay": -1.0}, "lr_decay"),
        ({"lr_schedule": "inverse_time"}, "lr_decay"),
        ({"lr_schedule": "cosine"}, "lr_horizon"),  # in updates without max_updates
        ({"lr_schedule": "cosine", "lr_horizon": -5.0}, "lr_horizon"),
        ({"lr_schedule": "cosine", "lr_horizon": 5.0, "lr_floor": 1.0}, "lr_floor"),
        ({"lr_warmup": 0.0}, "lr_warmup"),
        ({"lr_decay": 0.5}, "lr_decay"),  # constant reads no decay
        ({"nesterov": True}, "nesterov"),
        ({"lr_schedule": "exponential"}, "lr_schedule"),
    ],
)
def test_bad_schedule_keys(keys, key):
    with pytest.raises(ScenarioError) as info:
        one_worker(**keys)
    assert info.value.key == f"algorithms.asgd.{key}"


def test_dcasgd_refuses_momentum_but_takes_a_schedule():
    raw = base_raw(algorithms={"dcasgd_c": {"lr": 0.1, "momentum": 0.9}})
    raw["run"]["algorithm"] = "dcasgd_c"
    with pytest.raises(ScenarioError, match="not defined for dcasgd_c") as info:
        make_scenario(raw)
    assert info.value.key == "algorithms.dcasgd_c.momentum"
    raw["algorithms"]["dcasgd_c"] = {"lr": 0.1, "lr_schedule": "inverse_time", "lr_decay": 0.1}
    assert make_scenario(raw).rule("dcasgd_c").update.schedule.kind == "inverse_time"


def test_cosine_horizon_defaults_to_the_run():
    sc = one_worker(lr_schedule="cosine", lr_unit="seconds")
    assert sc.rule().update.schedule.horizon == 30.5
