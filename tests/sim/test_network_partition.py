"""A cut link (bandwidth 0) or one so slow that no transfer across it ends within the run is
a partition: a rule that needs a worker behind it ends ``stalled``; one that does not goes on.
Times worked out by hand on a 3-host star (PS on h0), 1 Gbit/s, no latency, 1 MB messages."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT, base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.net.flows import FlowNetwork
from netsim.net.topology import star
from netsim.sim.engine import simulate
from netsim.tuning.advise import advise

X = 8 * (1e6 + 64) / 1e9  # one message alone on a 1 Gbit/s link (s), 64 B header
ROUND = 1 + 4 * X  # SSGD: 2 pulls share the PS link (2X), 1 s compute, 2 pushes share it (2X)


def scenario(events=(), until=6.0, **network):
    raw = base_raw(workers=[{"name": "a", "count": 2, "compute": 1.0}])
    raw["network"] = {
        "topology": {"builder": "star", "args": {"n_hosts": 3, "bandwidth": 1e9, "latency": 0.0}},
        "message_bytes": 1e6,
        **network,
    }
    raw["run"]["until"] = until
    raw["events"] = list(events)
    return make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))


def updates(result) -> list[float]:
    """The times of the updates (s); a round's gradients share one."""
    return sorted(set(result.records.time))


def cut(time, bandwidth=0.0, link=("h1", "s0")):
    return {"time": time, "kind": "link", "link": list(link), "bandwidth": bandwidth}


def test_ssgd_stalls_when_a_workers_link_is_cut():
    result = simulate(scenario([cut(3.0)]), "ssgd")
    assert updates(result) == pytest.approx([ROUND, 2 * ROUND])
    assert result.status == "stalled"
    assert result.extra["stalled_at"] == {"sim_time": 3.0, "waiting_for": [0]}
    assert "worker 0 cut off from the parameter server" in result.message
    assert "(a link on worker 0's push path is cut)" in result.message


def test_a_cut_link_that_comes_back_resumes_the_transfer():
    # round 3: computation ends at 2·ROUND + 2X + 1; worker 1's push alone on the PS link
    # takes X, worker 0's waits for the link (back at t = 4) and then takes X.
    result = simulate(scenario([cut(3.0), cut(4.0, 1e9)]), "ssgd")
    third = 4.0 + X
    assert result.status == "ok"
    assert updates(result) == pytest.approx([ROUND, 2 * ROUND, third, third + ROUND])


def test_near_partition_is_a_stall():
    # 1e-300 bit/s from t = 0: the first pull takes 8e306 s, longer than the whole run
    result = simulate(scenario([cut(0.0, 1e-300)], until=30.0), "ssgd")
    assert result.status == "stalled" and updates(result) == []
    assert result.extra["stalled_at"]["sim_time"] == 0.0
    assert "worker 0's push takes at least 8e+306 s alone on the network" in result.message


def test_huge_messages_stall_every_rule():
    for rule in ("asgd", "ssgd", "gsgd"):
        result = simulate(scenario(message_bytes=1e300), rule)
        assert result.status == "stalled", rule
        assert result.extra["stalled_at"]["waiting_for"] == [0, 1]


def test_asgd_goes_on_without_the_cut_worker():
    # worker 1 alone from t = 3: each iteration is a pull and a push of X each, 1 s compute
    result = simulate(scenario([cut(3.0)]), "asgd")
    assert result.status == "ok"
    late = [w for w, t in zip(result.records.worker, result.records.time) if t > 3.0 + 2 * X]
    assert late and set(late) == {1}


def test_no_stall_while_a_link_event_is_still_to_come():
    # the cut at t = 3 is undone at t = 5.5: the run waits, as the network may come back
    result = simulate(scenario([cut(3.0), cut(5.5, 1e9)]), "ssgd")
    assert result.status == "ok"
    assert updates(result)[-1] == pytest.approx(5.5 + X)


