"""Training over a topology: closed-form round times, exact reduction to the core, bad input."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT, base_raw, make_scenario
from typer.testing import CliRunner

from netsim.cli import app
from netsim.errors import ScenarioError
from netsim.sim.engine import prepare, simulate


def networked(topology, workers, **network):
    raw = base_raw(workers=workers)
    raw["network"] = {"topology": topology, **network}
    return raw


def test_infinite_zero_latency_network_is_the_core_exactly():
    workers = [
        {"name": "a", "count": 2, "compute": {"dist": "exponential", "mean": 1.0}},
        {"name": "b", "count": 1, "compute": {"dist": "exponential", "mean": 3.0}},
    ]
    core = make_scenario(base_raw(workers=workers))
    net = make_scenario(
        networked(
            {"builder": "star", "args": {"n_hosts": 4, "bandwidth": math.inf, "latency": 0.0}},
            workers,
        )
    )
    prep = prepare(core)
    for rule in ("ssgd", "asgd", "gsgd"):
        a, b = simulate(core, rule, prepared=prep), simulate(net, rule, prepared=prep)
        assert a.final_w.tobytes() == b.final_w.tobytes()
        assert (a.records.time, a.records.worker, a.records.staleness) == (
            b.records.time,
            b.records.worker,
            b.records.staleness,
        )


def test_ssgd_round_through_the_ps_link_closed_form():
    # k=4 fat-tree, zero latency, 1 Gbit/s links; PS on h0, 15 workers, 1 s compute.
    # Pull: 15 flows leave h0 on one link → each at B/15 → 15·8·S/B; push: the same into h0.
    # S = 1e6 payload + 64 header bytes. Round = 2·15·8·S/B + 1.
    B, S = 1e9, 1e6 + 64
    raw = networked(
        {"builder": "fat_tree", "args": {"k": 4, "bandwidth": B, "latency": 0.0}},
        [{"name": "w", "count": 15, "compute": 1.0}],
        message_bytes=1e6,
    )
    raw["run"]["until"] = 10.0
    result = simulate(make_scenario(raw), "ssgd")
    round_s = 2 * 15 * 8 * S / B + 1.0
    times = sorted(set(result.records.time))
    assert len(times) == int(10.0 // round_s)
    for i, t in enumerate(times, start=1):
        assert t == pytest.approx(i * round_s, rel=1e-9)
    w = result.workers[0]
    assert w.comm_s == pytest.approx(
        len(times) * 2 * 15 * 8 * S / B + min(10.0 - len(times) * round_s, 15 * 8 * S / B), rel=1e-9
    )


def test_network_summary_reports_links(tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "run",
            str(ROOT / "scenarios" / "fat_tree_ps.toml"),
            "--no-live",
            "--set",
            "run.until=5",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    import json

    summary = json.loads((tmp_path / "summary.json").read_text())
    links = summary["network"]["busiest_links"]
    assert links[0]["utilisation"] >= links[-1]["utilisation"] > 0 or links[-1]["utilisation"] == 0
    assert summary["network"]["ps_host"] == "h0"
    assert all(w["comm_s"] > 0 for w in summary["workers"])


def test_geo_classes_sit_in_their_datacenters():
    from netsim.config.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "geo_gsgd.toml")
    g = sc.network.graph
    dcs = [g.nodes[h]["dc"] for h in sc.network.worker_hosts]
    assert dcs == [1] * 5 + [2] * 5 + [3] * 5
    assert g.nodes[sc.network.ps_host]["dc"] == 0


@pytest.mark.parametrize(
    "network,key",
    [
        ({"topology": "star16", "ps_host": "nosuch"}, "network.ps_host"),
        ({"topology": "nosuch"}, "network.topology"),
        (
            {"topology": {"builder": "star", "args": {"n_hosts": 4, "latency": -1.0}}},
            "network.topology",
        ),
        (
            {"topology": {"builder": "star", "args": {"n_hosts": 4, "bandwidth": -1.0}}},
            "network.topology",
        ),
        ({"topology": {"builder": "torus"}}, "network.topology"),
        ({"topology": "star16", "sharing": "fair"}, "network.sharing"),
        ({"topology": {"builder": "star", "args": {"n_hosts": 2}}}, "network.placement"),
    ],
)
def test_bad_network_names_the_key(network, key):
    raw = base_raw()
    raw["network"] = network
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))
    assert err.value.key == key


def test_disconnected_worker_host(tmp_path):
    (tmp_path / "two.graphml").write_text(
        '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<key id="r" for="node" attr.name="role" attr.type="string"/>'
        '<key id="b" for="edge" attr.name="bandwidth" attr.type="double"/>'
        '<key id="l" for="edge" attr.name="latency" attr.type="double"/>'
        '<graph edgedefault="undirected">'
        '<node id="a"><data key="r">host</data></node><node id="b"><data key="r">host</data></node>'
        '<node id="c"><data key="r">host</data></node><node id="d"><data key="r">host</data></node>'
        '<edge source="a" target="b"><data key="b">1e9</data><data key="l">0.001</data></edge>'
        '<edge source="c" target="d"><data key="b">1e9</data><data key="l">0.001</data></edge>'
        "</graph></graphml>"
    )
    path = tmp_path / "s.toml"
    path.write_text(
        '[run]\nalgorithm = "asgd"\n[[workers]]\ncount = 3\ncompute = 1.0\n'
        '[algorithms.asgd]\nlr = 0.1\n[network]\ntopology = "two.graphml"\n'
    )
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert (
        "\n" not in line
        and "s.toml" in line
        and "network.placement" in line
        and "no path to the PS" in line
    )


def test_topology_show_and_list():
    runner = CliRunner()
    res = runner.invoke(app, ["topology", "show", "fat_tree_k4"])
    assert res.exit_code == 0
    out = " ".join(res.output.split())
    # k=4: 16 hosts, 20 switches, 48 links; 6 hops; 8 hosts × 10 Gbit/s across the middle
    for text in ("hosts │ 16", "switches │ 20", "links │ 48", "(hops) │ 6", "80 Gbit/s"):
        assert text in out
    res = runner.invoke(app, ["topology", "list"])
    assert res.exit_code == 0 and "geo3" in res.output
    res = runner.invoke(app, ["topology", "show", "nosuch"])
    assert res.exit_code == 2
