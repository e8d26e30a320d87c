"""The race's aim at SSGD's final loss and its first rung on a plateau, on scripted pilots
(a runner whose pilots' curves are written out by hand, so every cut is worked out here)."""

from __future__ import annotations

import math
from types import SimpleNamespace

from netsim.tuning.evidence import Pilot
from netsim.tuning.halving import run_halving, set_aim
from netsim.tuning.options import RaceOptions

H = 16.0  # the full horizon (s); smoothing window 0.8 s: on curves sampled every 1 s, none


def line(start: float, slope: float, until: float = H) -> list[tuple[float, float]]:
    """A loss falling by *slope* per second from *start*, sampled every second."""
    return [(float(t), start - slope * t) for t in range(int(until) + 1)]


class Scripted:
    """A PilotRunner whose pilot *i* follows ``script[i]`` (a whole-horizon curve), cut at
    each rung it is run to; it records which pilots each rung ran."""

    def __init__(self, pilots, script, horizons):
        self.pilots, self.script, self.horizons = pilots, script, horizons
        self.setup = SimpleNamespace(scenario=SimpleNamespace(run=SimpleNamespace(until=H)))
        self.level = None
        self.ran: dict[int, list[int]] = {}
        self.extended: list[int] = []
        self.sims: dict = {}
        self.work = None

    def _cut(self, i, h):
        return [c for c in self.script[i] if c[0] <= h]

    def batch(self, pool, r, ids, replicate, advance=True):
        ran = [i for i in ids if advance and (not self.pilots[i].curve or self.pilots[i].rung < r)]
        self.ran.setdefault(r, []).extend(ran)
        for i in ran:
            p = self.pilots[i]
            p.rung, p.curve, p.curves = r, self._cut(i, self.horizons[r]), []
            p.curves = [p.curve]
        if replicate:
            for i in ids:
                self.pilots[i].curves += [self.pilots[i].curve] * 2

    def extend(self, pool, ids, until):
        self.extended += ids
        for i in ids:
            self.pilots[i].reference = self._cut(i, until)


def _race(script, groups, options):
    pilots = [Pilot(f"p{i}", g, 1.0 + i) for i, g in enumerate(groups)]
    runner = Scripted(pilots, script, [2.0, 4.0, 8.0])
    finals = run_halving(runner, options)
    return runner, finals


ONE, TWO = ((0, 1),), ((0,), (1,))


def test_the_aim_is_the_lowest_end_of_the_best_one_group_pilots_run_to_the_horizon():
    # Three one-group pilots: at the last rung (8 s) p0 holds 0.92, p1 0.84, p2 0.76 (best
    # two: p2 and p1). Run on to 16 s they end at 1 - 0.03·16 = 0.52 and 1 - 0.02·16 = 0.68.
    script = [line(1.0, 0.01), line(1.0, 0.02), line(1.0, 0.03), line(1.0, 0.05)]
    pilots = [Pilot(f"p{i}", g, 1.0) for i, g in enumerate((ONE, ONE, ONE, TWO))]
    runner = Scripted(pilots, script, [2.0, 4.0, 8.0])
    runner.batch(None, 0, [0, 1, 2, 3], False)
    set_aim(runner, None, 2, 0.05)
    assert runner.ran[1] == [0, 1, 2] and runner.ran[2] == [0, 1, 2]  # the grouped p3 not
    assert sorted(runner.extended) == [1, 2]
    assert math.isclose(runner.level, 1.0 - 0.03 * 16)  # p2 ends lowest
    assert pilots[2].curve[-1][0] == 8.0  # its rung curve is left at the last rung


def test_a_diverged_one_group_pilot_sets_no_aim():
    script = [line(1.0, 0.01)]
    pilots = [Pilot("p0", ONE, 1.0, status="diverged", curve=[(0.0, 1.0)])]
    runner = Scripted(pilots, script, [2.0, 4.0, 8.0])
    set_aim(runner, None, 2, 0.05)
    assert runner.level is None and runner.extended == []


