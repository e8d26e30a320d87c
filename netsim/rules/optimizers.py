"""Server optimizers beyond SGD: Adam and AdamW as pure math on flat vectors (ALGORITHMS.md §10.6).

The server hands an optimizer the rule's aggregated gradient ``g`` (ndarray (d,)), the step's
rate ``η`` (the rule's rate times its schedule factor and the step's own scale, e.g. a group
weight) and the current model ``w``; one update is one optimizer step. The arithmetic is that of
``torch.optim.Adam`` / ``AdamW`` (``foreach=False``), operation for operation where the flat
form allows, in the dtype of ``g`` (Python scalars do not promote a float32 array):

- Adam: ``g ← g + λ·w`` (λ = ``weight_decay``, on the decayed entries);
  ``m ← m + (1 − β1)·(g − m)``; ``v ← β2·v + (1 − β2)·g·g``;
  ``w ← w − (η / (1 − β1^t)) · m / (sqrt(v) / sqrt(1 − β2^t) + ε)``
- AdamW: the same without λ in g, and ``w ← w − η·λ·w`` (decoupled decay) with the step.

Weight decay may spare some entries (the 1-d parameters: biases, norm scales and shifts):
*spared* is a list of ``(lo, hi)`` index ranges of the flat vector.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["OPTIMIZERS", "Adam", "decayed"]

OPTIMIZERS = ("sgd", "adam", "adamw")
"""Server optimizers (``[algorithms.X] optimizer``)."""


def decayed(w: np.ndarray, rate: float, spared: Iterable[tuple[int, int]]) -> np.ndarray:
    """``rate · w`` with the entries of the ranges *spared* ``[(lo, hi), ...]`` zero; a new
    array of *w*'s dtype and shape (d,)."""
    out = np.multiply(w, rate)
    for lo, hi in spared:
        out[lo:hi] = 0
    return out


class Adam:
    """The moments of one run and the step they give.

    Parameters
    ----------
    betas : (β1, β2), each in [0, 1).
    eps : ε > 0.
    weight_decay : λ >= 0.
    decoupled : True for AdamW (decay the model), False for Adam (decay added to g).
    spared : ranges ``(lo, hi)`` of entries weight decay leaves alone.
    """

    def __init__(
        self,
        betas: Iterable[float],
        eps: float,
        weight_decay: float,
        decoupled: bool,
        spared: Iterable[tuple[int, int]] = (),
    ) -> None:
        self.beta1, self.beta2 = (float(b) for b in betas)
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        self.decoupled = decoupled
        self.spared = tuple(spared)
        self.m: np.ndarray | None = None
        self.v: np.ndarray | None = None
        self.t = 0

    def step(self, g: np.ndarray, rate: float, w: np.ndarray) -> np.ndarray:
        """The model change ``w_old − w_new`` of one step on gradient *g* (d,) at rate *rate*
        from model *w* (d,): *g* itself, overwritten (the caller hands over an array of its
        own). Beyond the moments, no model-sized array is made: ``g·g`` and the decay
        ``λ·w`` are formed :data:`BLOCK` entries at a time (the same numbers: every
        operation is entrywise)."""
        wd = self.weight_decay
        if wd and not self.decoupled:
            _add_decayed(g, w, wd, self.spared)
        if self.m is None or self.v is None:
            self.m, self.v = np.zeros_like(g), np.zeros_like(g)
        m, v = self.m, self.v
        self.t += 1
        scratch = np.empty(min(BLOCK, g.size), g.dtype)
        for lo in range(0, g.size, BLOCK):  # v ← β2·v + ((1 − β2)·g)·g, torch's addcmul
            part, sq = slice(lo, lo + BLOCK), scratch[: min(BLOCK, g.size - lo)]
            np.multiply(g[part], 1.0 - self.beta2, out=sq)
            sq *= g[part]
            v[part] *= self.beta2
            v[part] += sq
        _lerp(m, g, 1.0 - self.beta1)  # g's last use as the gradient
        denom = np.sqrt(v, out=g)
        denom /= (1.0 - self.beta2**self.t) ** 0.5
        denom += self.eps
        step = np.divide(m, denom, out=denom)
        step *= rate / (1.0 - self.beta1**self.t)
        if wd and self.decoupled:
            _add_decayed(step, w, rate * wd, self.spared)
        return step


BLOCK = 1 << 16
"""Entries of the scratch block Adam forms its products in (256 kB in float32)."""


def _add_decayed(
    out: np.ndarray, w: np.ndarray, rate: float, spared: tuple[tuple[int, int], ...]
) -> None:
    """``out += decayed(w, rate, spared)`` in place, :data:`BLOCK` entries at a time."""
    scratch = np.empty(min(BLOCK, w.size), w.dtype)
    for lo in range(0, w.size, BLOCK):
        hi = min(lo + BLOCK, w.size)
        part = np.multiply(w[lo:hi], rate, out=scratch[: hi - lo])
        for a, b in spared:
            if a < hi and b > lo:
                part[max(a, lo) - lo : min(b, hi) - lo] = 0
        out[lo:hi] += part


def _lerp(m: np.ndarray, g: np.ndarray, weight: float) -> None:
    """``m ← lerp(m, g, weight)`` in place, as torch's ``lerp_`` computes it: ``m + weight·(g − m)``
    for weight < 0.5 (*g* then holds ``g − m``: no model-sized temporary), else
    ``g − (g − m)·(1 − weight)``."""
    if weight < 0.5:
        gap = np.subtract(g, m, out=g)
        gap *= weight
        m += gap
        return
    gap = np.subtract(g, m)
    gap *= 1.0 - weight
    np.subtract(g, gap, out=m)
