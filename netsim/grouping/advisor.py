"""Grouping advisor: predicted update rate, staleness and progress per candidate grouping (pure).

Model, from measured per-iteration times T_i (s) of each worker:

* group k (members G_k) updates at rate ``r_k = 1 / E[max_{i∈G_k} T_i]`` (1/s): it waits
  for its slowest member each round. The expectation is estimated by resampling each
  member's measured times independently (bootstrap Monte Carlo).
* while group k computes one round, the other groups make ``R − r_k`` updates per second,
  so its gradients are ``τ_k = (R − r_k) / r_k`` versions stale, with ``R = Σ_k r_k``.
  The update-weighted mean staleness is ``Σ_k (r_k/R)·τ_k = K − 1``.
* an update averaging n_k gradients τ_k versions stale is worth ``n_k^α / (1 + β·η·τ_k)``
  fresh single-gradient steps, η being the learning rate (α: how much averaging helps,
  0 ≤ α ≤ 1; β·η: how much a version of staleness costs — stale steps hurt more when
  steps are large). The predicted progress rate is ``P = Σ_k r_k · n_k^α / (1 + β·η·τ_k)``; the grouping with the largest P is predicted to
  reach a target loss first (time to target ∝ 1/P). The defaults of α and β were fitted
  on generated scenarios by ``benchmarks/advisor_hit_rate.py``, which also reports the
  hit rate on scenarios not used for the fit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Prediction", "predict", "rank", "progress_rate", "ALPHA", "BETA"]


@dataclass(frozen=True)
class Prediction:
    """Predicted behaviour of one grouping: rates (1/s), staleness (versions), progress (1/s)."""
    name: str
    groups: tuple
    group_rates: tuple
    group_staleness: tuple
    update_rate: float
    mean_staleness: float
    progress: float
    lr: float = 1.0

    def as_dict(self) -> dict:
        return {"name": self.name, "k": len(self.groups), "update_rate": self.update_rate,
                "mean_staleness": self.mean_staleness, "progress": self.progress,
                "group_rates": list(self.group_rates), "group_staleness": list(self.group_staleness)}


ALPHA = 0.5
BETA = 1.0


def predict(name: str, groups, times: np.ndarray, *, lr: float = 1.0, alpha: float = ALPHA, beta: float = BETA,
            samples: int = 4000, rng: np.random.Generator | None = None) -> Prediction:
    """Predict rates and staleness of *groups* from *times* (n_workers, n_rounds), seconds,
    for learning rate *lr*."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rates = []
    for members in groups:
        draws = np.stack([rng.choice(times[i], samples) for i in members])
        rates.append(1.0 / float(draws.max(axis=0).mean()))
    rates = np.asarray(rates)
    total = float(rates.sum())
    stale = (total - rates) / rates
    sizes = np.asarray([len(g) for g in groups], float)
    progress = float((rates * sizes ** alpha / (1.0 + beta * lr * stale)).sum())
    mean_stale = float((rates * stale).sum() / total)
    return Prediction(name, tuple(tuple(g) for g in groups), tuple(rates.tolist()), tuple(stale.tolist()),
                      total, mean_stale, progress, lr)


def rank(candidates: dict, times: np.ndarray, *, lr: float = 1.0, alpha: float = ALPHA, beta: float = BETA,
         seed: int = 0) -> list[Prediction]:
    """Predictions for ``{name: groups}``, best (largest progress rate) first; ties by name."""
    preds = [predict(name, groups, times, lr=lr, alpha=alpha, beta=beta, rng=np.random.default_rng(seed))
             for name, groups in candidates.items()]
    return sorted(preds, key=lambda p: (-p.progress, p.name))


def progress_rate(p: Prediction, alpha: float = ALPHA, beta: float = BETA) -> float:
    """P of a prediction recomputed with other α, β (for fitting them)."""
    rates = np.asarray(p.group_rates)
    sizes = np.asarray([len(g) for g in p.groups], float)
    return float((rates * sizes ** alpha / (1.0 + beta * p.lr * np.asarray(p.group_staleness))).sum())
