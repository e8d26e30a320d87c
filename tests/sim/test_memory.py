"""A run that loads its own large data frees it when it returns: the simulation and its
SimPy processes refer to each other, so without an explicit collection each dropped run
kept its data set until a rare full garbage collection (MNIST: 0.4 GB a run; a benchmark
loop reached 24 GB and was killed). The digits data here (0.9 MB) counts as large with the
threshold lowered to 0 bytes."""

from __future__ import annotations

import gc
import weakref

import pytest
from conftest import base_raw, make_scenario

from netsim import api
from netsim.sim import engine
from netsim.sweeps import runner
from netsim.workflows import compare, runs


@pytest.fixture
def loads(monkeypatch):
    """Weak references to the training rows (the bulk of the memory) of every data set
    prepared through the patched modules."""
    refs = []

    def watch(module):
        real = module.prepare

        def prepare(sc):
            prepared = real(sc)
            refs.append(weakref.ref(prepared.dataset.X_train))
            return prepared

        monkeypatch.setattr(module, "prepare", prepare)

    for module in (engine, runner, runs, compare):
        watch(module)
    monkeypatch.setattr(engine, "FREE_CYCLES_BYTES", 0)
    gc.disable()  # only the explicit collection may free the cycles
    yield refs
    gc.enable()


def scenario(algorithm="asgd"):
    raw = base_raw()
    raw["run"].update(
        algorithm=algorithm, until=5.0, eval_every=1.0
    )  # the evaluator process closes a cycle
    return make_scenario(raw)


@pytest.mark.parametrize(
    "call",
    [
        lambda: engine.simulate(scenario()),
        lambda: api.run(scenario()),
        lambda: api.compare(scenario(), ["ssgd", "gsgd"]),
        lambda: runner.run_task(scenario("gsgd")),
    ],
)
def test_data_loaded_by_a_run_is_freed_when_it_returns(loads, call):
    result = call()
    assert result is not None and loads
    assert all(ref() is None for ref in loads)


def test_data_passed_in_stays_with_the_caller(loads):
    sc = scenario()
    prepared = engine.prepare(sc)
    engine.simulate(sc, prepared=prepared)
    assert loads[0]() is prepared.dataset.X_train


def test_small_data_is_left_to_the_collector(loads, monkeypatch):
    """Below the threshold (32 MB by default; digits is 0.9 MB) no collection is forced:
    it would cost more than the memory it frees."""
    monkeypatch.setattr(engine, "FREE_CYCLES_BYTES", 32 * 2**20)
    engine.simulate(scenario())
    assert loads[0]() is not None  # still held by the run's reference cycles
    assert loads[0]().nbytes < engine.FREE_CYCLES_BYTES
    gc.collect()
    assert loads[0]() is None


@pytest.mark.parametrize("compact, most", [(True, 1), (False, 8)])
def test_workers_computing_with_compact_gradients_hold_no_model(compact, most):
    """Compact gradients evaluate a minibatch's factor as the model arrives and let the
    model go, so while 8 ASGD workers compute (each on the version it read, all different)
    no snapshot but the PS's current one is alive; with dense gradients each worker keeps
    its own (the control: the count does reach 8)."""
    from netsim.sim.engine import Simulation

    raw = base_raw(
        model={"name": "logistic", "l2": 0.0},
        workers=[{"name": "w", "count": 8, "compute": {"dist": "exponential", "mean": 1.0}}],
    )
    raw["run"].update(until=30.0, compact_gradients=compact)
    sim = Simulation(make_scenario(raw), "asgd")
    snapshots = []
    sim.begin()
    sim.ps.on_update = lambda ps: snapshots.append(weakref.ref(ps.w))
    alive = []
    for t in range(1, 30):
        sim.advance(float(t))  # every worker is inside its computation (no transfers, no waiting)
        alive.append(sum(ref() is not None for ref in snapshots))
    sim.end()
    assert len(snapshots) > 100
    assert max(alive) == most