def test_zero_bandwidth_is_accepted_and_negative_refused():
    assert scenario([cut(1.0)]).events[0].bandwidth == 0.0
    with pytest.raises(ScenarioError) as err:
        scenario([cut(1.0, -1.0)])
    assert err.value.key == "events[0].bandwidth"


def test_flow_network_on_a_cut_link():
    import simpy

    env = simpy.Environment()
    net = FlowNetwork(env, star(2, bandwidth=0.0, latency=0.0))
    assert net.min_transfer_time("h0", "h1", 1000) == math.inf
    assert net.min_transfer_time("h0", "h1", 0) == 0.0
    done = net.transfer("h0", "h1", 1000)
    env.run(until=10.0)
    assert not done.triggered
    net.set_link("h1", "s0", bandwidth=8e3)
    net.set_link("h0", "s0", bandwidth=8e3)
    env.run(until=20.0)
    assert done.value.end == pytest.approx(11.0)  # 8000 bits at 8 kbit/s from t = 10
    assert [u for _, _, u in net.link_utilisation()] == pytest.approx(
        [8000 / (8e3 * 20.0)] * 2 + [0.0] * 2
    )


def test_a_run_leaves_the_scenarios_topology_as_it_was():
    # link events change the run's own copy of the graph: a second run of the same
    # scenario object (compare, sweeps, the race's pilots) starts from the same network
    sc = scenario([cut(3.0, 1e8)])
    first, second = simulate(sc, "asgd"), simulate(sc, "asgd")
    assert first.records.time == second.records.time
    assert first.records.time[0] == pytest.approx(ROUND)  # both pull, compute, push together


def grouped(bandwidth=1e9, message_bytes=1e6):
    raw = base_raw(
        workers=[
            {"name": "a", "count": 2, "compute": 1.0},
            {"name": "b", "count": 2, "compute": 3.0},
        ]
    )
    raw["network"] = {
        "topology": {
            "builder": "star",
            "args": {"n_hosts": 5, "bandwidth": bandwidth, "latency": 0.0},
        },
        "message_bytes": message_bytes,
    }
    raw["algorithms"]["gsgd"]["grouping"] = "kmeans:2"
    return make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))


@pytest.mark.parametrize("bandwidth,message_bytes", [(0.0, 1e6), (1e9, 1e300)])
def test_a_grouping_that_cannot_be_measured_is_a_stall(bandwidth, message_bytes):
    sc = grouped(bandwidth, message_bytes)
    result = simulate(sc, "gsgd")
    assert result.status == "stalled" and result.updates == 0
    assert result.extra["stalled_at"] == {"sim_time": 0.0, "waiting_for": [0, 1, 2, 3]}
    assert "the grouping measurement cannot end" in result.message
    with pytest.raises(ScenarioError) as err:  # netsim group: nothing to recommend from
        advise(sc)
    assert err.value.key == "network" and "cut off from the parameter server" in str(err.value)


@pytest.mark.parametrize("until", [40.0, 50.0, 60.0])
def test_a_measurement_that_outlasts_the_run_is_a_stall(until):
    """Five probe rounds of a 10 s worker take 5 x 10 = 50 s (no network): with run.until at
    or below that, training never starts, and the run says so instead of ending ``ok`` with
    no update; with 60 s it trains from 50 s on."""
    raw = base_raw(
        workers=[
            {"name": "a", "count": 2, "compute": 1.0},
            {"name": "b", "count": 2, "compute": 10.0},
        ]
    )
    raw["run"].update(algorithm="gsgd", until=until)
    raw["algorithms"]["gsgd"].update(grouping="kmeans:2", probe_rounds=5)
    result = simulate(make_scenario(raw, str(ROOT / "scenarios" / "x.toml")), "gsgd")
    if until <= 50.0:
        assert result.status == "stalled" and result.updates == 0
        assert result.extra["stalled_at"] == {"sim_time": 0.0, "waiting_for": [2, 3]}
        assert "takes 50 s, not less than run.until" in result.message
        assert "algorithms.gsgd.probe_rounds" in result.message
    else:
        assert result.status == "ok" and min(result.records.time) > 50.0
