"""The arithmetic of benchmarks/real_decisions.py against hand-worked values."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from netsim.testbed.decisions import (
    Config,
    config_rows,
    configs,
    finalists,
    kendall_tau,
    mean_time,
    regret,
    verdict,
)


def test_kendall_tau_counts_concordant_and_discordant_pairs():
    # pairs of [1,2,3,4] vs [1,3,2,4]: only (2,3) discordant -> C = 5, D = 1, tau = 4/6
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == -1.0


def test_kendall_tau_b_with_ties():
    # x = [1,2,2,3], y = [1,2,3,3]: C = 4 ((0,1),(0,2),(0,3),(1,3)), D = 0,
    # (1,2) tied in x only, (2,3) tied in y only: 4 / sqrt(5 * 5) = 0.8 (scipy's tau-b)
    assert kendall_tau([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    # never reached (inf) on both sides is a tie in both: the pair counts in neither
    # C = 2 ((0,1),(0,2)), D = 0, (1,2) tied in both: 2 / sqrt(2 * 2) = 1
    inf = math.inf
    assert kendall_tau([1.0, inf, inf], [5.0, inf, inf]) == 1.0
    # x = [1,2,3], y = [2,1,1]: (0,1) and (0,2) discordant, (1,2) tied in y only:
    # (0 - 2) / sqrt((2 + 1) * 2) = -0.8165
    assert kendall_tau([1, 2, 3], [2, 1, 1]) == pytest.approx(-2 / math.sqrt(6))
    assert kendall_tau([1, 1], [1, 2]) is None
    with pytest.raises(ValueError):
        kendall_tau([1, 2], [1])


def test_regret_and_mean_time():
    assert regret(110.0, 100.0) == pytest.approx(0.10)
    assert regret(100.0, 100.0) == 0.0
    assert regret(math.inf, 100.0) == math.inf
    assert math.isnan(regret(5.0, math.inf))
    # mean 20, sample sd 10, t(2 df) = 4.303: 4.303 * 10 / sqrt(3)
    mean, ci = mean_time([10.0, 20.0, 30.0])
    assert mean == 20.0 and ci == pytest.approx(4.303 * 10 / math.sqrt(3))
    assert mean_time([10.0, None, 30.0]) == (math.inf, None)
    assert mean_time([]) == (math.inf, None)


def test_config_overrides_and_key():
    c = Config("gsgd", 0.08, ((3, 2), (0, 1)), "2 groups", ("pick",))
    assert c.overrides() == ["algorithms.gsgd.lr=0.08", "algorithms.gsgd.groups=[[2, 3], [0, 1]]"]
    assert c.label == "gsgd[2 groups] η=0.08"
    assert c.key == Config("gsgd", 0.08, ((0, 1), (2, 3))).key
    assert Config("ssgd", 0.2).overrides() == ["algorithms.ssgd.lr=0.2"]


@dataclass
class _Pilot:
    name: str
    groups: tuple
    lr: float
    rung: int
    predicted: float
    curves: list = field(default_factory=lambda: [[], [], []])

    @property
    def label(self) -> str:
        return f"{self.name} η={self.lr:.3g}"


@dataclass
class _Rec:
    name: str
    lr: float
    pilots: list
    close: list = field(default_factory=list)
    finals: list = field(default_factory=list)


def _race() -> _Rec:
    pick = _Pilot("2 groups", ((0, 1), (2, 3)), 0.1, 2, 50.0)
    near = _Pilot("hand", ((0,), (1,), (2, 3)), 0.1, 2, 55.0)
    far = _Pilot("one group", ((0, 1, 2, 3),), 0.3, 2, 90.0)
    dropped = _Pilot("singletons", ((0,), (1,), (2,), (3,)), 0.1, 1, 70.0)
    unreplicated = _Pilot("equal:3", ((0,), (1,), (2, 3)), 0.3, 2, math.inf, [[]])
    return _Rec("2 groups", 0.1, [far, dropped, unreplicated, pick, near], close=[near])


def test_finalists_are_the_last_rung_replicated_best_first():
    assert [p.name for p in finalists(_race())] == ["2 groups", "hand", "one group"]
    rec = _race()
    for p in rec.pilots:
        p.curves = [[]]  # none replicated: every pilot at the last rung
    assert [p.name for p in finalists(rec)] == ["2 groups", "hand", "one group", "equal:3"]


def test_finalists_named_by_the_race_are_those():
    """A race that names its finals (others at the last rung may have runs to a target
    too): those, best first."""
    rec = _race()
    far, _, unreplicated, pick, _ = rec.pilots
    rec.finals = [far, unreplicated, pick]
    assert [p.name for p in finalists(rec)] == ["2 groups", "one group", "equal:3"]


def test_configs_list_finalists_and_baselines_once():
    hand = [[0], [1], [2, 3]]  # the same groups as the finalist "hand" at the race's η
    found = configs(_race(), "gsgd", hand, {"ssgd": 0.3, "asgd": None}, 0.05)
    labels = [(c.label, c.tags) for c in found]
    assert labels == [
        ("gsgd[2 groups] η=0.1", ("pick",)),
        ("gsgd[hand] η=0.1", ("close", "hand", "race η")),
        ("gsgd[one group] η=0.3", ("finalist",)),
        ("gsgd[hand] η=0.05", ("hand", "scenario η")),
        ("ssgd η=0.1", ("race η",)),
        ("ssgd η=0.3", ("scenario η",)),
        ("asgd η=0.1", ("race η",)),
    ]


def _rows() -> list[dict]:
    pick = Config("gsgd", 0.1, ((0, 1),), "2 groups", ("pick",))
    close = Config("gsgd", 0.1, ((0,), (1,)), "hand", ("close", "hand", "race η"))
    hand = Config("gsgd", 0.05, ((0,), (1,)), "hand", ("hand", "scenario η"))
    sync = Config("ssgd", 0.3, tags=("scenario η",))
    return [
        {"config": pick, "real": 105.0, "real_ci": 3.0, "predicted": 50.0, "predicted_ci": 1.0},
        {"config": close, "real": 100.0, "real_ci": None, "predicted": 55.0},
        {"config": hand, "real": 150.0, "real_ci": 9.0, "predicted": 65.0},
        {"config": sync, "real": math.inf, "real_ci": None, "predicted": 70.0},
    ]


def test_verdict_of_a_scenario():
    v = verdict(_rows())
    assert v["best"]["config"].name == "hand" and v["best"]["real"] == 100.0
    assert v["pick_regret"] == pytest.approx(0.05)
    assert v["hand_regret"] == pytest.approx(0.5)
    assert v["best_close"] is True
    # predicted 50, 55, 65, 70 against real 105, 100, 150, inf: pairs (pick, close)
    # discordant, the other five concordant: (5 - 1) / 6
    assert v["tau"] == pytest.approx(4 / 6)
    # the emulation's fastest (50) is the pick, 5 % behind the real best
    assert v["emulated_first"]["config"].name == "2 groups"
    assert v["emulated_regret"] == pytest.approx(0.05)
    # the pick is the emulation's own fastest; no second emulation, no resolution
    assert v["pick_emulated_regret"] == 0.0 and "second_regret" not in v


def test_verdict_with_a_second_emulation_on_other_seeds():
    """The second emulation puts the hand groups at the race's η first (52 against 58, 70,
    80); the first emulation has them at 55 against its fastest 50: the resolution of a
    verdict on these seeds is a 10 % regret. The pick judged by the emulation: 0 %."""
    rows = _rows()
    for row, t in zip(rows, (58.0, 52.0, 70.0, 80.0)):
        row["second"] = t
    v = verdict(rows)
    assert v["second_first"]["config"].label == "gsgd[hand] η=0.1"
    assert v["second_regret"] == pytest.approx(0.1)
    rows[0]["config"] = Config("gsgd", 0.1, ((0, 1),), "2 groups", ("finalist",))
    rows[2]["config"] = Config("gsgd", 0.05, ((0,), (1,)), "hand", ("pick", "scenario η"))
    assert verdict(rows)["pick_emulated_regret"] == pytest.approx(65 / 50 - 1)


def test_verdict_when_the_best_was_not_a_finalist():
    rows = _rows()
    rows[2]["real"] = 90.0  # the hand groups at the scenario's eta are now the best
    v = verdict(rows)
    assert v["best_close"] is False and v["hand_regret"] == 0.0
    assert v["pick_regret"] == pytest.approx(105 / 90 - 1)


def test_config_rows_best_first():
    lines = config_rows(_rows())
    assert lines[0].startswith("| configuration |")
    assert lines[2] == "| gsgd[hand] η=0.1 | close, hand, race η | 100 | 55 | +0.0% |"
    assert lines[3] == "| gsgd[2 groups] η=0.1 | pick | 105 ± 3 | 50 ± 1 | +5.0% |"
    assert lines[4] == "| gsgd[hand] η=0.05 | hand, scenario η | 150 ± 9 | 65 | +50.0% |"
    assert lines[5] == "| ssgd η=0.3 | scenario η | not reached | 70 | never |"


def test_verdict_with_a_calibrated_emulation():
    """Calibrated times 60, 52, 75, 80 against real 105, 100, 150, inf: the calibrated
    emulation puts the real best (100) first, so its first's regret is 0; every pair is
    concordant: τ = 1. The table gains its column."""
    rows = _rows()
    for row, t in zip(rows, (60.0, 52.0, 75.0, 80.0)):
        row["calibrated"] = t
    v = verdict(rows)
    assert v["calibrated_tau"] == pytest.approx(1.0)
    assert v["calibrated_first"]["real"] == 100.0 and v["calibrated_regret"] == 0.0
    lines = config_rows(rows)
    assert lines[0].endswith("| emulated | calibrated | real regret |")
    assert lines[2] == "| gsgd[hand] η=0.1 | close, hand, race η | 100 | 55 | 52 | +0.0% |"