def test_on_a_plateau_the_first_rung_cuts_no_stable_pilot_and_the_next_keeps_a_quarter():
    # Twelve pilots, all within 1 % of their initial loss at the first rung (2 s): no cut
    # there; at 4 s the pilots fall at their own slopes, and a quarter of 12 (3) go on.
    flat_then = [
        [(0.0, 2.3), (1.0, 2.3), (2.0, 2.29)]
        + [(float(t), 2.29 - s * (t - 2)) for t in range(3, 17)]
        for s in (0.01 * k for k in range(12))
    ]
    options = RaceOptions(finalists=2, jobs=1, widen=0, aim="level")
    runner, finals = _race(flat_then, [TWO] * 12, options)
    assert sorted(runner.ran[1]) == list(range(12))
    assert sorted(runner.ran[2]) == [9, 10, 11]  # the steepest three
    assert sorted(p.name for p in finals) == ["p10", "p11"]
    # with the plateau rule off, the first rung keeps half: 6 of 12, by noise
    runner, _ = _race(
        flat_then, [TWO] * 12, RaceOptions(finalists=2, jobs=1, widen=0, aim="level", plateau=0)
    )
    assert len(runner.ran[1]) == 6


def test_off_the_plateau_the_first_rung_halves_as_before():
    falling = [line(2.3, 0.05 + 0.01 * k) for k in range(8)]
    runner, _ = _race(falling, [TWO] * 8, RaceOptions(finalists=2, jobs=1, widen=0, aim="level"))
    assert sorted(runner.ran[1]) == [4, 5, 6, 7]


def test_an_ssgd_that_never_leaves_its_plateau_sets_no_aim():
    # ends at 2.3 - 0.001·16 = 2.284, above 0.95 · 2.3: every candidate would be there at once
    script = [line(2.3, 0.001), line(2.3, 0.0005)]
    pilots = [Pilot(f"p{i}", ONE, 1.0) for i in range(2)]
    runner = Scripted(pilots, script, [2.0, 4.0, 8.0])
    runner.batch(None, 0, [0, 1], False)
    set_aim(runner, None, 2, 0.05)
    assert runner.level is None and sorted(runner.extended) == [0, 1]


def test_auto_aims_at_ssgd_only_when_the_first_rung_sits_on_a_plateau():
    # On the plateau (all within 1 % at 2 s) the two one-group pilots p0, p1 are run to the
    # horizon to set the aim; off it (every pilot falling 5 %/s or more) nothing is run on.
    flat_then = [
        [(0.0, 2.3), (1.0, 2.3), (2.0, 2.29)]
        + [(float(t), 2.29 - s * (t - 2)) for t in range(3, 17)]
        for s in (0.01 * k for k in range(1, 13))
    ]
    groups = [ONE, ONE] + [TWO] * 10
    runner, _ = _race(flat_then, groups, RaceOptions(finalists=2, jobs=1, widen=0, aim="auto"))
    assert sorted(runner.extended) == [0, 1]
    assert math.isclose(runner.level, 2.29 - 0.02 * 14)  # p1, the steeper, ends lower
    falling = [line(2.3, 0.05 + 0.01 * k) for k in range(8)]
    runner, _ = _race(
        falling, [ONE, ONE] + [TWO] * 6, RaceOptions(finalists=2, jobs=1, widen=0, aim="auto")
    )
    assert runner.extended == [] and runner.level is None


