"""A parameter server of its own, held against netsim: the block of docs/VALIDATION.md.

The real system uses the standard library and numpy only (no netsim code on its server or
worker path): one server process (this one) keeps a float64 vector of ``--params``
parameters (1,000,000 by default: 8 MB a message); 16 worker processes (the GSGD paper's
classes: 4 fast × 1 time unit, 4 medium × 2, 8 slow × 3), each with its own
``multiprocessing.Pipe``, receive the model, compute (a real numpy pass over the model, then
sleep out the rest of the class's time), and push a gradient of the model's size. The
server takes pushes first come, first served; it adds each into its group's sum (the time
per push taken in), applies an update when the rule says (ASGD: every push; GSGD: when every
member of a class has pushed, their mean) and sends the new model to the worker(s) it
releases, one after the other. It times each of these steps.

From those times the script fits netsim's ``[server]`` table (``fit_server``), measures the
per-class latency of a model message and the workers' compute overshoot, emulates the same
cluster with netsim (with and without the ``[server]`` keys) and prints the real updates
against netsim's, per run and as a mean with a 95 % interval; GSGD is also predicted held
out, from the ASGD runs' keys. Goal: netsim with the fitted keys within 5 % of the real
updates. The time scale (real seconds per unit) is chosen from a pilot ASGD run's cost per
push so that the ASGD server is busy about two thirds of the time, unless ``--scale`` is
given. ``--sizes`` adds ASGD runs of other model sizes, for the per-parameter and per-byte
parts of the printed table.

Usage: python benchmarks/stdlib_ps.py [--quick] [--repeats 3] [--horizon 300] [--scale S]
[--params 1000000] [--sizes 250000,500000]   (full: about 4 min on 2 cores at rest, longer
under load, as the time scale follows the server's costs; --quick: T = 30, under a minute)
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import struct
import tempfile
import time
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import numpy as np

CLASSES = (("fast", 4, 1.0), ("medium", 4, 2.0), ("slow", 8, 3.0))
"""(name, count, compute time in units) of the GSGD paper's 16 workers."""
RULES = ("asgd", "gsgd")
TARGET_BUSY = 0.75
"""The ASGD server's busy share, were the workers never to wait, that the automatic time
scale aims at (waiting lengthens their cycles: the share measured is about 0.65)."""
GOAL = 0.05
SEEDS = (1, 2, 3, 4, 5)
"""netsim's seeds when its service times are drawn (exponential service)."""
HEADER = struct.Struct("ddd")  # a push's header: model received, compute done, drawn (s)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
"""Student's t, two-sided 95 %, by degrees of freedom (1.96 beyond)."""
KEYS = (
    "gradient_time",
    "gradient_time_per_param",
    "apply_time",
    "apply_time_per_param",
    "send_time",
    "send_time_per_byte",
)


# ---- the real system: standard library and numpy only ------------------------------------


def _worker(conn: Connection, stop: Any, drawn_s: float, n_params: int, seed: int) -> None:
    """One worker: receive the model, compute for *drawn_s* seconds, push a gradient."""
    noise = np.random.default_rng(seed).standard_normal(n_params) * 1e-3
    model = np.empty(n_params)
    grad = np.empty(n_params)
    conn.send_bytes(b"ready")  # allocated: the run's clock may start
    while True:
        if conn.recv_bytes_into(model) == 0:  # an empty message: the run is over
            return
        got = time.monotonic()
        np.multiply(model, 1e-4, out=grad)  # the computation: a pass over the model
        grad += noise
        rest = drawn_s - (time.monotonic() - got)
        if rest > 0:
            stop.wait(rest)
        conn.send_bytes(HEADER.pack(got, time.monotonic(), drawn_s))
        conn.send_bytes(grad)


