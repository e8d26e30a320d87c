"""A sweep's seeds (``--seeds N``) change each point's parsed scenario by
Scenario.with_seed: every task's scenario is the one all its overrides give parsed at once."""

from __future__ import annotations

from conftest import base_raw, make_scenario

from netsim.sweeps.runner import plan_sweep

NETWORK = {"topology": {"builder": "star", "args": {"n_hosts": 12}}, "placement": "random"}


def test_seed_points_are_the_scenarios_parsed_with_every_override():
    base = make_scenario(base_raw(network=NETWORK))
    plan = plan_sweep(base, ["run.batch_size=4,8", "algorithm=asgd,gsgd"], seeds=3)
    assert len(plan.tasks) == 12
    hosts = set()
    for task in plan.tasks:
        sets = [f"run.batch_size={task.values['run.batch_size']}"]
        sets += [
            f'run.algorithm="{task.values["run.algorithm"]}"',
            f"run.seed={task.values['run.seed']}",
        ]
        again = base.with_overrides(sets)
        sc = task.scenario
        assert sc.run == again.run and sc.overrides == again.overrides
        assert sc.to_toml() == again.to_toml()
        assert sc.network.worker_hosts == again.network.worker_hosts
        hosts.add(sc.network.worker_hosts)
    assert len(hosts) > 1  # the seeds drew their own placements
