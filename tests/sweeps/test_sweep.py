"""Sweeps: grid syntax and expansion, validation before running, resume, local vs Dask."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli import app
from netsim.config.grid import Axis, expand, parse_axis, seed_axis, toml_value
from netsim.errors import ScenarioError
from netsim.params import parse_value
from netsim.sweeps.runner import SweepError, plan_sweep, run_sweep

QUICK = ROOT / "scenarios" / "quickstart.toml"
TINY = ["run.until=12", "run.eval_every=4"]
GROUPINGS = 'algorithms.gsgd.groups=[["fast"],["medium"],["slow"]], [["fast","medium"],["slow"]], [["fast","medium","slow"]]'
runner = CliRunner()


# -- grid syntax and expansion (pure) ------------------------------------------------
@pytest.mark.parametrize(
    "text,key,values",
    [
        ("run.seed=1,2,3", "run.seed", (1, 2, 3)),
        ("run.until=0.5, 10", "run.until", (0.5, 10)),
        ("algorithm=ssgd,asgd,gsgd", "run.algorithm", ("ssgd", "asgd", "gsgd")),
        ("seed=4", "run.seed", (4,)),
        ('model.name="logistic","smooth_svm"', "model.name", ("logistic", "smooth_svm")),
        ("run.batch_size=8;32", "run.batch_size", (8, 32)),
        (
            'algorithms.gsgd.groups=[["fast"],["slow"]], [["fast","slow"]]',
            "algorithms.gsgd.groups",
            ([["fast"], ["slow"]], [["fast", "slow"]]),
        ),
        (
            'workers.0.compute={dist = "constant", value = 1.0}, 2.0',
            "workers.0.compute",
            ({"dist": "constant", "value": 1.0}, 2.0),
        ),
    ],
)
def test_parse_axis(text, key, values):
    axis = parse_axis(text)
    assert axis.key == key and axis.values == values


@pytest.mark.parametrize("text", ["run.seed", "=1,2", "run.seed=", "run..seed=1", "run.seed=1,1"])
def test_parse_axis_rejects(text):
    with pytest.raises(ScenarioError):
        parse_axis(text)


def test_expand_counts_and_order_by_hand():
    points = expand([Axis("a", (1, 2)), Axis("b", ("x", "y", "z"))])
    assert len(points) == 6
    assert [p.index for p in points] == list(range(6))
    assert [tuple(v for _, v in p.values) for p in points] == [
        (1, "x"),
        (1, "y"),
        (1, "z"),
        (2, "x"),
        (2, "y"),
        (2, "z"),
    ]  # first axis slowest
    assert points[4].overrides() == ["a=2", 'b="y"']
    assert len(expand([Axis("a", (1, 2)), Axis("b", (1, 2, 3)), seed_axis(7, 4)])) == 24
    assert expand([])[0].values == ()
    with pytest.raises(ScenarioError, match="twice"):
        expand([Axis("a", (1,)), Axis("a", (2,))])


@pytest.mark.parametrize(
    "value",
    [1, -2.5, 1e-300, 'a "q" b', True, [1, [2.0, "x"]], {"dist": "lognormal", "sigma": 0.1}],
)
def test_toml_value_round_trips(value):
    assert parse_value(toml_value(value)) == value


def test_seeds_make_the_last_axis():
    plan = plan_sweep(QUICK, ["algorithm=ssgd,gsgd"], seeds=3, sets=TINY)
    assert [t.values for t in plan.tasks][:3] == [
        {"run.algorithm": "ssgd", "run.seed": s} for s in (1, 2, 3)
    ]
    assert [t.folder for t in plan.tasks] == [f"p{i:03d}" for i in range(6)]
    assert plan.tasks[4].scenario.run.algorithm == "gsgd" and plan.tasks[4].scenario.run.seed == 2


# -- validation before running ---------------------------------------------------------
def test_every_point_is_validated_before_anything_runs(tmp_path):
    res = runner.invoke(
        app,
        [
            "sweep",
            str(QUICK),
            "--grid",
            "run.until=5,10,-1",
            "--grid",
            "run.seed=1,2",
            "--out",
            str(tmp_path / "out"),
            "--no-live",
        ],
    )
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "run.until" in lines[0] and "grid point 4" in lines[0]
    assert not (tmp_path / "out").exists()


SKEWED = """
[run]
algorithm = "ssgd"
until = 5
[data]
partition = "quantity"
quantity = "power"
exponent = 50.0
[model]
name = "logistic"
[algorithms.ssgd]
lr = 0.1
[[workers]]
name = "w"
count = 2
compute = 1.0
"""


def test_a_seed_whose_partition_leaves_a_worker_empty_is_refused_before_anything_runs(tmp_path):
    """A steep quantity skew over 2 workers leaves one of them without rows on some seeds;
    which ones is found by cutting each seed's data the way a run does (prepare)."""
    from netsim.config.scenario import load_scenario
    from netsim.sim.engine import prepare

    path = tmp_path / "s.toml"
    path.write_text(SKEWED)
    fails = {}
    for seed in range(1, 40):
        try:
            prepare(load_scenario(path, [f"run.seed={seed}"]))
            fails[seed] = False
        except ScenarioError as exc:
            assert exc.key == "data.partition"
            fails[seed] = True
    good, bad = min(s for s, f in fails.items() if not f), min(s for s, f in fails.items() if f)
    res = runner.invoke(
        app,
        [
            "sweep",
            str(path),
            "--grid",
            f"run.seed={good},{bad}",
            "-j",
            "1",
            "--out",
            str(tmp_path / "out"),
            "--no-live",
        ],
    )
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert (
        len(lines) == 1
        and "data.partition" in lines[0]
        and f"grid point 1: run.seed={bad}" in lines[0]
    )
    assert not (tmp_path / "out").exists()
    res = runner.invoke(
        app,
        [
            "sweep",
            str(path),
            "--grid",
            f"run.seed={good}",
            "-j",
            "1",
            "--out",
            str(tmp_path / "ok"),
            "--no-live",
        ],
    )
    assert res.exit_code == 0 and (tmp_path / "ok" / "p000" / "summary.json").is_file()


