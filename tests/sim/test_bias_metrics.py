"""Bias metrics: per-label accuracy, gradient and step shares by worker class and group."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.results.runfolder import write_run
from netsim.results.tables import run_rows
from netsim.sim.engine import simulate
from netsim.sim.records import class_accuracy, gradient_shares
from netsim.sim.summary import summarize


def test_class_accuracy_by_hand():
    y = np.array([0, 0, 1, 1, 1, 2])
    pred = np.array([0, 1, 1, 1, 0, 0])
    assert class_accuracy(pred, y, 4) == [0.5, 2 / 3, 0.0, None]


def test_gradient_shares_cumulative_and_weighted():
    codes = [0, 1, 1, 0, 2]
    version = [1, 2, 2, 3, 4]
    assert gradient_shares(codes, 3, version, [0, 1, 2, 4]).tolist() == [
        [0, 0, 0],
        [1, 0, 0],
        [1 / 3, 2 / 3, 0],
        [0.4, 0.4, 0.2],
    ]
    w = [1.0, 0.5, 0.5, 1.0, 2.0]
    assert gradient_shares(codes, 3, version, weights=w)[0] == pytest.approx([0.4, 0.2, 0.4])


def run(algorithm):
    # fast: 2 workers at 1 s, slow: 1 worker at 2.4 s, 10.5 s: 20 fast and 4 slow gradients
    raw = base_raw(data={"source": "digits", "labels": "multiclass"}, model={"name": "softmax"})
    raw["run"].update(eval_every=5.0, until=10.5)
    return simulate(make_scenario(raw), algorithm)


def test_asgd_shares_follow_the_rates():
    s = summarize(run("asgd"))["bias"]
    assert s["gradient_share_by_class"] == pytest.approx({"fast": 20 / 24, "slow": 4 / 24})
    assert s["step_share_by_class"] == pytest.approx({"fast": 20 / 24, "slow": 4 / 24})
    assert s["worst_class_accuracy"] == min(s["class_accuracy"])
    assert s["class_accuracy"][s["worst_class"]] == s["worst_class_accuracy"]


def test_gsgd_step_share_counts_each_group_update_once():
    # the fast group (2 workers) updates at t = 1..10 with 2 gradients each, the slow one 4 times
    s = summarize(run("gsgd"))["bias"]
    assert s["gradient_share_by_class"] == pytest.approx({"fast": 20 / 24, "slow": 4 / 24})
    assert s["step_share_by_class"] == pytest.approx({"fast": 10 / 14, "slow": 4 / 14})
    assert s["step_share_by_group"] == pytest.approx([10 / 14, 4 / 14])


def test_bias_files_and_table(tmp_path):
    result = run("gsgd")
    summary = write_run(result, tmp_path)
    json.dumps(summary, allow_nan=False)  # strict JSON
    with open(tmp_path / "bias.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(result.curve)
    assert float(rows[-1]["share_fast"]) == pytest.approx(20 / 24)
    assert float(rows[-1]["step_share_slow"]) == pytest.approx(4 / 14)
    assert float(rows[-1]["worst_class_accuracy"]) == summary["bias"]["worst_class_accuracy"]
    header, table = run_rows([summary])
    assert table[0][header.index("grad % of worker classes fast/slow")] == "83/17"
    worst = summary["bias"]["worst_class"]
    assert table[0][header.index("worst label: acc")] == (
        f"{worst}: {summary['bias']['worst_class_accuracy']:.4f}"
    )
    from netsim.results.tables import share_header

    three = {"bias": {"step_share_by_class": {"fast": 0.5, "medium": 0.3, "slow": 0.2}}}
    assert share_header([three], "step") == "step % of worker classes f/m/s"


def test_accuracy_on_each_classs_data():
    # fast workers hold only digit 0 and 1, the slow one only digit 7: the accuracy on a
    # class's data is the label accuracies weighted by its rows (all of one label here)
    raw = base_raw(data={"source": "digits", "labels": "multiclass"}, model={"name": "softmax"})
    raw["workers"][0]["data"] = {"labels": [0, 1]}
    raw["workers"][1]["data"] = {"labels": [7]}
    raw["run"].update(eval_every=5.0, until=10.5)
    summary = summarize(simulate(make_scenario(raw), "asgd"))
    bias, hist = summary["bias"], np.array(summary["data"]["label_histogram"])
    acc = bias["class_accuracy"]
    fast_rows = hist[:2].sum(axis=0)
    expected = (acc[0] * fast_rows[0] + acc[1] * fast_rows[1]) / (fast_rows[0] + fast_rows[1])
    assert bias["accuracy_on_class_data"] == pytest.approx({"fast": expected, "slow": acc[7]})
    header, table = run_rows([summary])
    cell = table[0][header.index("acc on data of worker classes fast/slow")]
    assert cell == f"{expected:.2f}/{acc[7]:.2f}"
