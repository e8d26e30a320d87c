"""Closed forms of queueing theory the server tests hold netsim's runs against."""

from __future__ import annotations

import math

import numpy as np


def machine_repairman(n: int, lam: float, mu: float) -> tuple[float, float]:
    """(throughput, W_q) of the closed M/M/1//N queue: N customers who each come back at
    rate *lam*, one server of rate *mu*; p_k ∝ N!/(N − k)! (λ/μ)^k, throughput μ(1 − p_0),
    W_q = L_q / throughput with L_q = Σ (k − 1) p_k."""
    terms = [math.perm(n, k) * (lam / mu) ** k for k in range(n + 1)]
    p = [t / math.fsum(terms) for t in terms]
    throughput = mu * (1.0 - p[0])
    lq = math.fsum((k - 1) * pk for k, pk in enumerate(p) if k >= 1)
    return throughput, lq / throughput


def batch_se(x: np.ndarray, batches: int = 40) -> float:
    """Standard error of the mean of the correlated series *x* by batch means."""
    means = np.array([b.mean() for b in np.array_split(x, batches)])
    return float(means.std(ddof=1) / math.sqrt(batches))
