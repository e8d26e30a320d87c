"""A server that takes time (``[server]``, docs/SERVER.md), against closed forms and traces
worked out by hand.

* ASGD, P workers of constant compute c, constant service s per update, no latency: each
  worker's cycle is c + s when nobody queues (it waits for its own reply), P·s when the
  server is the bottleneck; the long-run rate is min(P / (c + s), 1 / s).
* ASGD with exponential compute (rate λ) and exponential service (rate μ) is the closed
  M/M/1//N queue ("machine repairman"): p_k ∝ N!/(N−k)! (λ/μ)^k, throughput μ(1 − p_0),
  mean wait in queue W_q = L_q / throughput (Little), L_q = Σ (k − 1) p_k.
* SSGD with 3 members: 3 intakes + 1 apply + the sends, traced by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import base_raw, make_scenario
from queueing import batch_se, machine_repairman

from netsim.errors import ScenarioError
from netsim.results.runfolder import SERVER_UPDATES, UPDATES, read_run, write_run
from netsim.sim.engine import Simulation, simulate
from netsim.workload.servertime import send_offsets


def _raw(workers, server, algorithm="asgd", until=100.0, **run):
    raw = base_raw(workers=workers)
    raw["run"].update({"algorithm": algorithm, "until": until, **run})
    if server is not None:
        raw["server"] = server
    return raw


def _run(raw):
    return simulate(make_scenario(raw))


# -- ASGD's long-run rate ---------------------------------------------------------------
@pytest.mark.parametrize(
    "P, c, s",
    [
        (4, 1.0, 0.1),  # the workers set the pace: 4 / 1.1 updates per unit, server 36 % busy
        (4, 1.0, 0.5),  # the server does: 1 / 0.5, busy all the time
        (8, 3.0, 0.25),  # 8 / 3.25 = 2.46 against 4: the workers again
        (6, 0.5, 0.2),  # 6 / 0.7 = 8.6 against 5: the server
    ],
)
def test_asgd_rate_is_min_of_workers_and_server(P, c, s):
    until = 1000.0
    result = _run(_raw([{"name": "w", "count": P, "compute": c}], {"apply_time": s}, until=until))
    want = min(P / (c + s), 1.0 / s)
    assert result.updates / until == pytest.approx(want, rel=0.01)
    busy = result.extra["server"]["busy_pct"]
    assert busy == pytest.approx(100.0 * want * s, rel=0.01)


def test_per_param_costs_scale_with_the_model():
    """gradient_time_per_param and apply_time_per_param cost × d (digits logistic: d = 64);
    saturated, the rate is 1 / (d · (g + a))."""
    g, a = 0.001, 0.002
    until = 500.0
    result = _run(
        _raw(
            [{"name": "w", "count": 8, "compute": 0.1}],
            {"gradient_time_per_param": g, "apply_time_per_param": a},
            until=until,
        )
    )
    d = result.final_w.size
    assert d == 64
    assert result.updates / until == pytest.approx(1.0 / (d * (g + a)), rel=0.01)


# -- averaging a round's gradients ---------------------------------------------------------
def test_ssgd_pays_the_average_of_its_round_when_it_closes():
    """The SSGD trace below with 0.1 per gradient averaged: the round closes at 1.5 (update
    1), averaging 3 × 0.1 and the apply take it to 2.3, messages out at 2.5, 2.5, 2.7, pushes
    at 3.5, 3.5, 3.7, intakes to 3.8 (update 2): a period of 2.3 against 2.0 without."""
    raw = _raw(
        [{"name": "w", "count": 3, "compute": 1.0}],
        {
            "gradient_time": 0.1,
            "average_time": 0.1,
            "apply_time": 0.5,
            "send_time": 0.2,
            "parallel_sends": 2,
        },
        algorithm="ssgd",
        until=10.0,
    )
    rec = _run(raw).records
    assert np.allclose(rec.time, np.repeat([1.5, 3.8, 6.1, 8.4], 3))
    assert np.allclose(rec.server_service, 0.1 + 0.3 + 0.5)


def test_asgd_averages_nothing():
    """One gradient per update: an average_time changes nothing under ASGD."""
    workers = [{"name": "w", "count": 4, "compute": 1.0}]
    base = _run(_raw(workers, {"apply_time": 0.2}, until=50.0)).records
    more = _run(_raw(workers, {"apply_time": 0.2, "average_time": 0.5}, until=50.0)).records
    assert base.time == more.time


# -- copies of the model for the evaluations ----------------------------------------------
def test_copies_for_evaluations_take_their_share_of_a_saturated_server():
    """6 workers of compute 0.5, apply 0.2: the server sets the pace (1 / 0.2 = 5 updates a
    unit). A copy of 0.1 at every evaluation (each unit) takes 10 % of its time: 4.5 a unit."""
    until = 1000.0
    raw = _raw(
        [{"name": "w", "count": 6, "compute": 0.5}],
        {"apply_time": 0.2, "snapshot_time": 0.1},
        until=until,
        eval_every=1.0,
    )
    result = _run(raw)
    assert result.updates / until == pytest.approx(0.9 / 0.2, rel=0.01)
    assert until - 1 <= result.extra["server"]["snapshots"] <= until
    assert result.extra["server"]["busy_pct"] == pytest.approx(100.0, abs=0.5)


def test_a_push_waits_behind_a_copy_in_progress():
    """1 worker of compute 1, apply 0.5, a copy of 0.25 every 0.8 (at 0.8, 1.6, 2.4, ...).
    Its push at 1.0 waits for the copy of 0.8-1.05: update at 1.05, apply to 1.55, next
    push at 2.55 behind the copy of 2.4-2.65: update at 2.65; then every 1.6 (4.25, 5.85),
    each push behind the copy started 0.15 before it."""
    raw = _raw(
        [{"name": "w", "count": 1, "compute": 1.0}],
        {"apply_time": 0.5, "snapshot_time": 0.25},
        until=6.0,
        eval_every=0.8,
    )
    rec = _run(raw).records
    assert np.allclose(rec.time, [1.05, 2.65, 4.25, 5.85])
    assert np.allclose(rec.server_wait, [0.05, 0.1, 0.1, 0.1])


def test_a_copy_goes_ahead_of_the_pushes_waiting():
    """2 workers of compute 1, apply 0.5, a copy of 0.1 every 1.2. Both push at 1.0: one is
    served 1.0-1.5; the copy due at 1.2 goes ahead of the other push (1.5-1.6), which is
    served at 1.6 (a first-come queue would serve it at 1.5)."""
    raw = _raw(
        [{"name": "w", "count": 2, "compute": 1.0}],
        {"apply_time": 0.5, "snapshot_time": 0.1},
        until=2.0,
        eval_every=1.2,
    )
    rec = _run(raw).records
    assert np.allclose(rec.time, [1.0, 1.6])
    assert np.allclose(sorted(rec.server_wait), [0.0, 0.6])


# -- M/M/1//N ------------------------------------------------------------------------------
@pytest.mark.parametrize("n, mean_compute, mean_service", [(5, 2.0, 0.5), (3, 1.0, 0.5)])
def test_exponential_service_matches_machine_repairman(n, mean_compute, mean_service):
    """N workers of exponential compute, exponential service, ASGD: the queue wait of each
    push (updates.csv's server_wait) averages W_q of M/M/1//N within 4 standard errors."""
    until = 12000.0
    raw = _raw(
        [{"name": "w", "count": n, "compute": {"dist": "exponential", "mean": mean_compute}}],
        {"apply_time": mean_service, "service": "exponential"},
        until=until,
        seed=11,
    )
    result = _run(raw)
    waits = np.array(result.records.server_wait)[500:]  # past the start
    throughput, wq = machine_repairman(n, 1.0 / mean_compute, 1.0 / mean_service)
    se = batch_se(waits)
    assert abs(waits.mean() - wq) < 4 * se, (waits.mean(), wq, se)
    assert result.updates / until == pytest.approx(throughput, rel=0.03)
    server = result.extra["server"]  # Little's law on the run itself: L_q = throughput · W_q
    rate = server["pushes_served"] / until
    assert server["mean_queue"] == pytest.approx(rate * server["mean_wait"], rel=0.01)


# -- hand traces ------------------------------------------------------------------------
def test_ssgd_trace_three_intakes_one_apply_and_parallel_sends():
    """3 workers of compute 1, SSGD, intake 0.1 per gradient, apply 0.5, sends of 0.2 two at
    a time. t = 0: the initial models, w0 and w1 out at 0.2, w2 at 0.4. They push at 1.2,
    1.2, 1.4: intakes [1.2, 1.3], [1.3, 1.4] (w1 waited 0.1), [1.4, 1.5]; the round closes
    at 1.5 (update 1), apply to 2.0, messages out at 2.2, 2.2, 2.4: the same again 2 later.
    Updates at 1.5, 3.5, 5.5, 7.5, 9.5; each period of 2 the server is busy 0.3 + 0.5 + 0.4."""
    raw = _raw(
        [{"name": "w", "count": 3, "compute": 1.0}],
        {"gradient_time": 0.1, "apply_time": 0.5, "send_time": 0.2, "parallel_sends": 2},
        algorithm="ssgd",
        until=10.0,
    )
    result = _run(raw)
    rec = result.records
    assert result.updates == 5
    assert np.allclose(rec.time, np.repeat([1.5, 3.5, 5.5, 7.5, 9.5], 3))
    assert np.allclose(rec.server_wait, 0.0)  # w2's push made each update: it did not wait
    assert np.allclose(rec.server_service, 0.6)  # its intake + the apply
    server = result.extra["server"]
    # a push counts once served: w0, w1, w2 of rounds 1-4 and w0, w1 of round 5 (w2's sends
    # end after until); services 0.1, 0.1, 0.1 + 0.5 + 0.4, waits 0, 0.1, 0
    assert server["pushes_served"] == 14
    assert server["mean_wait"] == pytest.approx(0.5 / 14)
    assert server["mean_service"] == pytest.approx((10 * 0.1 + 4 * 1.0) / 14)
    # the 5th round's sends (9.5 + 0.5 + 0.2, 0.4) end after until = 10: its w2 is cut there
    busy = 0.4 + 4 * 1.2 + (10.0 - 9.2)
    assert server["busy_pct"] == pytest.approx(10.0 * busy)
    assert server["sends"] == 3 + 4 * 3


def test_asgd_trace_queue_wait_and_timeline_row(tmp_path):
    """2 workers of compute 1, ASGD, apply 1: both push at 1; w0 served [1, 2] (update at
    1, its reply at 2), w1 waits 1, served [2, 3]; w0 pushes again at 3, w1 at 4: the
    server never idles from 1 on. The timeline has a server row of busy spans."""
    raw = _raw(
        [{"name": "w", "count": 2, "compute": 1.0}],
        {"apply_time": 1.0},
        until=6.0,
        timeline_until=-1.0,
    )
    result = _run(raw)
    rec = result.records
    assert rec.time == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0])
    assert rec.worker == [0, 1, 0, 1, 0]
    assert rec.server_wait == pytest.approx([0.0, 1.0, 0.0, 0.0, 0.0])
    assert rec.server_service == pytest.approx([1.0] * 5)
    busy = [(a, b) for w, p, a, b in rec.spans if w == -1]
    assert busy == [(1.0, 6.0)]
    write_run(result, tmp_path / "run")
    header = (tmp_path / "run" / "updates.csv").read_text().splitlines()[0]
    assert header == ",".join(SERVER_UPDATES)
    run = read_run(tmp_path / "run")
    assert run.updates["server_wait"].tolist() == pytest.approx([0.0, 1.0, 0.0, 0.0, 0.0])
    assert -1 in run.timeline["worker"].tolist()


