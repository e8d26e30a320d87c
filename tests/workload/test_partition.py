"""Partitioners: IID (old shards bit for bit), Dirichlet label skew, k-label shards, quantity skew, class labels."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.sim.engine import prepare, simulate
from netsim.workload.partition import (
    ClassData,
    PartitionError,
    PartitionSpec,
    dirichlet,
    histograms,
    iid,
    partition,
    quantity,
    shards,
)


def old_shard(n_rows, n_workers, rng):
    """The sharding netsim used before partitions existed (left-over rows dropped)."""
    size = n_rows // n_workers
    perm = np.random.default_rng(rng).permutation(n_rows)[: size * n_workers]
    return [np.sort(part).astype(np.int64) for part in perm.reshape(n_workers, size)]


def labels(n_per_class=30, n_classes=10):
    return np.repeat(np.arange(n_classes), n_per_class)


def assert_partition_of(parts, n):
    union = np.concatenate(parts)
    assert len(union) == len(np.unique(union)) == n


@pytest.mark.parametrize("n,p", [(12, 3), (1600, 16), (60000, 16), (7, 7)])
def test_iid_equals_old_shards_when_nothing_is_left_over(n, p):
    new = iid(np.arange(n), p, np.random.default_rng(11))
    old = old_shard(n, p, np.random.default_rng(11))
    assert all(np.array_equal(a, b) for a, b in zip(new, old))


def test_iid_left_over_rows_go_one_each_to_the_first_workers():
    parts = iid(np.arange(11), 4, np.random.default_rng(0))
    assert [len(q) for q in parts] == [3, 3, 3, 2]
    assert_partition_of(parts, 11)
    old = old_shard(
        11, 4, np.random.default_rng(0)
    )  # the 8 rows the old shards had stay where they were
    assert all(set(o) <= set(q) for o, q in zip(old, parts))


def test_scenario_default_partition_reproduces_old_shards():
    raw = base_raw(
        data={"source": "synthetic", "n_samples": 2000, "n_features": 5}
    )  # 1600 train rows, 3 workers...
    raw["workers"] = [
        {"name": "a", "count": 8, "compute": 1.0},
        {"name": "b", "count": 8, "compute": 2.0},
    ]
    sc = make_scenario(raw)
    prep = prepare(sc)
    from netsim.rng import Streams

    old = old_shard(1600, 16, Streams(sc.run.seed).rng("shards"))
    assert all(np.array_equal(a, b) for a, b in zip(prep.shards, old))
    explicit = make_scenario({**raw, "data": {**raw["data"], "partition": "iid"}})
    a, b = simulate(sc), simulate(explicit)
    assert np.array_equal(a.final_w, b.final_w) and a.curve == b.curve


def test_dirichlet_is_a_partition_and_large_alpha_is_near_even():
    y = labels(160, 4)
    parts = dirichlet(np.arange(len(y)), y, 4, 1e6, np.random.default_rng(1))
    assert_partition_of(parts, len(y))
    hist = np.array(histograms(parts, y, 4))
    assert np.abs(hist - 40).max() <= 1  # floor(cumsum(p)·160) with p ≈ 1/4 each


def test_dirichlet_small_alpha_concentrates_labels():
    y = labels(100, 10)
    parts = dirichlet(np.arange(len(y)), y, 5, 0.01, np.random.default_rng(2))
    assert_partition_of(parts, len(y))
    hist = np.array(histograms(parts, y, 10))
    # with α = 0.01 nearly every label sits (almost) entirely with one worker
    assert (hist.max(axis=0) >= 95).sum() >= 9


def test_shards_give_each_worker_exactly_k_labels_split_evenly():
    y = labels(31, 10)
    parts = shards(np.arange(len(y)), y, 10, 2, np.random.default_rng(3))
    hist = np.array(histograms(parts, y, 10))
    assert ((hist > 0).sum(axis=1) == 2).all()
    assert_partition_of(parts, len(y))  # P·k = 20 = 2·10: every label held by exactly 2 workers
    for c in range(10):
        held = sorted(hist[:, c][hist[:, c] > 0])
        assert held == [15, 16]  # array_split of 31 rows in two


def test_shards_k_too_large():
    y = labels(5, 3)
    with pytest.raises(ValueError, match="classes_per_worker=4"):
        shards(np.arange(15), y, 2, 4, np.random.default_rng(0))


def test_quantity_power_law_sizes():
    parts = quantity(np.arange(1200), 4, "power", 0.5, 1.0, np.random.default_rng(4))
    assert_partition_of(parts, 1200)
    # p ∝ 1, 1/2, 1/3, 1/4 → 1200·(12/25)·(1, 1/2, 1/3, 1/4) = 576, 288, 192, 144 (±1 from flooring)
    assert np.abs(np.sort([len(q) for q in parts])[::-1] - [576, 288, 192, 144]).max() <= 1


def test_quantity_dirichlet_is_a_partition_with_unequal_sizes():
    parts = quantity(np.arange(1000), 8, "dirichlet", 0.5, 1.0, np.random.default_rng(5))
    assert_partition_of(parts, 1000)
    assert len({len(q) for q in parts}) > 1


def test_class_labels_are_disjoint_and_split_by_counts():
    y = labels(40, 10)
    classes = [ClassData(4), ClassData(4), ClassData(8, labels=(0, 1, 2, 3, 4))]
    parts, unused = partition(y, classes, PartitionSpec(), np.random.default_rng(6))
    assert unused == 0 and len(parts) == 16
    assert_partition_of(parts, len(y))
    hist = np.array(histograms(parts, y, 10))
    assert hist[8:, 5:].sum() == 0 and hist[:8, :5].sum() == 0
    # labels 5..9 (200 rows) are shared by the two 4-worker classes half and half, then 25 rows per worker
    assert hist[:8].sum(axis=1).tolist() == [25] * 8
    assert hist[8:].sum(axis=1).tolist() == [25] * 8


def test_class_with_own_spec():
    y = labels(40, 10)
    classes = [
        ClassData(2, spec=PartitionSpec("shards", classes_per_worker=1), labels=(0, 1)),
        ClassData(3),
    ]
    parts, unused = partition(y, classes, PartitionSpec(), np.random.default_rng(7))
    hist = np.array(histograms(parts, y, 10))
    assert ((hist[:2] > 0).sum(axis=1) == 1).all() and hist[:2].sum() == 80
    assert hist[2:, :2].sum() == 0 and unused == 0


def test_empty_worker_raises_partition_error_naming_the_worker():
    y = labels(1, 3)
    with pytest.raises(PartitionError) as info:
        partition(
            y, [ClassData(1), ClassData(2, labels=(0,))], PartitionSpec(), np.random.default_rng(0)
        )
    assert info.value.worker_class == 1


# ------------------------------------------------------------------ scenario keys


def multiclass(**data):
    raw = base_raw(
        data={"source": "digits", "labels": "multiclass", **data}, model={"name": "softmax"}
    )
    return raw


@pytest.mark.parametrize(
    "data,key",
    [
        ({"partition": "dirichlet", "alpha": 0.0}, "data.alpha"),
        ({"partition": "dirichlet", "alpha": -1.0}, "data.alpha"),
        ({"partition": "shards", "classes_per_worker": 11}, "data.classes_per_worker"),
        ({"partition": "quantity", "quantity": "power", "exponent": 0.0}, "data.exponent"),
        ({"partition": "iid", "alpha": 0.5}, "data.alpha"),
        ({"partition": "bogus"}, "data.partition"),
    ],
)
def test_bad_partition_keys(data, key):
    with pytest.raises(ScenarioError) as info:
        make_scenario(multiclass(**data))
    assert info.value.key == key


def test_bad_class_labels():
    raw = multiclass()
    raw["workers"][1]["data"] = {"labels": [3, 10]}
    with pytest.raises(ScenarioError, match=r"labels \[10\] do not exist") as info:
        make_scenario(raw)
    assert info.value.key == "workers[1].data.labels"
    raw = base_raw()  # odd/even: labels 0 and 1 only
    raw["workers"][1]["data"] = {"labels": [2]}
    with pytest.raises(ScenarioError, match="0..1"):
        make_scenario(raw)


def test_partition_leaving_a_worker_empty_is_a_scenario_error():
    raw = multiclass(partition="dirichlet", alpha=1e-3)
    raw["workers"] = [{"name": "w", "count": 40, "compute": 1.0}]
    sc = make_scenario(raw)
    with pytest.raises(ScenarioError, match="no rows") as info:
        prepare(sc)
    assert info.value.key == "data.partition" and info.value.file == "test.toml"


def test_summary_records_label_histograms():
    raw = multiclass()
    raw["workers"][1]["data"] = {"labels": [0, 1, 2, 3, 4]}
    from netsim.sim.summary import summarize

    s = summarize(simulate(make_scenario(raw)))
    hist = np.array(s["data"]["label_histogram"])
    assert hist.shape == (3, 10) and hist[2, 5:].sum() == 0 and hist[:2, :5].sum() == 0
    assert s["data"]["rows_per_worker"] == hist.sum(axis=1).tolist()
    assert sum(s["data"]["rows_per_worker"]) + s["data"]["unused_rows"] == s["data"]["train_rows"]


def test_a_class_with_one_label_needs_no_classes_per_worker():
    """classes_per_worker (default 2) matters only to the shards partition: a class holding
    one label under IID is fine; under shards the default is refused, naming the class's key."""
    raw = multiclass()
    raw["workers"][0]["data"] = {"labels": [3]}
    sc = make_scenario(raw)
    assert sc.workers[0].labels == (3,)
    raw = multiclass(partition="shards")
    raw["workers"][0]["data"] = {"labels": [3]}
    with pytest.raises(
        ScenarioError, match=r"2 \(the default; set it\) is not allowed .* 1 label: 1\.\.1"
    ) as info:
        make_scenario(raw)
    assert info.value.key == "workers[0].data.classes_per_worker"
    raw["workers"][0]["data"] = {"labels": [3], "classes_per_worker": 1}
    assert make_scenario(raw).workers[0].labels == (3,)


