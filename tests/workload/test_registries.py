"""Data sources and model families are asked, never named: no ``source ==`` / ``backend ==``
switch outside their registries, and a new source is one module and one registry line."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from netsim.config.scenario import parse_scenario
from netsim.config.schema import scenario_keys
from netsim.errors import ScenarioError
from netsim.sim.engine import prepare
from netsim.workload.backends import BACKENDS
from netsim.workload.sources import SOURCES

PKG = Path(__file__).resolve().parents[2] / "netsim"
HOMES = ("workload/sources/", "workload/backends/")


def _named(node: ast.AST) -> str | None:
    """``source`` / ``backend`` when *node* is that name or an attribute of it."""
    name = getattr(node, "attr", None) or getattr(node, "id", None)
    return name if name in ("source", "backend") else None


def _strings(node: ast.AST) -> bool:
    """A string constant, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    elts = getattr(node, "elts", None)
    return bool(elts) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts
    )


def switches(path: Path) -> list[str]:
    """``line: source == 'x'`` for every comparison of a source or backend with names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_named(s) for s in sides) and any(_strings(s) for s in sides):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_source_or_backend_is_switched_on_by_name_outside_the_registries():
    found = {
        rel: hits
        for path in sorted(PKG.rglob("*.py"))
        if not (rel := str(path.relative_to(PKG))).startswith(HOMES) and (hits := switches(path))
    }
    assert not found, f"ask the registry (SOURCES, BACKENDS) instead: {found}"


def test_the_check_finds_a_switch(tmp_path):
    """The check above is not vacuous: it finds each form of a switch."""
    f = tmp_path / "m.py"
    f.write_text(
        "a = spec.source == 'mnist'\nb = backend != 'torch'\nc = s.source in ('npz', 'x')\n"
        "d = spec.name == 'mlp'\n"
    )
    assert [h.split(":")[0] for h in switches(f)] == ["1", "2", "3"]


TOY = '''
from dataclasses import dataclass

import numpy as np

from netsim.workload.sources.base import DataSource


@dataclass(frozen=True)
class StripesKeys:
    width: int = 3


class Stripes(DataSource[StripesKeys]):
    """12 training rows and 4 test rows of ``data.width`` features; the label is the row's
    parity."""

    name = "stripes"
    labellings = ("binary", "multiclass")
    default_labels = "binary"
    sized = True

    def read(self, t, path):
        return StripesKeys(width=t.get("width", int, 3, minimum=1))

    def arrays(self, request, rng):
        w = request.own.width
        X = np.arange(16.0 * w).reshape(16, w)
        y = np.arange(16) % 2
        return X[:12], y[:12], X[12:], y[12:], 2, "stripes", None

    def train_rows(self, spec):
        return 12
'''


def test_a_new_source_is_one_module_and_one_registry_line(tmp_path, monkeypatch):
    """A source written in a module of its own, registered by one line, runs a scenario:
    its own key (``data.width``) is read and checked by it and reaches its loader; its rows
    are the ones it returns (row r of width w holds r·w .. r·w + w - 1) and the scenario's
    row check asks it."""
    (tmp_path / "stripes_source.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stripes_source

    monkeypatch.setitem(SOURCES, "stripes", stripes_source.Stripes())  # the registry line
    raw = {
        "run": {"until": 2.0, "algorithm": "asgd"},
        "data": {"source": "stripes", "width": 2},
        "workers": [{"name": "a", "count": 3, "compute": 1.0}],
        "algorithms": {"asgd": {"lr": 0.1}},
    }
    sc = parse_scenario(raw, tmp_path / "s.toml")
    assert sc.data.source == "stripes" and sc.data.labels == "binary"
    assert sc.data.own == stripes_source.StripesKeys(width=2)
    assert sc.data == parse_scenario(raw, tmp_path / "s.toml").data  # a memo key
    assert hash(sc.data) == hash(parse_scenario(raw, tmp_path / "s.toml").data)
    ds = prepare(sc).dataset
    assert ds.X_train.shape == (12, 2) and ds.X_test[0].tolist() == [24.0, 25.0]
    assert ds.y_train.tolist() == [0, 1] * 6
    too_many = {**raw, "workers": [{"name": "a", "count": 13, "compute": 1.0}]}
    with pytest.raises(ScenarioError) as err:  # 13 workers, 12 rows: the source's train_rows
        parse_scenario(too_many, tmp_path / "s.toml")
    assert err.value.key == "workers" and "only 12 training rows" in str(err.value)
    for data, key, words in (
        ({"source": "stripes", "width": 0}, "data.width", "must be >= 1"),
        ({"source": "digits", "width": 2}, "data.width", "unknown key"),  # stripes' own
        ({"source": "stripes", "n_samples": 9}, "data.n_samples", "allowed here: add_bias"),
    ):
        with pytest.raises(ScenarioError) as err:
            parse_scenario({**raw, "data": data}, tmp_path / "s.toml")
        assert err.value.key == key and words in str(err.value)
    width = {k.key: k for k in scenario_keys()}["data.width"]  # netsim keys lists it
    assert (width.type, width.default, width.minimum) == ("int", 3, 1)
    sys.modules.pop("stripes_source", None)


def test_every_family_and_source_is_registered_under_its_own_name():
    assert all(name == s.name for name, s in SOURCES.items())
    assert all(name == b.name for name, b in BACKENDS.items())
    assert list(BACKENDS)[0] == "numpy" and list(SOURCES)[0] == "digits"  # the defaults


FAMILY = '''
"""A model family of its own: least squares on labels scaled to -1 and +1."""
import numpy as np

from netsim.workload.backends.base import Backend
from netsim.workload.base import Model


class LeastSquares(Model):
    name = "least_squares"

    def loss(self, w, X, y):
        r = X @ w - (2.0 * y - 1.0)
        return 0.5 * float(r @ r) / len(y) + self._penalty(w)

    def residual(self, w, X, y):
        return (X @ w - (2.0 * y - 1.0)) / len(y)

    def export_info(self):
        return {"backend": "squares", "name": self.name}


class Squares(Backend):
    name = "squares"
    binary_models = ("least_squares",)
    params_known = True

    def read(self, t, path):
        return {"name": t.get("name", str, "least_squares", choices=("least_squares",))}

    def build(self, spec, dataset, rng, n_workers):
        return LeastSquares(), None, dataset.X_train.shape[1]

    def n_params(self, spec, features, classes):
        return features
'''


def test_a_new_model_family_is_one_module_and_one_registry_line(tmp_path, monkeypatch):
    """A family written in a module of its own, registered by one line, trains: SSGD with
    one worker holding every row, a batch of all of them, from w = 0 on least squares is
    one full gradient step: w1 = -lr · X^T (X · 0 - s) / n = lr · X^T s / n (s = 2y - 1)."""
    from netsim.sim.engine import simulate
    from netsim.workload.backends import BACKENDS

    (tmp_path / "squares_family.py").write_text(FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import squares_family

    monkeypatch.setitem(BACKENDS, "squares", squares_family.Squares())  # the registry line
    raw = {
        "run": {"until": 1.5, "algorithm": "ssgd", "batch_size": 1438},
        "data": {"source": "digits"},
        "model": {"backend": "squares"},
        "workers": [{"name": "a", "count": 1, "compute": 1.0}],
        "algorithms": {"ssgd": {"lr": 0.1}},
    }
    sc = parse_scenario(raw, tmp_path / "s.toml")
    assert sc.model.backend == "squares" and sc.model.name == "least_squares"
    prep = prepare(sc)
    result = simulate(sc, prepared=prep)
    assert result.updates == 1
    with pytest.raises(ScenarioError) as err:
        parse_scenario({**raw, "model": {"backend": "squares", "name": "x"}}, tmp_path / "s.toml")
    assert err.value.key == "model.name" and "least_squares" in str(err.value)
    X, y = prep.dataset.X_train, prep.dataset.y_train
    assert len(y) == 1438  # digits, odd/even, 80 % for training: one batch of all rows
    np.testing.assert_allclose(result.final_w, 0.1 * X.T @ (2.0 * y - 1.0) / len(y), rtol=1e-12)
    sys.modules.pop("squares_family", None)
