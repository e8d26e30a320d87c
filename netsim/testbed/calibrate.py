"""Fit a scenario's ``[server]`` keys and per-class overheads to what real runs measured.

A real run's server records its own time (``measured_server.csv``): each push it served
(how long, how many updates it made) and each model message it sent. Its workers record
their iterations (``measured_gradients.csv``). :func:`fit_run` turns one run into the
emulator's terms, in real seconds:

- **service**: the server's time on an *update job* (the pushes from the one after the last
  update to the one that made the next, their model messages left out) against the number
  of pushes *k* in it, by least squares: ``time = apply + k × gradient``. When every job
  has the same k (ASGD: 1; SSGD: all the workers) the line cannot be drawn: the pushes that
  made no update give ``gradient`` alone (SSGD), else the whole time goes to ``apply``
  (ASGD: each push makes one update, so only their sum matters there). The real server
  times its averaging of a group's gradients apart: it is a cost per gradient averaged,
  paid when the round closes, so it is taken out of the jobs and becomes ``average`` (with
  one group size it would otherwise land in ``apply``, and a rule that averages nothing
  would be predicted to pay it; in ``gradient`` it would be paid as each push arrives,
  while the server waits for the round's last one);
- **send**: the mean server time of one model message;
- **snapshot**: the mean server time of one copy of the model kept for an evaluation;
- **hand-over**: between two jobs the server's loop takes a moment (its timers, its inbox)
  before it takes the next push. When a push was already waiting, that gap is the server's
  own time, not an idle one: it is added to the job that follows (:func:`handovers`);
- **receive**: the server takes pushes in one at a time (its receiving thread), so pushes
  sent close together reach it spaced by the time it takes to receive one. Each push is
  modelled as a latency *L* of its own (in parallel with the others) then its receiving, in
  arrival order: ``arrived_i = max(sent_i + L, arrived_{i-1}) + r``. *L* and *r* are the
  pair that best predicts every arrival from its send and the arrival before it
  (:func:`fit_receiving`, least absolute error); the overheads below then count a push up
  to ``sent + L``, the emulator's receiving thread the rest;
- **overhead**, per worker class: per iteration, the time from the model message's end to
  the computation's start (pull), from the computation's end to the push's arrival
  (push) and the computation's excess over its drawn time, less the scenario's own
  injected latencies: the machine's overhead (s), its mean and its spread, given to the
  emulator as each class's ``overhead`` (drawn per iteration; the spread matters where a
  group waits for its slowest member).

:func:`combine` pools runs: with models of two sizes or more, each cost is a line in the
parameters (per byte for the messages), giving the ``*_per_param`` keys; with one size they
are folded into the fixed parts. Pure: no I/O (:func:`netsim.api.calibrate` reads folders).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "RunFit",
    "Calibration",
    "update_jobs",
    "fit_service",
    "fit_line",
    "fit_receiving",
    "handovers",
    "class_overheads",
    "class_spread",
    "round_spread",
    "MIN_ROUNDS",
    "overhead_model",
    "fit_run",
    "combine",
    "MIN_UPDATES",
]

MIN_UPDATES = 10
"""Fewest updates a run must have made for its server's times to be fitted."""


