"""Progress lines of runs started from Python (notebooks): on when asked, or in a kernel."""

from __future__ import annotations

import io
import sys

import pytest
from conftest import ROOT

import netsim
from netsim.results.progress import LineProgress, resolve
from netsim.results.render import plain_line
from netsim.sim.records import Snapshot

QUICK = str(ROOT / "scenarios" / "quickstart.toml")


def snap(t: float, until: float = 10.0) -> Snapshot:
    return Snapshot("gsgd", "gsgd", t, until, int(t), 0, 0.5, 0.9, t, int(t), ())


def test_the_line_is_rewritten_in_place_and_ended_once():
    out = io.StringIO()
    show = LineProgress(out, every_s=0.0, position="[1/2]")
    show(snap(5.0))
    show(snap(10.0))
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "[1/2] gsgd: 50% t=5/10 updates=5" in text and "[1/2] gsgd: 100%" in text


def test_resolve_auto_is_on_in_a_notebook_only(monkeypatch):
    assert resolve("auto") is None and resolve(None) is None and resolve(False) is None
    monkeypatch.setitem(sys.modules, "ipykernel", object())
    assert isinstance(resolve("auto"), LineProgress)
    with pytest.raises(ValueError, match="progress must be"):
        resolve(3)


def test_compare_prints_each_runs_place(capsys):
    netsim.compare(QUICK, ["ssgd", "asgd"], progress=True, overrides=["run.until=5"])
    err = capsys.readouterr().err
    assert "[1/2] ssgd: 100%" in err and "[2/2] asgd: 100%" in err


def test_a_real_runs_line_says_its_loss_comes_after_the_run():
    real = Snapshot("gsgd", "gsgd", 5.0, 10.0, 5, 0, None, None, None, None, (), after=True)
    emulated = Snapshot("gsgd", "gsgd", 5.0, 10.0, 5, 0, None, None, None, None, ())
    assert "loss=evaluated after the run" in plain_line(real)
    assert "loss=not evaluated yet" in plain_line(emulated)
