"""Chrome/Perfetto trace export: one track per worker whose spans tile the horizon, update instants at the PS."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim import api


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    # ASGD, constant compute times 1.0 (x2) and 2.5, no latency, horizon 10: worker 0 and 1 finish a
    # gradient at t = 1, 2, ..., worker 2 at t = 2.5, 5, 7.5 (and 10 at the horizon).
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 2, "compute": 1.0},
            {"name": "slow", "count": 1, "compute": 2.5},
        ]
    )
    raw["run"].update(until=10.0, algorithm="asgd")
    out = tmp_path_factory.mktemp("trace") / "run"
    api.run(make_scenario(raw), out=out)
    return out


def test_trace_tracks_tile_the_horizon(run_dir):
    path = api.export_trace(run_dir)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = {
        e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert names == {
        0: "parameter server",
        1: "worker 0 (fast)",
        2: "worker 1 (fast)",
        3: "worker 2 (slow)",
    }
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["name"] for e in spans} <= {"compute", "comm", "idle", "down"}
    for tid in (1, 2, 3):
        mine = sorted((e for e in spans if e["tid"] == tid), key=lambda e: e["ts"])
        assert sum(e["dur"] for e in mine) == pytest.approx(10.0 * 1e6, rel=1e-12)
        assert mine[0]["ts"] == 0.0
        for a, b in zip(
            mine, mine[1:]
        ):  # contiguous: each span starts where the previous one ended
            assert b["ts"] == pytest.approx(a["ts"] + a["dur"], abs=1e-6)
        # no latency and ASGD: a worker computes all the time, never idle
        assert sum(e["dur"] for e in mine if e["name"] == "compute") == pytest.approx(10.0 * 1e6)


def test_trace_update_instants(run_dir):
    events = json.loads(api.export_trace(run_dir, run_dir / "t.json").read_text())["traceEvents"]
    updates = [e for e in events if e["ph"] == "i" and e["name"] == "update"]
    assert all(e["tid"] == 0 for e in updates)
    # fast workers at t = 1..9 (two each), slow at 2.5, 5, 7.5 → 9 * 2 + 3 = 21 updates before t = 10
    times = sorted(e["ts"] / 1e6 for e in updates)
    expected = sorted([float(t) for t in range(1, 10)] * 2 + [2.5, 5.0, 7.5])
    assert times[:21] == pytest.approx(expected)
    assert [
        e["args"]["version"] for e in sorted(updates, key=lambda e: e["args"]["version"])
    ] == list(range(1, len(updates) + 1))


def test_mean_band_by_hand():
    from netsim.results.plots import mean_band

    a = (np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]))
    b = (np.array([0.0, 2.0, 4.0]), np.array([3.0, 4.0, 9.0]))
    grid, mean, half = mean_band([a, b])
    assert grid.tolist() == [0.0, 1.0, 2.0]  # up to the shorter curve's end
    # b at x = 1 interpolates to 3.5; means (1+3)/2, (2+3.5)/2, (3+4)/2
    assert mean.tolist() == [2.0, 2.75, 3.5]
    # n = 2: half = t(0.975, 1) * |y1 - y2| / sqrt(2) / sqrt(2) = 12.7062 * |d| / 2
    assert half == pytest.approx(12.7062047 * np.array([2.0, 1.5, 1.0]) / 2, rel=1e-6)
