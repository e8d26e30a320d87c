"""Compute-time models: closed-form means and variances, replay order, bad specs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netsim.errors import ScenarioError
from netsim.workload.timemodels import make_time_model

N = 200_000

# (spec, closed-form mean, closed-form variance)
CASES = [
    ({"dist": "exponential", "mean": 2.0}, 2.0, 4.0),
    ({"dist": "shifted_exponential", "shift": 1.0, "mean": 0.5}, 1.5, 0.25),
    (
        {"dist": "lognormal", "median": 1.0, "sigma": 0.5},
        math.exp(0.125),
        (math.exp(0.25) - 1) * math.exp(0.25),
    ),
    ({"dist": "uniform", "low": 1.0, "high": 3.0}, 2.0, 4.0 / 12),
    ({"dist": "pareto", "shape": 5.0, "scale": 1.0}, 1.25, 5.0 / (16 * 3)),
]


@pytest.mark.parametrize("spec,mean,var", CASES)
def test_sample_moments_match_closed_forms(spec, mean, var):
    model = make_time_model(spec, "w.compute")
    x = model.sample(np.random.default_rng(0), N)
    assert model.mean() == pytest.approx(mean)
    assert x.mean() == pytest.approx(mean, abs=5 * math.sqrt(var / N))
    assert (x > 0).all()


def test_constant_and_number_shorthand():
    assert make_time_model(2.5, "w").mean() == 2.5
    it = make_time_model({"dist": "constant", "value": 3.0}, "w").draws(np.random.default_rng(0))
    assert [next(it) for _ in range(3)] == [3.0, 3.0, 3.0]


def test_replay_per_worker_and_cycling():
    model = make_time_model({"dist": "replay", "times": [[1, 2], [5]]}, "w", count=2)
    a = model.draws(None, 0)
    b = model.draws(None, 1)
    assert [next(a) for _ in range(5)] == [1, 2, 1, 2, 1]
    assert [next(b) for _ in range(2)] == [5, 5]
    shared = make_time_model({"dist": "replay", "times": [0.5, 1.5]}, "w", count=3)
    assert [next(shared.draws(None, 2)) for _ in range(1)] == [0.5]


@pytest.mark.parametrize("spec", [spec for spec, _, _ in CASES])
def test_draws_do_not_depend_on_chunking(spec):
    """The k-th draw is the k-th value of one sample of the worker's generator, whatever
    the blocks the iterator draws in (numpy's variates consume the stream in order)."""
    model = make_time_model(spec, "w")
    it = model.draws(np.random.default_rng(5))
    first = [next(it) for _ in range(600)]
    assert first == model.sample(np.random.default_rng(5), 600).tolist()


@pytest.mark.parametrize(
    "spec,key",
    [
        (0, "w"),
        (-1.0, "w"),
        ({"dist": "exponential"}, "w.mean"),
        ({"dist": "exponential", "mean": 0}, "w.mean"),
        ({"dist": "uniform", "low": 2, "high": 1}, "w.high"),
        ({"dist": "pareto", "shape": 2, "scale": 1, "x": 1}, "w.x"),
        ({"dist": "replay", "times": []}, "w.times"),
        ({"dist": "replay", "times": [[1], [2], [3]]}, "w.times"),
        ({"dist": "replay", "times": [1, "a"]}, "w.times[0][1]"),
        ({"dist": "weibull"}, "w.dist"),
        ("fast", "w"),
    ],
)
def test_bad_specs_name_the_key(spec, key):
    with pytest.raises(ScenarioError) as err:
        make_time_model(spec, "w", count=2)
    assert err.value.key == key
