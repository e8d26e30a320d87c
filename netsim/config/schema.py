"""Every scenario key, with its type, default, allowed values and unit (``netsim keys``),
and a JSON Schema of scenario files for editors.

The keys are collected by parsing every registered rule alone, then the shipped presets
(the network, events and data sources), while :class:`netsim.params.recording` notes each
key the reader asks for, so the list cannot drift from the readers.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ScenarioError
from ..params import MISSING, recording
from ..presets import preset_dir
from ..rules import RULES
from ..workload.sources import SOURCES
from ..workload.timemodels import _PARAMS as DIST_PARAMS
from ..workload.timemodels import TIME_MODELS
from .scenario import parse_scenario

__all__ = ["KeySpec", "scenario_keys", "json_schema", "no_match_text"]

_KIND = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "table"}
_JSON = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
TIME = "time unit (run.time_unit, s by default)"
_UNITS = [  # (regex on the key, unit); first match wins
    (r"^run\.(until|eval_every|timeline_until)$", TIME),
    (r"^server\.\w+_per_param$", "time units per parameter"),
    (r"^server\.\w+_per_byte$", "time units per byte"),
    (r"^server\.\w+_time$", TIME),
    (r"^server\.parallel_sends$", "count"),
    (r"latency|_s$|interval|duration|timeout|^events\[\]\.time$", "s"),
    (r"regroup_every$", "updates"),
    (r"bytes", "bytes"),
    (r"bandwidth|bps", "bit/s"),
    (r"max_updates|eval_every_updates|batch_size|probe_rounds", "count"),
    (r"(^|\.)lr($|\.)", "step size"),
]


@dataclass(frozen=True)
class KeySpec:
    """One scenario key: dotted ``key`` (``[]`` for any list index), ``type``,
    ``default`` (None: required or no default), ``allowed`` (text), ``unit``."""

    key: str
    type: str
    default: object
    allowed: str
    unit: str
    kinds: tuple = ()
    choices: tuple | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    required: bool = False


_PER_MODEL = re.compile(r"\.(lr|l2)\.[a-z_]+$")


def _generic(key: str) -> str:
    return re.sub(r"\[\d+\]", "[]", key)


def _unit(key: str) -> str:
    for pattern, unit in _UNITS:
        if re.search(pattern, key):
            return unit
    return ""


def _allowed(
    choices: Iterable[object] | None,
    positive: bool,
    minimum: float | None,
    maximum: float | None,
) -> str:
    if choices is not None:
        return ", ".join(map(str, choices))
    parts = []
    if positive and not (minimum is not None and minimum > 0):
        parts.append("> 0")
    if minimum is not None:
        parts.append(f">= {_number(minimum)}")
    if maximum is not None:
        parts.append(f"<= {_number(maximum)}")
    return ", ".join(parts)


def _number(x: float) -> str:
    """*x* as a bound is written: an int in full (33554432), a float in ``g`` form."""
    return str(x) if isinstance(x, int) else f"{x:g}"


def _records() -> list[tuple]:
    """What the readers ask for, parsing the shipped presets (the network, events, data
    sources, and defaults that depend on the cluster), then each registered rule alone on a
    16-worker cluster (a rule no preset configures still has its keys listed)."""
    folder = preset_dir("scenarios")
    sources = [
        (str(path), tomllib.loads(path.read_text(encoding="utf-8")))
        for path in (sorted(folder.glob("*.toml")) if folder else [])
    ]
    sources += [(f"<rule {name}>", _rule_alone(name)) for name in RULES]
    sources += _probes()
    seen: list[tuple] = []
    for where, raw in sources:
        with recording() as found:
            try:
                parse_scenario(raw, Path(where))
            except ScenarioError:
                pass  # a reader that needs a key (or a preset that needs topohub): keep what was read
        seen += found
    return seen


def _rule_alone(name: str, options: dict | None = None) -> dict:
    """A scenario with the rule *name* alone, every one of its keys left to the reader but
    *options*."""
    return {
        "run": {"algorithm": name},
        "workers": [
            {"name": "a", "count": 8, "compute": 1.0},
            {"name": "b", "count": 8, "compute": 2.0},
        ],
        "algorithms": {name: dict(options or {})},
    }


_PROBED = next(iter(RULES))
"""The rule the probes (:func:`_probes`) configure: the first registered (it needs no key
but ``lr``)."""

_SCHEDULE_PROBES = (
    {"lr": 0.1, "lr_schedule": "step", "lr_decay": 0.5, "lr_step": 100.0},
    {"lr": 0.1, "lr_schedule": "cosine", "lr_horizon": 100.0, "lr_floor": 0.1},
)
"""Settings of the schedules whose own keys no preset reads (inverse_time reads lr_decay too)."""


_SCHEDULE_KEYS = {
    "lr_decay": "> 0 (<= 1 with step); required by lr_schedule step, inverse_time and inverse_sqrt",
    "lr_step": "> 0; required by lr_schedule step",
    "lr_horizon": "> 0; read by lr_schedule cosine (default: run.until with lr_unit seconds, "
    "run.max_updates with updates)",
    "lr_floor": ">= 0, < 1; read by lr_schedule cosine",
}
"""What a schedule's own keys allow, and which schedules read them."""