def test_the_pick_settles_at_the_aim_first_else_falls_back_to_the_guarded_lowest_loss():
    from netsim.tuning.pick import choose

    # aim 0.7: "fast" crosses it at 4 s (2.3 - 0.4·4) and ends at 0.5; "dip" crosses at 2 s
    # but ends at 2.0 (above 1.2 · 0.7): it has not settled there, so "fast" is the pick.
    fast = line(2.3, 0.4, 8.0)[:5] + [(float(t), 0.5) for t in range(5, 9)]
    dip = [(0.0, 2.3), (1.0, 1.5), (2.0, 0.6), (3.0, 0.6)] + [(float(t), 2.0) for t in range(4, 9)]
    finals = [
        Pilot(n, TWO, 1.0, curve=c, curves=[c, c, c]) for n, c in (("dip", dip), ("fast", fast))
    ]
    o = RaceOptions()
    chosen = choose(finals, finals, [2.0, 4.0, 8.0], H, None, o, level=0.7)
    assert chosen.pick.name == "fast" and chosen.target.loss == 0.7
    assert "settles at SSGD's final loss 0.7 first (4 s)" in chosen.reason
    # an aim nobody settles at: the pick without an aim (lowest loss at the last rung)
    chosen = choose(finals, finals, [2.0, 4.0, 8.0], H, None, o, level=0.1)
    assert chosen.pick.name == "fast" and "lowest loss at 8 s" in chosen.reason


def _flat_until(until: float, slopes) -> list[list[tuple[float, float]]]:
    """Pilot k holds 2.3 − 0.001·k (its order on the plateau) to *until* s, then falls at
    ``slopes[k]`` per second; sampled every second to H."""
    return [
        [(float(t), 2.3 - 0.001 * k - s * max(0.0, t - until)) for t in range(int(H) + 1)]
        for k, s in enumerate(slopes)
    ]


def test_a_look_on_the_plateau_runs_every_stable_pilot_on_before_the_second_cut():
    # Flat to 4 s (both rungs on the plateau), then pilot k falls at 0.05·(k + 1) per second.
    # With look = 0.5 a rung is inserted half way from 4 to 8 s (6 s) that all 12 reach; there
    # the cut line (the third of 12, a quarter) holds 2.3 − 0.009 − 0.5·1.5 = 1.541 (the
    # median of its points at 5 and 6 s), far below 0.95·2.3: off the plateau, so a quarter
    # goes on to 8 s: the steepest three.
    script = _flat_until(4.0, [0.05 * (k + 1) for k in range(12)])
    options = RaceOptions(finalists=2, jobs=1, widen=0, aim="level", look=0.5)
    runner, _ = _race(script, [TWO] * 12, options)
    assert runner.horizons == [2.0, 4.0, 6.0, 8.0]
    assert sorted(runner.ran[1]) == sorted(runner.ran[2]) == list(range(12))
    assert sorted(runner.ran[3]) == [9, 10, 11]
    # without the look the quarter is cut at 4 s by the order on the plateau (the same three
    # here, by the 0.001 steps: the look changes which pilots are seen, not this order)
    runner, _ = _race(
        script, [TWO] * 12, RaceOptions(finalists=2, jobs=1, widen=0, aim="level", look=0.0)
    )
    assert runner.horizons == [2.0, 4.0, 8.0] and len(runner.ran[2]) == 3


def test_still_on_the_plateau_at_the_look_the_better_half_goes_on():
    # Flat to 7 s: at the look (6 s) every pilot still holds its plateau, so the better half
    # of the 12 by loss (k = 6..11, the lower plateau levels) runs on to 8 s.
    script = _flat_until(7.0, [0.1] * 12)
    options = RaceOptions(finalists=2, jobs=1, widen=0, aim="level", look=0.5)
    runner, _ = _race(script, [TWO] * 12, options)
    assert sorted(runner.ran[3]) == list(range(6, 12))


def test_where_the_first_rung_is_on_the_plateau_the_grid_is_widened_only_along_a_trend(
    monkeypatch,
):
    import netsim.tuning.halving as halving

    widened = []
    monkeypatch.setattr(halving, "_widen", lambda *a: widened.append(a[4]) or [])
    script = _flat_until(7.0, [0.1] * 12)
    _race(script, [TWO] * 12, RaceOptions(finalists=2, jobs=1, aim="level", look=0.5))
    assert widened == [0.05]  # edge_steps(..., plateau=0.05): only along a trend (doctests)
    _race(script, [TWO] * 12, RaceOptions(finalists=2, jobs=1, aim="level", look=0.0))
    assert widened == [0.05, 0.0]
