"""Helpers for the hand-traced rule tests: tiny constant-time scenarios and their traces."""

from __future__ import annotations

from conftest import base_raw, make_scenario

from netsim.sim.engine import simulate

__all__ = ["workers", "scenario", "run", "trace", "drops"]


def workers(*times, latency: float = 0.0) -> list[dict]:
    """One worker class per entry: a constant time (s) or a replay list of times."""
    out = []
    for i, t in enumerate(times):
        compute = {"dist": "replay", "times": list(t)} if isinstance(t, (list, tuple)) else t
        out.append({"name": f"w{i}", "count": 1, "compute": compute, "latency": latency})
    return out


def scenario(worker_list: list[dict], algorithms: dict, until: float, **run):
    """A digits scenario (batch 8) with the given workers and ``[algorithms]``."""
    raw = base_raw(workers=worker_list, algorithms=algorithms)
    raw["run"].update(algorithm=next(iter(algorithms)), until=until, **run)
    return make_scenario(raw)


def run(worker_list: list[dict], algorithm: str, until: float, lr: float = 0.1, **params):
    return simulate(scenario(worker_list, {algorithm: {"lr": lr, **params}}, until))


def trace(result) -> list[tuple]:
    """Applied gradients as (time, worker, staleness, version), times rounded to 1e-9 s."""
    rec = result.records
    return [
        (round(t, 9), w, s, v)
        for t, w, s, v in zip(rec.time, rec.worker, rec.staleness, rec.version)
    ]


def drops(result) -> list[tuple]:
    """Dropped gradients as (time, worker, version read)."""
    rec = result.records
    return [
        (round(t, 9), w, v) for t, w, v in zip(rec.drop_time, rec.drop_worker, rec.drop_version)
    ]