_CONDITIONAL = {
    "data.path": "a .npz file (relative to the scenario's folder); required by source npz",
    "data.train_file": "a LIBSVM file (relative: from the data folder, its a9a/, the working "
    "directory); read by source libsvm (default: a9a in the data folder)",
    "data.test_file": "a LIBSVM file, found as train_file; read by source libsvm (default "
    "with train_file: test_fraction of it)",
    "data.function": "'package.module:function' returning the data; required by source callable",
    "data.function_dir": "the folder data.function is imported from before the Python path "
    "(relative to the scenario's folder; default: that folder); source callable",
    "model.module_dir": "the folder model.module is imported from before the Python path "
    "(relative to the scenario's folder; default: that folder); backend torch with module",
    "events[].link": "[u, v], a link of the topology; required by kind link",
    "events[].bandwidth": ">= 0 (0 cuts the link); kind link (bandwidth and/or latency)",
    "events[].latency": ">= 0; kind link (bandwidth and/or latency)",
}
"""Keys read (and required) only with some settings: data of source npz or libsvm, a torch
module's folder, a link event."""


def _probes() -> list[tuple[str, dict]]:
    """Scenarios whose readers ask for keys that only some settings read: a rule with the step
    and the cosine lr schedules (every rule reads a schedule with the same reader: see
    :func:`_with_schedules`), data of every source (its own keys, as its ``example``), a torch module
    (``model.kwargs``) and a link event on a star (``link``, ``bandwidth``, ``latency``)."""
    out = [
        (f"<rule {_PROBED}, lr_schedule {probe['lr_schedule']}>", _rule_alone(_PROBED, probe))
        for probe in _SCHEDULE_PROBES
    ]
    alone = _rule_alone(_PROBED, {"lr": 0.1})
    torch = {"model": {"backend": "torch", "module": "package.module:Net", "kwargs": {}}}
    link = {
        "network": {"topology": {"builder": "star", "args": {"n_hosts": 17}}},
        "events": [
            {"kind": "link", "time": 0.0, "link": ["h0", "s0"], "bandwidth": 1e9, "latency": 1e-3}
        ],
    }
    extra: dict[str, dict] = {
        **{
            f"<data {name}>": {"data": {"source": name, **source.example}}
            for name, source in SOURCES.items()
        },
        "<torch module>": torch,
        "<link event>": link,
    }
    return out + [(where, {**alone, **tables}) for where, tables in extra.items()]


