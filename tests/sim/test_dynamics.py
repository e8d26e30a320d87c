"""Timed cluster changes, group timeouts, online regrouping, automatic grouping in runs."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, base_raw, make_scenario
from typer.testing import CliRunner

from netsim.cli import app
from netsim.errors import ScenarioError
from netsim.sim.engine import simulate
from netsim.tuning.race import decide


def test_slowdown_changes_compute_times_by_hand():
    # One ASGD worker of 1 s; from t = 2.5 it is 3× slower. Pushes at 1, 2, then the
    # iteration started at 2 was drawn before the change (1 s) → 3, then 6, 9.
    raw = base_raw(workers=[{"name": "a", "count": 1, "compute": 1.0}])
    raw["run"]["until"] = 9.5
    raw["events"] = [{"time": 2.5, "kind": "slowdown", "worker": 0, "factor": 3.0}]
    result = simulate(make_scenario(raw), "asgd")
    assert [round(t, 9) for t in result.records.time] == [1.0, 2.0, 3.0, 6.0, 9.0]
    assert result.records.events[0] == {
        "time": 2.5,
        "kind": "slowdown",
        "workers": [0],
        "factor": 3.0,
    }


def test_crash_loses_work_and_recovery_rejoins():
    # ASGD, worker 0 (1 s) crashes at 2.5 (its iteration started at 2 is lost) and is back at 4:
    # it pushes at 1, 2, then 5, 6; down 1.5 s. Worker 1 (2.4 s) is unaffected.
    raw = base_raw(
        workers=[
            {"name": "a", "count": 1, "compute": 1.0},
            {"name": "b", "count": 1, "compute": 2.4},
        ]
    )
    raw["run"]["until"] = 6.5
    raw["events"] = [{"time": 2.5, "kind": "crash", "worker": 0, "duration": 1.5}]
    result = simulate(make_scenario(raw), "asgd")
    w0 = [round(t, 9) for t, w in zip(result.records.time, result.records.worker) if w == 0]
    w1 = [round(t, 9) for t, w in zip(result.records.time, result.records.worker) if w == 1]
    assert w0 == [1.0, 2.0, 5.0, 6.0]
    assert w1 == [2.4, 4.8]
    stats = result.workers[0]
    assert stats.down_s == pytest.approx(1.5)
    assert stats.compute_s + stats.comm_s + stats.idle_s + stats.down_s == pytest.approx(6.5)
    kinds = [e["kind"] for e in result.records.events]
    assert kinds == ["crash", "recover"]


def test_group_timeout_proceeds_without_the_crashed_member():
    # GSGD, group 0 = workers 0, 1 (1 s), group 1 = worker 2 (2.4 s); worker 1 crashes at 0.5
    # for good. The timer starts with the round: round 1 starts at 0, worker 0 pushes at 1,
    # the round times out at 0 + 1.5 → update; round 2 starts at 1.5, push 2.5, timeout 3.0;
    # round 3: 3.0 → push 4.0 → timeout 4.5.
    raw = base_raw()
    raw["run"]["until"] = 5.0
    raw["algorithms"]["gsgd"]["group_timeout"] = 1.5
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 1}]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    g0 = sorted({round(t, 9) for t, g in zip(result.records.time, result.records.group) if g == 0})
    assert g0 == [1.5, 3.0, 4.5]
    timeouts = [e for e in result.records.events if e["kind"] == "group_timeout"]
    assert [(round(e["time"], 9), e["present"], e["missing"]) for e in timeouts] == [
        (1.5, [0], [1]),
        (3.0, [0], [1]),
        (4.5, [0], [1]),
    ]


def test_without_timeout_a_crashed_member_blocks_its_group():
    raw = base_raw()
    raw["run"]["until"] = 20.0
    raw["events"] = [{"time": 0.5, "kind": "crash", "worker": 1}]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    assert 0 not in result.records.group  # group 0 never completes a round
    assert len(result.records.version) == 8  # group 1 alone: 2.4, 4.8, ..., 19.2


def test_online_regrouping_moves_a_slowed_worker():
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 3, "compute": 1.0},
            {"name": "slow", "count": 3, "compute": 4.0},
        ]
    )
    raw["run"]["until"] = 80.0
    raw["algorithms"]["gsgd"].update(regroup_every=10, regroup_window=3)
    raw["events"] = [{"time": 20.0, "kind": "slowdown", "worker": 0, "factor": 4.0}]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    regroups = [e for e in result.records.events if e["kind"] == "regroup"]
    assert regroups and regroups[0]["before"] == [[0, 1, 2], [3, 4, 5]]
    assert regroups[-1]["after"] == [[1, 2], [0, 3, 4, 5]]
    assert result.groups == [[1, 2], [0, 3, 4, 5]]


def test_raced_grouping_measures_first():
    raw = base_raw(
        workers=[
            {
                "name": "fast",
                "count": 3,
                "compute": {"dist": "lognormal", "median": 1.0, "sigma": 0.05},
            },
            {
                "name": "slow",
                "count": 3,
                "compute": {"dist": "lognormal", "median": 4.0, "sigma": 0.05},
            },
        ]
    )
    raw["algorithms"]["gsgd"].update(grouping="race", probe_rounds=3)
    raw["run"]["until"] = 40.0
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    g = result.extra["grouping"]
    assert g["method"] == "race" and sorted(g["members"]) == sorted(
        result.groups
    )  # the recommendation is used
    assert (
        g["lr"] in [c["lr"] for c in g["candidates"]]
        and g["recommended"] == g["candidates"][0]["name"]
    )
    duration = g["measurement"]["duration_s"]
    assert duration >= 3 * 4.0 * 0.8  # three probe rounds of the ~4 s workers
    assert min(result.records.time) > duration  # training starts after the measurement


@pytest.mark.parametrize(
    "events,key",
    [
        ([{"time": 5.0, "kind": "crash", "worker": 9}], "events[0].worker"),
        ([{"time": 10.0, "kind": "crash", "worker": 0}], "events[0].time"),
        ([{"time": -1.0, "kind": "crash", "worker": 0}], "events[0].time"),
        ([{"time": 1.0, "kind": "explode", "worker": 0}], "events[0].kind"),
        ([{"time": 1.0, "kind": "slowdown", "worker": 0, "factor": 0}], "events[0].factor"),
        ([{"time": 1.0, "kind": "link", "link": ["a", "b"], "bandwidth": 1e9}], "events[0].kind"),
    ],
)
def test_bad_events_name_the_key(events, key):
    raw = base_raw()
    raw["events"] = events
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == key


@pytest.mark.parametrize(
    "update,key",
    [
        ({"grouping": "kmeans:9"}, "algorithms.gsgd.grouping"),
        ({"grouping": "auto", "k_max": 4}, "algorithms.gsgd.k_max"),
        ({"groups": [[0, 1]]}, "algorithms.gsgd.groups"),
        ({"group_timeout": -1.0}, "algorithms.gsgd.group_timeout"),
    ],
)
def test_bad_grouping_keys(update, key):
    raw = base_raw()
    raw["algorithms"]["gsgd"].update(update)
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == key


def test_link_event_changes_transfer_times():
    # Star, 1 Gbit/s, no latency; one worker, 1 s compute, 1 MB messages (+64 B header):
    # a transfer takes 8·(1e6+64)/1e9 s. From t = 3 the link is 10× slower.
    raw = base_raw(workers=[{"name": "a", "count": 1, "compute": 1.0}])
    raw["network"] = {
        "topology": {"builder": "star", "args": {"n_hosts": 2, "bandwidth": 1e9, "latency": 0.0}},
        "message_bytes": 1e6,
    }
    raw["run"]["until"] = 6.0
    raw["events"] = [{"time": 3.0, "kind": "link", "link": ["h1", "s0"], "bandwidth": 1e8}]
    sc = make_scenario(raw, str(ROOT / "scenarios" / "x.toml"))
    result = simulate(sc, "asgd")
    x = 8 * (1e6 + 64) / 1e9
    times = result.records.time
    assert times[0] == pytest.approx(1 + 2 * x) and times[1] == pytest.approx(2 * (1 + 2 * x))
    # every later iteration is slower than before the change
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps[-1] > 1 + 2 * x * 5


def test_compare_groupings_and_group_command(tmp_path):
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "compare",
            str(ROOT / "scenarios" / "quickstart.toml"),
            "--groupings",
            "hand,auto,equal:2",
            "--no-live",
            "--set",
            "run.until=30",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "compare.json").read_text())
    assert [s["label"] for s in data] == ["gsgd[hand]", "gsgd[auto]", "gsgd[equal:2]"]
    # auto is the race: the record holds the pick, its η and every candidate's evidence
    assert data[1]["grouping"]["method"] == "race" and "candidates" in data[1]["grouping"]
    assert data[2]["grouping"]["k"] == 2
    res = runner.invoke(
        app,
        ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--set", "run.until=30", "--quick"],
    )
    assert res.exit_code == 0, res.output
    assert "advisor ranking" in res.output and "silhouette" in res.output
    assert "advisor's pick:" in res.output and "η =" in res.output
    res = runner.invoke(
        app, ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--set", "run.until=30"]
    )
    assert res.exit_code == 0, res.output
    assert "recommended:" in res.output and "predicted" in res.output
    assert "quickstart: racing rung 1 of" in res.stderr  # progress of the race, on stderr
    rungs = [line for line in res.stderr.splitlines() if "racing rung" in line]
    assert "left" not in rungs[0] and all(", about " in x and " left" in x for x in rungs[1:])
    res = runner.invoke(
        app, ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--lrs", "0.1,-1"]
    )
    assert res.exit_code == 2 and "learning rates must be finite and > 0" in res.stderr
    res = runner.invoke(
        app, ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--quick", "--lrs", "0.1"]
    )
    assert res.exit_code == 2 and "--quick takes none of" in res.stderr
    res = runner.invoke(
        app, ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--alike", "-0.5"]
    )
    assert res.exit_code == 2 and "--alike: -0.5 is not allowed" in res.stderr
    res = runner.invoke(app, ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--jobs", "0"])
    assert res.exit_code == 2 and "--jobs: 0 is not allowed" in res.stderr
    res = runner.invoke(
        app, ["group", str(ROOT / "scenarios" / "quickstart.toml"), "--quick", "--jobs", "2"]
    )
    assert res.exit_code == 2 and "--quick takes none of" in res.stderr
    res = runner.invoke(
        app,
        [
            "compare",
            str(ROOT / "scenarios" / "quickstart.toml"),
            "--groupings",
            "kmeans:99",
            "--no-live",
        ],
    )
    assert res.exit_code == 2 and "grouping" in res.stderr


def test_drift_online_regrouping_reaches_the_target_first(tmp_path):
    runner = CliRunner()
    times = {}
    for every in (0, 40):
        out = tmp_path / f"r{every}"
        res = runner.invoke(
            app,
            [
                "run",
                str(ROOT / "scenarios" / "drift.toml"),
                "--no-live",
                "--set",
                f"algorithms.gsgd.regroup_every={every}",
                "--out",
                str(out),
            ],
        )
        assert res.exit_code == 0, res.output
        summary = json.loads((out / "summary.json").read_text())
        times[every] = summary["time_to_target_s"]
        kinds = {e["kind"] for e in summary["events"]}
        assert ("regroup" in kinds) == (every > 0)
    assert times[40] is not None and (times[0] is None or times[40] < times[0]), times


def test_crash_scenario_completes_with_timeouts(tmp_path):
    res = CliRunner().invoke(
        app, ["run", str(ROOT / "scenarios" / "crash.toml"), "--no-live", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    kinds = [e["kind"] for e in summary["events"]]
    assert kinds[0] == "crash" and "group_timeout" in kinds and "recover" in kinds
    assert summary["workers"][5]["down_s"] == pytest.approx(80.0)


def test_regrouping_on_a_time_interval():
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 3, "compute": 1.0},
            {"name": "slow", "count": 3, "compute": 4.0},
        ]
    )
    raw["run"]["until"] = 80.0
    raw["algorithms"]["gsgd"].update(regroup_every_s=10.0, regroup_window=3)
    raw["events"] = [{"time": 20.0, "kind": "slowdown", "worker": 0, "factor": 4.0}]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    regroups = [e for e in result.records.events if e["kind"] == "regroup"]
    assert regroups and all(round(e["time"], 9) % 10 == 0 for e in regroups)
    assert result.groups == [[1, 2], [0, 3, 4, 5]]


def test_crash_and_return_during_the_measurement_phase():
    raw = base_raw(
        workers=[
            {"name": "fast", "count": 2, "compute": 1.0},
            {"name": "slow", "count": 2, "compute": 3.0},
        ]
    )
    raw["algorithms"]["gsgd"].update(grouping="auto", probe_rounds=2)
    raw["run"]["until"] = 30.0
    raw["events"] = [{"time": 1.0, "kind": "crash", "worker": 0, "duration": 1.0}]
    result = simulate(make_scenario(raw), "gsgd", decide=decide)
    start = result.extra["grouping"]["measurement"]["duration_s"]
    assert start == 6.0 and min(result.records.time) > start
    assert result.workers[0].gradients_applied > 0
