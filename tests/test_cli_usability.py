"""The command line as a new user meets it: help, version, presets by name, init, keys, rerun,
results on stdout and progress on stderr, numbered default folders, --json."""

from __future__ import annotations

import builtins
import json
import math
import signal
import sys
import tomllib

import pytest
from typer.testing import CliRunner

import netsim.cli
from netsim import api, entry
from netsim.cli import app

runner = CliRunner()
SMALL = ["--set", "run.until=12", "--no-live"]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_help_and_version():
    assert invoke("-h").exit_code == 0 and "rerun" in invoke("-h").stdout
    res = invoke("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"netsim {api.version()}"
    assert invoke("run", "-h").exit_code == 0


def test_init_writes_a_scenario_that_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("init", "mine")
    assert res.exit_code == 0, res.output
    text = (tmp_path / "mine.toml").read_text()
    assert text.count("#") > 20  # commented
    assert invoke("init", "mine").exit_code == 2  # never overwritten silently
    res = invoke("run", "mine", *SMALL, "--json")  # found by name in the working directory
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)  # stdout holds only the JSON; messages went to stderr
    assert summary["scenario"] == "mine" and summary["sim_time"] == 12.0
    assert "wrote runs/mine-gsgd" in res.stderr


def test_init_name_with_a_folder_writes_into_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("init", "scenarios/mine.toml")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "scenarios" / "mine.toml").is_file() and not (
        tmp_path / "mine.toml"
    ).exists()
    assert 'name = "mine"' in (tmp_path / "scenarios" / "mine.toml").read_text()


def test_default_folders_are_numbered(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert invoke("run", "quickstart", *SMALL, "-a", "asgd").exit_code == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "quickstart-asgd",
        "quickstart-asgd-2",
    ]


def test_progress_on_stderr_results_on_stdout(tmp_path):
    res = invoke("run", "quickstart", *SMALL, "--set", "run.eval_every=0", "--out", tmp_path / "r")
    assert res.exit_code == 0, res.output
    assert "100%" in res.stderr and "100%" not in res.stdout
    # eval_every = 0: the only evaluation is the initial one, and the progress says so
    assert "loss=- (not evaluated since t = 0" in res.stderr
    assert "quickstart (seed 1)" in res.stdout


def test_an_auto_run_says_it_is_choosing_the_grouping(tmp_path):
    res = invoke(
        "run",
        "quickstart",
        *SMALL,
        "--set",
        'algorithms.gsgd.grouping="auto"',
        "--set",
        "algorithms.gsgd.probe_rounds=1",  # one probe round: measured in 4.8 s, within the 12 s run
        "--out",
        tmp_path / "r",
    )
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    race = [i for i, line in enumerate(lines) if "gsgd: choosing the grouping: rung" in line]
    # three rungs, or four where the pilots still sit on their plateau at T/4 (the look)
    n = len(race)
    assert n in (3, 4) and "rung 1 of 3" in lines[race[0]] and f"rung {n} of {n}" in lines[race[-1]]
    assert race[-1] < next(i for i, line in enumerate(lines) if "100%" in line)  # before training
    # after the run, one line says what it picked, as summary.json records it
    g = json.loads((tmp_path / "r" / "summary.json").read_text())["grouping"]
    picked = f"gsgd: grouping auto picked {g['recommended']} (K = {g['k']}), η = {g['lr']:.4g}"
    assert sum(picked in line for line in lines) == 1
    assert "did not see" not in res.stderr  # quickstart has no timed event


def test_an_auto_run_names_the_events_its_race_did_not_see(tmp_path):
    res = invoke(
        "run",
        "quickstart",
        *SMALL,
        "--set",
        'algorithms.gsgd.grouping="auto"',
        "--set",
        "algorithms.gsgd.probe_rounds=1",
        "--set",
        'events=[{time = 9.0, kind = "slowdown", worker = [0], factor = 2.0}]',
        "--out",
        tmp_path / "r",
    )
    assert res.exit_code == 0, res.output
    assert "it ran to 6 s and did not see slowdown ×2 of worker 0 at 9 s" in res.stderr


