"""Grouping advisor: predicted update rate, staleness and progress per candidate grouping (pure).

Model, from measured per-iteration times T_i (s) of each worker:

* group k (members G_k) updates at rate ``r_k = 1 / E[max_{i∈G_k} T_i]`` (1/s): it waits
  for its slowest member each round. The expectation is estimated by resampling each
  member's measured times independently (bootstrap Monte Carlo).
* while group k computes one round, the other groups make ``R − r_k`` updates per second,
  so its gradients are ``τ_k = (R − r_k) / r_k`` versions stale, with ``R = Σ_k r_k``.
  The update-weighted mean staleness is ``Σ_k (r_k/R)·τ_k = K − 1``.
* an update averaging n_k gradients τ_k versions stale is worth ``n_k^α / (1 + τ_k)``
  fresh single-gradient steps (averaging cuts noise by √n_k at α = 0.5; staleness
  discounts a step as in staleness-aware ASGD). The predicted progress rate is
  ``P = Σ_k r_k · n_k^α / (1 + τ_k)``; the grouping with the largest P is predicted to
  reach a target loss first (time to target ∝ 1/P).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Prediction", "predict", "rank"]


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

    def as_dict(self) -> dict:
        return {"name": self.name, "k": len(self.groups), "update_rate": self.update_rate,
                "mean_staleness": self.mean_staleness, "progress": self.progress,
                "group_rates": list(self.group_rates), "group_staleness": list(self.group_staleness)}


def predict(name: str, groups, times: np.ndarray, *, alpha: float = 0.5, samples: int = 4000,
            rng: np.random.Generator | None = None) -> Prediction:
    """Predict rates and staleness of *groups* from *times* (n_workers, n_rounds), seconds."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rates = []
    for members in groups:
        draws = np.stack([rng.choice(times[i], samples) for i in members])
        rates.append(1.0 / float(draws.max(axis=0).mean()))
    rates = np.asarray(rates)
    total = float(rates.sum())
    stale = (total - rates) / rates
    sizes = np.asarray([len(g) for g in groups], float)
    progress = float((rates * sizes ** alpha / (1.0 + stale)).sum())
    mean_stale = float((rates * stale).sum() / total)
    return Prediction(name, tuple(tuple(g) for g in groups), tuple(rates.tolist()), tuple(stale.tolist()),
                      total, mean_stale, progress)


def rank(candidates: dict, times: np.ndarray, *, alpha: float = 0.5, seed: int = 0) -> list[Prediction]:
    """Predictions for ``{name: groups}``, best (largest progress rate) first; ties by name."""
    preds = [predict(name, groups, times, alpha=alpha, rng=np.random.default_rng(seed))
             for name, groups in candidates.items()]
    return sorted(preds, key=lambda p: (-p.progress, p.name))
