"""``netsim keys`` lists every key a scenario in the docs or a preset sets, including those
only some settings read (a schedule's own keys, a link event's, data of source npz, a torch
module's arguments)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from netsim.api import keys

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
FREE = ("workers[].compute.", "network.topology.", "model.kwargs.")
"""Tables whose keys are described with their table's key (a time distribution's parameters,
a topology's description, a module's arguments)."""
PER_MODEL = re.compile(r"^(algorithms\.[a-z_]+|model)\.(lr|l2)\.[a-z_]+$")


def _keys(table: dict, prefix: str = ""):
    """The dotted keys of a parsed TOML *table* (``[]`` for an array of tables)."""
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            yield from _keys(value, key + ".")
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for item in value:
                yield from _keys(item, key + "[].")
        else:
            yield key


def _documented() -> list[tuple[str, str]]:
    """(where, key) for every key of the docs' TOML blocks and the preset scenarios."""
    out = []
    for page in PAGES:
        for block in re.findall(r"```toml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            out += [(page.name, k) for k in _keys(tomllib.loads(block))]
    for path in SCENARIOS:
        out += [(path.name, k) for k in _keys(tomllib.loads(path.read_text(encoding="utf-8")))]
    return out


def test_every_key_the_docs_and_presets_set_is_listed():
    listed = {k.key for k in keys()}
    documented = _documented()
    assert len(documented) > 100
    missing = sorted(
        {
            f"{key} ({where})"
            for where, key in documented
            if key not in listed and not key.startswith(FREE) and not PER_MODEL.match(key)
        }
    )
    assert not missing, missing


@pytest.mark.parametrize(
    "key",
    [
        "data.path",
        "model.kwargs",
        "events[].link",
        "events[].bandwidth",
        "events[].latency",
        "algorithms.gsgd.lr_decay",
        "algorithms.asgd.lr_step",
        "algorithms.ssgd.lr_horizon",
        "algorithms.ssp.lr_floor",
    ],
)
def test_keys_only_some_settings_read_are_listed_and_not_required(key):
    spec = {k.key: k for k in keys()}[key]
    assert not spec.required


def test_the_torch_models_keys_are_listed_without_pytorch(monkeypatch):
    """The torch backend's keys are read before PyTorch is looked for: without it they are
    listed all the same (and a scenario using them is refused on the backend only)."""
    import netsim.config.model as scenario_module

    with_torch = {k.key for k in keys() if k.key.startswith("model.")}
    monkeypatch.setattr(scenario_module, "torch_missing", lambda: True)
    without = {k.key for k in keys() if k.key.startswith("model.")}
    assert {"model.dtype", "model.device", "model.stack", "model.loss"} <= without
    assert without == with_torch