def test_progress_line_with_max_updates(tmp_path):
    res = invoke(
        "run",
        "quickstart",
        "--no-live",
        "--set",
        "run.until=1e6",
        "--set",
        "run.max_updates=30",
        "--out",
        tmp_path,
    )
    assert res.exit_code == 0, res.output
    assert "100%" in res.stderr and "updates=30" in res.stderr


def test_compare_progress_names_the_rule_of_how_many(tmp_path):
    res = invoke("compare", "quickstart", "-a", "ssgd,asgd", *SMALL, "--out", tmp_path)
    assert res.exit_code == 0, res.output
    assert "[1/2] ssgd" in res.stderr and "[2/2] asgd" in res.stderr


def test_rerun_command(tmp_path):
    assert (
        invoke("run", "quickstart", *SMALL, "--seed", "4", "--out", tmp_path / "a").exit_code == 0
    )
    res = invoke("rerun", tmp_path / "a", "--no-live", "--out", tmp_path / "b")
    assert res.exit_code == 0, res.output
    assert "identical" in res.stdout
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["overrides"] == ["run.until=12", "run.seed=4"] and "rerun" not in meta["command"]


def test_keys_lists_and_exports_schema(tmp_path):
    res = invoke("keys", "--json")
    assert res.exit_code == 0
    keys = {k["key"]: k for k in json.loads(res.stdout)}
    assert keys["run.until"]["default"] == 100.0 and keys["run.until"]["allowed"] == ">= 1e-09"
    assert keys["run.batch_size"]["allowed"].startswith("> 0")
    assert keys["data.source"]["allowed"] == "digits, mnist, libsvm, synthetic, npz, callable"
    assert keys["workers[].latency"]["unit"] == "s"
    res = invoke("keys", "--schema", tmp_path / "s.json")
    assert res.exit_code == 0
    schema = json.loads((tmp_path / "s.json").read_text())
    assert schema["properties"]["run"]["properties"]["until"]["exclusiveMinimum"] == 0
    assert schema["properties"]["workers"]["type"] == "array"


def test_every_rule_and_run_key_is_listed():
    from dataclasses import fields

    from netsim.config.scenario import RunSpec
    from netsim.rules import RULES

    keys = {k.key for k in api.keys()}
    assert {f"algorithms.{r}.lr" for r in RULES} <= keys
    assert {f"run.{f.name}" for f in fields(RunSpec)} <= keys


def test_written_scenario_round_trips(tmp_path):
    res = invoke("run", "quickstart", *SMALL, "--set", "workers.0.count=3", "--out", tmp_path / "r")
    assert res.exit_code == 0, res.output
    raw = tomllib.loads((tmp_path / "r" / "scenario.toml").read_text())
    assert raw["workers"][0]["count"] == 3 and raw["run"]["until"] == 12


def test_scenarios_and_topologies_by_name():
    res = invoke("scenarios")
    assert res.exit_code == 0 and "gsgd_paper" in res.stdout
    res = invoke("topology", "show", "geo3")
    assert res.exit_code == 0 and "bisection" in res.stdout
    res = invoke("run", "no_such_scenario", "--no-live")
    assert res.exit_code == 2 and "presets:" in res.stderr and "netsim init" in res.stderr


def test_export_trace_command(tmp_path):
    assert invoke("run", "quickstart", *SMALL, "--out", tmp_path / "r").exit_code == 0
    res = invoke("export", tmp_path / "r")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r" / "trace.json").read_text())["traceEvents"]


def test_help_shows_flags_as_flags_and_typos_get_a_suggestion(tmp_path):
    help_text = invoke("run", "-h").stdout
    flags = [line for line in help_text.splitlines() if "--plots" in line or "--no-live" in line]
    assert len(flags) == 2 and not any("<bool>" in line for line in flags)
    res = invoke(
        "run", "quickstart", "--set", "run.untill=50", "--no-live", "--out", tmp_path / "r"
    )
    assert res.exit_code == 2 and "did you mean run.until?" in res.output


