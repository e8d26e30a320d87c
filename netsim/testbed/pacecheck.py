"""Whether a real run keeps its time scale: the arithmetic (no I/O, no torch).

Every iteration of a real worker costs, beyond the scenario's own times (its drawn compute
time and injected latencies, scaled), some real seconds the scenario does not know of: the
model's and the push's messages, the processes' wake-ups, a gradient longer than its draw,
and (when the scenario has no ``[server]`` table of its own) the server's queue and
service. With *o* such seconds per iteration at *S* real seconds per unit, worker *w* of
typical cycle *t_w* units makes an iteration every ``t_w + o / S`` units instead of
``t_w``: an asynchronous rule's updates fall short of the emulation's by
:func:`shortfall`. A run keeps pace when that is at most :data:`PACE_SHORTFALL`;
:func:`least_scale` is the smallest scale that does.
"""

from __future__ import annotations

import math

__all__ = ["PACE_SHORTFALL", "shortfall", "least_scale", "suggested_scale"]

PACE_SHORTFALL = 0.05
"""Largest share of its emulation's updates a real run may lose to the machine's overhead."""


def shortfall(cycles: list[float], overhead_s: float, scale: float) -> float:
    """Share of the updates lost: ``1 − Σ 1/(t_w + o/S) / Σ 1/t_w`` for workers of typical
    cycles *cycles* (units), *overhead_s* (o, real s per iteration) at *scale* (S, s per unit).

    >>> round(shortfall([1.0, 1.0], 0.01, 0.1), 6)  # 1 - 1/1.1
    0.090909
    >>> shortfall([2.0], 0.0, 0.05)
    0.0
    """
    lag = overhead_s / scale
    ideal = sum(1.0 / t for t in cycles)
    return 1.0 - sum(1.0 / (t + lag) for t in cycles) / ideal


def least_scale(cycles: list[float], overhead_s: float, share: float = PACE_SHORTFALL) -> float:
    """Smallest scale (s per unit) at which :func:`shortfall` is at most *share* (bisection;
    the shortfall falls as the scale grows). 0 when there is no overhead.

    >>> s = least_scale([1.0, 1.0], 0.01)  # 1/(1 + 0.01/S) = 0.95: S = 0.19
    >>> round(s, 6)
    0.19
    """
    if overhead_s <= 0:
        return 0.0
    lo, hi = overhead_s * 1e-6, overhead_s * 1e6 / min(cycles)
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if shortfall(cycles, overhead_s, mid) > share:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-12:
            break
    return hi


def suggested_scale(least: float) -> float:
    """The scale a refusal names: *least* with a quarter to spare, rounded up to two
    significant digits (so it passes the check that computed *least*).

    >>> suggested_scale(0.19), suggested_scale(0.0123)
    (0.24, 0.016)
    """
    want = 1.25 * least
    digits = 1 - math.floor(math.log10(want))
    return math.ceil(round(want * 10**digits, 9)) / 10**digits
