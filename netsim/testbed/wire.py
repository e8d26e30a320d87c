"""The messages of a real run: one float64 vector each, a fixed header then the model or gradient.

Every message between the parameter server (rank 0) and worker *w* (rank w + 1) is one
float64 vector of ``HEADER + d`` entries, so a receiver always knows its size. Clock
stamps are ``time.monotonic()`` of the process that took them (s); the server converts a
worker's stamps to its own clock with the offset measured at the start (:func:`offset`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = [
    "HEADER",
    "MODEL",
    "STOP",
    "PING",
    "PUSH",
    "PONG",
    "P",
    "model_message",
    "push_message",
    "offset",
]

HEADER = 17
"""Entries before the payload in every message."""

MODEL, STOP, PING = 0.0, 1.0, 2.0
"""Kinds of server → worker messages: a model to compute on, the end of the run, a clock probe."""
PUSH, PONG = 10.0, 11.0
"""Kinds of worker → server messages: a gradient, the answer to a clock probe."""


class P:
    """Header positions of a push (worker → server); index 0 is the kind everywhere."""

    WORKER = 1
    VERSION = 2  # model version the gradient was computed on
    ITERATION = 3
    SAMPLES = 4
    MODEL_RECEIVED = 5  # worker clock: the model arrived
    COMPUTE_START = 6  # worker clock: after the injected pull delay
    COMPUTE_END = 7  # worker clock: computation and wait done
    PUSH_SENT = 8  # worker clock: the push left, after the injected push delay
    COMPUTE_REAL = 9  # s, the gradient's real computation
    WAIT = 10  # s, waited to fill the drawn time
    OVERRUN = 11  # s, real computation beyond the drawn time
    DRAWN = 12  # units, the drawn compute time
    LOAD1 = 13  # the 1-minute load average at the push
    PULL_DELAY = 14  # s, injected pull latency actually slept
    PUSH_DELAY = 15  # s, injected push latency actually slept
    COMPUTE_CPU = 16  # s, the CPU time the gradient's thread spent on it


def model_message(
    kind: float,
    version: int,
    stamp: float,
    w: np.ndarray | None,
    d: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """A server → worker message (``HEADER + d``,): *kind*, the *version*, the server's clock
    *stamp* at sending, then the model *w* (d,) (zeros for a STOP or PING); written into
    *out* (a float64 buffer of that size, returned) when given, else a new array."""
    if out is None:
        out = np.zeros(HEADER + d)
    else:
        out[:HEADER] = 0.0
        if w is None:
            out[HEADER:] = 0.0
    out[0], out[1], out[2] = kind, version, stamp
    if w is not None:
        out[HEADER:] = w
    return out


def push_message(header: np.ndarray, grad: np.ndarray | None, d: int) -> np.ndarray:
    """A worker → server message: *header* (HEADER,) then the gradient (d,) (zeros for a PONG)."""
    msg = np.zeros(HEADER + d)
    msg[:HEADER] = header
    if grad is not None:
        msg[HEADER:] = grad
    return msg


def offset(probes: Iterable[tuple[float, float, float]]) -> float:
    """The worker's clock minus the server's (s), from clock probes ``(sent, answered,
    received)``: the server's stamps when it sent the probe and received the answer, the
    worker's when it answered. The probe with the shortest round trip bounds the error best
    (by half its round trip); the answer is taken as given at its middle (Cristian's method).

    >>> offset([(10.0, 15.2, 10.4), (11.0, 16.05, 11.1)])
    5.0
    """
    sent, answered, received = min(probes, key=lambda p: p[2] - p[0])
    return answered - (sent + received) / 2
