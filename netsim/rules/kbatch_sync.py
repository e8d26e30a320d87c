"""K-batch-sync SGD (Dutta et al. 2018): first K minibatches on one model, then all restart."""

from __future__ import annotations

from .base import KRule, Push, ServerActions

__all__ = ["KBatchSync"]


class KBatchSync(KRule):
    """All P workers start from ``w_j`` and keep computing minibatches on it (a
    worker that pushes gets the unchanged current model back at once). The first
    K minibatches to arrive, possibly several from one worker, are averaged:
    ``w_{j+1} = w_j − (η/K)·Σ g``; then every other worker is pre-empted and all
    restart from ``w_{j+1}``. Every applied gradient has staleness 0; a gradient
    of an older step still in flight at the update is dropped.

    Parameters
    ----------
    lr : float, η.
    groups : reporting partition (one group of all workers).
    k : int, K in ``1 .. P``.
    """

    name = "kbatch_sync"
    description = "K-batch-sync SGD: average the first K minibatches computed on the current model, then restart everyone"
    source = (
        "Dutta, Wang, Joshi et al., AISTATS 2018 (JSAIT 2021, arXiv 2003.10579); ALGORITHMS.md §6.2"
    )

    def reads_current(self) -> bool:
        return True

    def start(self, ps: ServerActions) -> None:
        self.n_workers_ = len(self.group_index())
        self.buffer_: list[Push] = []
        ps.send(range(self.n_workers_))

    def on_push(self, ps: ServerActions, push: Push) -> None:
        if push.version != ps.version:
            ps.drop(push, f"late: step {push.version} already applied")
        else:
            self.buffer_.append(push)
            if len(self.buffer_) == self.k:
                ps.apply(self.buffer_, self.lr, 0)
                self.buffer_ = []
                for wid in range(self.n_workers_):
                    if wid != push.worker:
                        ps.preempt(wid)
        ps.send((push.worker,))
