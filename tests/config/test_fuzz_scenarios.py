"""Property: any mutant of a valid scenario is either accepted or refused in one line.

Mutants (tests/config/mutants.py) change 1-3 keys of a shipped scenario or of the
tests' base scenario. ``validate`` must exit 0 or 2 with no traceback, and on exit 2
print exactly one stderr line naming the file. A few mutants also ``run`` for a short
horizon (exit 1 is allowed there: a diverged run). benchmarks/fuzz_scenarios.py runs
thousands more.
"""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutants import base_scenarios, check_outcome, make_case
from typer.testing import CliRunner

from netsim.cli import app

runner = CliRunner()
BASES = base_scenarios()
GUARD_S = 60  # a hang shows as a failure instead of a stuck suite


class Hang(Exception):
    pass


def _invoke(args):
    def alarm(signum, frame):
        raise Hang(f"no answer within {GUARD_S} s: {args}")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(GUARD_S)
    try:
        return runner.invoke(app, args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("mutants")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(rnd=st.randoms(use_true_random=False))
def test_validate_accepts_or_refuses_in_one_line(rnd, folder):
    path, sets = make_case(rnd, BASES, Path(folder))
    result = _invoke(["validate", str(path), *[a for s in sets for a in ("--set", s)]])
    problem = check_outcome(result, path)
    assert problem is None, (problem, path.read_bytes()[:2000], sets)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(rnd=st.randoms(use_true_random=False))
def test_short_runs_finish_or_refuse_in_one_line(rnd, folder):
    path, sets = make_case(rnd, BASES, Path(folder))
    args = [
        "run",
        str(path),
        *[a for s in sets for a in ("--set", s)],
        "--set",
        "run.until=0.5",
        "--set",
        "run.max_updates=300",
        "--no-live",
        "--out",
        tempfile.mkdtemp(dir=folder),
    ]
    result = _invoke(args)
    problem = check_outcome(result, path, allowed=(0, 1, 2))
    assert problem is None, (problem, path.read_bytes()[:2000], sets)
