"""What a real run refuses before any of its processes starts (one line each, exit status 2)."""

from __future__ import annotations

import errno
import math
import os
import resource
import socket
from collections.abc import Callable

from ..config.scenario import Scenario
from ..errors import ScenarioError
from ..rules import RULES
from .pacecheck import PACE_SHORTFALL, shortfall, suggested_scale
from .snapshots import time_snapshots

__all__ = [
    "REAL_RULES",
    "check_time_scale",
    "check_scenario",
    "check_torch",
    "process_limit",
    "check_workers",
    "check_snapshots",
    "free_port",
    "check_port",
    "check_pace",
    "overhead_estimate",
    "typical_cycles",
]

REAL_RULES = tuple(name for name, cls in RULES.items() if cls.real)
"""Rules a real server applies: the ones that only apply, send, drop and time rounds (no
pre-emption of a worker's computation, no reading of its progress)."""

PROCESS_MEMORY = 100 * 2**20
"""Memory (bytes) budgeted per process of a real run: the interpreter, torch's libraries
and gloo's buffers a forked process does not share with its parent."""
MAX_PROCESSES = 1024
"""Most processes (server + workers) one real run starts on one machine."""


def check_time_scale(scale: float) -> None:
    """A time scale (s of real time per unit of scenario time) must be finite and > 0."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ScenarioError(
            "--time-scale", f"{scale!r} is not allowed (real seconds per time unit, finite and > 0)"
        )


def _why_emulated(algorithm: str) -> str:
    """Why rule *algorithm* has no real run, in words."""
    if RULES[algorithm].peer:
        return (
            "a real run has a parameter server, and this rule has none (its workers talk to peers)"
        )
    return "it pre-empts or reads a worker's computation in progress"


def check_scenario(scenario: Scenario, algorithm: str) -> None:
    """Refuse what a real run cannot do: a rule that pre-empts or inspects workers, a
    grouping measured or raced before training, timed events, a network topology."""
    rule = scenario.rule(algorithm)
    if algorithm not in REAL_RULES:
        raise ScenarioError(
            "--algorithm",
            f"{algorithm!r} cannot run for real: {_why_emulated(algorithm)} "
            f"(real runs: {', '.join(REAL_RULES)})",
            scenario.path,
        )
    if refusal := rule.real_refusal():
        raise ScenarioError(f"algorithms.{algorithm}.{refusal[0]}", refusal[1], scenario.path)
    if rule.probe_rounds() or rule.wants_recommendation():
        raise ScenarioError(
            f"algorithms.{algorithm}.grouping",
            "a real run takes groups by hand (grouping = 'hand'): the measurement phase and "
            "the race of a formed grouping are emulated only",
            scenario.path,
        )
    if scenario.events:
        raise ScenarioError(
            "events", "timed events (slowdowns, crashes) are emulated only", scenario.path
        )
    if scenario.network is not None:
        raise ScenarioError(
            "network",
            "a real run adds per-class latencies (workers[].latency, pull_latency, "
            "push_latency) to its messages; a [network] topology is emulated only",
            scenario.path,
        )


def check_torch() -> None:
    """torch with torch.distributed and its gloo backend must be importable."""
    try:
        import torch.distributed as dist
    except ImportError as exc:
        raise ScenarioError(
            "torch",
            f"netsim real needs PyTorch ({exc}): pip install torch==2.13.0 (the CPU build) "
            "&& pip install 'netsim[torch]'",
        ) from None
    if not dist.is_available() or not dist.is_gloo_available():
        raise ScenarioError(
            "torch", "this PyTorch build has no torch.distributed gloo backend (a CPU build has)"
        )


def process_limit() -> tuple[int, str]:
    """(most processes a real run may start here, what sets that bound)."""
    bounds = {"netsim's own bound": MAX_PROCESSES}
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY:  # the server holds ~3 sockets per process (3 groups)
        bounds[f"open files: the soft limit {soft}"] = max(1, (soft - 64) // 3)
    nproc, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if nproc != resource.RLIM_INFINITY:
        bounds[f"processes: the limit {nproc}"] = max(1, nproc - 64)
    available = _available_memory()
    if available is not None:
        bounds[f"memory: {available / 2**30:.1f} GiB available at 100 MiB a process"] = max(
            1, available // PROCESS_MEMORY
        )
    why = min(bounds, key=bounds.__getitem__)
    return int(bounds[why]), why


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_workers(n_workers: int) -> None:
    """One process per worker and one server must fit on this machine."""
    limit, why = process_limit()
    if n_workers + 1 > limit:
        raise ScenarioError(
            "workers",
            f"{n_workers} workers need {n_workers + 1} processes (one each and the server); this "
            f"machine can run {limit} ({why}): lower the worker counts",
        )


def check_snapshots(scenario: Scenario, d: int) -> None:
    """The models kept for the curve (one per evaluation time, allocated before the run:
    :mod:`netsim.testbed.snapshots`) must fit in half the memory available now."""
    run = scenario.run
    count = time_snapshots(run.until, run.eval_every)
    need, available = count * d * 8, _available_memory()
    if available is not None and need > available // 2:
        raise ScenarioError(
            "run.eval_every",
            f"{count} evaluation times keep {count} copies of the model's {d:,} values "
            f"({need / 2**30:.1f} GiB); this machine has {available / 2**30:.1f} GiB available "
            "and a real run takes at most half: raise eval_every or lower run.until",
            scenario.path,
        )


def free_port(host: str) -> int:
    """A TCP port on *host* that nothing listens on now (the system picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def check_port(host: str, port: int) -> None:
    """*port* on *host* must be free for the rendezvous (torch's TCP store listens there)."""
    if not 1 <= port <= 65535:
        raise ScenarioError("--port", f"{port} is not allowed (1..65535)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the TCP store binds
        try:
            s.bind((host, port))
        except OSError as exc:
            why = "in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise ScenarioError(
                "--port", f"port {port} on {host} is {why} (leave --port out to pick a free one)"
            ) from None


MESSAGE_S = 1e-3
"""Real seconds each iteration spends on its two messages and the processes' wake-ups on
an idle machine (about 1 ms on a 2-core VM); multiplied by the square root of the load per
core when the machine is busier than one process a core (2–4 ms measured at a load of 4–6
per core)."""
LOOPBACK_BPS = 1e9
"""Bytes per second a message crosses the loopback at (a model and a gradient per iteration)."""


def typical_cycles(scenario: Scenario) -> list[float]:
    """Each worker's typical cycle (units): its typical compute time and latencies."""
    return [wc.typical_step() for _, wc, _ in scenario.worker_slots()]


def overhead_estimate(
    scenario: Scenario, scale: float, service_s: float, message_bytes: int, load: float
) -> float:
    """Real seconds (estimated) each iteration costs beyond the scenario's own times: its
    messages (:data:`MESSAGE_S` × max(1, *load* per core) and the bytes at
    :data:`LOOPBACK_BPS`) and, unless the scenario models its server (``[server]``), the
    server's service *service_s* per push and its queue (M/D/1-like: service / (1 − ρ),
    ρ the server's load; infinite at ρ ≥ 1)."""
    cores = os.cpu_count() or 1
    out = MESSAGE_S * math.sqrt(max(1.0, load / cores)) + 2 * message_bytes / LOOPBACK_BPS
    if scenario.server is None:
        rho = sum(service_s / (t * scale) for t in typical_cycles(scenario))
        out += service_s / (1 - rho) if rho < 1 else math.inf
    return out


def check_pace(
    scenario: Scenario,
    scale: float,
    gradient_s: float,
    cores: int | None,
    overhead: Callable[[float], float] | None = None,
) -> float:
    """The cores the workers' gradients keep busy at time scale *scale*: each worker computes
    one gradient of *gradient_s* real seconds (measured here) per typical compute time
    × *scale*. Refused when that exceeds the machine's *cores* (the workers could not keep
    the drawn times), or when the real seconds *overhead(scale)* each iteration costs
    beyond the scenario's times (messages, service: :func:`overhead_estimate`) would lose
    more than :data:`.pacecheck.PACE_SHORTFALL` of the updates; the scale the refusal names
    passes both. Returns the demand (cores)."""
    cores = cores or os.cpu_count() or 1
    cycles = typical_cycles(scenario)

    def demand(s: float) -> float:
        return sum(wc.count * gradient_s / (wc.compute.typical() * s) for wc in scenario.workers)

    def lost(s: float) -> float:
        o = overhead(s) if overhead is not None else 0.0
        return shortfall(cycles, o, s) if math.isfinite(o) else 1.0

    if demand(scale) <= cores and lost(scale) <= PACE_SHORTFALL:
        return demand(scale)
    lo, hi = scale, scale * 2
    while demand(hi) > cores / 2 or lost(hi) > PACE_SHORTFALL:
        lo, hi = hi, hi * 2
    for _ in range(60):  # the smallest scale passing both (each falls as the scale grows)
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if demand(mid) > cores / 2 or lost(mid) > PACE_SHORTFALL else (lo, mid)
    hint = f"use --time-scale {suggested_scale(hi):.2g} or more"
    if demand(scale) > cores:
        raise ScenarioError(
            "--time-scale",
            f"{scale:g} s per unit is too small for this machine: the {scenario.n_workers} "
            f"workers' gradients ({gradient_s * 1e3:.2g} ms each here) would keep "
            f"{demand(scale):.1f} cores busy, the machine has {cores} ({hint})",
        )
    o = overhead(scale) if overhead is not None else 0.0
    raise ScenarioError(
        "--time-scale",
        f"{scale:g} s per unit is too small for this machine: each iteration's messages and "
        f"the server's service (about {o * 1e3:.2g} ms here) would cost the run "
        f"{lost(scale):.1%} of its updates, at most {PACE_SHORTFALL:.0%} keeps pace ({hint})",
    )
