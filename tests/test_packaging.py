"""The wheel: every subpackage, the scenario and topology presets as package data, and the
`netsim` command working from the unpacked wheel in a directory outside the repository."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, SHARED_DATA

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "netsim").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    mapped = PYPROJECT["tool"]["setuptools"]["package-dir"]
    assert mapped == {
        "netsim.presets.scenarios": "scenarios",
        "netsim.presets.topologies": "topologies",
    }


def _build_wheel(out: Path) -> Path:
    """``pip wheel .`` offline-friendly: without build isolation when this Python can build wheels."""
    try:
        import wheel  # noqa: F401  (setuptools < 70.1 needs it for bdist_wheel)

        isolation = ["--no-build-isolation"]
    except ImportError:
        import setuptools

        major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
        isolation = ["--no-build-isolation"] if (major, minor) >= (70, 1) else []
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        str(ROOT),
        "--no-deps",
        "-q",
        "-w",
        str(out),
        *isolation,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        if re.search(
            r"Could not find a version|No matching distribution|Network is unreachable", done.stderr
        ):
            pytest.skip(
                f"cannot fetch the build backend offline: {done.stderr.strip().splitlines()[-1]}"
            )
        raise AssertionError(done.stderr)
    return next(out.glob("netsim-*.whl"))


@pytest.fixture(scope="module")
def wheel_file(tmp_path_factory):
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_holds_the_presets(wheel_file):
    names = set(zipfile.ZipFile(wheel_file).namelist())
    for f in (ROOT / "scenarios").glob("*.toml"):
        assert f"netsim/presets/scenarios/{f.name}" in names
    for f in (ROOT / "topologies").glob("*.toml"):
        assert f"netsim/presets/topologies/{f.name}" in names
    assert "netsim/presets/__init__.py" in names and "netsim/cli/__init__.py" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "netsim = netsim.entry:main" in zipfile.ZipFile(wheel_file).read(entry).decode()


DRIVER = """
import json, sys
from typer.testing import CliRunner
import netsim
from netsim.cli import app
out = {"__file__": netsim.__file__}
for args in json.loads(sys.argv[1]):
    res = CliRunner().invoke(app, args)
    out[" ".join(args)] = [res.exit_code, res.stdout, res.stderr]
print(json.dumps(out))
"""


def test_command_from_the_unpacked_wheel_elsewhere(wheel_file, tmp_path):
    """One subprocess (imports are slow) runs the commands in a folder outside the repository."""
    site, work = tmp_path / "site", tmp_path / "elsewhere"
    zipfile.ZipFile(wheel_file).extractall(site)
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("NETSIM_DATA_DIR", None)
    mnist = (SHARED_DATA / "mnist").is_dir()
    commands = [
        ["topology", "show", "geo3"],
        ["topology", "list"],
        ["init", "mine"],
        ["keys"],
        ["run", "gsgd_paper", "--no-live", "--set", "run.until=4"],
    ]
    if mnist:
        commands.append(
            [
                "run",
                "gsgd_paper",
                "--no-live",
                "--set",
                "run.until=4",
                "--data-dir",
                str(SHARED_DATA),
            ]
        )
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert res.pop("__file__").startswith(str(site))  # the wheel's netsim, not the checkout's
    code, out, err = res["topology show geo3"]
    assert code == 0 and "bisection" in out, err
    assert "geo3" in res["topology list"][1]
    assert res["init mine"][0] == 0 and (work / "mine.toml").is_file()
    assert "run.until" in res["keys"][1]
    code, out, err = res["run gsgd_paper --no-live --set run.until=4"]
    assert code == 2 and "NETSIM_DATA_DIR" in err  # the error says how to get the data
    if mnist:
        code, out, err = res[" ".join(commands[-1])]
        assert code == 0, err
        assert (work / "runs" / "gsgd_paper-gsgd" / "scenario.toml").is_file()
