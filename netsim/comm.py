"""Communication seam: how long a model pull and a gradient push take.

The engine asks a communication model for an event per transfer; a worker
yields it (or nothing, when the transfer is instantaneous). This module has the
fixed per-worker latency model; a network model offers the same two methods.
"""
from __future__ import annotations

__all__ = ["FixedLatency"]


class FixedLatency:
    """Per-worker constant latencies (s) for a model pull and a gradient push.

    Parameters
    ----------
    env : simpy.Environment
    pull_s, push_s : sequence of float, one per worker (s); 0 means instantaneous.
    """

    def __init__(self, env, pull_s, push_s):
        self.env = env
        self.pull_s = list(pull_s)
        self.push_s = list(push_s)

    def pull(self, worker: int):
        """Event that fires when *worker* has received the model, or None if at once."""
        delay = self.pull_s[worker]
        return self.env.timeout(delay) if delay else None

    def push(self, worker: int):
        """Event that fires when *worker*'s gradient reached the PS, or None if at once."""
        delay = self.push_s[worker]
        return self.env.timeout(delay) if delay else None
