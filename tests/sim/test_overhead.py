"""A worker class's ``overhead``: a time drawn per iteration and added to the compute time.

SSGD rounds restart together, so with a constant compute time c and i.i.d. Exp(o)
overheads a round of P workers lasts c + o·H_P (the largest of P exponentials, Rényi), with
variance o²·Σ 1/i²; the mean over n rounds is within 4 standard errors. ASGD with one worker
of constant compute c and constant overhead o makes an update every c + o.
"""

from __future__ import annotations

import math

import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.sim.engine import simulate

P = 8


def scenario(worker_list: list[dict], algorithms: dict, until: float, **run):
    raw = base_raw(workers=worker_list, algorithms=algorithms)
    raw["run"].update(algorithm=next(iter(algorithms)), until=until, **run)
    return make_scenario(raw)


def _harmonic(n: int, power: int = 1) -> float:
    return sum(1.0 / i**power for i in range(1, n + 1))


def test_ssgd_round_is_compute_plus_the_largest_overhead():
    c, o, n = 1.0, 0.5, 1500
    ws = [{"name": "x", "count": P, "compute": c, "overhead": {"dist": "exponential", "mean": o}}]
    sc = scenario(ws, {"ssgd": {"lr": 0.01}}, 1e9, batch_size=1, max_updates=n, seed=5)
    result = simulate(sc)
    mean = c + o * _harmonic(P)
    sd = o * math.sqrt(_harmonic(P, 2))
    assert result.records.time[-1] / n == pytest.approx(mean, abs=4 * sd / math.sqrt(n))


def test_asgd_constant_overhead_adds_to_every_iteration():
    ws = [{"name": "x", "count": 1, "compute": 2.0, "overhead": 0.5}]
    sc = scenario(ws, {"asgd": {"lr": 0.01}}, 101.0, batch_size=1, seed=5)
    assert simulate(sc).updates == 40  # one every 2 + 0.5, the 40th at 100


def test_no_overhead_changes_nothing():
    """Without the key the compute stream is drawn as before: the same update times."""
    ws = [{"name": "x", "count": 4, "compute": {"dist": "exponential", "mean": 1.0}}]
    a = simulate(scenario(ws, {"asgd": {"lr": 0.01}}, 50.0, batch_size=1, seed=3))
    ws[0]["overhead"] = {"dist": "exponential", "mean": 1e-9}
    b = simulate(scenario(ws, {"asgd": {"lr": 0.01}}, 50.0, batch_size=1, seed=3))
    assert b.records.time[:20] == pytest.approx(a.records.time[:20], abs=1e-6)


@pytest.mark.parametrize(
    "value, fragment",
    [(-1.0, "workers[0].overhead"), ({"dist": "gamma"}, "workers[0].overhead.dist")],
)
def test_bad_overhead_names_the_key(value, fragment):
    raw = base_raw(workers=[{"name": "a", "count": 2, "compute": 1.0, "overhead": value}])
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert fragment in str(err.value)
