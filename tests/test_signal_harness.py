"""SIGINT and SIGTERM sent to every long command at a few moments (tests/signalkit.py): exit
status 130 and one line, no process left, every run folder whole (``ok``, or
``interrupted`` with complete rows). The moments chosen are the ones that lost work: just
after the last run reached 100 % (its folder being written), and during a group's race
(its pool). benchmarks/signal_harness.py sends 20 random moments per command and signal.
"""

from __future__ import annotations

import signal
import sys

import pytest
import signalkit

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="sessions and /proc (Linux)"
)

TORCH = pytest.mark.skipif(not signalkit.has_torch(), reason="netsim real needs torch")
CASES = [
    pytest.param("run", signal.SIGTERM, "late", id="run-TERM-late"),
    pytest.param("run", signal.SIGINT, "late", id="run-INT-late"),
    pytest.param("compare", signal.SIGTERM, "late", id="compare-TERM-late"),
    pytest.param("compare", signal.SIGINT, 0.5, id="compare-INT-0.5s"),
    pytest.param("sweep", signal.SIGTERM, "late", id="sweep-TERM-late"),
    pytest.param("group", signal.SIGTERM, "race", id="group-TERM-race"),
    pytest.param("rerun", signal.SIGINT, "late", id="rerun-INT-late"),
    pytest.param("real", signal.SIGINT, "rows", id="real-INT-rows", marks=TORCH),
    pytest.param("real", signal.SIGTERM, "late", id="real-TERM-late", marks=TORCH),
    pytest.param("predict", signal.SIGTERM, "late", id="predict-TERM-late", marks=TORCH),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A finished run folder (rerun's input); a real run's (predict's) made on first use."""
    where = tmp_path_factory.mktemp("signal-inputs")
    made = signalkit.make_inputs(where, real=False)
    return where, made


@pytest.mark.parametrize("name, sig, moment", CASES)
def test_a_signal_leaves_one_line_no_process_and_whole_folders(inputs, name, sig, moment):
    where, made = inputs
    if name == "predict" and "real" not in made:
        made.update(signalkit.make_inputs(where, real=True))
    trial = signalkit.trial(name, sig, moment, where, made)
    assert trial.outcome in ("interrupted", "ended", "after the end", "too loaded"), (
        f"{trial}\n{trial.stderr[-3000:]}"
    )


@TORCH
def test_a_second_signal_during_a_real_run_keeps_its_rows_and_says_so(inputs):
    """The second Ctrl-C of a real run ends its workers at once; the server still writes the
    folder (status interrupted), and the line says so, not 'before the run started'."""
    where, made = inputs
    trial = signalkit.trial("real", signal.SIGINT, "rows", where, made, again=0.3)
    assert trial.outcome == "interrupted", f"{trial}\n{trial.stderr[-3000:]}"
    assert "before the run started" not in trial.stderr