def test_timer_waits_for_a_busy_server():
    """A round timer that fires while the server is busy runs when the server is free.
    SSGD, round_timeout 1.5, workers of compute 1 and 10, intake 0.8, apply 1: w0's push
    arrives at 1 and is taken in until 1.8; the timer fires at 1.5 and waits behind it (FIFO):
    at 1.8 the rule holds w0's gradient, then the timer closes the round with it alone."""
    raw = _raw(
        [
            {"name": "fast", "count": 1, "compute": 1.0},
            {"name": "slow", "count": 1, "compute": 10.0},
        ],
        {"apply_time": 1.0, "gradient_time": 0.8},
        algorithm="ssgd",
        until=3.0,
    )
    raw["algorithms"]["ssgd"]["round_timeout"] = 1.5
    result = _run(raw)
    assert result.records.time == pytest.approx([1.8])
    assert result.records.server_wait == pytest.approx([0.3])  # the timer's wait, 1.5 to 1.8


# -- unit pieces --------------------------------------------------------------------------
def test_send_offsets_share_the_link():
    """Two slots; each message works 1 then sends 8 bits on 4 bit/s shared: m0, m1 work to
    1, share 2 bit/s each to 5; m2 works 5-6, alone at 4 bit/s: out at 8."""
    assert send_offsets([1.0, 1.0, 1.0], 8.0, 2, 4.0) == pytest.approx([5.0, 5.0, 8.0])
    assert send_offsets([0.5, 0.2, 0.1], 0.0, 1, 0.0) == pytest.approx([0.5, 0.7, 0.8])
    assert send_offsets([0.5, 0.2, 0.1], 0.0, 2, 0.0) == pytest.approx([0.5, 0.2, 0.3])


