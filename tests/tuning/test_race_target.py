"""A target the user gives: pilots that reach it are timed on all their runs at once, each
replicate run stopped where it reaches the target; checked against the same replicate run
to the last rung (a run advanced in pieces makes the same events as one run at once)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_scenario
from test_race import cluster

from netsim.sim.engine import prepare
from netsim.tuning.evidence import Pilot
from netsim.tuning.pilots import PilotRunner, PilotSetup
from netsim.tuning.race import recommend
from netsim.tuning.scoring import reached_at

pytestmark = pytest.mark.usefixtures("fork_beside_dask")

WORKERS = [{"name": "a", "count": 2, "compute": 1.0}, {"name": "b", "count": 2, "compute": 2.0}]
GROUPS = ((0, 1), (2, 3))


def _runner(until: float = 20.0) -> PilotRunner:
    sc = make_scenario(cluster(WORKERS, until=until))
    setup = PilotSetup.of(sc, prepare(sc), None, until / 8, 200)
    return PilotRunner(setup, [Pilot("two", GROUPS, 1.0)], [until / 8, until / 4, until / 2], 3)


def test_a_run_to_the_target_is_the_replicate_cut_where_it_reaches_it():
    runner = _runner()
    full = runner.work(("replicate", 0, 1, (GROUPS, 1.0)))[2]
    losses = [loss for _, loss in full]
    target = losses[0] - 0.5 * (losses[0] - min(losses))  # half way down
    sim_s, _, cut, diverged = runner.work(("to_target", 0, (1, target), (GROUPS, 1.0)))
    assert not diverged and cut == full[: len(cut)]
    at = reached_at(full, target)
    assert at is not None and reached_at(cut, target) == at
    # it stops within the 4 evaluations after the one at or below the target
    every = runner.setup.pilot_sc.run.eval_every
    assert at <= cut[-1][0] <= at + 5 * every and sim_s == pytest.approx(cut[-1][0])
    never = runner.work(("to_target", 0, (1, -1.0), (GROUPS, 1.0)))[2]
    # a target never reached: the run goes on to the last rung
    assert never == full[: len(never)] and never[-1][0] == pytest.approx(runner.horizons[-1])


def test_a_decision_run_is_a_replicate_on_a_seed_of_its_own_cut_at_the_target():
    runner = _runner()
    pilot = runner.pilots[0]
    pilot.curve = pilot.curves = [[(0.0, 1.0)]]
    full = runner.work(("replicate", 0, 3, (GROUPS, 1.0)))[2]
    losses = [loss for _, loss in full]
    target = losses[0] - 0.5 * (losses[0] - min(losses))

    class Inline:  # the pool's contract, run here
        def run(self, tasks, *_):
            return [runner.work(t) for t in tasks]

    runner.to_target(Inline(), [0], target, runs=5)  # replicates 3 and 4
    assert len(pilot.timed) == 2 and pilot.timed[0] == full[: len(pilot.timed[0])]
    assert reached_at(pilot.timed[0], target) == reached_at(full, target)
    other = runner.work(("replicate", 0, 4, (GROUPS, 1.0)))[2]
    assert pilot.timed[1] == other[: len(pilot.timed[1])] and other != full


def test_with_a_target_every_candidate_that_reaches_it_is_timed_on_all_its_runs():
    sc = make_scenario(cluster(WORKERS, until=20.0))
    prep = prepare(sc)
    probe = recommend(sc, prep, lrs=(0.3, 1.0))
    ok = [p for p in probe.pilots if p.status == "ok"]
    start = np.mean([p.curve[0][1] for p in ok])
    target = start - 0.5 * (start - np.median([p.curve[-1][1] for p in ok]))
    rec = recommend(sc, prep, lrs=(0.3, 1.0), target=float(target))
    last = len(rec.rungs) - 1
    timed = [p for p in rec.pilots if p.status == "ok" and reached_at(p.curve, target) is not None]
    # each one ran two more runs (to the target, or on to the last rung for a finalist)
    assert timed and all(p.sim_s > rec.rungs[p.rung] * (1 + 1e-9) for p in timed)
    finals = [p for p in timed if p.rung == last]
    assert finals
    for p in finals:  # the replicates ran on to the last rung; 5 more runs to the target
        assert len(p.curves) == 3 and len(p.timed) == 8 - 3
        assert all(c[-1][0] == pytest.approx(rec.rungs[-1]) for c in p.curves)
        times = [reached_at(c, target) for c in p.curves + p.timed]
        assert all(t is not None for t in times)
        assert p.predicted == pytest.approx(np.mean(times)) and p.how == "emulated, 8 runs"
    assert rec.pick.predicted == min(p.predicted for p in finals)
    three = recommend(sc, prep, lrs=(0.3, 1.0), target=float(target), decide=3)
    assert all(not p.timed and len(p.curves) == 3 for p in three.finals)
    old = recommend(sc, prep, lrs=(0.3, 1.0), target=float(target), early=False)
    alone = [p for p in old.pilots if p.status == "ok" and p.rung < last]
    assert all(p.sim_s == pytest.approx(old.rungs[p.rung]) for p in alone)


def test_with_a_target_given_every_pilot_is_predicted_on_all_its_runs():
    from netsim.tuning.pick import predict_all

    def runs(*hits):  # a run whose loss falls from 1 to 0 between 0 s and 2·hit s
        return [[(0.0, 1.0), (2.0 * h, 0.0)] for h in hits]

    final = Pilot("a", GROUPS, 1.0, rung=2)
    final.curves = runs(1.0, 2.0, 3.0)
    final.curve, final.timed = final.curves[0], runs(4.0, 5.0)
    other = Pilot("b", GROUPS, 1.0, rung=2)  # not a finalist; three runs to the target
    other.curves = runs(1.0, 1.5, 2.0)
    other.curve = other.curves[0]
    cut = Pilot("c", GROUPS, 1.0, rung=1)  # cut earlier: its own run alone
    cut.curve = runs(0.5)[0]
    predict_all([final, other, cut], [final], 0.5, 20.0, raw=True)
    # half way down each line: at hit s; the means 3, 1.5 and 0.5 s
    assert (final.predicted, final.low, final.high, final.runs) == (3.0, 1.0, 5.0, 5)
    assert (other.predicted, other.low, other.high, other.how) == (
        1.5,
        1.0,
        2.0,
        "emulated, 3 runs",
    )
    assert cut.predicted == 0.5 and cut.how == "emulated" and cut.runs == 1
    predict_all([other], [], 0.5, 20.0)  # no target given: a non-finalist reads its own run
    assert other.how == "emulated" and other.runs == 3
