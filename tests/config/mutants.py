"""Scenario mutants for fuzzing: a valid scenario dict, changed key by key at random.

Used by tests/config/test_fuzz_scenarios.py (a bounded hypothesis test) and by
benchmarks/fuzz_scenarios.py (thousands of mutants). Every function takes a
``random.Random`` so both drive it the same way.
"""

from __future__ import annotations

import copy
import math
import random
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

ODD_STRINGS = [
    "",
    " ",
    "a\nb",
    "tab\there",
    "\u2028sep",
    "é→中文",
    "x" * 300,
    "fast",
    "slow",
    "gsgd",
    "ssgd",
    "auto",
    "kmeans:2",
    "equal:3",
    "hand",
    "../etc",
    "nul\u0000byte",
    "del\u007f",
    "[network]",
    "h0",
    "s0",
    "fat_tree_k4",
    "topohub:nope",
    "digits",
    "synthetic",
    "multiclass",
    "binary",
    "lognormal",
    "replay",
    "per_datacenter",
    "random",
    "star",
    "0",
    "1e-300",
    "-1",
]
ODD_NUMBERS = [
    0,
    -1,
    1,
    2,
    3,
    7,
    2**31,
    2**63 - 1,
    -(2**63),
    10**10,
    0.0,
    -0.0,
    1e-300,
    5e-324,
    1e-20,
    1e300,
    1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
    0.5,
    1.5,
    0.999,
    1e7,
    1e-9,
    1438,
    1437,
]
UNKNOWN_KEYS = ["bogus", "", "a b", "until\n", "é", "count", "dist", "x.y"]


def base_scenarios() -> list[dict]:
    """The shipped scenario files as dicts, plus a small digits scenario built in code."""
    from conftest import base_raw  # tests/ is on the path of both users

    out = [tomllib.loads(p.read_text()) for p in SCENARIOS]
    for raw in list(out):
        if raw.get("data", {}).get("source") in (
            "mnist",
            "libsvm",
        ):  # the same, runnable without files
            out.append({**copy.deepcopy(raw), "data": {"source": "digits", "labels": "odd_even"}})
    out.append(base_raw())
    out.append(kitchen_sink())
    out.append(workload_sink())
    out.append(server_sink())
    return out


def server_sink() -> dict:
    """A small scenario with every ``[server]`` key set (a receiving thread, copies for the
    evaluations, averaging), under GSGD so that every cost is paid."""
    return {
        "name": "server-sink",
        "run": {"seed": 3, "algorithm": "gsgd", "until": 10.0, "eval_every": 2.0, "batch_size": 8},
        "data": {"source": "digits", "labels": "odd_even"},
        "workers": [
            {"name": "fast", "count": 3, "compute": 1.0},
            {"name": "slow", "count": 3, "compute": {"dist": "exponential", "mean": 2.0}},
        ],
        "server": {
            "gradient_time": 0.01,
            "gradient_time_per_param": 1e-5,
            "apply_time": 0.02,
            "apply_time_per_param": 1e-5,
            "service": "exponential",
            "send_time": 0.005,
            "send_time_per_byte": 1e-7,
            "parallel_sends": 2,
            "bandwidth": 1e6,
            "receive_time": 0.01,
            "receive_time_per_byte": 1e-7,
            "snapshot_time": 0.01,
            "snapshot_time_per_param": 1e-6,
            "average_time": 0.002,
            "average_time_per_param": 1e-6,
        },
        "algorithms": {"gsgd": {"lr": 0.1, "groups": [["fast"], ["slow"]]}, "asgd": {"lr": 0.05}},
    }