def test_bandwidth_without_network_delays_the_replies():
    """ASGD, one worker of compute 1, model of 64 float64 values (512 bytes = 4096 bits) on a
    server link of 4096 bit/s: every model message takes 1 (the first too), so the worker
    starts at 1 and pushes every 2."""
    result = _run(
        _raw([{"name": "w", "count": 1, "compute": 1.0}], {"bandwidth": 4096.0}, until=10.5)
    )
    assert result.records.time == pytest.approx([2.0, 4.0, 6.0, 8.0, 10.0])


# -- nothing changes without it ---------------------------------------------------------
def test_absent_or_zero_table_changes_nothing(tmp_path):
    zero = {
        "apply_time": 0.0,
        "gradient_time": 0.0,
        "send_time": 0.0,
        "parallel_sends": 3,
        "service": "exponential",
    }
    a = _run(_raw(base_raw()["workers"], None, until=20.0))
    b = _run(_raw(base_raw()["workers"], zero, until=20.0))
    assert a.records.time == b.records.time and a.records.worker == b.records.worker
    assert "server" not in a.extra and "server" not in b.extra
    assert b.records.server_wait is None
    write_run(b, tmp_path / "b")
    header = (tmp_path / "b" / "updates.csv").read_text().splitlines()[0]
    assert header == ",".join(UPDATES)


