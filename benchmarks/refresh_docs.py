"""Refresh the measured figures in docs/ from the benchmarks' own output.

Each figure block in a docs page sits between two markers::

    <!-- refresh_docs: NAME begin -->
    ...
    <!-- refresh_docs: NAME end -->

and holds, verbatim, what the command of :data:`BLOCKS` printed, headed by the command and
the machine it ran on (CPU, cores, kernel, Python, numpy, torch, load average before the
run). No figure in those blocks is typed by hand; this script is the only writer.

Usage: python benchmarks/refresh_docs.py [NAME ...] [--list] [--data-dir DIR] [--extra ARG ...]
(default: every block; each command runs in a fresh process, BLAS single-threaded)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

BEFORE = ["--baseline", "look=0", "--baseline", "finalists=4"]
"""The race's previous settings, run beside the current ones in every regret block."""
REGRET_SUITES = {
    "torch90": (["--generator", "torch", "--suite-seed", "90", "--n", "16"], "t90"),
    "torch94": (["--generator", "torch", "--suite-seed", "94", "--n", "16"], "t94"),
    "91": (["--suite-seed", "91", "--n", "48"], "w91"),
    "kinds92": (["--generator", "kinds", "--suite-seed", "92", "--n", "48"], "k92"),
    "classic93": (["--generator", "classic", "--suite-seed", "93", "--n", "48"], "c93"),
    "torch46": (["--generator", "torch", "--suite-seed", "46", "--n", "16"], "t46"),
    "torch47": (["--generator", "torch", "--suite-seed", "47", "--n", "16"], "t47"),
    "torch70": (["--generator", "torch", "--suite-seed", "70", "--n", "16"], "t70"),
    "torch71": (["--generator", "torch", "--suite-seed", "71", "--n", "16"], "t71"),
    "72": (["--suite-seed", "72", "--n", "48"], "w72"),
}
"""Suites of the regret benchmark in GROUPING.md: name → (its arguments, its cache folder)."""

BLOCKS = {
    "bench_core": ("BENCHMARKS.md", ["bench_core.py", "--reps", "5", "--data-dir", "{data}"]),
    "bench_mlp": ("BENCHMARKS.md", ["bench_mlp.py", "--data-dir", "{data}"]),
    "bench_torch": ("BENCHMARKS.md", ["bench_torch.py", "--reps", "2", "--data-dir", "{data}"]),
    "bench_torch_memory": ("BENCHMARKS.md", ["bench_torch.py", "--memory", "--data-dir", "{data}"]),
    "bench_torch_memory_adam": (
        "BENCHMARKS.md",
        ["bench_torch.py", "--memory", "--optimizer", "adam", "--data-dir", "{data}"],
    ),
    "bench_scale": ("BENCHMARKS.md", ["bench_scale.py"]),
    "bench_flows": ("BENCHMARKS.md", ["bench_flows.py"]),
    "bench_collectives": ("BENCHMARKS.md", ["bench_collectives.py"]),
    "bench_scaling": ("SCALING.md", ["bench_scaling.py", "--big"]),
    "bench_network": ("SCALING.md", ["bench_network.py", "--repeat", "5"]),
    **{
        f"grouping_regret_{suite}": (
            "GROUPING.md",
            [
                "grouping_regret.py",
                *args,
                *BEFORE,
                "--workers",
                "1",
                "--cache",
                f".regret-cache/{cache}",
            ],
        )
        for suite, (args, cache) in REGRET_SUITES.items()
    },
    "paper_grouping_logistic": (
        "GROUPING_GUIDE.md",
        ["paper_grouping_check.py", "--data-dir", "{data}", "--seeds", "3"],
    ),
    "paper_grouping_svm": (
        "GROUPING_GUIDE.md",
        ["paper_grouping_check.py", "--data-dir", "{data}", "--seeds", "3"]
        + ["--set", "model.name=smooth_svm"],
    ),
    "paper_grouping_cnn": (
        "GROUPING_GUIDE.md",
        ["paper_grouping_check.py", "--data-dir", "{data}", "--seeds", "3"]
        + ["--scenario", "paper_cnn"],
    ),
    "paper_story": ("../README.md", ["paper_story.py", "--data-dir", "{data}"]),  # markdown
    "real_vs_netsim": ("VALIDATION.md", ["real_vs_netsim.py", "--data-dir", "{data}"]),  # markdown
    "real_decisions": ("VALIDATION.md", ["real_decisions.py", "--data-dir", "{data}"]),  # markdown
    "real_decisions_late": (  # markdown; the same real runs may serve both (--reuse)
        "VALIDATION.md",
        ["real_decisions.py", "--data-dir", "{data}", "--fraction", "0.8"]
        + ["--out", "runs/real_decisions_f08"],
    ),
    "stdlib_ps": ("VALIDATION.md", ["stdlib_ps.py", "--repeats", "3"]),  # markdown
    "fuzz_scenarios": (
        "BENCHMARKS.md",
        ["fuzz_scenarios.py", "--n", "2000", "--data-dir", "{data}"],
    ),
}
"""Block name → (docs page, the benchmark's command line; ``{data}`` is the data folder)."""
MARKDOWN = {
    "real_vs_netsim",
    "real_decisions",
    "real_decisions_late",
    "stdlib_ps",
    "bench_scaling",
    "bench_network",
    "paper_story",
} | {f"grouping_regret_{s}" for s in REGRET_SUITES}
FROM = {name: "| recommender |" for name in MARKDOWN if name.startswith("grouping_regret")}
"""Blocks that keep only their script's output from the line starting so (a summary table
after per-scenario lines)."""
"""Blocks whose script prints markdown (tables, headings): pasted as they are, not as text."""
HEADLESS = {"paper_story"}
"""Blocks of emulated results, not measurements: the same on every machine whose float
kernels round alike, so no head line (command, date, machine); the block shows its command."""


