"""A scenario's seed changed in place (Scenario.with_seed) is the scenario parsed again with
``run.seed`` overridden: same run settings, same raw dict and TOML, same recorded
overrides, and the placement the new seed draws."""

from __future__ import annotations

import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError

NETWORK = {"topology": {"builder": "star", "args": {"n_hosts": 12}}, "placement": "random"}


def _same(a, b):
    assert a.run == b.run
    assert a.raw == b.raw and a.to_toml() == b.to_toml()
    assert a.overrides == b.overrides
    assert a.rules.keys() == b.rules.keys() and a.workers == b.workers
    if a.network is None:
        assert b.network is None
    else:
        assert (a.network.ps_host, a.network.worker_hosts) == (
            b.network.ps_host,
            b.network.worker_hosts,
        )


@pytest.mark.parametrize("network", [None, NETWORK])
def test_with_seed_is_the_scenario_parsed_again_with_the_seed(network):
    sc = make_scenario(base_raw(**({"network": network} if network else {})))
    chosen = sc.with_algorithm("gsgd")  # the rule chosen stays, as with overrides
    for seed in (0, 4, 11):
        _same(chosen.with_seed(seed), chosen.with_overrides([f"run.seed={seed}"]))
    assert chosen.with_seed(4).run.algorithm == "gsgd"


def test_a_new_seed_draws_a_new_random_placement():
    sc = make_scenario(base_raw(network=NETWORK))
    placements = {sc.with_seed(seed).network.worker_hosts for seed in range(6)}
    assert len(placements) > 1  # 3 workers among 11 hosts: six seeds do not all agree
    assert sc.with_seed(3).network.worker_hosts == sc.network.worker_hosts  # its own seed


def test_a_seed_not_allowed_is_the_parser_s_error():
    sc = make_scenario(base_raw())
    with pytest.raises(ScenarioError, match="run.seed") as caught:
        sc.with_seed(-1)
    with pytest.raises(ScenarioError) as parsed:
        sc.with_overrides(["run.seed=-1"])
    assert str(caught.value) == str(parsed.value)
