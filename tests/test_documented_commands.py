"""Every ``netsim …`` command shown in a code block of README.md or docs/*.md runs (exit 0),
as written, on a shortened horizon.

The commands run in order, page by page, in a scratch folder laid out like a checkout
beside ``../shared`` (so ``scenarios/…``, ``../shared/data`` and a folder written by an
earlier command of the page resolve as they do for a user). ``DATA`` in a command stands
for the data folder; ``[--…]`` parts are optional and left out. A command that trains a
scenario gets ``--set run.until=…`` (and ``--no-live``); nothing else is changed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
TRAINS = {"run", "compare", "sweep", "group", "real"}
"""Subcommands that train a scenario: they get the shortened horizon."""
UNTIL = {"real": 2.0, "group": 20.0}
"""Horizon per subcommand (scenario time units); others: :data:`DEFAULT_UNTIL`."""
DEFAULT_UNTIL = 5.0
AUTO_UNTIL = 40.0
"""Horizon of a comparison with ``--groupings auto``: its GSGD measures the workers first
(5 probe rounds of the slowest: 15 units on the paper's cluster), then races and trains."""
READERS = {"plot", "report", "predict", "rerun", "export"}
"""Subcommands that read a folder an earlier command wrote."""


def documented_commands(page: Path) -> list[str]:
    """The ``netsim …`` commands of *page*'s code blocks (fenced or indented), with their
    continuation lines joined and a trailing comment removed; ``pip install … && netsim …``
    keeps only the netsim part (the package is installed already)."""
    out, fenced = [], False
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            text = line.strip()
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            text = text.split("&&")[-1].strip() if "&& netsim " in text else text
            if text.startswith("netsim "):
                out.append(re.sub(r"\s+#.*$", "", text))
        i += 1
    return out


def prepared(command: str, data: Path) -> list[str]:
    """*command* as argv, with DATA filled in, optional ``[--…]`` parts left out and, for a
    training subcommand, the shortened horizon."""
    command = re.sub(r"\s+\[--[^\]]*\]", "", command).replace("DATA", str(data))
    argv = shlex.split(command)
    sub = argv[1]
    if sub in TRAINS:
        auto = "--groupings" in argv and "auto" in argv[argv.index("--groupings") + 1].split(",")
        until = AUTO_UNTIL if auto else UNTIL.get(sub, DEFAULT_UNTIL)
        argv += ["--set", f"run.until={until:g}"]
        if sub in ("run", "compare", "sweep"):
            argv.append("--no-live")
    return argv


CASES = [
    (page, k, command) for page in PAGES for k, command in enumerate(documented_commands(page))
]


def test_the_pages_show_commands():
    assert len(CASES) >= 10, "the command extractor found almost nothing: is it broken?"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A scratch folder holding ``work/`` (the checkout's scenarios and topologies) beside
    ``shared/`` (the data, when this machine has it)."""
    base = tmp_path_factory.mktemp("docs")
    work = base / "work"
    work.mkdir()
    for name in ("scenarios", "topologies"):
        (work / name).symlink_to(ROOT / name)
    if (SHARED / "data").is_dir():
        (base / "shared").mkdir()
        (base / "shared" / "data").symlink_to(SHARED / "data")
    return work


def _torch_scenario(checkout: Path, arg: str) -> bool:
    """Whether *arg* names a scenario (a file, or a preset of scenarios/) of a torch model."""
    for path in (checkout / arg, ROOT / "scenarios" / f"{arg}.toml"):
        try:
            if path.is_file() and 'backend = "torch"' in path.read_text(encoding="utf-8"):
                return True
        except (OSError, UnicodeDecodeError):
            pass
    return False


@pytest.mark.parametrize(
    "page,k,command",
    CASES,
    ids=[f"{page.name}-{k}" for page, k, _ in CASES],
)
def test_documented_command_runs(page, k, command, checkout):
    needs_data = "../shared/data" in command or "DATA" in command
    if needs_data and not (SHARED / "data").is_dir():
        pytest.skip(f"{page.name} command needs the data in {SHARED / 'data'}, absent here")
    argv = prepared(command, checkout.parent / "shared" / "data")
    if importlib.util.find_spec("torch") is None:
        if argv[1] == "real":
            pytest.skip("netsim real needs PyTorch, not installed here")
        if any(_torch_scenario(checkout, arg) for arg in argv[2:]):
            pytest.skip("the command's scenario has a PyTorch model; PyTorch is not installed here")
    if argv[1] in READERS and not (checkout / argv[2]).exists():
        pytest.skip(f"{argv[2]} is written by an earlier command of the page, skipped here")
    env = {**os.environ, "COLUMNS": "200", "NETSIM_NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), *argv[1:]],
        cwd=checkout,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if argv[1] == "real" and proc.returncode == 1 and "did not keep the time scale" in proc.stderr:
        pytest.skip("this machine is too busy to keep the real run's time scale (its pace check)")
    assert proc.returncode == 0, (
        f"{page.name}: `{command}` exited {proc.returncode}\n{proc.stdout[-2000:]}\n"
        f"{proc.stderr[-3000:]}"
    )
