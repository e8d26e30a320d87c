"""The command line: files written, determinism, one-line errors with exit status 2."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli import app

runner = CliRunner()
QUICK = str(ROOT / "scenarios" / "quickstart.toml")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_run_writes_contract_files(tmp_path):
    res = invoke("run", QUICK, "--no-live", "--set", "run.until=30", "--out", tmp_path)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    for key in (
        "algorithm",
        "seed",
        "sim_time",
        "updates",
        "final_loss",
        "final_test_accuracy",
        "staleness_per_gradient",
        "staleness_per_update",
        "idle_pct",
        "label",
        "workers",
        "groups",
        "wall_s",
    ):
        assert key in summary
    assert set(summary["staleness_per_gradient"]) == {"mean", "p50", "p95", "max"}
    assert set(summary["workers"][0]) >= {
        "id",
        "group",
        "gradients_applied",
        "compute_s",
        "comm_s",
        "idle_s",
    }
    assert set(summary["groups"][0]) >= {"id", "members", "updates"}
    assert summary["sim_time"] == 30.0
    curve = (tmp_path / "curve.csv").read_text().splitlines()
    assert curve[0] == "update,sim_time,loss,test_accuracy"
    updates = (tmp_path / "updates.csv").read_text().splitlines()
    assert len(updates) - 1 == sum(w["gradients_applied"] for w in summary["workers"])


def test_same_seed_same_bytes(tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}"
        res = invoke("run", QUICK, "--no-live", "--set", "run.until=40", "--seed", 7, "--out", out)
        assert res.exit_code == 0, res.output
        outs.append(out)

    def strip(p):
        data = json.loads((p / "summary.json").read_text())
        data.pop("wall_s")
        return data

    assert strip(outs[0]) == strip(outs[1])
    a, b = ((p / "summary.json").read_text().splitlines() for p in outs)
    assert [l for l in a if '"wall_s"' not in l] == [l for l in b if '"wall_s"' not in l]
    for name in ("curve.csv", "updates.csv"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()


def test_compare_writes_one_folder_per_rule(tmp_path):
    res = invoke(
        "compare",
        QUICK,
        "--algorithms",
        "ssgd,asgd,gsgd",
        "--no-live",
        "--set",
        "run.until=20",
        "--out",
        tmp_path,
    )
    assert res.exit_code == 0, res.output
    summaries = json.loads((tmp_path / "compare.json").read_text())
    assert [s["algorithm"] for s in summaries] == ["ssgd", "asgd", "gsgd"]
    for name in ("ssgd", "asgd", "gsgd"):
        assert (tmp_path / name / "summary.json").exists()
        assert name in res.output


def test_validate_ok():
    res = invoke("validate", QUICK)
    assert res.exit_code == 0
    assert "ok" in res.output


BAD = [
    ("[run]\nuntill = 5\n", "run.untill", "unknown key"),
    ('[run]\nuntil = "long"\n', "run.until", "expected a number"),
    ("[run]\nuntil = -5\n", "run.until", "> 0"),
    ('[data]\nsource = "cifar"\n', "data.source", "allowed: digits, mnist, libsvm, synthetic"),
    ("[[workers]]\ncount = 2\ncompute = 0\n", "workers[0].compute", "> 0"),
    (
        '[[workers]]\ncount = 2\ncompute = { dist = "exponential", mean = -1 }\n',
        "workers[0].compute.mean",
        "> 0",
    ),
    (
        '[[workers]]\ncount = 2\ncompute = { dist = "gamma", k = 1 }\n',
        "workers[0].compute.dist",
        "allowed: constant",
    ),
    ("[[workers]]\ncount = 0\ncompute = 1\n", "workers[0].count", "> 0"),
    ("[algorithms.gsgd]\nlr = 0.1\ngroups = [[0, 1]]\n", "algorithms.gsgd.groups", "partition"),
    (
        "[algorithms.gsgd]\nlr = 0.1\ngroups = [[0, 1], [1, 2]]\n",
        "algorithms.gsgd.groups",
        "partition",
    ),
    (
        '[algorithms.gsgd]\nlr = 0.1\ngroups = [["nosuch"]]\n',
        "algorithms.gsgd.groups",
        "unknown worker class",
    ),
    ("[algorithms.asgd]\nlr = 0\n", "algorithms.asgd.lr", "> 0"),
    ("[algorithms.nosuch]\nlr = 0.1\n", "algorithms.nosuch", "unknown algorithm"),
    ('[model]\nname = "cnn"\n', "model.name", "allowed: logistic, smooth_svm, softmax, mlp"),
    ("[run\n", "(syntax)", "not valid TOML"),
    (
        '[data]\nsource = "digits"\nlabels = "multiclass"\npartition = "dirichlet"\nalpha = 0\n',
        "data.alpha",
        "> 0",
    ),
    (
        '[data]\nsource = "digits"\nlabels = "multiclass"\npartition = "shards"\nclasses_per_worker = 11\n',
        "data.classes_per_worker",
        "10 labels",
    ),
    (
        '[[workers]]\nname = "w"\ncount = 3\ncompute = 1.0\ndata = { labels = [0, 12] }\n',
        "workers[0].data.labels",
        "allowed: 0..1",
    ),
    (
        "[algorithms.asgd]\nlr = 0.1\nmomentum = 1.0\n",
        "algorithms.asgd.momentum",
        "0 <= momentum < 1",
    ),
    (
        '[algorithms.asgd]\nlr = 0.1\nlr_schedule = "step"\nlr_decay = 0.5\nlr_step = -2\n',
        "algorithms.asgd.lr_step",
        "> 0",
    ),
]


@pytest.mark.parametrize("command", ["validate", "run"])
def test_partition_leaving_a_worker_empty_exits_2(tmp_path, command):
    path = tmp_path / "bad.toml"
    path.write_text(
        scenario_text('[data]\nsource = "digits"\npartition = "dirichlet"\nalpha = 0.0001\n')
    )
    res = invoke(
        command, path, *(["--no-live", "--out", tmp_path / "out"] if command == "run" else [])
    )
    assert res.exit_code == 2, res.output
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "data.partition" in lines[0] and "no rows" in lines[0], res.stderr


def scenario_text(extra: str) -> str:
    """A valid scenario with *extra* TOML merged in (later tables win)."""
    base = {
        "run": '[run]\nseed = 1\nalgorithm = "asgd"\nuntil = 5.0\n',
        "data": '[data]\nsource = "digits"\n',
        "model": '[model]\nname = "logistic"\n',
        "workers": '[[workers]]\nname = "w"\ncount = 3\ncompute = 1.0\n',
        "algorithms": "[algorithms.asgd]\nlr = 0.1\n[algorithms.gsgd]\nlr = 0.1\n",
    }
    head = extra.split("\n", 1)[0].strip("[]").split(".")[0].strip("[]")
    for key in list(base):
        if head.startswith(key):
            if key == "algorithms":
                base[key] = (
                    "[algorithms.asgd]\nlr = 0.1\n" if "algorithms.asgd" not in extra else ""
                )
                base[key] += (
                    "[algorithms.gsgd]\nlr = 0.1\n" if "algorithms.gsgd" not in extra else ""
                )
                extra = base[key] + extra
            base[key] = ""
    return "".join(base.values()) + extra


@pytest.mark.parametrize("extra,key,allowed", BAD)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_input_one_line_exit_2(tmp_path, extra, key, allowed, command):
    path = tmp_path / "bad.toml"
    path.write_text(scenario_text(extra))
    keep = tmp_path / "out" / "previous.txt"
    keep.parent.mkdir()
    keep.write_text("earlier results")
    args = [command, path] + (["--no-live", "--out", tmp_path / "out"] if command == "run" else [])
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, res.stderr
    assert str(path) in lines[0] and key in lines[0] and allowed in lines[0]
    assert "Traceback" not in res.output + res.stderr
    assert keep.read_text() == "earlier results"


def test_missing_data_dir_exit_2(tmp_path, monkeypatch):
    monkeypatch.delenv("NETSIM_DATA_DIR", raising=False)
    path = tmp_path / "mnist.toml"
    path.write_text(scenario_text('[data]\nsource = "mnist"\n'))
    res = invoke(
        "run", path, "--no-live", "--out", tmp_path / "out", "--data-dir", tmp_path / "empty"
    )
    assert res.exit_code == 2
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert (
        len(lines) == 1 and "train-images-idx3-ubyte" in lines[0] and "NETSIM_DATA_DIR" in lines[0]
    )


def test_unknown_override_key_exit_2():
    res = invoke("run", QUICK, "--no-live", "--set", "run.speed=3")
    assert res.exit_code == 2
    assert "run.speed" in res.stderr


def test_divergence_keeps_files(tmp_path):
    res = invoke(
        "run",
        QUICK,
        "--no-live",
        "-a",
        "asgd",
        "--set",
        "algorithms.asgd.lr=1e300",
        "--set",
        "run.until=50",
        "--out",
        tmp_path,
    )
    assert res.exit_code == 1
    assert "non-finite" in res.stderr and "update" in res.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "diverged"
    assert (tmp_path / "curve.csv").exists() and (tmp_path / "updates.csv").exists()


def test_error_text_with_brackets_is_printed_whole(tmp_path):
    # messages quote TOML tables such as [network]; rich must not take them for markup
    path = tmp_path / "s.toml"
    path.write_text(
        scenario_text('[[workers]]\nname = "w"\ncount = 2\ncompute = 1.0\nlatency = 0.1\n')
        + '[network]\ntopology = "star16"\n'
    )
    res = invoke("validate", path)
    assert res.exit_code == 2
    assert "without a [network] table" in res.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("run", QUICK, "--no-live", "-o", ""),
        ("run", QUICK, "--data-dir", ""),
        ("export", "quickstart", "-o", ""),
    ],
)
def test_an_empty_path_option_is_refused_not_taken_as_the_current_folder(
    tmp_path, monkeypatch, args
):
    """``-o "$UNSET"`` would have written the results into the current folder."""
    monkeypatch.chdir(tmp_path)
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert "empty path is not allowed" in " ".join(res.stderr.split())
    assert list(tmp_path.iterdir()) == []


def test_a_piped_table_of_many_classes_is_whole(tmp_path):
    """To a pipe (not a terminal) the results table is printed whole, however wide: eight
    worker classes make it wider than any console default, and no cell may be folded."""
    classes = "".join(
        f'[[workers]]\nname = "class{k}"\ncount = 2\ncompute = {1 + k / 4}\n\n' for k in range(8)
    )
    path = tmp_path / "many.toml"
    path.write_text(
        '[run]\nseed = 1\nalgorithm = "asgd"\nuntil = 20.0\nbatch_size = 16\n\n'
        f"{classes}[algorithms.asgd]\nlr = 0.05\n"
    )
    res = invoke("run", path, "--no-live", "--out", tmp_path / "out")
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    row = next(line for line in res.stdout.splitlines() if line.startswith("│ asgd "))
    cells = [c.strip() for c in row.strip("│").split("│")]
    shares = "/".join(f"{100 * x:.0f}" for x in summary["bias"]["gradient_share_by_class"].values())
    assert shares.count("/") == 7 and shares in cells
    assert cells[:3] == ["asgd", "16", str(summary["updates"])]
    assert len(row) > 160  # wider than the console's default for a pipe


COMMANDS = (
    "run real predict calibrate rerun compare plot report export sweep group validate init "
    "keys scenarios"
).split()


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS), ["topology", "show"]])
def test_help_names_values_by_what_they_are(command):
    """Help shows a value by its meaning (``KEY=VALUE``, ``DIR``, ``RULES``), never by its
    Python type (``<list[str]>``, ``<path>``), and a flag with nothing after it."""
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "160"})
    assert res.exit_code == 0, res.output
    types = {"<str>", "<int>", "<float>", "<bool>", "<path>", "<list[str]>", "<list[Path]>"}
    assert not [t for t in types if t in res.stdout], res.stdout
    if command == ["sweep"]:
        for shown in ("KEY=V1,V2,...", "KEY=VALUE", "SCENARIO", "DIR", "START,END", "LOSS"):
            assert shown in res.stdout, shown