def workload_sink() -> dict:
    """A small scenario touching the workload keys: partitions, per-class labels, the MLP,
    schedules, momentum and GSGD group weighting."""
    return {
        "name": "workload-sink",
        "run": {"seed": 9, "algorithm": "gsgd", "until": 12.0, "eval_every": 3.0, "batch_size": 8},
        "data": {
            "source": "digits",
            "labels": "multiclass",
            "partition": "dirichlet",
            "alpha": 0.5,
        },
        "model": {"name": "mlp", "hidden": [16], "l2": 0.0001},
        "workers": [
            {"name": "fast", "count": 3, "compute": 1.0, "data": {"labels": [0, 1, 2, 3, 4]}},
            {"name": "slow", "count": 3, "compute": 2.5, "data": {"labels": [5, 6, 7, 8, 9]}},
        ],
        "algorithms": {
            "gsgd": {
                "lr": 0.05,
                "group_weighting": "inverse_rate",
                "momentum": 0.5,
                "lr_schedule": "cosine",
                "lr_horizon": 12.0,
                "lr_unit": "seconds",
                "lr_warmup": 2.0,
            },
            "ssgd": {
                "lr": 0.05,
                "lr_schedule": "step",
                "lr_step": 5,
                "lr_decay": 0.5,
                "nesterov": True,
                "momentum": 0.9,
            },
            "asgd": {"lr": 0.02, "lr_schedule": "inverse_sqrt", "lr_decay": 0.1},
        },
    }


def kitchen_sink() -> dict:
    """A small scenario touching most keys: a network, events, every timer of GSGD, several rules."""
    return {
        "name": "sink",
        "description": "every option once",
        "run": {
            "seed": 5,
            "algorithm": "gsgd",
            "until": 20.0,
            "eval_every": 2.0,
            "batch_size": 4,
            "timeline_until": 10.0,
            "target_loss": 0.5,
            "max_updates": 500,
        },
        "data": {
            "source": "synthetic",
            "labels": "binary",
            "n_samples": 200,
            "n_features": 5,
            "n_classes": 2,
            "test_fraction": 0.25,
            "add_bias": True,
        },
        "model": {"name": "logistic", "l2": 0.0, "init": "normal", "init_scale": 0.1},
        "network": {
            "topology": "star16",
            "placement": "spread",
            "sharing": "rtt",
            "message_bytes": 1e6,
            "header_bytes": 64,
            "bytes_per_value": 8,
        },
        "workers": [
            {
                "name": "a",
                "count": 3,
                "compute": {"dist": "shifted_exponential", "shift": 0.5, "mean": 0.2},
            },
            {"name": "b", "count": 2, "compute": {"dist": "pareto", "shape": 2.5, "scale": 0.8}},
            {"name": "c", "count": 2, "compute": {"dist": "replay", "times": [[1.0, 2.0], [1.5]]}},
        ],
        "events": [
            {"kind": "slowdown", "time": 3.0, "worker": "a", "factor": 3.0},
            {"kind": "crash", "time": 4.0, "worker": [5], "duration": 2.0},
            {"kind": "recover", "time": 9.0, "worker": 5},
            {"kind": "link", "time": 5.0, "link": ["h1", "s0"], "bandwidth": 1e8, "latency": 0.01},
        ],
        "algorithms": {
            "gsgd": {
                "lr": 0.1,
                "grouping": "auto",
                "k_max": 3,
                "probe_rounds": 3,
                "group_timeout": 1.0,
                "regroup_every": 10,
                "regroup_every_s": 5.0,
                "regroup_window": 3,
                "jitter_feature": True,
            },
            "ssgd": {"lr": 0.1},
            "asgd": {"lr": 0.05},
            "ksync": {"lr": 0.1, "k": 3},
            "kasync": {"lr": 0.1, "k": 2},
            "ssp": {"lr": 0.05, "s": 2},
            "backup": {"lr": 0.1, "backups": 2},
            "lgc": {"lr": 0.1, "k": 4, "blocks": 2},
            "abs": {"lr": 0.1, "k0": 2},
            "dcasgd_a": {"lr": 0.05},
        },
    }


# ------------------------------------------------------------------ random values


def random_value(rnd: random.Random, depth: int = 0):
    """A random TOML value: numbers at the edges, odd strings, lists, tables, deep nesting."""
    kind = rnd.randrange(10 if depth < 3 else 4)
    if kind == 0:
        return rnd.choice(ODD_NUMBERS)
    if kind == 1:
        return rnd.choice(ODD_STRINGS)
    if kind == 2:
        return rnd.choice([True, False])
    if kind == 3:
        return rnd.choice(
            [rnd.uniform(-10, 10), rnd.randint(-5, 20), float(f"1e{rnd.randint(-320, 320)}")]
        )
    if kind == 4:
        return []
    if kind == 5:
        return {}
    if kind == 6:
        return [random_value(rnd, depth + 1) for _ in range(rnd.randint(1, 4))]
    if kind == 7:
        return {
            rnd.choice(
                UNKNOWN_KEYS + ["name", "count", "compute", "dist", "lr", "kind", "time"]
            ): random_value(rnd, depth + 1)
            for _ in range(rnd.randint(1, 3))
        }
    if kind == 8:
        nest = rnd.choice([2, 10, 40, 200])
        value = rnd.choice([[], 1, "h0"])
        for _ in range(nest):
            value = [value]
        return value
    return rnd.choice(
        [["h0", "s0"], [["h0"], ["s0"]], [0, 1], ["fast", "slow"], [[0, 1], [2]], [[]], ["15"]]
    )