def test_a_finished_run_leaves_no_lock_file(tmp_path):
    res = invoke("run", "quickstart", *SMALL, "--out", tmp_path / "r")
    assert res.exit_code == 0 and not (tmp_path / "r" / ".netsim.lock").exists()
    again = invoke("run", "quickstart", *SMALL, "--out", tmp_path / "r", "--overwrite")
    assert again.exit_code == 0 and not (tmp_path / "r" / ".netsim.lock").exists()


def test_group_answers_in_json_with_a_short_jobs_option():
    res = invoke("group", "quickstart", "--set", "run.until=40", "-j", "1", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["recommended"] == data["candidates"][0]["name"] and data["lr"] > 0
    quick = json.loads(invoke("group", "quickstart", "--quick", "--json").stdout)
    assert quick["chosen"]["k"] == len(quick["chosen"]["groups"]) and quick["ranking"]


def test_scenarios_lists_descriptions():
    res = invoke("scenarios")
    assert res.exit_code == 0 and "Digits odd/even" in res.stdout


def test_an_interval_with_one_end_unknown_is_never_half_empty():
    import math

    from netsim.results.render import _interval_text

    assert _interval_text(123.8, math.inf) == "≥ 123.8"
    assert _interval_text(math.nan, 4.0) == "≤ 4" and _interval_text(math.inf, math.nan) == "—"


def test_rerun_of_a_compared_run_goes_beside_the_compare_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cmp = tmp_path / "cmp"
    assert invoke("compare", "quickstart", *SMALL, "-a", "ssgd,asgd", "--out", cmp).exit_code == 0
    res = invoke("rerun", cmp / "asgd", "--no-live")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cmp-asgd-rerun" / "summary.json").is_file() and not (
        cmp / "asgd-rerun"
    ).exists()


def test_errors_say_how_to_fix(tmp_path):
    res = invoke("run", "quickstart", "-a", "backup", "--no-live", "--out", tmp_path / "r")
    assert res.exit_code == 2 and "add an [algorithms.backup] table with its lr" in res.output
    args = ["sweep", "quickstart", "--grid", "run.seed=1,2", "--set", "run.until=10", "--no-live"]
    assert invoke(*args, "--out", tmp_path / "s").exit_code == 0
    again = invoke(*args, "--out", tmp_path / "s")
    assert again.exit_code == 2 and "pass --resume to finish it" in again.output


