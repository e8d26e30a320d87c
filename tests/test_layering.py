"""The package's architecture, asserted: layers import only downward; SimPy, rich and printing stay home."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "netsim"

LAYERS = [
    {"errors", "signals"},  # exceptions that carry a one-line message; signal handling
    {
        "rng",
        "params",
        "presets",
    },  # random streams; TOML tables read with exact errors; shipped presets
    {"net", "workload"},  # the cluster's network; models, data, compute times
    {"grouping"},  # forming groups from measurements (pure)
    {"rules"},  # PS update rules and their pure math
    {"config"},  # scenario files → frozen, validated Scenario
    {"sim"},  # the SimPy emulation: engine, server, workers, records
    {"results", "tuning"},  # run folders, tables, figures, reports; the grouping decision
    {"testbed"},  # real runs over torch.distributed, and the predictions held against them
    {"sweeps", "workflows"},  # grids of runs, executors; one run, compare, real, rerun
    {"api"},  # the one front door
    {"cli"},  # parse, call the API, render
    {"entry"},  # the `netsim` script: loads the app
    {"__main__"},  # `python -m netsim`: the same app
]
LEVEL = {name: i for i, layer in enumerate(LAYERS) for name in layer}
SIMPY_HOMES = {"sim", "net"}
RICH_HOMES = {"results/render.py", "results/grouptable.py", "results/liveview.py"}
"""Modules outside the CLI (``cli/``, which renders and prints) that may import rich."""
PURE = [
    "net/fairshare.py",
    "net/linktable.py",
    "net/routing.py",
    "net/topology.py",
    "rules/aggregation.py",
    "rules/blocks.py",
    "workload/models.py",
    "workload/timemodels.py",
    "grouping/clustering.py",
    "tuning/advisor.py",
    "tuning/candidates.py",
    "tuning/options.py",
    "tuning/scoring.py",
    "tuning/evidence.py",
    "tuning/pick.py",
]


def unit(path: Path) -> str:
    """The layer unit of a module: its subpackage, or its own name at the top."""
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def internal_imports(path: Path) -> set[str]:
    """Units of netsim that *path* imports (relative or absolute)."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(PKG)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel.parts[:-1])[: len(rel.parts) - node.level]
                parts = base + (node.module.split(".") if node.module else [])
                if not parts:
                    found.update(a.name for a in node.names)
                else:
                    found.add(parts[0])
            elif node.module and node.module.split(".")[0] == "netsim":
                parts = node.module.split(".")
                found.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "netsim" and len(parts) > 1:
                    found.add(parts[1])
    return found


def external_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def modules():
    return [p for p in sorted(PKG.rglob("*.py")) if p.relative_to(PKG).parts != ("__init__.py",)]


def test_every_module_belongs_to_a_layer():
    for path in modules():
        assert unit(path) in LEVEL, f"{path} is in no layer of tests/test_layering.py"


def test_imports_point_down_the_layers():
    for path in modules():
        here = LEVEL[unit(path)]
        for other in internal_imports(path):
            assert other in LEVEL, (path, other)
            assert LEVEL[other] < here or other == unit(path), (
                f"{path.relative_to(PKG)} (layer {here}) imports {other} (layer {LEVEL[other]})"
            )


def test_simpy_only_in_the_simulation_and_network():
    for path in modules():
        if "simpy" in external_imports(path):
            assert unit(path) in SIMPY_HOMES, path


def test_rich_only_in_the_renderers():
    for path in modules():
        if "rich" in external_imports(path) or "typer" in external_imports(path):
            assert unit(path) == "cli" or str(path.relative_to(PKG)) in RICH_HOMES, path


def test_pure_modules_do_no_io_and_no_simulation():
    for name in PURE:
        found = external_imports(PKG / name)
        assert not found & {"simpy", "rich", "typer", "matplotlib", "csv", "json"}, (name, found)


def test_no_print_in_the_package():
    for path in modules():
        if unit(path) == "cli":  # the CLI's modules: the only ones that print
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                raise AssertionError(f"{path}:{node.lineno} prints; only the CLI prints")


def test_rules_do_not_touch_simpy():
    for path in (PKG / "rules").glob("*.py"):
        assert "simpy" not in external_imports(path), path


def test_tests_mirror_the_package():
    """Each subpackage with tests has them in tests/<subpackage>/."""
    tests = Path(__file__).resolve().parent
    for sub in (
        "net",
        "workload",
        "grouping",
        "rules",
        "config",
        "sim",
        "results",
        "sweeps",
        "tuning",
        "testbed",
    ):
        assert (tests / sub).is_dir(), f"tests/{sub}/ is missing"


def test_readme_layout_lists_every_module_and_nothing_else():
    readme = (PKG.parent / "README.md").read_text()
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    listed = set()
    for line in block.splitlines():
        names = re.split(r"\s{2,}", line.strip())[0].split() if line.startswith(" ") else []
        listed.update(n for n in names if n.endswith(".py"))
    present = {p.name for p in PKG.rglob("*.py") if p.name != "__init__.py"}
    assert listed == present, (sorted(present - listed), sorted(listed - present))
    for sub in {p.parent.name for p in PKG.rglob("*.py") if p.parent != PKG}:
        assert f"  {sub}/" in block, sub


