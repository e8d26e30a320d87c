"""``netsim keys TEXT`` when no key contains TEXT: one line naming the near words and their
keys, exit status 2 (as any other bad input), nothing on stdout."""

from __future__ import annotations

from typer.testing import CliRunner

from netsim.cli import app
from netsim.config.schema import no_match_text

runner = CliRunner()


def test_a_typo_gets_the_near_word_and_its_keys():
    res = runner.invoke(app, ["keys", "untl"])
    assert res.exit_code == 2 and res.stdout == ""
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "no key contains 'untl'" in line and "did you mean until (" in line
    assert "run.until" in line


def test_text_near_nothing_says_so():
    res = runner.invoke(app, ["keys", "qqqzzz", "--json"])
    assert res.exit_code == 2 and res.stdout == ""
    assert "no key contains 'qqqzzz'" in res.stderr and "did you mean" not in res.stderr


def test_a_matching_text_still_lists_its_keys():
    res = runner.invoke(app, ["keys", "until"])
    assert res.exit_code == 0 and "run.until" in res.stdout


def test_near_words_come_from_the_dotted_parts_and_their_pieces():
    keys = ["run.until", "run.timeline_until", "run.seed", "algorithms.gsgd.lr"]
    # 'until' is a dotted part of run.until and a piece of timeline_until: both hold it
    assert no_match_text("untl", keys) == (
        "no key contains 'untl'; did you mean until (run.until, run.timeline_until)?"
    )
    # 'gsgd' (ratio 2·3/8 = 0.75 to 'gsdg') is found inside algorithms.gsgd.lr
    assert "did you mean gsgd (algorithms.gsgd.lr)?" in no_match_text("gsdg", keys)
    many = [f"algorithms.r{i}.lr" for i in range(5)]
    assert no_match_text("lrr", many).endswith(
        "lr (algorithms.r0.lr, algorithms.r1.lr, algorithms.r2.lr, … 2 more)?"
    )
