"""Import rules of the layout: SimPy and rich stay where they belong; only cli.py prints."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "netsim"
SIMPY_OK = {"engine.py", "measure.py", "probe.py", "worker.py", "network.py", "server.py"}
RICH_OK = {"report.py"}
PURE = {"fairshare.py", "aggregate.py", "models.py", "clustering.py", "advisor.py", "topology.py", "blocks.py",
        "timemodels.py", "routing.py"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def modules():
    return sorted(PKG.rglob("*.py"))


def test_simpy_only_in_the_simulation_modules():
    for path in modules():
        if "simpy" in imports(path):
            assert path.name in SIMPY_OK, path


def test_rich_only_in_report():
    for path in modules():
        if "rich" in imports(path):
            assert path.name in RICH_OK, path


def test_pure_modules_do_no_io_and_no_simulation():
    for name in PURE:
        found = imports(PKG / name)
        assert not found & {"simpy", "rich", "typer", "matplotlib", "csv", "json"}, (name, found)


def test_no_print_in_the_package():
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                raise AssertionError(f"{path}:{node.lineno} prints; only cli.py prints")


def test_rules_do_not_touch_simpy():
    for path in (PKG / "rules").glob("*.py"):
        assert "simpy" not in imports(path), path