def test_rerun_draws_figures_and_sweep_takes_a_window(tmp_path):
    run = tmp_path / "r"
    assert invoke("run", "quickstart", *SMALL, "--out", run).exit_code == 0
    again = invoke("rerun", run, "--no-live", "--plots", "--out", tmp_path / "again")
    assert again.exit_code == 0 and (tmp_path / "again" / "plots" / "loss_vs_time.png").is_file()
    res = invoke(
        "sweep",
        "quickstart",
        "--grid",
        "run.seed=1,2",
        "--set",
        "run.until=10",
        "--no-live",
        "--plots",
        "--window",
        "0,5",
        "--out",
        tmp_path / "s",
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s" / "plots").is_dir()
    bad = invoke(
        "sweep", "quickstart", "--grid", "run.seed=1,2", "--window", "5,1", "--out", tmp_path / "t"
    )
    assert bad.exit_code == 2


def test_a_run_without_an_update_says_so(tmp_path):
    """quickstart's fastest worker takes about 1 s a gradient: nothing is applied in 0.5 s."""
    res = invoke(
        "run", "quickstart", "--no-live", "--set", "run.until=0.5", "--out", tmp_path / "r"
    )
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["updates"] == 0
    assert "gsgd: no update within 0.5 s: the model is the initial one" in res.stderr
    res = invoke("run", "quickstart", *SMALL, "--out", tmp_path / "s")
    assert "no update" not in res.stderr


def test_a_run_whose_loss_grew_says_so(tmp_path):
    """Logistic regression from w = 0 starts at ln 2; SSGD at η = 500 overshoots at every step
    and ends far above it, short of the 10⁶ × that would make it ``diverged``."""
    res = invoke(
        "run", "quickstart", "-a", "ssgd", "--set", "algorithms.ssgd.lr=500", *SMALL[:2],
        "--no-live", "--out", tmp_path / "r",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["final_loss"] > 10 * math.log(2)
    assert "ssgd: the loss ended above its start (0.69315 → " in res.stderr
    assert "); a smaller lr (500 here) may help" in summary["warning"]
    res = invoke("run", "quickstart", "-a", "ssgd", *SMALL, "--out", tmp_path / "s")
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["final_loss"] < math.log(2) and "warning" not in summary
    assert "ended above its start" not in res.stderr
    res = invoke(
        "sweep", "quickstart", "--grid", "algorithms.gsgd.lr=0.1,500", *SMALL, "--jobs", "1",
        "--out", tmp_path / "w",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "p001: the loss ended above its start (0.69315 → " in res.stderr
    assert "p000:" not in res.stderr


def test_a_list_flag_given_empty_is_refused(tmp_path):
    for args in (
        ("compare", "quickstart", "--algorithms", ""),
        ("compare", "quickstart", "-a", " , "),
    ):
        res = invoke(*args, "--out", tmp_path / "c")
        assert res.exit_code == 2 and "--algorithms" in res.stderr and "names nothing" in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "c").exists()


def test_ctrl_c_while_the_app_loads_is_one_line_and_exit_130(monkeypatch, capsys):
    """The `netsim` script loads the app itself: an interrupt during its imports (a few
    tenths of a second) is reported as any other, not as a traceback."""
    real_import = builtins.__import__

    def interrupted(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "cli" and level == 1:
            raise KeyboardInterrupt
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(SystemExit) as stop:
            entry.main()
        # the signals held while the app loads are not held after it (children inherit that)
        assert not signal.pthread_sigmask(signal.SIG_BLOCK, []) & {signal.SIGINT, signal.SIGTERM}
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert stop.value.code == 130
    assert capsys.readouterr().err == "error: interrupted while starting\n"


def test_ctrl_c_that_typer_turns_into_status_130_is_said(monkeypatch, capsys):
    """Ctrl-C in a command before its own handling (here: while the scenario loads) ends it with
    status 130, which typer gives without a word; the app says it was interrupted."""

    def load(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(netsim.cli.runs, "load", load)
    monkeypatch.setattr(sys, "argv", ["netsim"])
    with pytest.raises(SystemExit) as stop:
        app(["run", "quickstart", "--no-live"], prog_name="netsim")
    assert stop.value.code == 130
    assert capsys.readouterr().err == (
        "error: interrupted before the run started: nothing was written\n"
    )


def test_an_interrupt_inside_a_c_extensions_import_is_said(monkeypatch, capsys):
    """A signal that lands in a C extension's import (scipy's, loaded by a command) comes out
    as ``ImportError: initialization failed``: after the handler has fired, that is an
    interrupt (130, one line), not a traceback."""
    from netsim import signals

    fired = [True]

    def load(*args, **kwargs):
        monkeypatch.setitem(signals._state, "signalled", fired[0])  # the handler fired or not
        raise ImportError("initialization failed")

    monkeypatch.setattr(netsim.cli.runs, "load", load)
    with pytest.raises(SystemExit) as stop:
        app(["run", "quickstart", "--no-live"], prog_name="netsim")
    assert stop.value.code == 130
    assert capsys.readouterr().err == (
        "error: interrupted before the run started: nothing was written\n"
    )
    fired[0] = False
    with pytest.raises(ImportError):  # without a signal, an import error is not hidden
        app(["run", "quickstart", "--no-live"], prog_name="netsim")
