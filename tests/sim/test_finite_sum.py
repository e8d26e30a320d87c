"""finite_sum answers exactly isfinite(numpy sum) while calling the sum only past its bound."""

import math

import numpy as np
import pytest

from netsim.sim.server import finite_sum

CASES = [
    [],
    [0.0],
    [1.0, -2.0],
    [1e149] * 1000,
    [1e151, -1e151],
    [1e154, 1e154],
    [1e200, -1e200],
    [1e308, -1e308, 1e308],
    [1.7e308, 1.7e308],
    [-1.7e308, -1.7e308],
    [np.nan],
    [1.0, np.inf],
    [np.inf, -np.inf],
    [5e307] * 4,
    [5e307, -5e307] * 2,
]


@pytest.mark.parametrize("values", CASES)
def test_finite_sum_is_the_exact_test(values):
    delta = np.array(values, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        assert finite_sum(delta) is math.isfinite(np.add.reduce(delta))


def test_finite_sum_never_sums_below_the_bound(monkeypatch):
    # squares summing below 1e300 (1,000 x 9e296): the exact sum is never taken
    from netsim.sim import server

    monkeypatch.setattr(server, "_sum", lambda _: pytest.fail("summed below the bound"))
    assert finite_sum(np.full(1_000, -3e148))