def fit_line(x: ArrayLike, y: ArrayLike) -> tuple[float, float, float | None]:
    """Least-squares line ``y = a + b x``: (a, b, R²); b = 0 and R² None when x is constant.

    >>> [round(v, 9) for v in fit_line([1, 2, 3], [3.0, 5.0, 7.0])]
    [1.0, 2.0, 1.0]
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if np.ptp(x) == 0:
        return float(np.mean(y)), 0.0, None
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / total if total > 0 else 1.0
    return float(a), float(b), r2


def update_jobs(
    pushes: Iterable[tuple[float, int]],
) -> tuple[list[tuple[int, float]], list[float]]:
    """The update jobs of a run's served pushes, in serving order: *pushes* (seconds of
    service, model messages left out; updates made). Returns ([(k pushes, seconds)], the
    seconds of the pushes that made no update); pushes after the last update are left out.

    >>> update_jobs([(1.0, 0), (2.0, 1), (1.0, 0), (1.0, 0), (3.0, 1), (1.0, 0)])
    ([(2, 3.0), (3, 5.0)], [1.0, 1.0, 1.0, 1.0])
    """
    jobs: list[tuple[int, float]] = []
    holding: list[float] = []
    k, total = 0, 0.0
    for seconds, updates in pushes:
        k, total = k + 1, total + seconds
        if updates:
            jobs.append((k, total))
            k, total = 0, 0.0
        else:
            holding.append(seconds)
    return jobs, holding


def fit_service(
    jobs: Sequence[tuple[int, float]], holding: Sequence[float]
) -> tuple[float, float, dict]:
    """(apply, gradient, quality) in seconds from :func:`update_jobs`'s answer; quality:
    ``jobs``, ``r2`` (None when k is constant), ``rel_rms`` (residuals' RMS / mean job time)
    and ``how`` (``line``, ``held pushes`` or ``folded into apply_time``)."""
    k = np.array([j[0] for j in jobs], float)
    y = np.array([j[1] for j in jobs], float)
    apply, gradient, r2 = fit_line(k, y)
    how = "line"
    if r2 is None:
        if holding:
            gradient = float(np.mean(holding))
            apply, how = float(np.mean(y)) - gradient * k[0], "held pushes"
        else:
            gradient, how = 0.0, "folded into apply_time"
    resid = y - (apply + gradient * k)
    rel = float(np.sqrt(np.mean(resid**2)) / np.mean(y)) if np.mean(y) > 0 else 0.0
    return apply, gradient, {"jobs": len(jobs), "r2": r2, "rel_rms": rel, "how": how}


def fit_receiving(sent: ArrayLike, arrived: ArrayLike) -> tuple[float, float, dict]:
    """(L, r, quality) in the stamps' unit: each push's own latency *L* and the receiving
    thread's time *r* per push that best predict the arrivals, ``arrived_i = max(sent_i +
    L, arrived_{i-1}) + r`` over the pushes in arrival order (mean absolute error, by a grid
    of 41 × 41 values up to the median transfer, then one as fine around the best).
    *sent*, *arrived* (n,): when each push left its worker and when the server had it, on
    one clock. quality: ``mae`` (the fit's mean absolute error) and ``mae_without`` (with
    no receiving thread: the median transfer for every push), ``pushes``.

    >>> sent = [0.0, 0.0, 0.0, 9.0]  # three at once, received 2 apart after 1; one alone
    >>> L, r, q = fit_receiving(sent, [3.0, 5.0, 7.0, 12.0]); round(L, 6), round(r, 6), q["mae"]
    (1.0, 2.0, 0.0)
    """
    sent_a, arrived_a = np.asarray(sent, float), np.asarray(arrived, float)
    order = np.argsort(arrived_a, kind="stable")
    sent_a, arrived_a = sent_a[order], arrived_a[order]
    transfer = np.maximum(arrived_a - sent_a, 0.0)
    top = float(np.median(transfer)) if transfer.size else 0.0
    quality: dict = {"pushes": int(arrived_a.size), "mae": 0.0, "mae_without": 0.0}
    if arrived_a.size < 2 or top <= 0:
        return 0.0, 0.0, quality
    after, target = sent_a, arrived_a
    before = np.concatenate(([-np.inf], arrived_a[:-1]))

    def errors(latencies: np.ndarray, receives: np.ndarray) -> np.ndarray:
        """Mean absolute error (len(latencies), len(receives)), one latency at a time."""
        out = np.empty((latencies.size, receives.size))
        for k, latency in enumerate(latencies):
            ready = np.maximum(after + latency, before)
            out[k] = np.mean(np.abs(ready[None, :] + receives[:, None] - target), axis=1)
        return out

    grid = np.linspace(0.0, top, 41)
    err = errors(grid, grid)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    step = top / 40
    fine_l = np.clip(np.linspace(grid[i] - step, grid[i] + step, 41), 0.0, None)
    fine_r = np.clip(np.linspace(grid[j] - step, grid[j] + step, 41), 0.0, None)
    err = errors(fine_l, fine_r)
    i, j = np.unravel_index(int(np.argmin(err)), err.shape)
    quality["mae"] = float(err[i, j])
    quality["mae_without"] = float(np.mean(np.abs(after + top - target)))
    return float(fine_l[i]), float(fine_r[j]), quality


def class_overheads(iterations: Iterable[tuple], injected: dict) -> dict[str, tuple[float, float]]:
    """Per worker class, the machine's mean (pull, push) overhead (s) around a computation.

    *iterations*: served iterations ``(class, send_end, compute_start, compute_end,
    arrived, drawn)`` in real seconds on one clock (*drawn*: the drawn compute time, s);
    *injected*: class → its injected (pull, push) latencies (s). Pull: compute_start −
    send_end − injected pull; push: arrived − compute_end − injected push + the mean of
    (compute_end − compute_start − drawn) over 0 (a gradient longer than its draw, the
    worker's late wake-up). Negative means become 0.

    >>> class_overheads([("a", 0.0, 0.3, 1.5, 1.7, 1.0), ("a", 2.0, 2.1, 3.1, 3.3, 1.0)], {"a": (0.1, 0.1)})
    {'a': (0.1, 0.2)}
    """
    per: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for name, *times in iterations:
        for values, x in zip(per.setdefault(name, ([], [], [])), _parts(*times[:5])):
            values.append(x)
    out: dict[str, tuple[float, float]] = {}
    for name, (pulls, pushes, excess) in per.items():
        pull0, push0 = injected.get(name, (0.0, 0.0))
        pull = max(0.0, float(np.mean(pulls)) - pull0)
        push = max(0.0, float(np.mean(pushes)) - push0 + float(np.mean(excess)))
        out[name] = (round(pull, 12), round(push, 12))
    return out


def _parts(
    send_end: float, start: float, end: float, arrived: float, drawn: float
) -> tuple[float, float, float]:
    """One iteration's (pull, push, excess) around its computation (s): the model message's
    end to the computation's start, the computation's end to the push's arrival, and the
    computation's time beyond its draw (0 when within it)."""
    return start - send_end, arrived - end, max(0.0, end - start - drawn)


MIN_ROUNDS = 5
"""Fewest synchronous rounds (2 members of a class or more) whose spread a fit reads."""


def class_spread(iterations: Iterable[tuple], injected: dict) -> dict[str, float]:
    """Per worker class, the spread (coefficient of variation) of the machine's overhead
    per iteration: the pull, push and excess of :func:`class_overheads`, one iteration at
    a time. *iterations* may carry a 7th field, the model version the iteration read:
    members of a class that read the same version started one synchronous round (SSGD, a
    GSGD group). With :data:`MIN_ROUNDS` such rounds the spread is the one whose lognormal
    gives the measured rounds' mean gap between their slowest member and their mean
    (:func:`round_spread`): a round waits for its slowest member, and members' overheads
    in one round vary less than all iterations' do (a busy moment slows all of them).
    Otherwise the standard deviation over the mean of all iterations. 0 when the mean
    overhead is 0 or one iteration was measured.

    >>> class_spread([("a", 0.0, 0.1, 1.1, 1.2, 1.0), ("a", 2.0, 2.3, 3.3, 3.6, 1.0)], {})
    {'a': 0.5}
    """
    per: dict[str, list[float]] = {}
    rounds: dict[tuple, list[float]] = {}
    for name, *times in iterations:
        pull0, push0 = injected.get(name, (0.0, 0.0))
        value = sum(_parts(*times[:5])) - pull0 - push0
        version = times[5:]
        per.setdefault(name, []).append(value)
        if version and version[0] is not None:
            rounds.setdefault((name, version[0]), []).append(value)
    out = {}
    for name, values in per.items():
        a = np.asarray(values)
        mean = float(a.mean())
        if a.size < 2 or mean <= 0:
            out[name] = 0.0
            continue
        synchronous = [r for (n, _), r in rounds.items() if n == name and len(r) > 1]
        cv = round_spread(synchronous, mean) if len(synchronous) >= MIN_ROUNDS else None
        out[name] = round(float(a.std()) / mean if cv is None else cv, 12)
    return out


def round_spread(rounds: Sequence[Sequence[float]], mean: float) -> float:
    """The coefficient of variation of the lognormal of mean *mean* whose largest of k
    draws exceeds their mean by as much, on average over *rounds* (each the overheads of
    one round's k members), as the measured rounds' largest did: by bisection on a fixed
    set of normal draws (deterministic).

    >>> rng = np.random.default_rng(7)
    >>> measured = rng.lognormal(np.log(1.0 / np.sqrt(1.25)), np.sqrt(np.log(1.25)), (400, 8))
    >>> round(round_spread(list(measured), float(measured.mean())), 1)
    0.5
    """
    gaps = [float(np.max(r) - np.mean(r)) for r in rounds]
    target = float(np.mean(gaps))
    if target <= 0 or mean <= 0:
        return 0.0
    sizes, counts = np.unique([len(r) for r in rounds], return_counts=True)
    z = np.random.default_rng(0).standard_normal((4000, int(sizes.max())))

    def gap(cv: float) -> float:
        sigma = np.sqrt(np.log1p(cv**2))
        x = mean * np.exp(sigma * z - sigma**2 / 2)
        return float(
            sum(c * np.mean(x[:, :k].max(1) - x[:, :k].mean(1)) for k, c in zip(sizes, counts))
            / counts.sum()
        )

    low, high = 0.0, 8.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if gap(mid) < target else (low, mid)
    return (low + high) / 2


def overhead_model(mean: float, cv: float) -> float | dict:
    """A scenario's ``overhead`` value of *mean* (units) and coefficient of variation *cv*:
    a constant when *cv* is 0, else the lognormal of that mean and spread (its median
    mean / √(1 + cv²), its sigma √(ln(1 + cv²))), which gives the mean of the largest of a
    group's draws to within a few % of the measured overheads'.

    >>> overhead_model(2.0, 0.0)
    2.0
    >>> m = overhead_model(1.0, 0.75); m["dist"], round(m["median"], 4), round(m["sigma"], 4)
    ('lognormal', 0.8, 0.668)
    """
    if cv <= 0:
        return mean
    return {
        "dist": "lognormal",
        "median": mean / float(np.sqrt(1.0 + cv**2)),
        "sigma": float(np.sqrt(np.log1p(cv**2))),
    }


@dataclass(frozen=True)
class RunFit:
    """One real run in the emulator's terms (seconds): ``apply``, ``gradient``, ``send`` (per
    model message), ``receive`` (per push, the receiving thread) and a push's own
    ``latency`` before it, ``snapshot`` (per copy of the model for an evaluation),
    ``average`` (per gradient averaged into an update of several),
    ``overheads`` (class → (pull, push)), the run's ``params`` and
    ``message_bytes``, its ``scale`` (s per unit), ``updates`` and the fit's ``quality``."""

    folder: str
    params: int
    message_bytes: int
    scale: float
    updates: int
    apply: float
    gradient: float
    send: float
    overheads: dict
    quality: dict
    spread: dict = field(default_factory=dict)
    receive: float = 0.0
    latency: float = 0.0
    snapshot: float = 0.0
    average: float = 0.0


def handovers(
    jobs: Sequence[tuple[float, float]], arrived: ArrayLike, taken: ArrayLike
) -> list[float]:
    """The server's own time before each job: *jobs* (start, end) in serving order; a gap
    between one job's end and the next one's start counts when a push had arrived by that
    end and was not taken yet (*arrived*: every push's arrival; *taken*: when the server
    took each push; both in the jobs' unit), else 0 (the server was idle). The first job
    gets 0.

    >>> handovers([(0.0, 1.0), (1.5, 2.0), (3.0, 4.0)], [0.0, 0.5, 2.75], [0.0, 1.5, 3.0])
    [0.0, 0.5, 0.0]
    """
    a, t = np.sort(np.asarray(arrived, float)), np.sort(np.asarray(taken, float))
    out = [0.0]
    for (_, end), (start, _) in zip(jobs, jobs[1:]):
        waiting = np.searchsorted(a, end, "right") - np.searchsorted(t, end, "right")
        out.append(max(0.0, start - end) if waiting > 0 else 0.0)
    return out[: len(jobs)]


def fit_run(
    folder: str,
    params: int,
    message_bytes: int,
    scale: float,
    pushes: Sequence[tuple[float, int]],
    sends: Sequence[float],
    overheads: dict,
    spread: dict | None = None,
) -> RunFit:
    """A :class:`RunFit` from a run's served *pushes* ((seconds without their messages,
    updates made), in order), its *sends* (seconds per model message) and class
    *overheads* (:func:`class_overheads`) and their *spread* (:func:`class_spread`). Raises
    ValueError when it made fewer than :data:`MIN_UPDATES` updates."""
    jobs, holding = update_jobs(pushes)
    updates = sum(u for _, u in pushes)
    if updates < MIN_UPDATES:
        raise ValueError(
            f"{updates} updates: too few to fit the server's times (at least {MIN_UPDATES})"
        )
    apply, gradient, quality = fit_service(jobs, holding)
    s = np.asarray(sends, float)
    quality["sends"] = int(s.size)
    quality["send_cv"] = float(s.std() / s.mean()) if s.size and s.mean() > 0 else 0.0
    send = float(s.mean()) if s.size else 0.0
    return RunFit(
        folder,
        params,
        message_bytes,
        scale,
        updates,
        apply,
        gradient,
        send,
        overheads,
        quality,
        dict(spread or {}),
    )


@dataclass
class Calibration:
    """Fitted server costs (seconds; ``*_per_param`` per parameter, ``send_per_byte`` and
    ``receive_per_byte`` per byte), per-class overheads (s: mean pull and push) and their ``spread`` (coefficient of
    variation per iteration), the runs it came from and ``notes`` on what could not be told
    apart. :meth:`server_table` and :meth:`overhead` give them in a scale's units."""

    apply: float
    apply_per_param: float
    gradient: float
    gradient_per_param: float
    send: float
    send_per_byte: float
    overheads: dict
    runs: list
    notes: list = field(default_factory=list)
    spread: dict = field(default_factory=dict)
    receive: float = 0.0
    receive_per_byte: float = 0.0
    snapshot: float = 0.0
    snapshot_per_param: float = 0.0
    average: float = 0.0
    average_per_param: float = 0.0

    def server_table(self, scale: float) -> dict:
        """The ``[server]`` keys at *scale* (s per time unit)."""
        return {
            "gradient_time": self.gradient / scale,
            "gradient_time_per_param": self.gradient_per_param / scale,
            "apply_time": self.apply / scale,
            "apply_time_per_param": self.apply_per_param / scale,
            "service": "constant",
            "send_time": self.send / scale,
            "send_time_per_byte": self.send_per_byte / scale,
            "parallel_sends": 1,
            "receive_time": self.receive / scale,
            "receive_time_per_byte": self.receive_per_byte / scale,
            "snapshot_time": self.snapshot / scale,
            "snapshot_time_per_param": self.snapshot_per_param / scale,
            "average_time": self.average / scale,
            "average_time_per_param": self.average_per_param / scale,
        }

    def overhead(self, scale: float, own: dict) -> dict[str, float | dict]:
        """Class → its ``overhead`` value in units at *scale* (:func:`overhead_model`): the
        machine's overhead per iteration (mean pull + push, with its spread) plus the
        class's own ``overhead`` in the scenario (*own*: class → TimeModel or None; their
        means and variances add). A class not measured gets the mean of those that were;
        a class with no overhead at all is left out."""
        known = [(sum(o), self.spread.get(n, 0.0)) for n, o in self.overheads.items()]
        fallback = tuple(float(np.mean([k[i] for k in known])) if known else 0.0 for i in (0, 1))
        out: dict[str, float | dict] = {}
        for name, model in own.items():
            mean_s, cv = (
                (sum(self.overheads[name]), self.spread.get(name, 0.0))
                if name in self.overheads
                else fallback
            )
            mean, var = mean_s / scale, (cv * mean_s / scale) ** 2
            if model is not None:
                draws = model.sample(np.random.default_rng(0), 20_000)
                mean, var = mean + float(np.mean(draws)), var + float(np.var(draws))
            if mean > 0:
                out[name] = overhead_model(mean, float(np.sqrt(var)) / mean)
        return out


def _across(
    x: Sequence[float], values: Sequence[float], what: str, notes: list
) -> tuple[float, float]:
    """(fixed, per-unit) of *values* against sizes *x*: a line when the sizes differ, else
    (mean, 0). A negative part is set to 0 and noted."""
    fixed, per, _ = fit_line(x, values)
    if per < 0:
        notes.append(f"{what}: the time fell with the size; its per-size part is set to 0")
        fixed, per = float(np.mean(values)), 0.0
    if fixed < 0:
        notes.append(f"{what}: the fixed part came out below 0; set to 0")
        fixed = 0.0
    return fixed, per


def combine(fits: list[RunFit]) -> Calibration:
    """One :class:`Calibration` from the :class:`RunFit` of one run or several."""
    notes: list[str] = []
    params = [f.params for f in fits]
    sizes = len(set(params))
    if sizes < 2:
        notes.append(
            f"one model size ({params[0]:,} parameters): the per-parameter and per-byte parts "
            "are folded into the fixed parts (calibrate runs of two sizes or more to separate them)"
        )
    for f in fits:
        if f.quality["how"] == "folded into apply_time":
            notes.append(
                f"{f.folder}: every push made one update, so gradient_time and apply_time "
                "cannot be told apart there: their sum is in apply_time"
            )
    apply = _across(params, [f.apply for f in fits], "apply", notes)
    gradient = _across(params, [f.gradient for f in fits], "gradient", notes)
    sizes_b = [f.message_bytes for f in fits]
    send = _across(sizes_b, [f.send for f in fits], "send", notes)
    receive = _across(sizes_b, [f.receive for f in fits], "receive", notes)
    snapshot = _across(params, [f.snapshot for f in fits], "snapshot", notes)
    average = _across(params, [f.average for f in fits], "average", notes)
    overheads: dict[str, tuple[float, float]] = {}
    names = {n for f in fits for n in f.overheads}
    for name in sorted(names):
        got = [f.overheads[name] for f in fits if name in f.overheads]
        overheads[name] = (
            float(np.mean([g[0] for g in got])),
            float(np.mean([g[1] for g in got])),
        )
    spread = {
        name: float(np.mean([f.spread[name] for f in fits if name in f.spread]))
        for name in sorted({n for f in fits for n in f.spread})
    }
    return Calibration(
        apply[0],
        apply[1],
        gradient[0],
        gradient[1],
        send[0],
        send[1],
        overheads,
        fits,
        notes,
        spread,
        receive[0],
        receive[1],
        snapshot[0],
        snapshot[1],
        average[0],
        average[1],
    )
