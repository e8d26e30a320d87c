"""The regret benchmark's generators make valid scenarios of the structure they promise."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import grouping_regret as gr  # noqa: E402

SEEDS = 2 * gr.SEEDS + gr.HOLDOUT  # the run seeds one benchmark row uses


@pytest.mark.parametrize("name", sorted(gr.GENERATORS))
def test_every_generator_makes_scenarios_netsim_accepts(name: str) -> None:
    if name == "torch":
        pytest.importorskip("torch", reason="the torch generator's networks need PyTorch")
    for index in range(6):
        raw = gr.feasible(gr.GENERATORS[name](7, index), SEEDS)
        sc = gr.item_scenario(raw, gr.raw_seed(raw))
        assert sc.run.until > 0
        assert sc.n_workers >= 2


def _classes(raw: dict) -> list[tuple[float, int]]:
    """(mean compute time s, count) per worker class; the generators' tables give a mean."""
    out = []
    for w in raw["workers"]:
        c = w["compute"]
        if isinstance(c, float):
            mean = c
        elif c["dist"] == "lognormal":
            mean = c["median"] * math.exp(c["sigma"] ** 2 / 2)
        elif c["dist"] == "shifted_exponential":
            mean = c["shift"] + c["mean"]
        elif c["dist"] == "pareto":
            mean = c["scale"] * c["shape"] / (c["shape"] - 1)
        else:
            mean = c["mean"]
        out.append((mean, w["count"]))
    return out


def test_kinds_have_the_structure_their_names_say() -> None:
    seen = set()
    for index in range(15):
        raw = gr.generate_kinds(3, index)
        kind = gr.KINDS[index % len(gr.KINDS)]
        seen.add(kind)
        classes = _classes(raw)
        means = [m for m, _ in classes]
        P = sum(n for _, n in classes)
        if kind == "straggler":
            (fast, n_fast), (slow, n_slow) = classes
            assert 3.0 <= slow / fast <= 10.0 and 1 <= n_slow <= 3 < n_fast
        elif kind == "spread":
            assert 4 <= len(classes) <= 6 and max(means) / min(means) <= 8.0
            assert len(raw["algorithms"]["gsgd"]["groups"]) == 2
        elif kind == "contention":
            assert 8 <= P <= 16
            # 1 Gbit/s: one message alone takes 2-20 % of the fastest class's mean compute
            alone = raw["network"]["message_bytes"] * 8 / 1e9
            assert 0.02 * min(means) <= alone <= 0.2 * min(means) * (1 + 1e-12)
        elif kind == "slowdown":
            (event,) = raw["events"]
            assert event["time"] == pytest.approx(raw["run"]["until"] / 4)
            assert 2.0 <= event["factor"] <= 4.0
        else:
            assert 5 <= len(classes) <= 8 and 32 <= P <= 64
    assert seen == set(gr.KINDS)
