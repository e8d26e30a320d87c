"""README's table of the GSGD paper's cluster: the paper's result and the race's pick.

Runs the command of :data:`COMMAND` (``netsim compare`` of SSGD, ASGD, GSGD with the three
speed classes and GSGD with ``grouping = "auto"``: the race's pick and η, trained in full)
through the CLI, and prints the command, the table and the command's verdict line as
README.md shows them (markdown). ``tests/test_paper_story.py`` runs README's command again and holds the
table to the tool's output; ``python benchmarks/refresh_docs.py paper_story`` pastes it.

Usage: python benchmarks/paper_story.py [--data-dir ../shared/data]
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.315
"""Target loss of the verdict and of the table's "reaches" column: about where SSGD ends at
the paper's horizon (T = 600 time units)."""
COMMAND = (
    "netsim compare scenarios/gsgd_paper.toml -a ssgd,asgd,gsgd --groupings auto "
    f"--target {TARGET:g} --data-dir ../shared/data"
)
"""README's command (paths relative to the checkout, as a user types it)."""
HEADER = (
    "run",
    "groups",
    "η",
    "updates",
    f"loss ≤ {TARGET:g} at",
    "final loss",
    "test acc",
    "staleness mean",
    "idle %",
)


def run_command(command: str, data_dir: str | None = None) -> tuple[list[dict], str]:
    """Run *command* (in this process, from the checkout) into a scratch folder: the
    summaries of ``compare.json``, each with its ``curve`` (sim_time, loss) rows from
    ``curve.csv``, and the verdict line it printed."""
    import os

    from typer.testing import CliRunner

    from netsim.cli import app

    argv = shlex.split(command)[1:]
    if data_dir is not None:
        argv[argv.index("--data-dir") + 1] = data_dir
    with tempfile.TemporaryDirectory() as tmp:
        here = os.getcwd()
        os.chdir(ROOT)
        try:
            res = CliRunner().invoke(app, [*argv, "--no-live", "--out", f"{tmp}/o"])
        finally:
            os.chdir(here)
        if res.exit_code != 0:
            raise SystemExit(f"{command}: exit status {res.exit_code}\n{res.stderr[-2000:]}")
        summaries = json.loads(Path(tmp, "o", "compare.json").read_text())
        for s in summaries:
            with open(Path(tmp, "o", s["folder"], "curve.csv"), newline="") as f:
                s["curve"] = [(float(r["sim_time"]), float(r["loss"])) for r in csv.DictReader(f)]
    verdict = next(line for line in res.stdout.splitlines() if line.startswith("verdict:"))
    return summaries, verdict


def groups_text(s: dict) -> str:
    """The grouping a run trained with, in words."""
    rule, g = s["algorithm"], s.get("grouping") or {}
    if rule == "ssgd":
        return "one group (SSGD)"
    if rule == "asgd":
        return "singletons (ASGD)"
    if g.get("method") == "race":
        return f"race's pick: {g['recommended']} ({len(g['members'])} groups)"
    return f"the paper's {len(s['groups'])} speed classes"


def reached(curve: list[tuple[float, float]], target: float) -> float | None:
    """The first evaluation time at which the loss is at or below *target* (None: never)."""
    return next((t for t, loss in curve if loss <= target), None)


def row(s: dict) -> list[str]:
    """One table row of a run's summary (with its ``curve``)."""
    t = reached(s["curve"], TARGET)
    return [
        s["label"],
        groups_text(s),
        f"{s['step']['lr']:.3g}",
        str(s["updates"]),
        "—" if t is None else f"{t:g}",
        f"{s['final_loss']:.5f}",
        f"{s['final_test_accuracy']:.4f}",
        f"{s['staleness_per_gradient']['mean']:.2f}",
        f"{s['idle_pct']:.1f}",
    ]


def markdown(summaries: list[dict], verdict: str) -> str:
    """The command (a bash block), the table (markdown) and the verdict line the command
    printed, as README shows them."""
    lines = ["```bash", COMMAND, "```", ""]
    lines.append("| " + " | ".join(HEADER) + " |")
    lines.append("|---|---|" + "---:|" * (len(HEADER) - 2))
    lines += ["| " + " | ".join(row(s)) + " |" for s in summaries]
    lines += ["", "```text", verdict, "```"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None, help="the data folder (default: the command's)")
    args = ap.parse_args()
    print(markdown(*run_command(COMMAND, args.data_dir)), end="")


if __name__ == "__main__":
    main()