def test_lean_workers_step_aside():
    sc = make_scenario(_raw(base_raw()["workers"], {"apply_time": 0.1}))
    assert "server" in Simulation(sc).general_reason
    assert Simulation(make_scenario(_raw(base_raw()["workers"], None))).general_reason == ""


def test_rule_without_a_server_ignores_the_table():
    raw = _raw(base_raw()["workers"], {"apply_time": 0.1}, algorithm="allreduce", until=20.0)
    raw["algorithms"]["allreduce"] = {"lr": 0.1}
    with_table = _run(raw)
    del raw["server"]
    without = _run(raw)
    assert with_table.records.time == without.records.time
    assert "server" not in with_table.extra


# -- bad input ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "server, key, text",
    [
        ({"apply_time": -1.0}, "server.apply_time", ">= 0"),
        ({"send_time": math.inf}, "server.send_time", "finite"),
        ({"gradient_time": math.nan}, "server.gradient_time", ""),
        ({"parallel_sends": 0}, "server.parallel_sends", ">= 1"),
        ({"parallel_sends": 1.5}, "server.parallel_sends", "int"),
        ({"service": "poisson"}, "server.service", "constant, exponential"),
        ({"aply_time": 1.0}, "server.aply_time", "did you mean server.apply_time"),
        ({"receive_time": -1.0}, "server.receive_time", ">= 0"),
        ({"receive_time_per_byte": math.inf}, "server.receive_time_per_byte", "finite"),
        ({"receive_time": math.nan}, "server.receive_time", ""),
        ({"snapshot_time": -1.0}, "server.snapshot_time", ">= 0"),
        ({"average_time": -0.1}, "server.average_time", ">= 0"),
        ({"average_time_per_param": math.nan}, "server.average_time_per_param", ""),
        ({"snapshot_time_per_param": math.inf}, "server.snapshot_time_per_param", "finite"),
    ],
)
def test_bad_tables_are_refused(server, key, text):
    with pytest.raises(ScenarioError) as info:
        make_scenario(_raw(base_raw()["workers"], server))
    assert info.value.key == key
    assert text in info.value.message


def test_bandwidth_with_a_network_is_refused():
    raw = _raw(base_raw()["workers"], {"bandwidth": 1e9})
    raw["network"] = {"topology": {"builder": "star", "args": {"n_hosts": 4}}}
    with pytest.raises(ScenarioError) as info:
        make_scenario(raw)
    assert info.value.key == "server.bandwidth" and "[network]" in info.value.message