def _with_schedules(out: dict) -> dict:
    """*out* with each schedule key of :data:`_PROBED`'s (``lr_decay``, ...) also listed for
    every other rule that reads ``lr_schedule``, after its ``lr_unit``; a rule alone may stop
    at a parameter of its own it requires before its schedule is read."""
    template = {k: out.get(f"algorithms.{_PROBED}.{k}") for k in _SCHEDULE_KEYS}
    listed: dict = {}
    for key, spec in out.items():
        if key.startswith("algorithms.") and key.rsplit(".", 1)[-1] in _SCHEDULE_KEYS:
            continue  # listed after its rule's lr_unit
        listed[key] = spec
        if key.endswith(".lr_unit"):
            base = key[: -len("lr_unit")]
            for name, kept in template.items():
                if base + name in out:
                    listed[base + name] = out[base + name]
                elif kept is not None:
                    listed[base + name] = replace(kept, key=base + name)
    return {**listed, **{k: v for k, v in out.items() if k not in listed}}


def scenario_keys() -> list[KeySpec]:
    """Every key a scenario may set, in reading order (first occurrence)."""
    out: dict[str, KeySpec] = {}
    for key, kind, default, choices, positive, minimum, maximum in _records():
        key = _generic(key)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if key in out or kinds == (dict,) or _PER_MODEL.search(key):
            continue  # sections, and per-model values (described with their key)
        if key == "name":
            default = "(the file name)"
        elif isinstance(default, (list, dict)) and default:
            default = MISSING if key.endswith("groups") else default
        if key.startswith("algorithms.") and dict in kinds and key.split(".")[-1] in ("lr", "l2"):
            type_text = (
                " or ".join(_KIND[k] for k in kinds) + " (per model: { logistic = ..., ... })"
            )
        else:
            type_text = " or ".join(_KIND.get(k, k.__name__) for k in kinds)
        out[key] = KeySpec(
            key,
            type_text,
            None if default is MISSING else default,
            _allowed(choices, positive, minimum, maximum),
            _unit(key),
            kinds,
            tuple(choices) if choices is not None else None,
            minimum,
            0 if positive else None,
            maximum,
            default is MISSING and not key.endswith("groups"),
        )
    out.update(_time_keys())
    for key, spec in list(out.items()):
        only = _SCHEDULE_KEYS.get(key.rsplit(".", 1)[-1]) or _CONDITIONAL.get(key)
        if only is not None:  # read (and required) only with some settings
            out[key] = replace(spec, allowed=only, maximum=None, required=False)
    out = _with_schedules(out)
    out["run.algorithm"] = replace(
        out["run.algorithm"],
        allowed="a rule with an [algorithms.NAME] table (default: gsgd when it has one, else "
        "the first configured)",
    )
    out["model.kwargs"] = KeySpec(
        "model.kwargs",
        "table",
        None,
        "keyword arguments of model.module's class (backend torch)",
        "",
        (dict,),
    )
    return sorted(out.values(), key=lambda k: _order(k.key))


def _time_keys() -> dict[str, KeySpec]:
    """A worker class's time-model keys: ``compute``, its ``dist``, and ``overhead``."""
    out: dict[str, KeySpec] = {}
    dists = (
        "; ".join(f"{d}({', '.join(p)})" for d, (p, _) in DIST_PARAMS.items())
        + "; replay(times)"
        + "; replay(run = a real run's folder, worker_class, measure = cycle | compute)"
    )
    out["workers[].compute"] = KeySpec(
        "workers[].compute",
        "float or table",
        None,
        f"a time > 0, or {{ dist = ... }}: {dists}",
        TIME,
        (float, dict),
        required=True,
    )
    out["workers[].overhead"] = KeySpec(
        "workers[].overhead",
        "float or table",
        None,
        "a time > 0, or { dist = ... } as compute: drawn per iteration and added to the "
        "compute time (the machine's own cost around a gradient; netsim calibrate fits it)",
        TIME,
        (float, dict),
    )
    out["workers[].compute.dist"] = KeySpec(
        "workers[].compute.dist",
        "str",
        None,
        ", ".join(TIME_MODELS),
        "",
        (str,),
        tuple(TIME_MODELS),
    )
    return out