class _Server:
    """The parameter server's state and its measurements (seconds, on time.monotonic)."""

    def __init__(self, conns: list[Connection], groups: list[list[int]], n_params: int):
        self.conns, self.groups = conns, groups
        self.group_of = {w: g for g, members in enumerate(groups) for w in members}
        self.model = np.zeros(n_params)
        self.sums = [np.zeros(n_params) for _ in groups]
        self.buf = np.empty(n_params)
        self.taken = [0] * len(groups)
        self.sent_at = [0.0] * len(conns)
        self.times: dict[str, list[float]] = {"gradient": [], "apply": [], "send": []}
        self.last = 0.0  # when the last timed step ended
        self.latency: list[list[float]] = [[] for _ in conns]
        self.overshoot: list[list[float]] = [[] for _ in conns]
        self.busy = 0.0
        self.updates = 0
        self.end = 0.0

    def _timed(self, kind: str, start: float) -> float:
        now = self.last = time.monotonic()
        self.times[kind].append(now - start)
        self.busy += max(0.0, min(now, self.end) - min(start, self.end))
        return now

    def send(self, w: int) -> None:
        start = self.last  # steps follow one another: each runs from the previous one's end
        self.conns[w].send_bytes(self.model)
        self.sent_at[w] = self._timed("send", start)

    def header(self, w: int) -> float:
        got, done, drawn = HEADER.unpack(self.conns[w].recv_bytes())
        self.latency[w].append(got - self.sent_at[w])
        self.overshoot[w].append(done - got - drawn)
        return done

    def take(self, w: int, done: float, lr: float) -> list[int]:
        """Take *w*'s gradient (its computation ended at *done*) in; apply an update when its
        group is complete: the workers released."""
        # timed from when the server could have started it: its loop and wake-up count
        could = max(done, self.last)
        self.conns[w].recv_bytes_into(self.buf)
        g = self.group_of[w]
        self.sums[g] += self.buf
        self._timed("gradient", could)
        self.taken[g] += 1
        if self.taken[g] < len(self.groups[g]):
            return []
        start = self.last
        self.model -= (lr / self.taken[g]) * self.sums[g]
        self.sums[g][:] = 0.0
        if self._timed("apply", start) <= self.end:
            self.updates += 1
        self.taken[g] = 0
        return self.groups[g]


def serve(
    conns: list[Connection], groups: list[list[int]], n_params: int, horizon_s: float
) -> dict:
    """Serve *conns* for *horizon_s* seconds; the measurements and the workers' state at the end."""
    srv = _Server(conns, groups, n_params)
    index = {c: w for w, c in enumerate(conns)}
    start = srv.last = time.monotonic()
    srv.end = start + horizon_s
    for w in range(len(conns)):
        srv.send(w)
    computing = set(range(len(conns)))  # workers whose push header is not read yet
    queue: list[tuple[float, int]] = []  # (compute done, worker): first come, first served
    while (now := time.monotonic()) < srv.end:
        ready = wait([conns[w] for w in computing], 0.0 if queue else srv.end - now)
        for c in ready:
            w = index[c]  # type: ignore[index]
            heapq.heappush(queue, (srv.header(w), w))
            computing.discard(w)
        if queue:
            done, w = heapq.heappop(queue)
            for m in srv.take(w, done, lr=0.01):
                srv.send(m)
                computing.add(m)
    return {
        "srv": srv,
        "computing": computing,
        "queued": [w for _, w in queue],
        "horizon_s": horizon_s,
    }


def real_run(rule: str, n_params: int, horizon: float, scale: float, seed: int) -> dict:
    """One real run of *rule* for *horizon* units at *scale* s a unit: its figures (seconds)."""
    ctx = get_context("fork")
    stop = ctx.Event()
    drawn = [c for _, count, c in CLASSES for _ in range(count)]
    names = [n for n, count, _ in CLASSES for _ in range(count)]
    pipes = [ctx.Pipe() for _ in drawn]
    procs = [
        ctx.Process(
            target=_worker, args=(child, stop, d * scale, n_params, seed * 1000 + w), daemon=True
        )
        for w, ((_, child), d) in enumerate(zip(pipes, drawn))
    ]
    if rule == "asgd":
        groups = [[w] for w in range(len(drawn))]
    else:
        groups = [[w for w, n in enumerate(names) if n == name] for name, _, _ in CLASSES]
    load = os.getloadavg()[0]
    for p in procs:
        p.start()
    conns = [parent for parent, _ in pipes]
    for c in conns:
        c.recv_bytes()  # every worker ready
    try:
        out = serve(conns, groups, n_params, horizon * scale)
    finally:
        stop.set()
    srv = out["srv"]
    for w in range(len(conns)):  # drain the pushes under way, then an empty message ends each
        if w in out["computing"]:
            conns[w].recv_bytes()
        if w in out["computing"] or w in out["queued"]:
            conns[w].recv_bytes_into(srv.buf)
        conns[w].send_bytes(b"")
    for p in procs:
        p.join(10)
    by_class: dict[str, dict[str, list[float]]] = {
        n: {"latency": [], "overshoot": []} for n in names
    }
    for w, name in enumerate(names):
        by_class[name]["latency"] += srv.latency[w]
        by_class[name]["overshoot"] += srv.overshoot[w]
    return {
        "rule": rule,
        "load": load,
        "updates": srv.updates,
        "busy": srv.busy / out["horizon_s"],
        "times": srv.times,
        "by_class": by_class,
        "n_params": n_params,
    }