def _paths(node, prefix=()):
    """Every (path, value) below *node*; a path is a tuple of keys and indices."""
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        yield prefix + (key,), value
        yield from _paths(value, prefix + (key,))


def _parent(raw, path):
    node = raw
    for part in path[:-1]:
        node = node[part]
    return node


def tweak_number(rnd: random.Random, value):
    """A number near the edge of what *value* could be."""
    if isinstance(value, bool):
        return not value
    choices = [
        0,
        -value,
        value * 1e6,
        value * 1e-12,
        value + 1,
        value - 1,
        float("nan"),
        float("inf"),
        rnd.choice(ODD_NUMBERS),
    ]
    if isinstance(value, int):
        choices += [2**40, -1, value * 1000]
    return rnd.choice(choices)


VALID_STRINGS = [
    "ssgd",
    "asgd",
    "gsgd",
    "ksync",
    "kasync",
    "ssp",
    "backup",
    "lgc",
    "abs",
    "dcasgd_a",
    "digits",
    "synthetic",
    "libsvm",
    "mnist",
    "odd_even",
    "multiclass",
    "binary",
    "logistic",
    "softmax",
    "smooth_svm",
    "normal",
    "zeros",
    "constant",
    "exponential",
    "shifted_exponential",
    "lognormal",
    "uniform",
    "pareto",
    "replay",
    "packed",
    "spread",
    "per_datacenter",
    "random",
    "maxmin",
    "rtt",
    "slowdown",
    "crash",
    "recover",
    "link",
    "auto",
    "kmeans:2",
    "equal:2",
    "hand",
    "fat_tree_k4",
    "star16",
    "geo3",
    "leaf_spine_small",
    "drop",
    "finish_then_drop",
]


def mild(raw: dict, rnd: random.Random, bases: list[dict] | None = None) -> dict:
    """A copy of *raw* with one type-preserving change (or a section taken from another
    base scenario), so that many mutants stay valid and reach the simulation."""
    raw = copy.deepcopy(raw)
    if bases and rnd.random() < 0.3:
        other = rnd.choice(bases)
        key = rnd.choice(list(other))
        raw[key] = copy.deepcopy(other[key])
        return raw
    paths = list(_paths(raw))
    if not paths:
        return raw
    path, value = rnd.choice(paths)
    parent, key = _parent(raw, path), path[-1]
    if isinstance(value, bool):
        parent[key] = not value
    elif isinstance(value, int):
        parent[key] = max(0, value + rnd.choice([-2, -1, 1, 2, value, 10 * value + 1]))
    elif isinstance(value, float):
        parent[key] = value * rnd.choice([0.001, 0.1, 0.5, 2.0, 10.0, 1000.0])
    elif isinstance(value, str):
        parent[key] = rnd.choice(VALID_STRINGS)
    elif isinstance(value, list) and value:
        op = rnd.randrange(3)
        if op == 0:
            value.pop(rnd.randrange(len(value)))
        elif op == 1:
            value.append(copy.deepcopy(rnd.choice(value)))
        else:
            rnd.shuffle(value)
    return raw


