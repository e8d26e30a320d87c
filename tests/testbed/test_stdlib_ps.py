"""benchmarks/stdlib_ps.py: its fit of the [server] keys recovers keys worked out by hand
from synthetic measurements, and its smallest run goes end to end."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import stdlib_ps as sp  # noqa: E402


def test_the_fit_recovers_fixed_and_per_size_parts_at_two_sizes() -> None:
    # seconds = fixed + slope * size, noise-free; 0.1 s a unit divides every key by 0.1
    sizes = (250_000, 1_000_000)
    samples = {
        "gradient": [(n, 0.002 + 3e-9 * n) for n in sizes for _ in range(3)],
        "apply": [(n, 0.0005 + 1e-9 * n) for n in sizes],
        "send": [(8 * n, 0.001 + 2.5e-10 * 8 * n) for n in sizes],
    }
    keys = sp.fit_server(samples, scale=0.1)
    want = {
        "gradient_time": 0.02,
        "gradient_time_per_param": 3e-8,
        "apply_time": 0.005,
        "apply_time_per_param": 1e-8,
        "send_time": 0.01,
        "send_time_per_byte": 2.5e-9,
    }
    for key, value in want.items():
        assert keys[key] == pytest.approx(value, rel=1e-9, abs=1e-15), key
    assert keys["service"] == "constant" and keys["cv"] == pytest.approx(0.0, abs=1e-9)
    assert keys["parallel_sends"] == 1


def test_a_part_the_free_fit_makes_negative_is_zero() -> None:
    # 1 ms at 200,000 and 9 ms at 1,000,000: the free line crosses 0 at 100,000 (fixed part
    # -1 ms), so the fit goes through 0 with slope sum(n y) / sum(n^2) = 9200 / 1.04e12;
    # falling times: no part per size, the mean as the fixed part
    rising = [(2e5, 0.001), (1e6, 0.009)]
    falling = [(2e5, 0.003), (1e6, 0.001)]
    keys = sp.fit_server({"gradient": rising, "apply": falling, "send": rising}, scale=1.0)
    assert keys["gradient_time"] == 0.0
    assert keys["gradient_time_per_param"] == pytest.approx(9200 / 1.04e12)
    assert keys["apply_time"] == pytest.approx(0.002) and keys["apply_time_per_param"] == 0.0


def test_one_size_puts_the_mean_in_the_fixed_part() -> None:
    samples = {
        "gradient": [(1e6, 0.003), (1e6, 0.005)],
        "apply": [(1e6, 0.001)],
        "send": [(8e6, 0.002), (8e6, 0.004), (8e6, 0.006)],
    }
    keys = sp.fit_server(samples, scale=0.5)
    assert keys["gradient_time"] == pytest.approx(0.008) and keys["gradient_time_per_param"] == 0
    assert keys["apply_time"] == pytest.approx(0.002) and keys["apply_time_per_param"] == 0
    assert keys["send_time"] == pytest.approx(0.008) and keys["send_time_per_byte"] == 0


@pytest.mark.parametrize(("d", "service"), [(0.6, "constant"), (0.8, "exponential")])
def test_the_service_law_is_the_closer_by_its_coefficient_of_variation(d, service) -> None:
    # pushes of 1 ± d s (equally often) and updates of 0 s: cv = d exactly; the boundary is √½
    samples = {
        "gradient": [(1e6, 1 - d), (1e6, 1 + d)] * 5,
        "apply": [(1e6, 0.0)],
        "send": [(8e6, 1.0)],
    }
    keys = sp.fit_server(samples, scale=1.0)
    assert keys["cv"] == pytest.approx(d)
    assert keys["service"] == service


def test_fold_evaluates_the_per_size_parts_at_the_model() -> None:
    keys = {**{k: 0.0 for k in sp.KEYS}, "service": "constant", "parallel_sends": 1}
    keys.update(gradient_time=0.01, gradient_time_per_param=2e-8, send_time_per_byte=1e-9)
    folded = sp.fold(keys, n_params=1_000_000, message_bytes=8e6)
    assert folded["gradient_time"] == pytest.approx(0.03)
    assert folded["send_time"] == pytest.approx(0.008)
    assert folded["apply_time"] == 0.0
    assert all(folded[k] == 0.0 for k in sp.KEYS if "_per_" in k)


def test_interval_is_students_t() -> None:
    mean, half = sp.interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.303 / math.sqrt(3))
    assert sp.interval([5.0]) == (5.0, 0.0)


def test_the_smallest_run_goes_end_to_end() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "stdlib_ps.py"), "--repeats", "1", "--horizon", "4"]
        + ["--scale", "0.05", "--params", "20000", "--sizes", "10000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for rule in ("asgd", "gsgd"):
        assert f"| {rule} | 1 |" in done.stdout
    assert "[server]" in done.stdout
