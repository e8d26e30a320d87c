"""The wheel: every subpackage, the scenario and topology presets as package data, and the
`netsim` command working from the unpacked wheel in a directory outside the repository."""
from __future__ import annotations

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
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "netsim").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    mapped = PYPROJECT["tool"]["setuptools"]["package-dir"]
    assert mapped == {"netsim.presets.scenarios": "scenarios", "netsim.presets.topologies": "topologies"}


def _build_wheel(out: Path) -> Path:
    """``pip wheel .`` offline-friendly: without build isolation when this Python can build wheels."""
    try:
        import wheel  # noqa: F401  (setuptools < 70.1 needs it for bdist_wheel)
        isolation = ["--no-build-isolation"]
    except ImportError:
        import setuptools
        major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
        isolation = ["--no-build-isolation"] if (major, minor) >= (70, 1) else []
    cmd = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out), *isolation]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        if re.search(r"Could not find a version|No matching distribution|Network is unreachable", done.stderr):
            pytest.skip(f"cannot fetch the build backend offline: {done.stderr.strip().splitlines()[-1]}")
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
    assert "netsim/presets/__init__.py" in names and "netsim/cli.py" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "netsim = netsim.cli:app" in zipfile.ZipFile(wheel_file).read(entry).decode()


def test_command_from_the_unpacked_wheel_elsewhere(wheel_file, tmp_path):
    site, work = tmp_path / "site", tmp_path / "elsewhere"
    zipfile.ZipFile(wheel_file).extractall(site)
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("NETSIM_DATA_DIR", None)

    def netsim(*args):
        code = "import sys; from netsim.cli import app; sys.argv[0] = 'netsim'; app()"
        return subprocess.run([sys.executable, "-c", code, *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=120)

    where = subprocess.run([sys.executable, "-c", "import netsim; print(netsim.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True)
    assert where.stdout.strip().startswith(str(site))
    res = netsim("topology", "show", "geo3")
    assert res.returncode == 0 and "bisection" in res.stdout, res.stderr
    assert "geo3" in netsim("topology", "list").stdout
    assert netsim("init", "mine").returncode == 0 and (work / "mine.toml").is_file()
    assert "run.until" in netsim("keys").stdout
    res = netsim("run", "gsgd_paper", "--no-live", "--set", "run.until=6")
    assert res.returncode == 2 and "NETSIM_DATA_DIR" in res.stderr  # says how to get the data
    if (SHARED_DATA / "mnist").is_dir():
        res = netsim("run", "gsgd_paper", "--no-live", "--set", "run.until=6", "--data-dir", str(SHARED_DATA))
        assert res.returncode == 0, res.stderr
        assert (work / "runs" / "gsgd_paper-gsgd" / "scenario.toml").is_file()
