"""K-batch-async SGD (Dutta et al. 2018): any K minibatches; workers never wait."""

from __future__ import annotations

from .base import Push, ServerActions
from .kasync import KAsync

__all__ = ["KBatchAsync"]


class KBatchAsync(KAsync):
    """As :class:`~netsim.rules.kasync.KAsync`, but every worker gets the current
    model right after each of its pushes, so no worker is ever idle: the PS
    averages every K arriving minibatch gradients (one worker may supply several),
    ``w ← w − (η/K)·Σ g``.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    k : int, K in ``1 .. P``.
    """

    name = "kbatch_async"
    real = True
    description = "K-batch-async SGD: average every K arriving minibatches; each pusher restarts at once on the current model"
    source = (
        "Dutta, Wang, Joshi et al., AISTATS 2018 (JSAIT 2021, arXiv 2003.10579); ALGORITHMS.md §6.2"
    )

    def on_push(self, ps: ServerActions, push: Push) -> None:
        self.buffer_.append(push)
        if len(self.buffer_) == self.k:
            ps.apply(self.buffer_, self.lr, 0)
            self.buffer_ = []
        ps.send((push.worker,))
