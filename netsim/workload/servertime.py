"""How long the parameter server takes: the pure arithmetic of its service times.

No SimPy, no I/O: :mod:`netsim.sim.servicequeue` runs the server's queue on these numbers.
A server (the ``[server]`` table) spends, per push it serves, an *intake* (``gradient_time +
gradient_time_per_param · d``), per update it applies an *apply* (``apply_time +
apply_time_per_param · d``) and, when that update averages k ≥ 2 gradients, k *average*
times (``average_time + average_time_per_param · d``), and per model message it sends a *message* time
(``send_time + send_time_per_byte · bytes``), and, on a receiving thread of its own, per
push a *receive* time (``receive_time + receive_time_per_byte · bytes``), and per copy of
the model kept for an evaluation a *snapshot* time (``snapshot_time +
snapshot_time_per_param · d``), all in the scenario's time units; with
``service = "exponential"`` each one is drawn with that mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ServerCosts", "draw", "send_offsets"]


@dataclass(frozen=True)
class ServerCosts:
    """Mean service times (time units) of one server for a model of *n_params* parameters and
    model messages of *message_bytes* bytes; see the module's docstring. *slots*: messages
    sent at once; *bandwidth*: bit/s of the server's own link (0: unlimited); *receive*: the
    receiving thread's time per push (0: a push joins the queue as it arrives); *snapshot*:
    the time to copy the model for an evaluation (0: evaluations cost the server nothing);
    *average*: the time per gradient averaged into an update of several."""

    intake: float
    apply: float
    message: float
    message_bytes: float
    slots: int = 1
    bandwidth: float = 0.0
    receive: float = 0.0
    snapshot: float = 0.0
    average: float = 0.0


def draw(mean: float, rng: np.random.Generator | None) -> float:
    """One service time of mean *mean*: *mean* itself (constant service, *rng* None), else an
    exponential draw from *rng*. A zero mean is zero and draws nothing (so a cost left at 0
    never moves the stream)."""
    if mean == 0.0 or rng is None:
        return mean
    return float(rng.exponential(mean))


def send_offsets(durations: list[float], bits: float, slots: int, bandwidth: float) -> list[float]:
    """When each model message is out, from the start of the sends (time units).

    Messages go out in order, *slots* at a time: a message takes a slot, spends its
    duration (``durations[i]``, the server's work on it), then puts its *bits* on the
    server's link, shared equally by the messages transmitting at that moment (*bandwidth*
    bit/s; 0: transmission takes no time); its slot frees when it is out, and the next
    message takes it.

    >>> send_offsets([1.0, 1.0, 1.0], 0.0, 2, 0.0)
    [1.0, 1.0, 2.0]
    >>> send_offsets([0.0, 0.0], 8.0, 2, 4.0)  # two messages of 8 bits share 4 bit/s: 4 s
    [4.0, 4.0]
    """
    n = len(durations)
    out = [0.0] * n
    if bits <= 0 or bandwidth <= 0:  # no link: a pool of slots of known lengths
        free = [0.0] * min(slots, n)
        for i, d in enumerate(durations):
            k = min(range(len(free)), key=free.__getitem__)
            out[i] = free[k] = free[k] + d
        return out
    return _shared_link(durations, bits, slots, bandwidth)


def _shared_link(durations: list[float], bits: float, slots: int, bandwidth: float) -> list[float]:
    """:func:`send_offsets` with a link: step from event to event (a message's work done,
    a message out), the transmitting messages sharing *bandwidth* equally."""
    n = len(durations)
    out = [0.0] * n
    active: dict[int, list[float]] = {}  # message -> [work left, bits left]
    nxt, now = 0, 0.0
    while nxt < n or active:
        while nxt < n and len(active) < slots:
            active[nxt] = [durations[nxt], bits]
            nxt += 1
        sending = [i for i, (work, _) in active.items() if work <= 0]
        rate = bandwidth / len(sending) if sending else 0.0
        steps = [work for work, _ in active.values() if work > 0]
        steps += [active[i][1] / rate for i in sending]
        dt = min(steps)
        now += dt
        for i, left in list(active.items()):
            if left[0] > 0:
                left[0] -= dt
                if left[0] <= 1e-12 * max(1.0, durations[i]):
                    left[0] = 0.0
            else:
                left[1] -= rate * dt
                if left[1] <= 1e-9 * bits:
                    out[i] = now
                    del active[i]
    return out