_SECTIONS = (
    "name",
    "description",
    "run",
    "data",
    "model",
    "workers",
    "network",
    "server",
    "events",
    "algorithms",
)


def _order(key: str) -> tuple:
    head = re.split(r"[.\[]", key, maxsplit=1)[0]
    return (_SECTIONS.index(head) if head in _SECTIONS else len(_SECTIONS),)


def _json_type(spec: KeySpec) -> dict:
    types = [_JSON[k] for k in spec.kinds if k in _JSON]
    node: dict = {"type": types[0] if len(types) == 1 else types} if types else {}
    if spec.choices is not None:
        node["enum"] = list(spec.choices)
    if spec.minimum is not None:
        node["minimum"] = spec.minimum
    if spec.exclusive_minimum is not None:
        node["exclusiveMinimum"] = spec.exclusive_minimum
    if spec.maximum is not None:
        node["maximum"] = spec.maximum
    if spec.default is not None:
        node["default"] = spec.default
    text = ", ".join(
        x
        for x in (spec.allowed and f"allowed: {spec.allowed}", spec.unit and f"unit: {spec.unit}")
        if x
    )
    if text:
        node["description"] = text
    return node


def json_schema() -> dict:
    """A JSON Schema (draft 2020-12) of scenario files, for editors (e.g. Even Better TOML / Taplo)."""
    root: dict = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "netsim scenario",
        "type": "object",
        "properties": {},
    }
    for spec in scenario_keys():
        node = root
        parts = spec.key.split(".")
        for part in parts[:-1]:
            is_list = part.endswith("[]")
            name = part[:-2] if is_list else part
            child = node.setdefault("properties", {}).setdefault(name, {})
            if is_list:
                child["type"] = "array"
                child = child.setdefault("items", {"type": "object"})
            else:
                child.setdefault("type", "object")
            node = child
        last = parts[-1]
        is_list = last.endswith("[]")
        name = last[:-2] if is_list else last
        leaf = node.setdefault("properties", {}).setdefault(name, {})
        if is_list:
            leaf.update({"type": "array", "items": leaf.get("items", {"type": "object"})})
        else:
            kids = leaf.get("properties")
            leaf.update(_json_type(spec))
            if kids is not None:
                leaf["properties"] = kids
    return root


def schema_path_hint() -> Path:
    return Path("netsim-scenario.schema.json")


def no_match_text(text: str, keys: list[str], shown: int = 3) -> str:
    """What to say when no key contains *text*: the words of the keys (dotted parts and
    their ``_`` pieces) close to it, each with the keys holding it (the first *shown*).

    >>> no_match_text("untl", ["run.until", "run.timeline_until", "run.seed"])
    "no key contains 'untl'; did you mean until (run.until, run.timeline_until)?"
    >>> no_match_text("zzz", ["run.until"])
    "no key contains 'zzz' (netsim keys lists them all)"
    """
    import difflib

    words: dict[str, list[str]] = {}
    for key in keys:
        parts = key.split(".")
        for word in dict.fromkeys([*parts, *(p for part in parts for p in part.split("_"))]):
            words.setdefault(word, []).append(key)
    close = difflib.get_close_matches(text, list(words), n=3, cutoff=0.75)
    if close:  # the best word, and others only when as close as it
        score = {w: difflib.SequenceMatcher(None, text, w).ratio() for w in close}
        close = [w for w in close if score[w] >= score[close[0]] - 0.05]
    if not close:
        return f"no key contains {text!r} (netsim keys lists them all)"

    def holders(word: str) -> str:
        found = words[word]
        more = f", … {len(found) - shown} more" if len(found) > shown else ""
        return ", ".join(found[:shown]) + more

    hints = " or ".join(f"{w} ({holders(w)})" for w in close)
    return f"no key contains {text!r}; did you mean {hints}?"
