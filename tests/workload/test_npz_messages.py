"""npz data that used to give a traceback or a misleading message: examples of no feature,
test labels that training never shows, a path that is not a regular file."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.sim.engine import prepare


def _refusal(tmp_path, path: str) -> ScenarioError:
    raw = base_raw(data={"source": "npz", "path": path, "labels": "multiclass"})
    with pytest.raises(ScenarioError) as err:
        prepare(make_scenario(raw, str(tmp_path / "s.toml")))
    assert err.value.key == "data.path"
    return err.value


def test_examples_of_no_feature_are_refused(tmp_path):
    np.savez(
        tmp_path / "d.npz",
        X_train=np.zeros((4, 0)),
        y_train=np.arange(4) % 2,
        X_test=np.zeros((2, 0)),
        y_test=np.arange(2),
    )
    assert "X_train (4, 0) has no feature" in str(_refusal(tmp_path, "d.npz"))


def test_test_labels_absent_from_training_are_named(tmp_path):
    """Train labels -1, 0, 1 and test labels 10, 11, 12: not 'six classes' (the two sets
    merged), but the labels training lacks."""
    np.savez(
        tmp_path / "d.npz",
        X_train=np.zeros((6, 3)),
        y_train=np.array([-1, 0, 1, -1, 0, 1]),
        X_test=np.zeros((3, 3)),
        y_test=np.array([10, 11, 12]),
    )
    message = str(_refusal(tmp_path, "d.npz"))
    assert "y_test holds labels that y_train does not (10, 11, 12; y_train's: -1, 0, 1)" in message


def test_a_device_is_not_called_a_missing_file(tmp_path):
    message = str(_refusal(tmp_path, "/dev/zero"))
    assert "/dev/zero: not a regular file" in message and "no such file" not in message