def probe(n_params: int, reps: int = 20) -> float:
    """Median seconds the server spends on one ASGD push (take in, apply, send back)."""
    ctx = get_context("fork")
    stop = ctx.Event()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_worker, args=(child, stop, 0.0, n_params, 0), daemon=True)
    proc.start()
    parent.recv_bytes()
    srv = _Server([parent], [[0]], n_params)
    srv.end = math.inf
    srv.last = time.monotonic()
    costs = []
    for _ in range(reps):
        srv.send(0)
        srv.take(0, srv.header(0), lr=0.01)
        costs.append(sum(v[-1] for v in srv.times.values()))
    srv.send(0)
    srv.header(0)
    srv.conns[0].recv_bytes_into(srv.buf)
    parent.send_bytes(b"")
    proc.join(10)
    return float(np.median(costs))


def choose_scale(n_params: int) -> tuple[float, float]:
    """(time scale, seconds of server time per ASGD push): a probe of one push, then a pilot
    ASGD run of 20 units at the scale it suggests, whose median step times (robust to a
    burst of load during the pilot) set the scale."""
    rate = sum(count / c for _, count, c in CLASSES)  # ASGD pushes per unit, no waiting
    guess = rate * probe(n_params) / TARGET_BUSY
    pilot = real_run("asgd", n_params, 20.0, guess, seed=0)
    cost = sum(float(np.median(v)) for v in pilot["times"].values())
    return float(f"{rate * cost / TARGET_BUSY:.2g}"), cost


# ---- fitting and emulation (may use netsim) ------------------------------------------------