def test_min_rows_redraws_dirichlet_and_refuses_what_cannot_hold():
    from conftest import base_raw, make_scenario

    from netsim.errors import ScenarioError
    from netsim.sim.engine import prepare

    workers = [{"name": "w", "count": 8, "compute": 1.0}]
    raw = base_raw(
        workers=workers,
        data={
            "source": "digits",
            "labels": "odd_even",
            "partition": "dirichlet",
            "alpha": 0.5,
            "min_rows": 40,
        },
    )
    shards = prepare(make_scenario(raw)).shards
    assert min(len(s) for s in shards) >= 40
    raw["data"]["min_rows"] = 1000  # 8 × 1000 > 1,438 training rows: refused when read
    with pytest.raises(ScenarioError) as err:
        make_scenario(raw)
    assert err.value.key == "data.min_rows"
    raw["data"].update(min_rows=170, alpha=0.05)  # possible in total, not by 100 Dirichlet draws
    with pytest.raises(ScenarioError) as err:
        prepare(make_scenario(raw))
    assert "data.min_rows = 170" in str(err.value)


def test_the_summary_names_workers_with_fewer_rows_than_a_batch():
    from conftest import base_raw, make_scenario

    from netsim.sim.engine import simulate
    from netsim.sim.summary import summarize

    raw = base_raw(
        workers=[{"name": "w", "count": 4, "compute": 1.0}],
        data={"source": "digits", "partition": "quantity", "quantity": "power", "exponent": 3.0},
    )
    raw["run"]["batch_size"] = 64
    result = simulate(make_scenario(raw))
    sizes = result.extra["data"]["rows_per_worker"]
    assert (
        result.extra["data"]["workers_below_batch"]
        == [i for i, n in enumerate(sizes) if n < 64]
        != []
    )
    assert "workers_below_batch" not in summarize(simulate(make_scenario(base_raw())))["data"]
