"""Adam and AdamW on the server against steps worked out by hand; their keys refused when wrong."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.errors import ScenarioError
from netsim.rules.schedules import ServerUpdate


def _steps(update: ServerUpdate, grads, rate=0.1, w=None, spared=()):
    state = update.state(spared)
    w = np.zeros(len(grads[0]), dtype=np.float64) if w is None else w
    return [state.step(rate * np.array(g), t + 1, 0.0, w, rate) for t, g in enumerate(grads)]


def test_the_first_adam_step_is_the_rate_times_the_sign():
    # m̂ = g, v̂ = g²: step = η·g / (|g| + ε)
    (step,) = _steps(ServerUpdate(optimizer="adam"), [[0.5, -2.0]])
    np.testing.assert_allclose(step, [0.1 * 0.5 / (0.5 + 1e-8), -0.1 * 2.0 / (2.0 + 1e-8)])


def test_two_adam_steps_by_hand():
    # g1 = 1, g2 = 3, β = (0.9, 0.999): m2 = 0.9·0.1 + 0.1·3 = 0.39, v2 = 0.999·0.001 + 0.001·9
    # = 0.009999; bias corrections 1 − 0.81 = 0.19 and 1 − 0.998001 = 0.001999
    _, second = _steps(ServerUpdate(optimizer="adam"), [[1.0], [3.0]])
    expected = 0.1 * (0.39 / 0.19) / (math.sqrt(0.009999) / math.sqrt(0.001999) + 1e-8)
    assert second[0] == pytest.approx(expected, rel=1e-12)


def test_adam_weight_decay_enters_the_gradient_and_adamw_decays_the_model():
    w = np.array([2.0, 2.0])
    # Adam: g = 0 + 0.5·2 = 1 on both entries, the first step is η·sign(g)
    (adam,) = _steps(ServerUpdate(optimizer="adam", weight_decay=0.5), [[0.0, 0.0]], w=w)
    np.testing.assert_allclose(adam, [0.1, 0.1], rtol=1e-7)
    # AdamW: g = 1 gives η; the decay adds η·λ·w = 0.1·0.5·2 = 0.1, except on the spared entry
    (adamw,) = _steps(
        ServerUpdate(optimizer="adamw", weight_decay=0.5, decay_1d=False),
        [[1.0, 1.0]],
        w=w,
        spared=[(1, 2)],
    )
    np.testing.assert_allclose(adamw, [0.2, 0.1], rtol=1e-7)


def test_a_float32_model_stays_float32_through_adam():
    state = ServerUpdate(optimizer="adamw", weight_decay=0.1).state()
    w = np.ones(4, dtype=np.float32)
    for t in range(1, 4):
        step = state.step(np.full(4, 0.01, dtype=np.float32), t, 0.0, w, 0.1)
        assert step.dtype == np.float32
        w = w - step
    assert state.adam.m.dtype == state.adam.v.dtype == np.float32


@pytest.mark.parametrize(
    "options, key, words",
    [
        ({"optimizer": "rmsprop"}, "optimizer", "allowed: sgd, adam, adamw"),
        ({"optimizer": "adam", "betas": [1.0, 0.9]}, "betas", "each 0 <= beta < 1"),
        ({"optimizer": "adam", "betas": [0.9, -0.1]}, "betas", "each 0 <= beta < 1"),
        ({"optimizer": "adam", "betas": [0.9]}, "betas", "two numbers"),
        ({"optimizer": "adam", "eps": 0.0}, "eps", "must be > 0"),
        ({"optimizer": "adamw", "eps": -1e-8}, "eps", "must be > 0"),
        ({"optimizer": "adam", "momentum": 0.9}, "momentum", "keeps its own moments"),
        ({"betas": [0.9, 0.99]}, "betas", "applies to optimizer"),
        ({"weight_decay": -0.1}, "weight_decay", ">= 0"),
        ({"weight_decay_1d": False}, "weight_decay_1d", "needs weight_decay > 0"),
        ({"weight_decay": 0.1, "weight_decay_1d": False}, "weight_decay_1d", "torch model"),
    ],
)
def test_bad_optimizer_keys_are_refused_naming_the_key(options, key, words):
    with pytest.raises(ScenarioError, match=words) as err:
        make_scenario(base_raw(algorithms={"asgd": {"lr": 0.1, **options}}))
    assert err.value.key == f"algorithms.asgd.{key}"


def test_rules_with_their_own_step_refuse_an_optimizer():
    with pytest.raises(ScenarioError) as err:
        make_scenario(base_raw(algorithms={"dcasgd_a": {"lr": 0.1, "optimizer": "adam"}}))
    assert err.value.key == "algorithms.dcasgd_a.optimizer"
    with pytest.raises(ScenarioError, match="optimizer") as err:
        make_scenario(
            base_raw(
                run={"algorithm": "adpsgd", "until": 5.0},
                algorithms={"adpsgd": {"lr": 0.1, "optimizer": "adam"}},
            )
        )
    assert err.value.key == "algorithms.adpsgd.optimizer"


def test_the_command_line_refuses_a_bad_optimizer_in_one_line_with_status_2(tmp_path):
    from typer.testing import CliRunner

    from netsim.cli import app

    (tmp_path / "s.toml").write_text(
        textwrap.dedent("""
        [run]
        until = 5.0
        [data]
        source = "digits"
        [[workers]]
        name = "w"
        count = 2
        compute = 1.0
        [algorithms.asgd]
        lr = 0.1
        optimizer = "adam"
        betas = [0.9, 1.5]
    """)
    )
    res = CliRunner().invoke(app, ["validate", str(tmp_path / "s.toml")])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "algorithms.asgd.betas" in lines[0] and "s.toml" in lines[0]
