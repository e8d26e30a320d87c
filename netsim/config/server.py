"""The ``[server]`` table: how long the parameter server takes (docs/SERVER.md).

Absent, or with every cost at 0, the server serves in zero time (:func:`parse_server`
returns None and nothing of the run changes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ScenarioError
from ..params import Table

__all__ = [
    "ServerSpec",
    "parse_server",
    "check_server_horizon",
    "check_receive_horizon",
    "check_snapshot_time",
    "SERVICES",
]

SERVICES = ("constant", "exponential")

_TIMES = (
    "apply_time",
    "apply_time_per_param",
    "gradient_time",
    "gradient_time_per_param",
    "send_time",
    "send_time_per_byte",
    "receive_time",
    "receive_time_per_byte",
    "snapshot_time",
    "snapshot_time_per_param",
    "average_time",
    "average_time_per_param",
)


@dataclass(frozen=True)
class ServerSpec:
    """A server that takes time (every time in the scenario's time units).

    ``gradient_time`` (+ ``gradient_time_per_param`` × d) per push served;
    ``average_time`` (+ ``average_time_per_param`` × d) per gradient averaged into an update
    of several (paid with that update); ``apply_time`` (+ ``apply_time_per_param`` × d) per
    update applied; ``send_time`` (+ ``send_time_per_byte`` × bytes) per model message,
    ``parallel_sends`` of them at once; ``receive_time`` (+ ``receive_time_per_byte`` ×
    bytes) per push received, one at a time, beside the serving thread; ``snapshot_time``
    (+ ``snapshot_time_per_param`` × d) per copy of the model kept for an evaluation (a job
    of its own); ``bandwidth`` (bit/s, 0 = unlimited) of the server's own link (only
    without ``[network]``); ``service``: ``constant`` or ``exponential`` (each time drawn
    with that mean).
    """

    apply_time: float = 0.0
    apply_time_per_param: float = 0.0
    gradient_time: float = 0.0
    gradient_time_per_param: float = 0.0
    service: str = "constant"
    send_time: float = 0.0
    send_time_per_byte: float = 0.0
    parallel_sends: int = 1
    bandwidth: float = 0.0
    receive_time: float = 0.0
    receive_time_per_byte: float = 0.0
    snapshot_time: float = 0.0
    snapshot_time_per_param: float = 0.0
    average_time: float = 0.0
    average_time_per_param: float = 0.0

    def intake(self, n_params: int) -> float:
        """Mean time to take in one gradient of *n_params* values."""
        return self.gradient_time + self.gradient_time_per_param * n_params

    def apply(self, n_params: int) -> float:
        """Mean time to apply one update of *n_params* values."""
        return self.apply_time + self.apply_time_per_param * n_params

    def message(self, message_bytes: float) -> float:
        """Mean server time of one model message of *message_bytes* bytes."""
        return self.send_time + self.send_time_per_byte * message_bytes

    def average(self, n_params: int) -> float:
        """Mean time per gradient of *n_params* values averaged into an update of several."""
        return self.average_time + self.average_time_per_param * n_params

    def snapshot(self, n_params: int) -> float:
        """Mean time to keep one copy of a model of *n_params* values for an evaluation."""
        return self.snapshot_time + self.snapshot_time_per_param * n_params

    def receiving(self, message_bytes: float) -> float:
        """Mean time the server's receiving thread spends on one push of *message_bytes* bytes."""
        return self.receive_time + self.receive_time_per_byte * message_bytes


def parse_server(top: Table, network: bool) -> ServerSpec | None:
    """The ``[server]`` table of the scenario *top* (None when absent or every cost is 0:
    the server then takes no time). *network*: the scenario has a ``[network]`` table
    (which refuses ``bandwidth``: the topology's links carry the messages)."""
    if not top.has("server"):
        return None
    t = top.table("server")
    values = {name: _time(t, name) for name in _TIMES}
    service = t.get("service", str, "constant", choices=SERVICES)
    slots = t.get("parallel_sends", int, 1, minimum=1)
    bandwidth = _time(t, "bandwidth")
    if network and t.has("bandwidth"):
        raise ScenarioError(
            t.key("bandwidth"),
            "not allowed with a [network] table: the topology's link of network.ps_host "
            "already carries the server's messages (remove server.bandwidth)",
        )
    t.done()
    if not any(values.values()) and not bandwidth:
        return None
    return ServerSpec(service=service, parallel_sends=slots, bandwidth=bandwidth, **values)


def _time(t: Table, name: str) -> float:
    value = t.get(name, float, 0.0, minimum=0.0)
    if not math.isfinite(value):
        raise ScenarioError(
            t.key(name), f"{value!r} is not allowed (allowed: a finite number >= 0)"
        )
    return value


def check_server_horizon(spec: ServerSpec, n_params: int, until: float, path: str) -> None:
    """Refuse a server whose per-parameter costs make one update (one gradient taken in and
    applied) last longer than the whole run (*until*, time units) for a model of
    *n_params* parameters; the error names the larger per-parameter cost."""
    per = {
        "gradient_time_per_param": spec.gradient_time_per_param,
        "apply_time_per_param": spec.apply_time_per_param,
    }
    total = spec.intake(n_params) + spec.apply(n_params)
    if not any(per.values()) or total <= until:
        return
    key = max(per, key=per.__getitem__)
    raise ScenarioError(
        f"server.{key}",
        f"one update takes gradient_time + apply_time + (gradient_time_per_param + "
        f"apply_time_per_param) × {n_params:,} parameters = {total:.4g} time units, longer "
        f"than run.until = {until:g}: no update could finish (lower {key})",
        path,
    )


def check_receive_horizon(spec: ServerSpec, message_bytes: float, until: float, path: str) -> None:
    """Refuse a server whose receiving time per push (``receive_time +
    receive_time_per_byte`` × *message_bytes*) lasts longer than the whole run (*until*):
    no push could be received. The error names the per-byte key when it is set."""
    total = spec.receiving(message_bytes)
    if total <= until:
        return
    key = "receive_time_per_byte" if spec.receive_time_per_byte else "receive_time"
    takes = (
        f"receive_time + receive_time_per_byte × {message_bytes:,.0f} bytes"
        if spec.receive_time_per_byte
        else "receive_time"
    )
    raise ScenarioError(
        f"server.{key}",
        f"receiving one push takes {takes} = {total:.4g} time units, longer than run.until = "
        f"{until:g}: no push could be received (lower {key})",
        path,
    )


def check_snapshot_time(spec: ServerSpec, n_params: int, eval_every: float, path: str) -> None:
    """Refuse a copy of the model for an evaluation (``snapshot_time +
    snapshot_time_per_param`` × *n_params*) that lasts as long as the time between two
    evaluations (*eval_every*, time units; 0: no timed evaluations): the server would do
    nothing but copy. The error names the per-parameter key when it is set."""
    total = spec.snapshot(n_params)
    if not eval_every or total < eval_every:
        return
    key = "snapshot_time_per_param" if spec.snapshot_time_per_param else "snapshot_time"
    raise ScenarioError(
        f"server.{key}",
        f"one copy of the model for an evaluation takes snapshot_time + "
        f"snapshot_time_per_param × {n_params:,} parameters = {total:.4g} time units, not "
        f"less than run.eval_every = {eval_every:g}: the server would do nothing but copy "
        f"(lower {key} or raise run.eval_every)",
        path,
    )