def test_importing_netsim_leaves_scikit_learn_unloaded():
    """scikit-learn takes seconds to import; only k-means and the silhouette need it, so
    ``import netsim`` (every CLI command, ``netsim --help``) must not load it."""
    import subprocess
    import sys

    code = "import sys, netsim, netsim.api, netsim.cli; print(sorted(m for m in sys.modules if m.startswith('sklearn')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=PKG.parent
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def _module_of(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(("netsim",) + parts)


def module_imports(path: Path) -> set[str]:
    """Modules of netsim that *path* imports anywhere in its body (dotted names), a
    package's submodules where ``from package import submodule`` names one."""
    here = _module_of(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join(base + (node.module.split(".") if node.module else []))
            if not name.startswith("netsim"):
                continue
            for alias in node.names:
                sub = f"{name}.{alias.name}"
                found.add(sub if (PKG.parent / (sub.replace(".", "/") + ".py")).exists() else name)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("netsim."))
    return {m for m in found if m != _module_of(path)}


def test_no_import_cycle_between_modules():
    """Not even through an import inside a function (the engine once imported the race, which
    imports the engine)."""
    import networkx as nx

    graph = nx.DiGraph()
    for path in modules():
        graph.add_node(_module_of(path))
        for other in module_imports(path):
            if other != "netsim":  # the package's __init__ re-exports the API: not an edge inward
                graph.add_edge(_module_of(path), other)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, cycles[:3]


MAX_LINES = 80


def test_no_function_grows_past_eighty_lines():
    long = [
        f"{path.relative_to(PKG)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in PKG.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_LINES
    ]
    assert not long, f"split these (over {MAX_LINES} lines): {sorted(long)}"


MAX_PARAMETERS = 8
"""Most parameters a function of the package takes (``self``/``cls`` aside; ``*args`` and
``**kwargs`` count as none): settings travel as one value (``RaceOptions``, ``RunOptions``),
the counterweight to MAX_LINES. The CLI's typer commands, one parameter per option, are
exempt (ruff's PLR0913 checks the same outside ``netsim/cli/``)."""


def _typer_commands() -> set[tuple[str, str]]:
    """(module, function) of every command the ``netsim`` app registers, subcommands too."""
    from netsim.cli import app

    found, apps = set(), [app]
    while apps:
        current = apps.pop()
        for command in current.registered_commands:
            found.add((command.callback.__module__, command.callback.__name__))
        apps.extend(group.typer_instance for group in current.registered_groups)
    return found


def test_no_function_takes_more_than_eight_parameters_but_the_typer_commands():
    commands = _typer_commands()
    assert ("netsim.cli.runs", "sweep") in commands  # the exemption finds the commands
    many = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            count = len(names) - (names[:1] in (["self"], ["cls"]))
            if count > MAX_PARAMETERS and (_module_of(path), node.name) not in commands:
                many.append(f"{path.relative_to(PKG)}:{node.name} ({count})")
    assert not many, f"over {MAX_PARAMETERS} parameters: {sorted(many)}"


def _names_of_rules(path: Path, names: set[str]) -> list[str]:
    """String constants of *path* (docstrings and ``__all__`` left out) that name a rule: the name alone,
    its table (``algorithms.NAME``) or a label (``NAME[...]``)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    docs |= {  # __all__ lists functions, not rules (net.collectives.allreduce)
        id(c)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", "") == "__all__" for t in node.targets)
        for c in ast.walk(node.value)
    }
    pattern = re.compile(r"(^|algorithms\.)(%s)($|\.|\[)" % "|".join(map(re.escape, names)))
    return [
        f"{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and pattern.search(node.value)
    ]


def test_no_rule_is_named_outside_the_rules():
    """What differs between rules is asked of the rule (class attributes, methods) or of the
    registry (RULES, DEFAULT_RULE, GROUPING_RULE, SYNC_RULE), never decided by its name elsewhere."""
    from netsim.rules import RULES

    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        if rel.startswith("rules/"):
            continue
        if hits := _names_of_rules(path, set(RULES)):
            found[rel] = hits
    assert not found, f"rule names outside rules/: {found}"


def _private_imports(path: Path) -> list[str]:
    """``module.name`` of every name *path* imports from netsim that its module does not
    export (``__all__``), and every ``netsim`` submodule imported whole."""
    import importlib

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "netsim":
            public = getattr(importlib.import_module(node.module), "__all__", [])
            found += [f"{node.module}.{a.name}" for a in node.names if a.name not in public]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("netsim.")]
    return found


def test_benchmarks_use_the_public_api():
    """A benchmark imports ``netsim`` (the front door) or names a module exports in its
    ``__all__``: never a private helper, so the package can change its insides freely."""
    bench = PKG.parent / "benchmarks"
    found = {p.name: hits for p in sorted(bench.glob("*.py")) if (hits := _private_imports(p))}
    assert not found, f"benchmarks importing internals: {found}"