def test_unknown_grid_key_exit_2(tmp_path):
    res = runner.invoke(
        app, ["sweep", str(QUICK), "--grid", "run.speed=1,2", "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "run.speed" in res.stderr and "unknown key" in res.stderr
    assert not (tmp_path / "o").exists()


def test_a_sweep_with_nothing_to_sweep_is_refused(tmp_path):
    # no --grid and one seed would be one run under another name: refused, nothing written
    res = runner.invoke(app, ["sweep", str(QUICK), "--out", str(tmp_path / "o"), "--no-live"])
    assert res.exit_code == 2 and "--grid" in res.stderr and "netsim run" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    with pytest.raises(ScenarioError, match="nothing to sweep"):
        plan_sweep(QUICK, [], sets=TINY)
    assert len(plan_sweep(QUICK, [], seeds=2, sets=TINY).tasks) == 2  # seeds alone: a sweep


# -- resume ----------------------------------------------------------------------------
def test_resume_skips_finished_points(tmp_path):
    plan = plan_sweep(QUICK, [GROUPINGS, "run.seed=1,2"], sets=TINY)
    done = []

    def interrupt_after_two(n, total, folder, summary, error):
        done.append(folder)
        if len(done) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, tmp_path, workers=1, on_done=interrupt_after_two)
    assert sorted(p.name for p in tmp_path.glob("p*")) == ["p000", "p001"]
    outcome = run_sweep(plan, tmp_path, workers=1, resume=True)
    assert (outcome.executed, outcome.skipped) == (4, 2)
    assert len(outcome.rows) == 6
    again = run_sweep(plan, tmp_path, workers=1, resume=True)
    assert (again.executed, again.skipped) == (0, 6)
    other = plan_sweep(QUICK, ["run.seed=1,2,3"], sets=TINY)
    with pytest.raises(SweepError, match="another sweep"):
        run_sweep(other, tmp_path, workers=1, resume=True)


def test_resume_does_not_reuse_a_compare_folder(tmp_path):
    """--resume reuses a sweep's folder only: a folder holding a compare's results is refused
    (it was taken, and the sweep written beside them), and left as it was."""
    from netsim import api
    from netsim.results.runfolder import OutputError

    api.compare(api.load(QUICK, {"run.until": 3.0}), ["ssgd"], out=tmp_path / "cmp")
    before = sorted(p.name for p in (tmp_path / "cmp").iterdir())
    with pytest.raises(OutputError, match="holds the results of another run"):
        run_sweep(
            plan_sweep(QUICK, ["run.seed=1,2"], sets=TINY), tmp_path / "cmp", workers=1, resume=True
        )
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == before


def test_a_sweep_refused_at_its_folder_prints_one_line_and_no_plan(tmp_path):
    """The plan line ("sweep X: N run(s) into OUT") comes only once the folder is taken: a
    folder holding a run's results gives the refusal alone, one line, exit 2."""
    from netsim import api

    api.run(api.load(QUICK, {"run.until": 3.0}), out=tmp_path / "run")
    res = runner.invoke(
        app,
        ["sweep", str(QUICK), "-o", str(tmp_path / "run"), "-g", "run.seed=1,2"]
        + [a for t in TINY for a in ("--set", t)],
    )
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "holds the results of another run" in lines[0], res.stderr
    assert not (tmp_path / "run" / "sweep.json").exists()


# -- local processes vs Dask -------------------------------------------------------------
def _without_wall(text: str, column: bool) -> list[str]:
    if column:  # sweep.csv: wall_s is the last column
        return [line.rsplit(",", 1)[0] for line in text.splitlines()]
    return [line for line in text.splitlines() if '"wall_s"' not in line]


def test_local_and_dask_sweeps_are_identical(tmp_path):
    distributed = pytest.importorskip("distributed")
    plan = plan_sweep(QUICK, [GROUPINGS, "run.seed=1,2"], sets=TINY)
    local = run_sweep(plan, tmp_path / "local", workers=2)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        dask = run_sweep(plan, tmp_path / "dask", scheduler=cluster.scheduler_address)
        with distributed.Client(
            cluster.scheduler_address
        ) as client:  # the runs went through the scheduler
            prefixes = client.run_on_scheduler(
                lambda dask_scheduler: list(dask_scheduler.task_prefixes)
            )
    assert "netsim-run" in prefixes
    assert local.executed == dask.executed == 6 and not local.failures and not dask.failures
    a, b = ((tmp_path / d / "sweep.csv").read_text() for d in ("local", "dask"))
    assert a.splitlines()[0].endswith(",wall_s") and len(a.splitlines()) == 7
    assert _without_wall(a, True) == _without_wall(b, True)
    assert (tmp_path / "local" / "sweep_summary.csv").read_bytes() == (
        tmp_path / "dask" / "sweep_summary.csv"
    ).read_bytes()
    for task in plan.tasks:
        one, two = tmp_path / "local" / task.folder, tmp_path / "dask" / task.folder
        assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir())
        for f in one.iterdir():
            if f.name == "summary.json":
                assert _without_wall(f.read_text(), False) == _without_wall(
                    (two / f.name).read_text(), False
                )
            elif f.name == "meta.json":  # start time and process differ; what ran must not
                m1, m2 = (json.loads(p.read_text()) for p in (f, two / f.name))
                assert all(
                    m1[k] == m2[k] for k in ("overrides", "seed", "label", "data", "dependencies")
                )
            else:
                assert f.read_bytes() == (two / f.name).read_bytes(), f


# -- command line ----------------------------------------------------------------------
def test_cli_sweep_over_rules(tmp_path):
    out = tmp_path / "s"
    res = runner.invoke(
        app,
        [
            "sweep",
            str(QUICK),
            "--grid",
            "algorithm=ssgd,asgd,gsgd",
            "--set",
            "run.until=12",
            "--workers",
            "1",
            "--no-live",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "3/3 runs done" in res.output
    rows = (out / "sweep.csv").read_text().splitlines()
    assert rows[0].startswith("point,run.algorithm,seed,status")
    assert [r.split(",")[1] for r in rows[1:]] == ["ssgd", "asgd", "gsgd"]
    plan = json.loads((out / "sweep.json").read_text())
    assert [p["values"] for p in plan["points"]] == [
        {"run.algorithm": a} for a in ("ssgd", "asgd", "gsgd")
    ]
    summaries = [json.loads((out / f"p00{i}" / "summary.json").read_text()) for i in range(3)]
    assert [s["algorithm"] for s in summaries] == ["ssgd", "asgd", "gsgd"]
