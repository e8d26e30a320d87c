"""Runtime identities of Dutta et al. (2018) with i.i.d. Exp(1) compute times and no network.

K-sync and SSGD rounds all restart together, so a round lasts the K-th order statistic
of P fresh exponentials: mean ``Σ_{i=P-K+1}^{P} 1/i`` and variance ``Σ_{i=P-K+1}^{P} 1/i²``
(Rényi). Rounds are i.i.d., so the mean over n rounds has standard error sqrt(var/n);
the tolerance is 4 standard errors (a false alarm about once in 16 000 seeds; the seed is fixed).
K-batch-async keeps all P workers busy: pushes form a Poisson process of rate P, so an update
(K pushes) takes Gamma(K, P) time: mean K/P, variance K/P².
"""

from __future__ import annotations

import math

import pytest
from rulekit import scenario

from netsim.sim.engine import simulate

P = 16


def harmonic(n: int, power: int = 1) -> float:
    return sum(1.0 / i**power for i in range(1, n + 1))


def mean_update_time(algorithm: str, params: dict, n: int) -> float:
    ws = [{"name": "x", "count": P, "compute": {"dist": "exponential", "mean": 1.0}}]
    sc = scenario(
        ws, {algorithm: {"lr": 0.01, **params}}, 1e9, batch_size=1, max_updates=n, seed=11
    )
    result = simulate(sc)
    assert result.updates == n
    return result.records.time[-1] / n  # the last update happens at the end of round n


@pytest.mark.parametrize(
    "algorithm, params, k, n",
    [
        ("ksync", {"k": 8}, 8, 3000),  # H16 − H8 ≈ 0.6629, sd ≈ 0.249
        ("ssgd", {}, P, 1500),  # H16 ≈ 3.3807, sd ≈ 1.259
    ],
)
def test_order_statistic_round_time(algorithm, params, k, n):
    mean = harmonic(P) - harmonic(P - k)
    var = harmonic(P, 2) - harmonic(P - k, 2)
    got = mean_update_time(algorithm, params, n)
    assert got == pytest.approx(mean, abs=4 * math.sqrt(var / n))


def test_identities_are_the_papers_numbers():
    assert harmonic(16) - harmonic(8) == pytest.approx(0.6629, abs=1e-4)
    assert harmonic(16) == pytest.approx(3.3807, abs=1e-4)


def test_kbatch_async_update_time():
    k, n = 4, 4000
    got = mean_update_time("kbatch_async", {"k": k}, n)
    assert got == pytest.approx(k / P, abs=4 * math.sqrt(k / P**2 / n))
