"""Bad input: one stderr line naming the file and the key, exit status 2, no traceback.

Each case is a reproducer of a crash, hang or silent acceptance seen before the
input was hardened; the expected message fragments are the key and the bound.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ROOT, base_raw
from mutants import dumps
from typer.testing import CliRunner

from netsim.cli import app
from netsim.config.scenario import MAX_WORKERS, load_scenario
from netsim.errors import ScenarioError
from netsim.params import apply_overrides

runner = CliRunner()
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
FAT = str(ROOT / "scenarios" / "fat_tree_ps.toml")


def refused(args, *fragments, file=None):
    """Run the CLI; assert exit 2, one stderr line naming *file* and every fragment."""
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert str(file or args[1]) in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def write(tmp_path, text, name="s.toml") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# ---------------------------------------------------------------- the file itself


def test_deeply_nested_array(tmp_path):
    path = write(tmp_path, "x = " + "[" * 1000 + "]" * 1000 + "\n")
    refused(["validate", path], "(syntax)", "nested too deeply")


def test_nesting_below_the_parser_limit_is_refused_with_the_key(tmp_path):
    path = write(tmp_path, dumps(base_raw()) + "deep = " + "[" * 100 + "]" * 100 + "\n")
    refused(["validate", path], "deep[0][0]", "nested more than 32 levels")


def test_directory_missing_undecodable_and_invalid_files(tmp_path):
    refused(["validate", tmp_path], "(file)", "is a directory")
    refused(["validate", tmp_path / "nope.toml"], "(file)", "no such file")
    refused(["validate", write(tmp_path, b"name = '\xff'\n")], "(file)", "not UTF-8", "0xff")
    refused(["validate", write(tmp_path, "name = = 1\n")], "(syntax)", "not valid TOML")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    path = write(tmp_path, "name = 'x'\n")
    path.chmod(0)
    refused(["validate", path], "(file)", "cannot be read")


def test_integer_beyond_64_bits(tmp_path):
    path = write(tmp_path, dumps(base_raw(run={"seed": 2**70})))
    refused(["validate", path], "run.seed", "64 bits")


# ---------------------------------------------------------------- sizes and budgets


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("10000000000", f"must be <= {MAX_WORKERS}"),
        ("2147483648", f"must be <= {MAX_WORKERS}"),
        ("1e30", "expected an integer"),
    ],
)
def test_worker_count_bounds(value, fragment):
    refused(["validate", QUICK, "--set", f"workers.0.count={value}"], "workers[0].count", fragment)


def test_total_worker_bound_names_the_class_that_crosses_it(tmp_path):
    raw = base_raw(
        workers=[
            {"name": "a", "count": 600_000, "compute": 1.0},
            {"name": "b", "count": 600_000, "compute": 1.0},
        ]
    )
    refused(
        ["validate", write(tmp_path, dumps(raw))],
        "workers[1].count",
        "1200000 workers",
        "at most 1000000",
    )


def test_worker_count_in_range_validates_fast(tmp_path):
    """A million workers (the bound) is refused only for the data, not by building per-worker state forever."""
    raw = base_raw(workers=[{"name": "a", "count": MAX_WORKERS, "compute": 1.0}])
    refused(
        ["validate", write(tmp_path, dumps(raw))],
        "workers:",
        "1000000 workers but only 1438 training rows",
    )


@pytest.mark.parametrize(
    "sets, key, fragment",
    [
        (["run.eval_every=1e-300"], "run.eval_every", "at most 1e+07"),
        (["workers.0.compute=1e-300"], "workers[0].compute", "at most 1e+08"),
        (
            ['workers.0.compute={dist="exponential", mean=1e-300}'],
            "workers[0].compute",
            "gradient computations",
        ),
        (["run.until=1e-20"], "run.until", "must be >= 1e-09"),
        (["run.until=-5"], "run.until", "must be > 0"),
        (["run.until=1e300", "run.eval_every=0"], "workers[0].compute", "at most 1e+08"),
        (
            ['workers.0.compute={dist="lognormal", median=1.0, sigma=1e300}'],
            "workers[0].compute.sigma",
            "<= 10",
        ),
    ],
)
def test_runs_that_cannot_finish_are_refused(sets, key, fragment):
    args = ["validate", QUICK]
    for s in sets:
        args += ["--set", s]
    refused(args, key, fragment)


def test_max_updates_bounds_a_long_horizon(tmp_path):
    raw = base_raw(run={"algorithm": "asgd", "until": 1e9, "max_updates": 100})
    res = runner.invoke(app, ["validate", str(write(tmp_path, dumps(raw)))])
    assert res.exit_code == 0, res.output


def test_no_live_progress_with_a_tiny_horizon_finishes(tmp_path):
    res = runner.invoke(
        app,
        [
            "run",
            QUICK,
            "--no-live",
            "--set",
            "run.until=1e-9",
            "--set",
            "run.eval_every=0",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.stderr.count(" t=") == 10  # one progress line (on stderr) per tenth of the horizon


# ---------------------------------------------------------------- typed keys deep inside


def test_link_event_with_nested_lists():
    refused(
        [
            "validate",
            FAT,
            "--set",
            'events=[{kind="link", time=1.0, link=[["h0"], ["s0"]], latency=1.0}]',
        ],
        "events[0].link[0]",
        "expected a string or an integer",
    )


@pytest.mark.parametrize(
    "topology, key, fragment",
    [
        ('{builder=["star"]}', "network.topology", "[builder]: must be a string"),
        ("{graphml=5}", "network.topology", "[graphml]: must be a string"),
        ('{builder="star", args={n_hosts=100000000}}', "network.topology", "at most 200000"),
        ('"' + "a" * 300 + '"', "network.topology", "no topology preset or file"),
    ],
)
def test_topology_specs(topology, key, fragment):
    refused(["validate", FAT, "--set", f"network.topology={topology}"], key, fragment)


def test_per_datacenter_counts_must_be_integers():
    refused(
        [
            "validate",
            FAT,
            "--set",
            'network.placement="per_datacenter"',
            "--set",
            'network.counts=["15"]',
        ],
        "network.counts[0]",
        "expected an integer",
    )


# ---------------------------------------------------------------- overrides


def test_override_inside_a_number(tmp_path):
    refused(
        ["validate", QUICK, "--set", "run.until.x=1"], "run.until:", "cannot set 'x' inside 200.0"
    )


def test_override_inside_a_non_table_section(tmp_path):
    text = Path(QUICK).read_text().replace("[run]", "[old_run]")
    path = write(tmp_path, "run = 3\n" + text)
    refused(["validate", path, "--set", "run.seed=1"], "run:", "cannot set 'seed' inside 3")
    refused(["run", path, "--seed", "4", "--no-live"], "run:", "cannot set 'seed' inside 3")


def test_data_dir_with_a_non_table_data(tmp_path):
    path = write(
        tmp_path, 'data = "x"\n' + dumps({k: v for k, v in base_raw().items() if k != "data"})
    )
    refused(
        ["run", path, "--data-dir", tmp_path, "--no-live"], "data:", "cannot set 'dir' inside 'x'"
    )


def test_messages_name_a_key_even_when_it_is_empty(tmp_path):
    refused(["validate", QUICK, "--set", "=5"], "--set '=5'", "the key is empty")
    path = write(tmp_path, dumps({**base_raw(), "": 1}))
    refused(["validate", path], '"": unknown key')


def test_control_characters_are_escaped_into_one_line():
    line = refused(
        [
            "validate",
            QUICK,
            "--set",
            'workers.0.name="a\\nb"',
            "--set",
            'algorithms.gsgd.groups=[["zz"]]',
        ],
        "unknown worker class 'zz'",
    )
    assert "a\\nb" in line


def test_deep_override_value():
    refused(
        ["validate", QUICK, "--set", "description=" + "[" * 500 + "]" * 500],
        "--set description",
        "nested",
    )


def test_apply_overrides_errors_name_the_assignment():
    with pytest.raises(ScenarioError, match="KEY=VALUE"):
        apply_overrides({}, ["no-equals-sign"])
    with pytest.raises(ScenarioError, match=r"workers\.5: '5' is not an index of a list of 1"):
        apply_overrides({"workers": [{}]}, ["workers.5.count=1"])


# ---------------------------------------------------------------- data the model or the workers cannot use


def test_multiclass_labels_with_a_binary_model():
    refused(
        ["validate", QUICK, "--set", 'data.labels="multiclass"'],
        "data.labels",
        "10 classes",
        "needs 2",
    )


def test_more_workers_than_training_rows():
    refused(
        ["validate", QUICK, "--set", "workers.0.count=1437"],
        "workers:",
        "1443 workers but only 1438",
    )


@pytest.mark.parametrize(
    "data, key, fragment",
    [
        ('{source="synthetic", n_samples=1}', "data.n_samples", "must be >= 2"),
        ('{source="synthetic", n_features=0}', "data.n_features", "must be >= 1"),
        ('{source="synthetic", n_samples=10000000, n_features=1000}', "data.n_samples", "400 MB"),
        ('{source="synthetic", n_samples=9}', "workers:", "8 workers but only 7 training rows"),
    ],
)
def test_synthetic_sizes(data, key, fragment):
    refused(["validate", QUICK, "--set", f"data={data}"], key, fragment)


def test_validate_reads_mnist_and_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv("NETSIM_DATA_DIR", raising=False)
    refused(
        ["validate", QUICK, "--set", 'data={source="mnist"}'], "data.dir", "MNIST files", "Download"
    )
    refused(
        ["validate", QUICK, "--set", 'data={source="mnist"}', "--data-dir", tmp_path],
        "data.dir",
        "lacks train-images-idx3-ubyte",
    )


def test_load_scenario_raises_scenario_error_with_the_file(tmp_path):
    path = write(tmp_path, dumps(base_raw(data={"source": "digits", "labels": "multiclass"})))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.file == str(path) and info.value.key == "data.labels"


# ---------------------------------------------------------------- output and result folders


def test_out_that_is_a_file_is_refused_before_running(tmp_path):
    target = write(tmp_path, "not a folder", "out")
    refused(["run", QUICK, "--no-live", "--out", target], "--out", "is a file", file=target)
    refused(
        ["run", QUICK, "--no-live", "--out", target / "sub"],
        "--out",
        f"{target} is a file",
        file=target,
    )


@pytest.mark.parametrize(
    "files, fragment",
    [
        ({"sweep.json": "{}"}, "missing 'points'"),
        ({"sweep.json": "{not json"}, "not readable JSON"),
        ({"sweep.json": '{"points": [{"folder": 3}]}'}, "points[0]"),
        ({"summary.json": "[]"}, "expected a JSON object"),
        ({"summary.json": '{"algorithm": "x"}'}, "missing 'seed'"),
    ],
)
def test_plot_and_report_on_malformed_folders(tmp_path, files, fragment):
    for name, text in files.items():
        write(tmp_path, text, name)
    refused(["plot", tmp_path], fragment, file=tmp_path)
    refused(["report", tmp_path], fragment, file=tmp_path)


def test_plot_on_a_run_folder_with_a_bad_csv_cell(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", QUICK, "--no-live", "--set", "run.until=5", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (out / "curve.csv").write_text("update,sim_time,loss,test_accuracy\n0,zero,1,1\n")
    refused(["plot", out], "curve.csv", "line 2", "sim_time", file=out)


# ---------------------------------------------------------------- paths, sweeps, probes


@pytest.mark.parametrize(
    "data, key, fragment",
    [
        (
            '{source="libsvm", train_file="' + "a" * 300 + '"}',
            "data.train_file",
            "longer than 255 bytes",
        ),
        ('{source="mnist", dir="\\u0000"}', "data.dir", "NUL character"),
    ],
)
def test_data_paths_the_os_cannot_take(data, key, fragment):
    refused(["validate", QUICK, "--set", f"data={data}"], key, fragment)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--seeds", "0"], "--seeds: 0 is not allowed (1..100000)"),
        (["--seeds", "100000000000"], "(1..100000)"),
        (
            [
                "--grid",
                "run.seed=" + ",".join(map(str, range(400))),
                "--grid",
                "run.until=" + ",".join(map(str, range(1, 400))),
            ],
            "159600 runs in the grid",
        ),
        (["--grid", "run.until=" + "[" * 500 + "]" * 500], "nested too deeply"),
    ],
)
def test_sweep_sizes(tmp_path, args, fragment):
    res = runner.invoke(app, ["sweep", QUICK, *args, "--out", str(tmp_path / "sweep"), "--no-live"])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], res.stderr


def test_group_rounds_bound():
    res = runner.invoke(app, ["group", QUICK, "--rounds", "100000000000"])
    assert res.exit_code == 2 and "--rounds" in res.stderr and "1..12500000" in res.stderr, (
        res.output
    )


def test_evaluations_are_budgeted_by_the_data_they_read(tmp_path):
    """1e6 evaluations (run.until / eval_every) pass the count budget, but each reads the
    12,500 × 80 entries of the synthetic data into 10 softmax columns: 1e13 multiply-adds
    in all, above the 5e12 budget. Refused by validate and by run, naming run.eval_every;
    with ten times fewer evaluations (1e12) it validates."""
    raw = base_raw(
        run={"algorithm": "asgd", "until": 1e5, "eval_every": 0.1},
        data={
            "source": "synthetic",
            "n_samples": 12_500,
            "n_features": 80,
            "n_classes": 10,
            "labels": "multiclass",
        },
        model={"name": "softmax"},
    )
    path = write(tmp_path, dumps(raw))
    refused(["validate", str(path)], "run.eval_every", "1e+13 multiply-adds")
    out = tmp_path / "out"
    refused(["run", str(path), "--no-live", "-o", str(out)], "run.eval_every", "at most 5e+12")
    assert not out.exists()
    raw["run"]["eval_every"] = 1.0
    res = runner.invoke(app, ["validate", str(write(tmp_path, dumps(raw)))])
    assert res.exit_code == 0, res.output


def test_evaluations_are_budgeted_by_the_rows_they_read(tmp_path):
    """run.eval_rows = 1,000 evaluates 1,000 rows of each set: 2,000 × 80 entries into 10
    columns, 1.6e6 multiply-adds per evaluation, 1.6e12 for the 1e6 evaluations of the
    refused case above: under the 5e12 budget, so it validates."""
    raw = base_raw(
        run={"algorithm": "asgd", "until": 1e5, "eval_every": 0.1, "eval_rows": 1000},
        data={
            "source": "synthetic",
            "n_samples": 12_500,
            "n_features": 80,
            "n_classes": 10,
            "labels": "multiclass",
        },
        model={"name": "softmax"},
    )
    res = runner.invoke(app, ["validate", str(write(tmp_path, dumps(raw)))])
    assert res.exit_code == 0, res.output
    raw["run"]["eval_rows"] = 10_000  # more than the test set's rows: all of them (1e13 again)
    refused(["validate", str(write(tmp_path, dumps(raw)))], "run.eval_every", "multiply-adds")


def test_slowdown_factors_count_in_the_gradient_budget(tmp_path):
    """A slowdown event's factor multiplies compute times: 1e-300 from t = 1 would make a
    run of endless gradients in no simulated time (a fuzzer's run that never ended). The
    budget integrates each worker's rate between its slowdowns: refused, naming the factor.
    One worker of 1 s over 10 s with factor 1e-7 from t = 1: 1 + 9e7 gradients, under 1e8,
    passes; 1e-8 (9e8) does not."""

    def raw(factor):
        return base_raw(
            run={"algorithm": "asgd", "until": 10.0},
            workers=[{"name": "a", "count": 1, "compute": 1.0}],
            events=[
                {"kind": "crash", "time": 5.0, "worker": 0, "duration": 1.0},
                {"kind": "slowdown", "time": 1.0, "worker": 0, "factor": factor},
            ],
        )

    refused(
        ["validate", str(write(tmp_path, dumps(raw(1e-300))))], "events[1].factor", "at most 1e+08"
    )
    refused(
        ["validate", str(write(tmp_path, dumps(raw(1e-8))))], "events[1].factor", "~9e+08 gradient"
    )
    res = runner.invoke(app, ["validate", str(write(tmp_path, dumps(raw(1e-7))))])
    assert res.exit_code == 0, res.output


# ---------------------------------------------------------------- found by a second, structural fuzzer


def test_a_fifo_or_an_unusable_path_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    refused(["validate", fifo], "not a regular file")
    refused(["validate", "x" * 300 + ".toml"], "not a usable path", file="x" * 100)


def test_damaged_mnist_and_libsvm_files_are_refused(tmp_path):
    """A truncated gzip member (EOFError in gzip), a LIBSVM file with a feature index of 2e9
    (a 16 GB model) or a NaN value: one line naming data.dir (and the damaged file), exit 2."""
    import gzip

    mnist = tmp_path / "mnist"
    mnist.mkdir()
    for name in (
        "train-images-idx3-ubyte",
        "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte",
        "t10k-labels-idx1-ubyte",
    ):
        (mnist / f"{name}.gz").write_bytes(gzip.compress(os.urandom(5000))[:2000])
    raw = base_raw(run={"algorithm": "asgd"}, data={"source": "mnist", "dir": str(mnist)})
    refused(
        ["validate", write(tmp_path, dumps(raw))],
        "data.dir",
        "train-images-idx3-ubyte.gz: damaged or truncated",
    )
    for name, line in (("huge", "-1 2000000000:1"), ("nan", "-1 1:nan")):
        folder = tmp_path / name
        folder.mkdir()
        text = "\n".join(["+1 1:1", line, "+1 3:1", "-1 2:1"] * 3) + "\n"
        (folder / "a9a").write_text(text)
        (folder / "a9a.t").write_text(text)
        raw = base_raw(
            run={"algorithm": "asgd"},
            data={"source": "libsvm", "dir": str(folder)},
            workers=[{"name": "a", "count": 2, "compute": 1.0}],
        )
        refused(
            ["validate", write(tmp_path, dumps(raw), f"{name}.toml")],
            "data.dir",
            "at most 1,000,000" if name == "huge" else "not finite",
        )


def test_a_damaged_run_folder_and_an_out_of_range_dpi(tmp_path):
    from netsim import api

    api.run(api.load(QUICK, {"run.until": 3.0}), out=tmp_path / "run")
    (tmp_path / "run" / "summary.json").write_text("{not json")
    refused(["rerun", tmp_path / "run"], "is not a run's")
    api.run(api.load(QUICK, {"run.until": 3.0}), out=tmp_path / "ok")
    refused(["plot", tmp_path / "ok", "--dpi", "100000"], "dpi must be in 10..1200", file="dpi")


def test_file_system_errors_of_any_command_are_one_line(tmp_path):
    """Through the installed entry point (the app's own call, which CliRunner bypasses): an
    output path below a file or a folder where a file goes prints one line, exit 2."""
    import subprocess
    import sys

    (tmp_path / "plain").write_text("")
    for args in (
        ["keys", "--schema", str(tmp_path)],
        ["init", "ok", "--out", str(tmp_path / "plain" / "x.toml")],
    ):
        res = subprocess.run(
            [sys.executable, "-m", "netsim.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, (
            args,
            res.stderr,
        )
        assert lines[0].startswith("error:"), lines


def test_usage_errors_are_one_line_through_the_script(tmp_path):
    """An option value of the wrong type, a missing argument, an unknown command or option:
    one line naming the option and where to look, exit 2 (typer would draw a box); a group
    called alone still shows its help."""
    import subprocess
    import sys

    cases = (
        (["run", "quickstart", "--seed", "x"], "'--seed'"),
        (["run"], "Missing argument"),
        (["bogus"], "No such command 'bogus'"),
        (["run", "quickstart", "--bogus"], "--bogus"),
    )
    for args, fragment in cases:
        res = subprocess.run(
            [sys.executable, "-m", "netsim.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.returncode == 2 and len(lines) == 1, (args, res.returncode, res.stderr)
        assert lines[0].startswith("error:") and fragment in lines[0] and " -h'" in lines[0], lines
    assert list(tmp_path.iterdir()) == []
    res = subprocess.run(
        [sys.executable, "-m", "netsim.cli", "topology"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "topology [OPTIONS] COMMAND" in res.stdout + res.stderr and "Traceback" not in res.stderr
