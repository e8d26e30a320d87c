"""Rules without a parameter server (docs/ALGORITHMS.md §12): exact equivalences with the
PS rules, times worked out by hand, model averaging that keeps the mean, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from conftest import ROOT, base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.rules import RULES
from netsim.sim.engine import simulate
from netsim.sim.server import ParameterServer
from netsim.sim.summary import summarize
from netsim.tuning.race import decide

PEERS = {
    "allreduce": {"lr": 0.1},
    "adpsgd": {"lr": 0.1},
    "partial_allreduce": {"lr": 0.1, "group_size": 2},
    "group_allreduce": {"lr": 0.1},
}
B, L, S = 1e9, 1e-5, 1e6  # star links (bit/s, s), message payload (bytes)


def scenario(workers, until=12.0, network=True, **algorithms):
    raw = base_raw(workers=workers)
    if network:
        raw["network"] = {
            "topology": {
                "builder": "star",
                "args": {
                    "n_hosts": sum(w["count"] for w in workers) + 1,
                    "bandwidth": B,
                    "latency": L,
                },
            },
            "message_bytes": S,
        }
    raw["run"].update(until=until, eval_every_updates=1)
    raw["algorithms"].update({**PEERS, **algorithms})
    return make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))


FOUR = [{"name": "a", "count": 4, "compute": 1.0}]
MIXED = [{"name": "fast", "count": 3, "compute": 1.0}, {"name": "slow", "count": 2, "compute": 2.5}]


def by_version(result) -> dict[int, float]:
    return {v: loss for v, _, loss, _ in result.curve}


def test_allreduce_round_time_is_compute_plus_a_ring():
    # 4 workers, 1 s each; the ring among h1..h4 on the star: 2·3 steps, each two link
    # latencies and a quarter of the model plus the 64-byte header at 1 Gbit/s
    result = simulate(scenario(FOUR), "allreduce")
    step = 2 * L + 8 * (S / 4 + 64) / B
    times = sorted(set(result.records.time))
    assert times == pytest.approx([k * (1 + 6 * step) for k in range(1, len(times) + 1)])
    assert len(times) == 11  # 11 rounds of 1.0896 s fit in 12 s


def test_allreduce_follows_ssgds_models():
    # the same gradients averaged the same way: the loss after every update is SSGD's
    sc = scenario(MIXED, until=30.0)
    ssgd, allreduce = by_version(simulate(sc, "ssgd")), by_version(simulate(sc, "allreduce"))
    common = sorted(set(ssgd) & set(allreduce))
    assert len(common) >= 5 and [ssgd[v] for v in common] == [allreduce[v] for v in common]


def test_without_message_time_allreduce_is_ssgd_bit_for_bit():
    sc = scenario(MIXED, network=False)
    a, b = simulate(sc, "ssgd"), simulate(sc, "allreduce")
    assert a.curve == b.curve and a.records.time == b.records.time
    # within a round, ties in arrival may be recorded in another order: compare as sets
    assert sorted(zip(a.records.version, a.records.worker, a.records.staleness)) == sorted(
        zip(b.records.version, b.records.worker, b.records.staleness)
    )


def test_partial_allreduce_of_everyone_is_allreduce():
    sc = scenario(MIXED, until=30.0, partial_allreduce={"lr": 0.1, "group_size": 5})
    a, b = simulate(sc, "allreduce"), simulate(sc, "partial_allreduce")
    assert a.curve == b.curve and a.records.time == b.records.time
    assert summarize(b)["consensus_distance"]["max"] == 0.0  # one model, always


def test_partial_groups_do_not_wait_for_stragglers():
    # group_size 2: the three fast workers pair up among themselves while the slow compute
    result = simulate(scenario(MIXED, until=30.0), "partial_allreduce")
    fast = sum(w < 3 for w in result.records.worker)
    slow = sum(w >= 3 for w in result.records.worker)
    assert fast > 2 * slow > 0


def test_model_averaging_keeps_the_mean():
    # integer models: every pair average is exact, so the mean of the models is unchanged
    env = simpy.Environment()
    rule = RULES["adpsgd"](0.1, [[0], [1], [2], [3]])
    ps = ParameterServer(env, np.zeros(3), rule, [None] * 4, None, env.event())
    ps.use_replicas()
    rng = np.random.default_rng(0)
    ps.replicas = [rng.integers(-50, 50, size=3).astype(float) * 2**10 for _ in range(4)]
    mean = np.mean(ps.replicas, axis=0)
    for _ in range(10):
        i, j = rng.choice(4, size=2, replace=False)
        ps.average_models((int(i), int(j)))
    assert np.array_equal(np.mean(ps.replicas, axis=0), mean)
    assert ps.version == 0  # averaging is no update


def test_every_peer_rule_runs_and_reports_consensus():
    sc = scenario(MIXED, until=20.0)
    for rule in ("adpsgd", "partial_allreduce", "group_allreduce"):
        result = simulate(sc, rule)
        summary = summarize(result)
        consensus = summary["consensus_distance"]
        assert summary["status"] == "ok" and summary["updates"] > 0, rule
        assert consensus["max"] >= consensus["final"] >= 0
        # one value per evaluation; 0 at the start, when every worker holds w0
        assert len(consensus["per_evaluation"]) == len(result.curve)
        assert consensus["per_evaluation"][0] == 0.0 and consensus["max"] > 0


def test_same_seed_same_run():
    sc = scenario(MIXED)
    for rule in ("adpsgd", "group_allreduce"):
        a, b = simulate(sc, rule), simulate(sc, rule)
        assert a.curve == b.curve and a.records.worker == b.records.worker


@pytest.mark.parametrize(
    "table,key",
    [
        (
            {"partial_allreduce": {"lr": 0.1, "group_size": 1}},
            "algorithms.partial_allreduce.group_size",
        ),
        (
            {"partial_allreduce": {"lr": 0.1, "group_size": 6}},
            "algorithms.partial_allreduce.group_size",
        ),
        ({"allreduce": {"lr": 0.1, "collective": "tree"}}, "algorithms.allreduce.collective"),
        ({"adpsgd": {"lr": 0.1, "momentum": 0.9}}, "algorithms.adpsgd.momentum"),
        ({"group_allreduce": {"lr": 0.1, "groups": [[0, 1]]}}, "algorithms.group_allreduce.groups"),
    ],
)
def test_bad_keys_name_the_key(table, key):
    with pytest.raises(ScenarioError) as err:
        scenario(MIXED, **table)
    assert err.value.key == key


def test_a_topology_whose_hosts_cannot_reach_each_other_is_refused():
    raw = base_raw(workers=[{"name": "a", "count": 4, "compute": 1.0}])
    dc = {"racks": 1, "hosts_per_rack": 3, "spines": 1}
    raw["network"] = {
        "topology": {"builder": "multi_datacenter", "args": {"dcs": [dc, dc], "wan": []}},
        "placement": "spread",
    }
    raw["algorithms"].update(PEERS)
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))
    # every worker reaches the PS host, hence every other worker, or the placement says so
    assert err.value.key == "network.placement" and "has no path to" in str(err.value)


def test_group_allreduce_forms_its_groups_from_a_measurement():
    # two speeds (1 s and 2.5 s): k-means on the measured iteration times finds them
    sc = scenario(MIXED, until=30.0, group_allreduce={"lr": 0.1, "grouping": "kmeans:2"})
    result = simulate(sc, "group_allreduce")
    assert sorted(result.groups) == [[0, 1, 2], [3, 4]]
    assert summarize(result)["grouping"]["k"] == 2


def test_group_allreduce_races_its_groups_and_step():
    # the race (grouping = "auto") of pilot runs of group_allreduce itself
    sc = scenario(MIXED, until=40.0, group_allreduce={"lr": 0.1, "grouping": "auto"})
    result = simulate(sc, "group_allreduce", decide=decide)
    grouping = summarize(result)["grouping"]
    assert grouping["method"] == "race" and result.status == "ok"
    assert sorted(w for g in result.groups for w in g) == [0, 1, 2, 3, 4]
    assert grouping["lr"] > 0 and result.updates > 0


def no_ps(workers, topology, **network):
    raw = base_raw(workers=workers)
    raw["network"] = {"topology": topology, "ps_host": "none", "message_bytes": S, **network}
    raw["run"].update(until=12.0, algorithm="allreduce")
    raw["algorithms"].update(PEERS)
    return make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))


def test_without_a_ps_host_every_host_takes_a_worker():
    # 16 workers fill the k=4 fat-tree's 16 hosts (a PS would need a 17th)
    sc = no_ps([{"name": "a", "count": 16, "compute": 1.0}], "fat_tree_k4")
    assert sc.network.ps_host is None and sc.network.worker_hosts[0] == "h0"
    result = simulate(sc, "allreduce")
    # a ring of h0..h15 in order on the preset's 10 Gbit/s, 1 µs links: a step lasts its
    # longest path (6 links, leaving the pod) and 1/16 of the model plus the header
    step = 6 * 1e-6 + 8 * (S / 16 + 64) / 10e9
    assert sorted(set(result.records.time))[0] == pytest.approx(1 + 30 * step, rel=1e-9)


def test_a_rule_with_a_ps_is_refused_without_one():
    sc = no_ps(FOUR, {"builder": "star", "args": {"n_hosts": 4}})
    with pytest.raises(ScenarioError) as err:
        simulate(sc, "ssgd")
    assert err.value.key == "run.algorithm" and "needs a parameter server" in str(err.value)


def test_a_worker_cut_off_from_the_others_stalls_what_needs_it():
    # h1 (worker 0) loses its link at t = 2: an all-reduce can never include it again,
    # while pairs of the other workers go on under partial_allreduce
    cut = [{"time": 2.0, "kind": "link", "link": ["h1", "s0"], "bandwidth": 0.0}]
    raw = base_raw(workers=MIXED)
    raw["network"] = {
        "topology": {"builder": "star", "args": {"n_hosts": 6, "bandwidth": B, "latency": L}},
        "message_bytes": S,
    }
    raw["run"]["until"] = 40.0
    raw["events"] = cut
    raw["algorithms"].update(PEERS)
    sc = make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))
    result = simulate(sc, "allreduce")
    assert result.status == "stalled"
    # at t = 2 the round still waits for the slow workers' gradients (due at 2.5); once
    # they are in, the all-reduce needs worker 0: stalled then
    assert result.extra["stalled_at"] == {"sim_time": 2.5, "waiting_for": [0]}
    assert "worker 0 cut off from the other workers" in result.message
    assert simulate(sc, "partial_allreduce").status == "ok"


def test_messages_that_cannot_arrive_stall_every_peer_rule_at_once():
    raw = base_raw(workers=MIXED)
    raw["network"] = {
        "topology": {"builder": "star", "args": {"n_hosts": 6}},
        "message_bytes": 1e300,
    }
    raw["algorithms"].update(PEERS)
    sc = make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))
    for rule in PEERS:
        result = simulate(sc, rule)
        assert result.status == "stalled" and result.updates == 0, rule
        assert result.extra["stalled_at"] == {"sim_time": 0.0, "waiting_for": [0, 1, 2, 3, 4]}


def test_the_step_used_is_in_the_summary():
    sc = scenario(MIXED, until=20.0)
    assert summarize(simulate(sc, "adpsgd"))["step"] == {"lr": 0.1, "lr_schedule": "constant"}
    raced = scenario(MIXED, until=40.0, group_allreduce={"lr": 0.1, "grouping": "auto"})
    summary = summarize(simulate(raced, "group_allreduce", decide=decide))
    assert summary["step"]["lr"] == summary["grouping"]["lr"]  # the race's η, adopted
