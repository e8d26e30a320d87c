"""The server's receiving thread (``server.receive_time``, docs/SERVER.md), against closed
forms and a trace worked out by hand.

* ASGD, P workers of constant compute c, a push received in r and served in s (no other
  latency): the receiving and the serving threads are two stations in a row; a worker's
  cycle is c + r + s when nobody queues, and each station passes at most one push per r (per
  s): the long-run rate is min(P / (c + r + s), 1 / r, 1 / s).
* With exponential compute (rate λ), exponential receiving (rate μ) and no serving cost,
  the receiving thread is the closed M/M/1//N queue: a push's time at the server (its
  wait for the thread and its receiving) averages W_q + 1/μ.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import base_raw, make_scenario
from queueing import batch_se, machine_repairman

from netsim.errors import ScenarioError
from netsim.sim.engine import Simulation, simulate


def _raw(workers, server, until=100.0, **run):
    raw = base_raw(workers=workers)
    raw["run"].update({"algorithm": "asgd", "until": until, **run})
    raw["server"] = server
    return raw


@pytest.mark.parametrize(
    "P, c, r, s",
    [
        (4, 1.0, 0.5, 0.0),  # receiving sets the pace: 1 / 0.5
        (4, 1.0, 0.2, 0.0),  # the workers: 4 / 1.2
        (4, 1.0, 0.2, 0.3),  # serving: 1 / 0.3 against 4 / 1.5 = 2.67: the workers
        (6, 0.5, 0.3, 0.2),  # receiving: 1 / 0.3 against 6 / 1.0 and 5
    ],
)
def test_asgd_rate_is_min_of_workers_and_both_threads(P, c, r, s):
    until = 1000.0
    server = {"receive_time": r, "apply_time": s}
    result = simulate(make_scenario(_raw([{"name": "w", "count": P, "compute": c}], server, until)))
    want = min(P / (c + r + s), 1.0 / r, 1.0 / s if s else math.inf)
    assert result.updates / until == pytest.approx(want, rel=0.01)
    got = result.extra["server"]
    assert got["receive_busy_pct"] == pytest.approx(100.0 * want * r, rel=0.01)
    assert got["busy_pct"] == pytest.approx(100.0 * want * s, rel=0.01, abs=1e-9)


def test_trace_two_workers_one_receiving_thread():
    """2 workers of compute 1, receive 1, no serving cost: both push at 1; w0 is received
    [1, 2] (update at 2, its reply at once), w1 waits 1 and is received [2, 3]; w0 pushes
    again at 3 and is received [3, 4], w1 at 4, [4, 5]: updates at 2, 3, 4, 5, a push's
    time at the server 1, 2, 1, 1."""
    raw = _raw([{"name": "w", "count": 2, "compute": 1.0}], {"receive_time": 1.0}, until=5.5)
    rec = simulate(make_scenario(raw)).records
    assert rec.time == pytest.approx([2.0, 3.0, 4.0, 5.0])
    assert rec.worker == [0, 1, 0, 1]
    assert rec.server_wait == pytest.approx([1.0, 2.0, 1.0, 1.0])
    assert rec.server_service == pytest.approx([0.0] * 4)


def test_exponential_receiving_matches_machine_repairman():
    n, mean_compute, mean_receive = 4, 2.0, 0.5
    until = 12000.0
    raw = _raw(
        [{"name": "w", "count": n, "compute": {"dist": "exponential", "mean": mean_compute}}],
        {"receive_time": mean_receive, "service": "exponential"},
        until=until,
        seed=5,
    )
    result = simulate(make_scenario(raw))
    at_server = np.array(result.records.server_wait)[500:]
    throughput, wq = machine_repairman(n, 1.0 / mean_compute, 1.0 / mean_receive)
    se = batch_se(at_server)
    assert abs(at_server.mean() - (wq + mean_receive)) < 4 * se
    assert result.updates / until == pytest.approx(throughput, rel=0.03)
    mean_wait = result.extra["server"]["mean_receive_wait"]
    assert mean_wait == pytest.approx(wq, rel=0.05)


def test_a_push_that_outlasts_the_run_is_refused():
    """digits logistic: d = 64 float64 values, 512 bytes; 0.1 × 512 = 51.2 > until = 10."""
    sc = make_scenario(_raw(base_raw()["workers"], {"receive_time_per_byte": 0.1}, until=10.0))
    with pytest.raises(ScenarioError) as info:
        Simulation(sc)
    assert info.value.key == "server.receive_time_per_byte"
    assert "512 bytes = 51.2" in info.value.message


def test_report_shows_the_receiving_thread():
    """The trace above: the receiving thread busy [1, 5] and from 5 (w0's third push) to the
    end at 5.5: 4.5 of 5.5; the 4 pushes received waited 0, 1, 0, 0."""
    from netsim.results.report import server_rows
    from netsim.results.runfolder import from_result

    raw = _raw([{"name": "w", "count": 2, "compute": 1.0}], {"receive_time": 1.0}, until=5.5)
    header, rows = server_rows([from_result(simulate(make_scenario(raw)))])
    assert header[-2:] == ["receiving busy %", "receive wait"]
    assert rows[0][-2:] == [f"{100 * 4.5 / 5.5:.1f}", "0.25"]
