"""README, docs and the tool give the same answer for the GSGD paper's cluster.

README's paper section shows one ``netsim compare`` command and its table (between the
``paper_story`` markers, written by ``benchmarks/refresh_docs.py``). This test runs that
command as written (with ``--json``) and holds every cell of the table to what the tool
prints, then the sentences around it: the paper's result (the three speed classes reach the
target before SSGD and ASGD and end lowest), the race's pick as README, docs/GROUPING_GUIDE.md
and docs/CLI.md name it, and what ``netsim group --quick`` picks instead.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shlex

import pytest
from conftest import ROOT, SHARED_DATA, needs_mnist
from typer.testing import CliRunner

from netsim.cli import app

pytestmark = needs_mnist
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {
    name: " ".join((ROOT / name).read_text(encoding="utf-8").split())  # lines joined
    for name in ("README.md", "docs/GROUPING_GUIDE.md", "docs/CLI.md")
}
BLOCK = re.search(
    r"<!-- refresh_docs: paper_story begin -->\n(.*?)<!-- refresh_docs: paper_story end -->",
    README,
    re.S,
)


def _block() -> tuple[str, list[dict], str]:
    """README's command, its table as rows {header: cell}, and the verdict line shown."""
    assert BLOCK, "README.md has no paper_story block"
    text = BLOCK.group(1)
    command = re.search(r"```bash\n(netsim compare [^\n]+)\n```", text).group(1)
    verdict = re.search(r"```text\n(verdict: [^\n]+)\n```", text).group(1)
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [
        dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]
    ]
    return command, rows, verdict


def _invoke(argv: list[str]):
    here = os.getcwd()
    os.chdir(ROOT)  # README's paths are relative to the checkout
    try:
        return CliRunner().invoke(app, argv)
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    """README's block, and what README's command prints and writes: the runs' summaries by
    label (each with its ``curve``: (time, loss) rows of curve.csv) and the verdict line."""
    command, rows, verdict = _block()
    argv = shlex.split(command)[1:]
    argv[argv.index("--data-dir") + 1] = str(SHARED_DATA)
    out = tmp_path_factory.mktemp("paper") / "o"
    res = _invoke([*argv, "--no-live", "--out", str(out)])
    assert res.exit_code == 0, res.output
    runs = {}
    for s in json.loads((out / "compare.json").read_text()):
        with open(out / s["folder"] / "curve.csv", newline="") as f:
            s["curve"] = [(float(r["sim_time"]), float(r["loss"])) for r in csv.DictReader(f)]
        runs[s["label"]] = s
    said = next(line for line in res.stdout.splitlines() if line.startswith("verdict:"))
    return {"rows": rows, "verdict": verdict, "runs": runs, "said": said, "argv": argv}


def _close(cell: str, value: float, decimals: int) -> bool:
    """*cell* shows *value* to *decimals* places (a rounding in the last place allowed for)."""
    return abs(float(cell) - value) <= 1.01 * 10**-decimals


def test_readme_table_and_verdict_are_the_tools_output(story):
    rows, runs = story["rows"], story["runs"]
    assert [r["run"] for r in rows] == list(runs) == ["ssgd", "asgd", "gsgd", "gsgd[auto]"]
    target_col = next(h for h in rows[0] if h.startswith("loss ≤"))
    target = float(target_col.split("≤")[1].split()[0])
    assert f"--target {target:g}" in " ".join(story["argv"])
    for r in rows:
        s = runs[r["run"]]
        assert float(r["η"]) == pytest.approx(s["step"]["lr"], rel=5e-3), r
        assert int(r["updates"]) == s["updates"], r
        hit = next((t for t, loss in s["curve"] if loss <= target), None)  # first evaluation
        assert (r[target_col] == "—") if hit is None else float(r[target_col]) == hit, r
        assert _close(r["final loss"], s["final_loss"], 5), r
        assert _close(r["test acc"], s["final_test_accuracy"], 4), r
        assert _close(r["staleness mean"], s["staleness_per_gradient"]["mean"], 2), r
        assert _close(r["idle %"], s["idle_pct"], 1), r
    pick = runs["gsgd[auto]"]["grouping"]
    assert pick["method"] == "race" and f"{pick['recommended']} " in rows[3]["groups"]
    assert rows[0]["groups"].startswith("one group") and rows[1]["groups"].startswith("single")
    assert story["verdict"] == story["said"]


def test_the_papers_result_holds_on_the_readme_horizon(story):
    """The three speed classes reach the target first among the paper's rules and end lowest."""
    runs = story["runs"]
    target = float(story["argv"][story["argv"].index("--target") + 1])
    t = {
        k: next((t for t, loss in runs[k]["curve"] if loss <= target), math.inf)
        for k in ("ssgd", "asgd", "gsgd")
    }
    assert t["gsgd"] < t["ssgd"] and t["gsgd"] < t["asgd"], t
    loss = {k: runs[k]["final_loss"] for k in ("ssgd", "asgd", "gsgd")}
    assert loss["gsgd"] < min(loss["ssgd"], loss["asgd"]), loss


def test_readme_and_docs_name_the_races_pick_and_the_quick_pick(story):
    runs, argv = story["runs"], story["argv"]
    pick = runs["gsgd[auto]"]["grouping"]
    said = f"`{pick['recommended']}` at η = {pick['lr']:g}"
    for name, page in PAGES.items():
        assert f"race picks {said}" in page, name
    sets = [a for i, a in enumerate(argv) if i and argv[i - 1] == "--set"]
    quick = _invoke(
        ["group", "scenarios/gsgd_paper.toml", "--quick", "--json", "--data-dir", str(SHARED_DATA)]
        + [x for s in sets for x in ("--set", s)]
    )
    assert quick.exit_code == 0, quick.output
    first = json.loads(quick.stdout)["ranking"][0]
    quick_said = f"`{first['name']}` at η = {first['lr']:.2g}"
    for name, page in PAGES.items():
        assert f"--quick` ranks {quick_said} first" in page, name