def test_an_update_longer_than_the_run_is_refused():
    """digits logistic: d = 64; 1 × 64 + 0.5 = 64.5 time units > until = 10."""
    sc = make_scenario(
        _raw(base_raw()["workers"], {"apply_time_per_param": 1.0, "apply_time": 0.5}, until=10.0)
    )
    with pytest.raises(ScenarioError) as info:
        Simulation(sc)
    assert info.value.key == "server.apply_time_per_param"
    assert "64 parameters = 64.5" in info.value.message and "run.until = 10" in info.value.message


@pytest.mark.parametrize(
    "table, key, text",
    [
        ("apply_time = -0.5", "server.apply_time", ">= 0"),
        ("send_time = inf", "server.send_time", "finite"),
        ("parallel_sends = 0", "server.parallel_sends", ">= 1"),
        ('service = "poisson"', "server.service", "constant, exponential"),
        ("aply_time = 1.0", "server.aply_time", "did you mean server.apply_time"),
        ("apply_time_per_param = 1.0", "server.apply_time_per_param", "64 parameters = 64"),
        # digits logistic: 64 float64 values, 512 bytes a push: 0.1 × 512 = 51.2 > 10
        ("receive_time_per_byte = 0.1", "server.receive_time_per_byte", "512 bytes = 51.2"),
        ("receive_time = 11.0", "server.receive_time", "receive_time = 11 time units"),
        # a copy as long as the time between two evaluations (run.eval_every = 2)
        ("snapshot_time = 2.0", "server.snapshot_time", "run.eval_every = 2"),
        ("snapshot_time_per_param = 0.5", "server.snapshot_time_per_param", "64 parameters = 32"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run", "compare", "sweep"])
def test_cli_refuses_in_one_line_and_writes_nothing(tmp_path, table, key, text, command):
    from typer.testing import CliRunner

    from netsim.cli import app

    path = tmp_path / "bad.toml"
    path.write_text(
        '[run]\nalgorithm = "asgd"\nuntil = 10.0\neval_every = 2.0\n[data]\nsource = "digits"\nlabels = "odd_even"\n'
        '[[workers]]\nname = "w"\ncount = 2\ncompute = 1.0\n[algorithms.asgd]\nlr = 0.1\n'
        f"[server]\n{table}\n"
    )
    out = tmp_path / "out"
    args = [command, str(path)]
    args += {"validate": [], "sweep": ["--grid", "run.seed=1,2"]}.get(command, ["--no-live"])
    res = CliRunner().invoke(app, args + ([] if command == "validate" else ["--out", str(out)]))
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert str(path) in lines[0] and key in lines[0] and text in lines[0]
    assert not out.exists()


def test_a_preempted_worker_waits_for_its_model_message():
    """K-sync with K = 1, workers of compute 1.0 and 1.2, apply 0.5, sends of 0.1 one at a
    time. The initial models are out at 0.1 (w0) and 0.2 (w1): w0 pushes at 1.1, update 1;
    w1 is pre-empted and sent the new model with w0's reply, after the apply: w1 out at
    1.7, w0 at 1.8; w0 pushes at 2.8 before w1 (2.9): update 2 at 2.8, and so on every 1.7.
    (Restarting w1 at once, at 1.1, would have made it push first, at 2.3.)"""
    raw = _raw(
        [{"name": "a", "count": 1, "compute": 1.0}, {"name": "b", "count": 1, "compute": 1.2}],
        {"apply_time": 0.5, "send_time": 0.1},
        algorithm="ksync",
        until=5.0,
    )
    raw["algorithms"]["ksync"] = {"lr": 0.1, "k": 1}
    result = _run(raw)
    assert result.records.time == pytest.approx([1.1, 2.8, 4.5])
    assert result.records.worker == [0, 0, 0]


def test_report_table_of_the_server():
    """The ASGD trace above (2 workers of compute 1, apply 1, until 6): busy from 1 to 6,
    5 of 6 time units; one job waits from 1 to 2 (mean queue 1/6); pushes served [1, 2],
    [2, 3], [3, 4], [4, 5] (the 5th's reply would leave at 6, when the run ends), waits 0,
    1, 0, 0, each service 1; messages: the 2 initial models and 4 replies."""
    from netsim.results.report import server_rows
    from netsim.results.runfolder import from_result

    raw = _raw([{"name": "w", "count": 2, "compute": 1.0}], {"apply_time": 1.0}, until=6.0)
    header, rows = server_rows([from_result(_run(raw))])
    assert header[:2] == ["run", "busy %"]
    assert rows == [["asgd", "83.3", "0.167", "0.25", "1", "4", "6"]]
