"""The docs: ALGORITHMS.md sections and citations, dotted netsim names, figure blocks."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from netsim.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ALGORITHMS.md"

SECTION = r"§(\d+(?:\.\d+)*[a-z]?)"
"""A section number as cited and as written in headings: §0, §1a, §6.2, ..."""
CITATION = re.compile(
    r"ALGORITHMS\.md((?:\s*(?:[–—,-]|and)?\s*" + SECTION.replace("(", "(?:", 1) + r")+)"
)
"""``ALGORITHMS.md`` followed by one or more section numbers: ``§1a``, ``§2–§6``, ``§3, §4``."""


def headings() -> list[str]:
    """The Markdown heading lines of docs/ALGORITHMS.md (outside code blocks)."""
    lines, fenced = [], False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            lines.append(line)
    return lines


def sections() -> dict[str, str]:
    """Section number → its heading line (the first § number in a heading names it)."""
    out: dict[str, str] = {}
    for line in headings():
        match = re.search(SECTION, line)
        if match:
            assert match.group(1) not in out, f"section §{match.group(1)} is defined twice"
            out[match.group(1)] = line
    return out


def citing_files() -> list[Path]:
    """README, the package, the CLI and the scenario files: where the doc is cited."""
    files = [ROOT / "README.md", ROOT / "cli.py"]
    files += sorted((ROOT / "netsim").rglob("*.py"))
    files += sorted((ROOT / "scenarios").glob("*.toml"))
    return [f for f in files if f.exists()]


def citations() -> list[tuple[str, int, str]]:
    """(file, line, section) for every section number cited after "ALGORITHMS.md"."""
    found = []
    for path in citing_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CITATION.finditer(line):
                for number in re.findall(SECTION, match.group(1)):
                    found.append((str(path.relative_to(ROOT)), lineno, number))
    return found


def test_the_document_exists_and_has_numbered_sections():
    assert DOC.exists()
    assert {"0", "1a", "1b", "1c", "2", "3", "4", "5", "6.1", "6.2", "6.3"} <= set(sections())


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_has_a_heading(name):
    assert any(f"`{name}`" in line for line in headings()), (
        f"no heading of docs/ALGORITHMS.md names rule `{name}` (write it in backticks)"
    )


def test_the_citation_pattern_reads_every_form():
    text = "ALGORITHMS.md §1a (BSP); ALGORITHMS.md §6.3. ALGORITHMS.md §2–§6, ALGORITHMS.md §0), x"
    assert [n for m in CITATION.finditer(text) for n in re.findall(SECTION, m.group(1))] == [
        "1a",
        "6.3",
        "2",
        "6",
        "0",
    ]


def test_every_citation_points_to_an_existing_section():
    found = citations()
    assert len(found) >= 25, f"only {len(found)} citations found: has the citation format changed?"
    known = sections()
    missing = [f"{path}:{line}: §{number}" for path, line, number in found if number not in known]
    assert not missing, "cited sections missing from docs/ALGORITHMS.md:\n" + "\n".join(missing)


@pytest.mark.parametrize("name", sorted(RULES))
def test_a_rules_cited_section_is_the_one_that_documents_it(name):
    numbers = re.findall(SECTION, RULES[name].source.split("ALGORITHMS.md", 1)[1])
    assert numbers, f"{name}.source cites no section"
    known = sections()
    for number in numbers:
        assert number in known, f"{name}.source cites §{number}, which does not exist"
        assert f"`{name}`" in known[number], f"§{number} ({known[number]!r}) does not name `{name}`"


_DOTTED = re.compile(r"\bnetsim(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _resolves(name: str) -> bool:
    """Whether *name* (``netsim.x.y``) is an importable module or an attribute chain of one."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_dotted_netsim_reference_resolves():
    """Docstrings, README.md and docs/ name modules and objects by dotted path: each must exist
    (file names such as ``netsim.lock`` are written with their leading dot, ``.netsim.lock``)."""
    files = (
        sorted((ROOT / "netsim").rglob("*.py"))
        + sorted((ROOT / "docs").glob("*.md"))
        + [ROOT / "README.md"]
    )
    stale = set()
    for path in files:
        for match in _DOTTED.finditer(path.read_text()):
            start = match.start()
            text = path.read_text()
            if start and text[start - 1] in "./-_":  # .netsim.lock, a path, another name's tail
                continue
            name = match.group(0)
            if not _resolves(name):
                stale.add(f"{path.relative_to(ROOT)}: {name}")
    assert not stale, sorted(stale)


_MARKER = re.compile(r"<!-- refresh_docs: (\S+) (begin|end) -->")


def test_every_figure_block_has_its_markers_and_its_command():
    """benchmarks/refresh_docs.py writes each block of its BLOCKS between a begin and an end
    marker of its page; every marker pair in docs/ and README names a block it writes, once."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from refresh_docs import BLOCKS
    finally:
        sys.path.pop(0)
    found: dict[str, list[tuple[str, str]]] = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        shown = page.name if page.parent.name == "docs" else f"../{page.name}"
        for name, end in _MARKER.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append((shown, end))
    assert set(found) == set(BLOCKS), (
        sorted(set(BLOCKS) - set(found)),
        sorted(set(found) - set(BLOCKS)),
    )
    for name, (page, _) in BLOCKS.items():
        assert found[name] == [(page, "begin"), (page, "end")], (name, found[name])