def machine() -> str:
    """One line naming the machine: CPU model, cores, kernel, Python, numpy and torch."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy

    parts = [
        f"{cpu}, {os.cpu_count()} cores",
        f"{platform.system()} {platform.release()}",
        f"Python {platform.python_version()}",
        f"numpy {numpy.__version__}",
    ]
    try:
        import torch

        parts.append(f"torch {torch.__version__}")
    except ImportError:
        pass
    return "; ".join(parts)


def block_head(command: list[str]) -> str:
    """The line heading a block: the command, the date, the machine and its load now."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    day = datetime.date.today().isoformat()
    shown = " ".join(["python", "benchmarks/" + command[0], *command[1:]])
    return f"Output of `{shown}` on {day}: {machine()}; load average {load} before the run.\n\n"


def block_body(name: str, output: str) -> str:
    """*output* as the block *name* shows it: fenced as text, or as markdown (:data:`MARKDOWN`)."""
    if name in FROM and FROM[name] in output:
        output = output[output.index(FROM[name]) :]
    return f"{output.strip()}\n" if name in MARKDOWN else f"```text\n{output.rstrip()}\n```\n"


def replace_block(page: Path, name: str, body: str) -> None:
    """Put *body* between the markers of block *name* in *page* (ValueError when absent)."""
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(
        rf"(<!-- refresh_docs: {re.escape(name)} begin -->\n).*?(<!-- refresh_docs: {re.escape(name)} end -->)",
        re.S,
    )
    if not pattern.search(text):
        raise ValueError(f"{page}: no markers for block {name!r}")
    page.write_text(pattern.sub(lambda m: m.group(1) + body + m.group(2), text), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", help=f"blocks to refresh (default all: {', '.join(BLOCKS)})"
    )
    parser.add_argument("--list", action="store_true", help="print the blocks and their commands")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        help="one more argument for the benchmarks' command lines (repeatable), e.g. --extra=--reuse",
    )
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in BLOCKS]
    if unknown:
        parser.error(f"unknown block(s) {', '.join(unknown)} (allowed: {', '.join(BLOCKS)})")
    for name in args.names or list(BLOCKS):
        page, command = BLOCKS[name]
        command = [c.replace("{data}", args.data_dir) for c in command] + args.extra
        if args.list:
            print(f"{name:18s} docs/{page}: python benchmarks/{' '.join(command)}")
            continue
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        print(f"{name}: running ...", flush=True)
        shown = [c.replace(args.data_dir, os.path.relpath(args.data_dir, ROOT)) for c in command]
        head = "" if name in HEADLESS else block_head(shown)  # the load before the run
        done = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / command[0]), *command[1:]],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        if done.returncode != 0:
            print(
                f"{name}: exit status {done.returncode}; block left as it was\n{done.stderr[-2000:]}"
            )
            continue
        replace_block(DOCS / page, name, head + block_body(name, done.stdout))
        print(f"{name}: docs/{page} refreshed")


if __name__ == "__main__":
    main()