def _line(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Least-squares (fixed, per size, rms residual) of seconds against size, both parts
    >= 0 (a part the free fit makes negative is 0 and the other refitted alone)."""
    size = np.array([p[0] for p in points], dtype=float)
    secs = np.array([p[1] for p in points], dtype=float)
    slope, fixed = 0.0, float(secs.mean())
    if np.unique(size).size > 1:
        slope, fixed = np.polyfit(size, secs, 1)
        if fixed < 0:
            slope, fixed = float(size @ secs / (size @ size)), 0.0
        elif slope < 0:
            slope, fixed = 0.0, float(secs.mean())
    resid = secs - (fixed + slope * size)
    return float(fixed), float(slope), float(np.sqrt(np.mean(resid**2)))


def fit_server(samples: dict[str, list[tuple[float, float]]], scale: float) -> dict:
    """netsim's ``[server]`` keys (time units) fitted to measured service and send times.

    *samples*: ``"gradient"`` and ``"apply"`` → [(parameters, seconds)] per push taken in and
    per update applied, ``"send"`` → [(bytes, seconds)] per model message; *scale* is the real
    seconds of one time unit. Each key pair is a least-squares line (fixed part, part per
    parameter or byte) when the samples hold two sizes or more, else the fixed part is the
    mean and the other 0. ``service`` is the closer of the two by the coefficient of variation
    ``cv`` of one push's service (gradient and update: root of the summed residual variances
    over the summed means; 0 constant, 1 exponential): ``"exponential"`` from √½ up, where
    the mean residual work E[S²]/E[S]² is half way between theirs (1 and 2). ``parallel_sends``
    is 1 (the server sends one message at a time). ``cv`` is reported, not a key.
    """
    keys: dict[str, Any] = {}
    mean, var = 0.0, 0.0
    for kind, per in (("gradient", "per_param"), ("apply", "per_param"), ("send", "per_byte")):
        fixed, slope, rms = _line(samples[kind])
        keys[f"{kind}_time"] = fixed / scale
        keys[f"{kind}_time_{per}"] = slope / scale
        if kind != "send":
            mean += float(np.mean([s for _, s in samples[kind]]))
            var += rms**2
    cv = math.sqrt(var) / mean if mean > 0 else 0.0
    keys["service"] = "exponential" if cv >= math.sqrt(0.5) else "constant"
    keys["parallel_sends"] = 1
    keys["cv"] = cv
    return keys


def fold(keys: dict, n_params: int, message_bytes: float) -> dict:
    """*keys* for a model of *n_params* parameters (*message_bytes* a model message) as fixed
    parts only, the per-parameter and per-byte parts 0: for an emulated stand-in model."""
    out = dict(keys)
    for kind, per, size in (
        ("gradient", "per_param", n_params),
        ("apply", "per_param", n_params),
        ("send", "per_byte", message_bytes),
    ):
        out[f"{kind}_time"] = keys[f"{kind}_time"] + keys[f"{kind}_time_{per}"] * size
        out[f"{kind}_time_{per}"] = 0.0
    return out


def samples_of(runs: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """The runs' timed steps as fit_server's samples (sizes: parameters, bytes)."""
    out: dict[str, list[tuple[float, float]]] = {"gradient": [], "apply": [], "send": []}
    for r in runs:
        for kind, secs in r["times"].items():
            size = r["n_params"] * (8 if kind == "send" else 1)
            out[kind] += [(size, s) for s in secs]
    return out


def _mean(values: list[float]) -> float:
    """The mean of *values* floored at 0; 0 when there are none."""
    return max(0.0, float(np.mean(values))) if values else 0.0


def per_class(runs: list[dict], scale: float) -> dict[str, tuple[float, float]]:
    """Mean (pull latency, compute overshoot) per class, in units, over *runs*."""
    out = {}
    for name, _, _ in CLASSES:
        lat = [x for r in runs for x in r["by_class"][name]["latency"]]
        over = [x for r in runs for x in r["by_class"][name]["overshoot"]]
        out[name] = (_mean(lat) / scale, _mean(over) / scale)
    return out


SCENARIO = """name = "stdlib_ps"
description = "the independent parameter server of benchmarks/stdlib_ps.py"
[run]
seed = 1
until = {horizon!r}
[data]
source = "digits"
[model]
name = "logistic"
{workers}
[algorithms.asgd]
lr = 0.01
[algorithms.gsgd]
lr = 0.01
groups = [["fast"], ["medium"], ["slow"]]
"""


def netsim_has_server() -> bool:
    import netsim

    return any(k.key == "server.apply_time" for k in netsim.keys())


def emulate(
    rule: str, horizon: float, classes: dict[str, tuple[float, float]], keys: dict | None
) -> tuple[float, float]:
    """netsim's (updates, server's busy share) for *rule* on the cluster: compute + overshoot
    and a pull latency per class (units), and the ``[server]`` *keys* (fixed parts only)
    unless None (busy share 0). With exponential service, the means over :data:`SEEDS` (the
    rest is deterministic)."""
    import netsim

    workers = "".join(
        f'[[workers]]\nname = "{name}"\ncount = {count}\ncompute = {c + classes[name][1]!r}\n'
        f"pull_latency = {classes[name][0]!r}\n"
        for name, count, c in CLASSES
    )
    overrides = []
    if keys is not None:
        overrides = [f"server.{k}={float(keys[k])!r}" for k in KEYS]
        overrides += [f'server.service="{keys["service"]}"', "server.parallel_sends=1"]
    seeds = SEEDS if keys is not None and keys["service"] == "exponential" else SEEDS[:1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stdlib_ps.toml"
        path.write_text(SCENARIO.format(horizon=float(horizon), workers=workers))
        sc = netsim.load(path, overrides)
        done = [netsim.run(sc, rule, progress=None, seed=s).summary for s in seeds]
    busy = [d["server"]["busy_pct"] / 100 if "server" in d else 0.0 for d in done]
    return float(np.mean([d["updates"] for d in done])), float(np.mean(busy))


# ---- the report -----------------------------------------------------------------------------


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of its 95 % interval (Student's t; 0 for one value)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return float(x.mean()), 0.0
    return float(x.mean()), T95.get(x.size - 1, 1.96) * float(x.std(ddof=1)) / math.sqrt(x.size)


def _pm(values: list[float], fmt: str = "{:.0f}") -> str:
    mean, half = interval(values)
    return f"{fmt.format(mean)} ± {fmt.format(half)}"


def _gap(values: list[float]) -> str:
    mean, half = interval(values)
    return f"{mean:+.1%} ± {half:.1%}"


def _predict(runs: dict[str, list[dict]], horizon: float, scale: float, n_params: int) -> float:
    """Emulate every run from its own measurements (r["with"], r["without"]: netsim's
    (updates, busy share) with and without the [server] keys, "with" None when netsim has no
    such table); GSGD's updates held out, from the ASGD runs' measurements (nan without)."""
    has_server = netsim_has_server()
    message = 8 * n_params
    for rule, rs in runs.items():
        for r in rs:
            keys = fold(fit_server(samples_of([r]), scale), n_params, message)
            classes = per_class([r], scale)
            r["with"] = emulate(rule, horizon, classes, keys) if has_server else None
            r["without"] = emulate(rule, horizon, classes, None)
    if not has_server:
        return math.nan
    held = fold(fit_server(samples_of(runs["asgd"]), scale), n_params, message)
    return emulate("gsgd", horizon, per_class(runs["asgd"], scale), held)[0]


def _gap_of(r: dict, which: str) -> float:
    """netsim's relative gap to run *r*'s updates (*which*: "with" or "without" [server])."""
    return r[which][0] / r["updates"] - 1 if r["updates"] else math.nan


def _print_runs(runs: dict[str, list[dict]], mark: float) -> None:
    print(
        "| rule | run | load before | server busy, real | real updates | netsim + [server] "
        "(busy) | netsim, no [server] |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    for rule, rs in runs.items():
        for k, r in enumerate(rs):
            load = f"{r['load']:.1f}" + (" ⚠" if r["load"] > mark else "")
            w = r["with"]
            yes = "-" if w is None else f"{w[0]:.0f} ({_gap_of(r, 'with'):+.1%}; {w[1]:.0%})"
            print(
                f"| {rule} | {k + 1} | {load} | {r['busy']:.0%} | {r['updates']} | {yes} | "
                f"{r['without'][0]:.0f} ({_gap_of(r, 'without'):+.1%}) |"
            )
    marked = sum(r["load"] > mark for rs in runs.values() for r in rs)
    print(
        f"\n⚠: load average above {mark:g} (2 per core) before the run: {marked} of "
        f"{sum(map(len, runs.values()))} runs.\n"
    )


def _print_means(runs: dict[str, list[dict]], held: float) -> None:
    print(
        "| rule | real updates | netsim + [server] | gap | netsim, no [server] | gap | "
        f"within {GOAL:.0%} |\n|---|---:|---:|---:|---:|---:|:-:|"
    )
    for rule, rs in runs.items():
        no = _pm([r["without"][0] for r in rs]) + " | " + _gap([_gap_of(r, "without") for r in rs])
        cells, ok = "- | -", "-"
        if rs[0]["with"] is not None:
            gaps = [_gap_of(r, "with") for r in rs]
            ok = "yes" if abs(interval(gaps)[0]) <= GOAL else "no"
            cells = f"{_pm([r['with'][0] for r in rs])} | {_gap(gaps)}"
        print(f"| {rule} | {_pm([r['updates'] for r in rs])} | {cells} | {no} | {ok} |")
    if not math.isnan(held):
        real = interval([r["updates"] for r in runs["gsgd"]])[0]
        print(
            f"\nGSGD held out (the ASGD runs' [server] keys, latencies and overshoot): "
            f"{held:.0f} updates, {held / real - 1:+.1%} from the real mean."
        )


def _print_fit(runs: dict[str, list[dict]], sweep: list[dict], scale: float) -> None:
    """The [server] table of the ASGD runs and the size sweep, how well its lines hold at
    each size, then the measured means per rule."""
    pooled = runs["asgd"] + sweep
    fitted = fit_server(samples_of(pooled), scale)
    sizes = sorted({r["n_params"] for r in pooled})
    print(
        f"\nThe [server] table fitted to the ASGD runs and {len(sweep)} ASGD run(s) of other "
        f"sizes ({', '.join(f'{n:,}' for n in sizes)} parameters; time units):\n\n```toml"
        "\n[server]"
    )
    for k in KEYS:
        print(f"{k} = {fitted[k]:.4g}")
    print(f'service = "{fitted["service"]}"   # cv {fitted["cv"]:.2f}')
    print("parallel_sends = 1\n```\n")
    if len(sizes) > 1:
        print(
            "| parameters | per push taken in | per update | per model sent |\n|---:|---:|---:|---:|"
        )
        for n in sizes:
            got = samples_of([r for r in pooled if r["n_params"] == n])
            cells = []
            for kind, per, size in (
                ("gradient", "per_param", n),
                ("apply", "per_param", n),
                ("send", "per_byte", 8 * n),
            ):
                line = (fitted[f"{kind}_time"] + fitted[f"{kind}_time_{per}"] * size) * scale
                mean = float(np.mean([t for _, t in got[kind]]))
                cells.append(f"{mean * 1e3:.2f} ms (line {line * 1e3:.2f})")
            print(f"| {n:,} | " + " | ".join(cells) + " |")
        print()
    print(
        "| rule | busy | per push taken in | per update | per model sent | "
        + " | ".join(f"{n}: latency, overshoot" for n, _, _ in CLASSES)
        + " |\n|---|---:|---:|---:|---:|"
        + "---:|" * len(CLASSES)
    )
    for rule, rs in runs.items():
        t = {k: 1e3 * float(np.mean([s for _, s in v])) for k, v in samples_of(rs).items()}
        cls = per_class(rs, scale)
        print(
            f"| {rule} | {_pm([r['busy'] * 100 for r in rs], '{:.0f}')} % | "
            f"{t['gradient']:.2f} ms | {t['apply']:.2f} ms | {t['send']:.2f} ms | "
            + " | ".join(f"{cls[n][0]:.4f}, {cls[n][1]:.4f}" for n, _, _ in CLASSES)
            + " |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: T = 30 units")
    ap.add_argument("--repeats", type=int, default=3, help="real runs per rule (default 3)")
    ap.add_argument("--horizon", type=float, default=None, help="T in units (300; quick 30)")
    ap.add_argument("--scale", type=float, default=None, help="s per unit (default: probed)")
    ap.add_argument("--params", type=int, default=1_000_000, help="model size (float64)")
    ap.add_argument(
        "--sizes",
        default="250000,500000",
        help="other model sizes, one ASGD run of min(T/2, 60) units each, for the parts of the "
        "[server] table per parameter and per byte ('' for none)",
    )
    args = ap.parse_args()
    began = time.monotonic()
    horizon = args.horizon or (30.0 if args.quick else 300.0)
    scale, per_push = (args.scale, math.nan) if args.scale else choose_scale(args.params)
    runs: dict[str, list[dict]] = {rule: [] for rule in RULES}
    for k in range(args.repeats):
        for rule in RULES:
            runs[rule].append(real_run(rule, args.params, horizon, scale, seed=k + 1))
    sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    sweep = [
        real_run("asgd", n, min(horizon / 2, 60.0), scale, seed=100 + k)
        for k, n in enumerate(sizes)
    ]
    real_s = time.monotonic() - began
    held = _predict(runs, horizon, scale, args.params)
    print(
        f"{args.params:,} float64 parameters ({8 * args.params / 1e6:.1f} MB a message); 16 "
        f"workers (4 fast × 1, 4 medium × 2, 8 slow × 3 units), a Pipe each; T = {horizon:g} "
        f"units at {scale:g} s a unit ("
        + ("given" if args.scale else f"a pilot ASGD run's {per_push * 1e3:.2f} ms a push")
        + f"); {args.repeats} real runs per rule; load average before each run.\n"
    )
    if runs["asgd"][0]["with"] is None:
        print("This netsim has no [server] table: only the predictions without it are shown.\n")
    _print_runs(runs, 2.0 * (os.cpu_count() or 1))
    _print_means(runs, held)
    _print_fit(runs, sweep, scale)
    print(
        f"\nLatency and overshoot in units, means over the runs. Took "
        f"{time.monotonic() - began:.0f} s ({real_s:.0f} s of real runs, the pilot and the sizes)."
    )


if __name__ == "__main__":
    main()