def mutate(raw: dict, rnd: random.Random, n: int | None = None) -> dict:
    """A copy of *raw* with *n* (default 1-3) random changes of one key each."""
    raw = copy.deepcopy(raw)
    for _ in range(n if n is not None else rnd.randint(1, 3)):
        paths = list(_paths(raw))
        op = rnd.randrange(9)
        if not paths or op == 0:  # a new key somewhere
            tables = [raw] + [v for _, v in paths if isinstance(v, dict)]
            rnd.choice(tables)[rnd.choice(UNKNOWN_KEYS + ["events", "network", "data", "run"])] = (
                random_value(rnd)
            )
            continue
        path, value = rnd.choice(paths)
        parent = _parent(raw, path)
        key = path[-1]
        if op == 1:  # remove
            if isinstance(parent, dict):
                del parent[key]
            else:
                parent.pop(key)
        elif op in (2, 3) and isinstance(value, (int, float)):
            parent[key] = tweak_number(rnd, value)
        elif op == 4 and isinstance(value, str):
            parent[key] = rnd.choice(ODD_STRINGS + [value + "\n", value * 50, value.upper()])
        elif op == 5:  # wrap or unwrap
            parent[key] = [value] if not isinstance(value, list) or not value else value[0]
        elif op == 6 and isinstance(value, (list, dict)):
            parent[key] = type(value)()
        else:
            parent[key] = random_value(rnd)
    return raw


# ------------------------------------------------------------------ writing TOML


def _string(text: str) -> str:
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_value(value) -> str:
    """*value* as an inline TOML value (tables inline, floats with nan/inf)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{_string(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(type(value))


def depth(value) -> int:
    """Nesting depth of lists and tables (iterative)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


def dumps(raw: dict) -> str:
    """A TOML document with one ``key = value`` line per top-level key."""
    return "".join(f"{_string(str(k))} = {toml_value(v)}\n" for k, v in raw.items())


def damage_text(text: str, rnd: random.Random) -> bytes:
    """Raw-text damage: truncation, a stray byte, a doubled line."""
    data = text.encode("utf-8")
    op = rnd.randrange(3)
    i = rnd.randrange(len(data) + 1)
    if op == 0:
        return data[:i]
    if op == 1:
        return data[:i] + bytes([rnd.choice([0xFF, 0x00, 0x22, 0x5B, 0x3D, 0x0A])]) + data[i:]
    lines = text.splitlines(keepends=True)
    j = rnd.randrange(len(lines)) if lines else 0
    return "".join(lines[: j + 1] + lines[j:]).encode("utf-8")


def random_sets(rnd: random.Random, raw: dict) -> list[str]:
    """0-2 ``--set KEY=VALUE`` overrides aimed at existing and made-up keys."""
    out = []
    paths = [".".join(str(p) for p in path) for path, _ in _paths(raw)]
    for _ in range(rnd.choice([0, 0, 0, 1, 2])):
        key = (
            rnd.choice(
                paths
                + ["run.until.x", "", "run..until", "workers.99.count", "a\nb", "network.counts"]
            )
            if paths
            else "run.until"
        )
        value = rnd.choice(
            [toml_value(random_value(rnd)), "", "=", "[[[", "1e30", "nan", '"per_datacenter"']
        )
        out.append(f"{key}={value}")
    return out


def make_case(rnd: random.Random, bases: list[dict], folder: Path) -> tuple[Path, list[str]]:
    """Write one mutant scenario into *folder*; return its path and extra CLI overrides."""
    base = rnd.choice(bases)
    if rnd.random() < 0.5:
        raw = base
        for _ in range(rnd.randint(1, 4)):
            raw = mild(raw, rnd, bases)
    else:
        raw = mutate(base, rnd)
    while (
        depth(raw) > 300
    ):  # deeper than the writer's recursion; the parser's limit is tested on its own
        raw = mutate(base, rnd)
    path = folder / "mutant.toml"
    text = dumps(raw)
    if rnd.random() < 0.05:
        path.write_bytes(damage_text(text, rnd))
    else:
        path.write_text(text, encoding="utf-8")
    return path, random_sets(rnd, raw)


def check_outcome(result, path: Path, allowed=(0, 2)) -> str | None:
    """None when *result* (a CliRunner Result) keeps the promise, else what went wrong."""
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return f"traceback: {type(exc).__name__}: {exc}"
    if result.exit_code not in allowed:
        return f"exit code {result.exit_code}"
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        if len(lines) != 1:
            return f"{len(lines)} lines on stderr: {result.stderr[:300]!r}"
        if "error:" not in lines[0] or (str(path) not in lines[0] and "--" not in lines[0]):
            return f"message names no file: {lines[0][:300]!r}"
    if "Traceback" in result.output:
        return "traceback in the output"
    return None
