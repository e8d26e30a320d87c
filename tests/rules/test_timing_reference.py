"""Timing oracle: netsim's update rules against an independent event-driven reference.

The reference below is written from docs/ALGORITHMS.md and the README only (§0 event model,
§1 ssgd/asgd/gsgd, §2 backup, §6.1 ssp, §6.2 the K-family, §8 time shares, §9 and README
"Faults, stalls and timeouts" for ``round_timeout``/``group_timeout``), not from ``netsim/rules``.
It models each worker as pull (fixed latency) → compute (its next ``replay`` time) → push (fixed
latency) and the PS rule reacting to each arrival or timer in zero time. For every update it
gives the time and the multiset of (worker, staleness τ = v_before − v_read); it also gives the
drops (time, worker, version read), the timeouts that closed a round or released a worker, the
pushes per worker, each worker's compute/comm/idle seconds and the run's end time.

Ties. The order of simultaneous events is SimPy's scheduling order (§0), which the random cases
do not rely on. Compute times are uniform floats in [0.3, 3.0] with a separate replay list per
worker, so exact ties are improbable; zero-length phases are chained without an event, so every
queued event lies strictly in the future. An order can only matter when one of the two events
acts at the PS (an arrival; a timer that updated, sent or released): a pull or compute end
cannot affect another worker, and a timer that finds its round empty touches nothing else. The
reference flags a case when such a pair of events of different workers or timers (stale,
pre-empted ones included), or any event and the horizon, fall within 1e-9 s, and the generator
then draws again. The documented tie rule (workers released together arrive with the pusher
the PS answered first, then in id order) has its own tests at the end.

Compute draws. §0 lists "compute for a drawn time" as the step after the pull, so the reference
takes a worker's next replay time when its computation starts: a computation that is pre-empted
has used its draw, a pull that is pre-empted has not.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest
from conftest import base_raw, make_scenario

from netsim.sim.engine import simulate

EPS = 1e-9
BUCKET = {"wait": "idle", "pull": "comm", "push": "comm", "compute": "compute"}


# ---------------------------------------------------------------------------------------------
# The reference emulator (§0)


@dataclass
class Trace:
    """What the reference predicts for one run."""

    updates: list = field(default_factory=list)  # (time, sorted [(worker, staleness)])
    drops: list = field(default_factory=list)  # (time, worker, version read)
    pushed: list = field(default_factory=list)  # whole minibatches that reached the PS, per worker
    shares: list = field(default_factory=list)  # (compute_s, comm_s, idle_s) per worker
    events: list = field(default_factory=list)  # timeouts that closed a round: (time, kind, who)
    sim_time: float = 0.0
    tie: bool = False


class Reference:
    """Workers and the PS's actions of §0 (apply, send, drop, preempt) on a heap of events."""

    def __init__(self, rule, times, pull, push, until, max_updates=0):
        m = len(times)
        self.rule, self.times, self.pull, self.push = rule, times, pull, push
        self.until, self.max_updates = until, max_updates
        self.now, self.version, self.stopped = 0.0, 0, False
        self.heap, self.seq = [], itertools.count()
        self.phase, self.since = ["wait"] * m, [0.0] * m
        self.token, self.read, self.draw = [0] * m, [0] * m, [0] * m
        self.spent = [{"compute": 0.0, "comm": 0.0, "idle": 0.0} for _ in range(m)]
        self.timers, self.actions = {}, 0
        self.pusher = None
        """The worker whose arrival the PS is reacting to (None in a timer or at the start)."""
        self.out = Trace(pushed=[0] * m)

    # worker life cycle -------------------------------------------------------------------

    def _enter(self, w, phase):
        self.spent[w][BUCKET[self.phase[w]]] += self.now - self.since[w]
        self.phase[w], self.since[w] = phase, self.now

    def _schedule(self, delay, kind, w):
        heapq.heappush(self.heap, (self.now + delay, next(self.seq), kind, w, self.token[w]))

    def _transfer(self, w, phase, delay, kind, then):
        """Enter *phase* (pull or push): its end is an event after *delay* s, or at once *then*."""
        self._enter(w, phase)
        if delay > 0:
            self._schedule(delay, kind, w)
        else:
            then(w)

    def _pull(self, w):
        self._transfer(w, "pull", self.pull[w], "pulled", self._compute)

    def _compute(self, w):
        self._enter(w, "compute")
        seq = self.times[w]
        self._schedule(seq[self.draw[w] % len(seq)], "computed", w)
        self.draw[w] += 1

    def _push(self, w):
        self._transfer(w, "push", self.push[w], "arrived", self._arrive)

    def _arrive(self, w):
        self._enter(w, "wait")
        self.out.pushed[w] += 1
        self.pusher = w
        self.rule.arrive(self, w, self.read[w])
        self.pusher = None

    # PS actions ------------------------------------------------------------------------

    def send(self, w):
        """A waiting worker is sent the current model now (§0 "Simultaneous events"): the
        pusher the PS is answering starts its pull at once; any other starts when its wake-up
        is processed, later at this instant, after the events already due now."""
        assert self.phase[w] == "wait", "the reference only ever sends to waiting workers"
        self.actions += 1
        self.token[w] += 1
        self.read[w] = self.version
        if w == self.pusher:
            self._pull(w)
        else:
            self._schedule(0.0, "woken", w)

    def preempt(self, w):
        """Abort a pull or computation; the worker restarts at once on the current model."""
        if self.phase[w] in ("pull", "compute"):
            self.actions += 1
            self._enter(w, "wait")
            self.send(w)

    def apply(self, pushes):
        """One model update from (worker, version read) pairs: record τ, bump the version."""
        if self.stopped:
            return
        self.actions += 1
        self.out.updates.append((self.now, sorted((w, self.version - v) for w, v in pushes)))
        self.version += 1
        if self.max_updates and len(self.out.updates) == self.max_updates:
            self.stopped = True

    def drop(self, w, v):
        self.actions += 1
        self.out.drops.append((self.now, w, v))

    def set_timer(self, owner, delay, callback):
        """(Re)start *owner*'s timer: *callback* runs in *delay* s unless restarted or cleared."""
        token = next(self.seq)
        self.timers[owner] = (token, callback)
        heapq.heappush(self.heap, (self.now + delay, token, "timer", owner, token))

    def clear_timer(self, owner):
        self.timers.pop(owner, None)

    def log(self, kind, who):
        self.out.events.append((self.now, kind, who))

    # the run -----------------------------------------------------------------------------

    def _handle(self, t, kind, owner, token) -> bool:
        """Process one queued event; True when its order against a simultaneous one matters."""
        if kind == "timer":
            if self.timers.get(owner, (None,))[0] != token:
                return False
            self.now, before = t, self.actions
            self.timers.pop(owner)[1]()
            return self.actions != before
        if token != self.token[owner]:
            return False
        self.now = t
        {
            "woken": self._pull,
            "pulled": self._compute,
            "computed": self._push,
            "arrived": self._arrive,
        }[kind](owner)
        return kind == "arrived" or (kind == "computed" and self.push[owner] == 0)

    def run(self) -> Trace:
        for w in range(len(self.times)):
            self.send(w)
        getattr(self.rule, "start", lambda ps: None)(self)
        recent = []  # events of the last EPS seconds: (time, owner, matters, is a timer)
        while self.heap and not self.stopped:
            t, _, kind, owner, token = heapq.heappop(self.heap)
            if abs(t - self.until) <= EPS:
                self.out.tie = True
            if t > self.until:
                break
            event = (t, owner, self._handle(t, kind, owner, token), kind == "timer")
            if kind == "woken":  # a send's consequence, ordered after it by construction
                continue
            recent = [e for e in recent if t - e[0] <= EPS]
            self.out.tie |= any(conflict(e, event) for e in recent)
            recent.append(event)
        end = self.now if self.stopped else self.until
        for w in range(len(self.times)):
            self.now = end
            self._enter(w, "wait")
        self.out.shares = [(s["compute"], s["comm"], s["idle"]) for s in self.spent]
        self.out.sim_time = end
        return self.out


def conflict(a, b) -> bool:
    """Whether the order of two simultaneous events can matter: one acts at the PS (an arrival,
    a timer that updated, sent or released) and the other belongs to someone else. Two timers
    conflict only when both acted (a timer that found an empty round touches nothing else)."""
    if a[1] == b[1]:
        return False
    if a[3] and b[3]:
        return a[2] and b[2]
    return a[2] or b[2]


# ---------------------------------------------------------------------------------------------
# The rules, as documented


def SSGD(m):
    """§1a: buffer until all M gradients are in, apply, send to all M in id order: K-async
    (below) with K = M, whose senders are then every worker."""
    return KAsync(m)


class ASGD:
    """§1b: apply every arrival, send the new model to the pusher."""

    def arrive(self, ps, w, v):
        ps.apply([(w, v)])
        ps.send(w)


class GSGD:
    """§1c (hand groups): a group updates when all its members are in; with a timeout T, its
    round (started when its members were sent the model) closes at T with the gradients present,
    which alone get the new model; with none present the next arrival closes it (§9). A missing
    member's late gradient joins the next round and its sender waits for that round."""

    def __init__(self, groups, timeout=0.0):
        self.groups, self.timeout = [list(g) for g in groups], timeout
        self.of = {w: k for k, g in enumerate(groups) for w in g}
        self.buf = [{} for _ in groups]
        self.armed = [False] * len(groups)

    def start(self, ps):
        for k in range(len(self.groups)):
            self._arm(ps, k)

    def _arm(self, ps, k):
        if self.timeout:
            ps.set_timer(("group", k), self.timeout, lambda: self._expire(ps, k))

    def _expire(self, ps, k):
        if self.buf[k]:
            ps.log("group_timeout", (k, tuple(sorted(self.buf[k]))))
            self._close(ps, k)
        else:
            self.armed[k] = True

    def arrive(self, ps, w, v):
        k = self.of[w]
        self.buf[k][w] = v
        if len(self.buf[k]) == len(self.groups[k]) or self.armed[k]:
            self._close(ps, k)

    def _close(self, ps, k):
        ps.apply(list(self.buf[k].items()))
        present, self.buf[k], self.armed[k] = sorted(self.buf[k]), {}, False
        for x in present:
            ps.send(x)
        self._arm(ps, k)


def dropped_if_stale(ps, w, v) -> bool:
    """§2, §6.2: a gradient read at an older version than the current one is dropped and
    its sender restarts at once."""
    if v == ps.version:
        return False
    ps.drop(w, v)
    ps.send(w)
    return True


class Backup:
    """§2 (and ksync, §6.2): the first N gradients of the current step; older ones are dropped
    and their sender restarts at once. With ``round_timeout`` T (§9), a step that started at t
    (its model was sent) closes at t + T with the gradients it has; with none, the first
    gradient of the step to arrive closes it."""

    def __init__(self, m, n, cancel, timeout=0.0):
        self.m, self.n, self.cancel, self.timeout = m, n, cancel, timeout
        self.buf, self.armed = [], False

    def start(self, ps):
        self._arm(ps)

    def _arm(self, ps):
        if self.timeout:
            ps.set_timer("round", self.timeout, lambda: self._expire(ps))

    def _expire(self, ps):
        if self.buf:
            ps.log("round_timeout", tuple(sorted(w for w, _ in self.buf)))
            self._close(ps)
        else:
            self.armed = True

    def arrive(self, ps, w, v):
        if dropped_if_stale(ps, w, v):
            return
        self.buf.append((w, v))
        if len(self.buf) == self.n or self.armed:
            self._close(ps)

    def _close(self, ps):
        ps.apply(self.buf)
        contributors, self.buf, self.armed = sorted(x for x, _ in self.buf), [], False
        if self.cancel:
            for x in range(self.m):
                if x not in contributors:
                    ps.preempt(x)
        for x in contributors:
            ps.send(x)
        self._arm(ps)


class KBatchSync:
    """§6.2: the first K minibatches on the current model; then everyone else restarts."""

    def __init__(self, m, k):
        self.m, self.k, self.buf = m, k, []

    def arrive(self, ps, w, v):
        if dropped_if_stale(ps, w, v):
            return
        self.buf.append((w, v))
        if len(self.buf) == self.k:
            ps.apply(self.buf)
            self.buf = []
            for x in range(self.m):
                if x != w:
                    ps.preempt(x)
        ps.send(w)


class KAsync:
    """§6.2: any K arrivals make an update; only those K workers get the new model."""

    def __init__(self, k):
        self.k, self.buf = k, []

    def take(self, ps, w, v) -> list:
        """Buffer the arrival; at the K-th, apply the K and return their senders (sorted)."""
        self.buf.append((w, v))
        if len(self.buf) < self.k:
            return []
        ps.apply(self.buf)
        senders, self.buf = sorted(x for x, _ in self.buf), []
        return senders

    def arrive(self, ps, w, v):
        for x in self.take(ps, w, v):
            ps.send(x)


class KBatchAsync(KAsync):
    """§6.2: every K-th arrival updates over the last K; each pusher restarts at once
    (on the model current after its arrival: K = 1 must equal ASGD)."""

    def arrive(self, ps, w, v):
        self.take(ps, w, v)
        ps.send(w)


class SSP:
    """§6.1: apply every arrival; a worker more than s clocks ahead of the minimum blocks until
    the minimum advances, or (§9, ``round_timeout`` T) for at most T s."""

    def __init__(self, m, s, timeout=0.0):
        self.s, self.timeout, self.clock, self.blocked = s, timeout, [0] * m, set()

    def arrive(self, ps, w, v):
        ps.apply([(w, v)])
        low = min(self.clock)
        self.clock[w] += 1
        if self.clock[w] - min(self.clock) <= self.s:
            ps.send(w)
        else:
            self.blocked.add(w)
            if self.timeout:
                ps.set_timer(("blocked", w), self.timeout, lambda: self._expire(ps, w))
        if min(self.clock) > low:
            for x in sorted(self.blocked):
                if self.clock[x] - min(self.clock) <= self.s:
                    self.blocked.discard(x)
                    ps.clear_timer(("blocked", x))
                    ps.send(x)

    def _expire(self, ps, w):
        self.blocked.discard(w)
        ps.log("round_timeout", w)
        ps.send(w)


def make_rule(name, params, m):
    """The reference rule for netsim's rule *name* with its ``[algorithms.NAME]`` keys."""
    timeout = params.get("round_timeout", 0.0)
    if name == "ssgd":
        # §9: with a round timeout SSGD drops an older round's gradient "as backup always does",
        # and §2: backup with b = 0 is ssgd. Whether a timed-out round's model goes to all M
        # (the missing ones, busy, take the current model when free) or to those present (the
        # missing ones get it after their drop) gives the same timing.
        return Backup(m, m, False, timeout) if timeout else SSGD(m)
    if name == "asgd":
        return ASGD()
    if name == "gsgd":
        return GSGD(params["groups"], params.get("group_timeout", 0.0))
    if name == "backup":
        cancel = params.get("late_policy", "finish_then_drop") == "cancel"
        return Backup(m, m - params["backups"], cancel, timeout)
    if name == "ksync":
        return Backup(m, params["k"], True, timeout)
    if name == "kbatch_sync":
        return KBatchSync(m, params["k"])
    if name == "kasync":
        return KAsync(params["k"])
    if name == "kbatch_async":
        return KBatchAsync(params["k"])
    if name == "ssp":
        return SSP(m, params["s"], timeout)
    raise ValueError(name)


# ---------------------------------------------------------------------------------------------
# Cases: the same inputs for netsim and the reference


@dataclass
class Case:
    """Worker classes (counts, per-worker replay lists, per-class latencies), a rule, a horizon."""

    rule: str
    params: dict
    counts: list
    times: list  # per worker id
    pull: list  # per class
    push: list  # per class
    until: float
    max_updates: int = 0

    def per_worker(self, per_class):
        return [x for c, n in enumerate(self.counts) for x in [per_class[c]] * n]

    def reference(self) -> Trace:
        rule = make_rule(self.rule, self.params, len(self.times))
        return Reference(
            rule,
            self.times,
            self.per_worker(self.pull),
            self.per_worker(self.push),
            self.until,
            self.max_updates,
        ).run()

    def netsim(self):
        workers, start = [], 0
        for c, n in enumerate(self.counts):
            workers.append(
                {
                    "name": f"c{c}",
                    "count": n,
                    "pull_latency": self.pull[c],
                    "push_latency": self.push[c],
                    "compute": {"dist": "replay", "times": self.times[start : start + n]},
                }
            )
            start += n
        raw = base_raw(workers=workers, algorithms={self.rule: {"lr": 0.05, **self.params}})
        raw["run"].update(
            algorithm=self.rule, until=self.until, max_updates=self.max_updates, timeline_until=0.0
        )
        return simulate(make_scenario(raw))


def observed(result) -> Trace:
    """netsim's records in the reference's shape (updates grouped by the version they produced)."""
    rec = result.records
    by_version = {}
    for t, w, s, v in zip(rec.time, rec.worker, rec.staleness, rec.version):
        by_version.setdefault(v, []).append((t, w, s))
    assert sorted(by_version) == list(range(1, len(by_version) + 1)), "versions must be 1..U"
    updates = []
    for v in sorted(by_version):
        rows = by_version[v]
        assert len({t for t, _, _ in rows}) == 1, f"update {v} recorded at several times"
        updates.append((rows[0][0], sorted((w, s) for _, w, s in rows)))
    drops = list(zip(rec.drop_time, rec.drop_worker, rec.drop_version))
    events = [
        (e["time"], e["kind"], timeout_subject(e))
        for e in rec.events
        if e["kind"] in ("round_timeout", "group_timeout")
    ]
    return Trace(
        updates=updates,
        drops=drops,
        pushed=[w.gradients_pushed for w in result.workers],
        shares=[(w.compute_s, w.comm_s, w.idle_s) for w in result.workers],
        events=events,
        sim_time=result.sim_time,
    )


def timeout_subject(event: dict):
    """Who a timeout event is about, in the reference's terms: the SSP worker released, or the
    (group and) workers present when a round closed."""
    if "worker" in event:
        return event["worker"]
    present = tuple(event["present"])
    return (event["group"], present) if "group" in event else present


def closing_timeouts(events: list) -> list:
    """Timeout events that released a worker or closed a round with gradients present (what
    is logged when a timeout finds an empty round is not documented)."""

    def present(who, kind):
        return who[1] if kind == "group_timeout" else who

    return [(t, kind, who) for t, kind, who in events if isinstance(who, int) or present(who, kind)]


def close(a, b):
    return abs(a - b) <= EPS * max(1.0, abs(a), abs(b))


def first_difference(got: list, want: list, same) -> str | None:
    for i, (g, w) in enumerate(zip(got, want)):
        if not same(g, w):
            return f"#{i}: netsim {g} vs reference {w}"
    if len(got) != len(want):
        return f"netsim has {len(got)} entries, the reference {len(want)}"
    return None


def compare(got: Trace, want: Trace) -> list[str]:
    """The differences between netsim's trace and the reference's, one line each."""
    problems = []
    update = first_difference(
        got.updates, want.updates, lambda g, w: close(g[0], w[0]) and g[1] == w[1]
    )
    if update:
        problems.append(f"updates {update}")
    drop = first_difference(
        got.drops, want.drops, lambda g, w: close(g[0], w[0]) and g[1:] == w[1:]
    )
    if drop:
        problems.append(f"drops {drop}")
    event = first_difference(
        closing_timeouts(got.events),
        closing_timeouts(want.events),
        lambda g, w: close(g[0], w[0]) and g[1:] == w[1:],
    )
    if event:
        problems.append(f"timeout events {event}")
    if got.pushed != want.pushed:
        problems.append(f"pushed: netsim {got.pushed} vs reference {want.pushed}")
    if not close(got.sim_time, want.sim_time):
        problems.append(f"sim_time: netsim {got.sim_time} vs reference {want.sim_time}")
    for w, (g, r) in enumerate(zip(got.shares, want.shares)):
        if not all(close(x, y) for x, y in zip(g, r)):
            problems.append(f"worker {w} (compute, comm, idle): netsim {g} vs reference {r}")
    return problems


# ---------------------------------------------------------------------------------------------
# Random heterogeneous cases


def k_keys(rng, m):
    return {"k": int(rng.integers(1, m + 1))}


def random_timeout(rng):
    return round(float(rng.uniform(0.5, 4.0)), 6)


VARIANTS = {  # variant: (rule, random [algorithms.rule] keys for m workers)
    "ssgd": ("ssgd", lambda rng, m: {}),
    "asgd": ("asgd", lambda rng, m: {}),
    "gsgd": ("gsgd", lambda rng, m: {"groups": random_groups(rng, m)}),
    "backup": (
        "backup",
        lambda rng, m: {"backups": int(rng.integers(0, m)), "late_policy": "finish_then_drop"},
    ),
    "backup_cancel": (
        "backup",
        lambda rng, m: {"backups": int(rng.integers(0, m)), "late_policy": "cancel"},
    ),
    "ksync": ("ksync", k_keys),
    "kbatch_sync": ("kbatch_sync", k_keys),
    "kasync": ("kasync", k_keys),
    "kbatch_async": ("kbatch_async", k_keys),
    "ssp": ("ssp", lambda rng, m: {"s": int(rng.integers(0, 4))}),
    "ssgd_timeout": ("ssgd", lambda rng, m: {"round_timeout": random_timeout(rng)}),
    "gsgd_timeout": (
        "gsgd",
        lambda rng, m: {"groups": random_groups(rng, m), "group_timeout": random_timeout(rng)},
    ),
    "backup_timeout": (
        "backup",
        lambda rng, m: {
            "backups": int(rng.integers(0, m)),
            "round_timeout": random_timeout(rng),
            "late_policy": str(rng.choice(["finish_then_drop", "cancel"])),
        },
    ),
    "ksync_timeout": (
        "ksync",
        lambda rng, m: {**k_keys(rng, m), "round_timeout": random_timeout(rng)},
    ),
    "ssp_timeout": (
        "ssp",
        lambda rng, m: {"s": int(rng.integers(0, 3)), "round_timeout": random_timeout(rng)},
    ),
}
CASES_PER_VARIANT = 20


def random_groups(rng, m):
    """A random partition of 0..m−1 into 1..min(4, m) non-empty groups."""
    k = int(rng.integers(1, min(4, m) + 1))
    labels = np.concatenate([np.arange(k), rng.integers(0, k, m - k)])
    rng.shuffle(labels)
    return [sorted(int(w) for w in np.flatnonzero(labels == g)) for g in range(k)]


def random_counts(rng):
    """2..12 workers in 1..4 classes, every class non-empty."""
    classes = int(rng.integers(1, 5))
    m = int(rng.integers(max(2, classes), 13))
    cuts = np.sort(rng.choice(np.arange(1, m), classes - 1, replace=False))
    return [int(n) for n in np.diff(np.concatenate([[0], cuts, [m]]))]


def latency(rng):
    return 0.0 if rng.random() < 0.4 else round(float(rng.uniform(0.01, 0.5)), 6)


def random_case(variant: str, index: int) -> Case:
    """A tie-free random case (redrawn while the reference flags a tie)."""
    rng = np.random.default_rng([list(VARIANTS).index(variant), index, 2024])
    while True:
        counts = random_counts(rng)
        m = sum(counts)
        times = [
            [round(float(t), 6) for t in rng.uniform(0.3, 3.0, int(rng.integers(1, 6)))]
            for _ in range(m)
        ]
        rule, keys = VARIANTS[variant]
        case = Case(
            rule=rule,
            params=keys(rng, m),
            counts=counts,
            times=times,
            pull=[latency(rng) for _ in counts],
            push=[latency(rng) for _ in counts],
            until=round(float(rng.uniform(6.0, 20.0)), 6),
            max_updates=int(rng.integers(5, 30)) if rng.random() < 0.25 else 0,
        )
        if not case.reference().tie:
            return case


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("index", range(CASES_PER_VARIANT))
def test_random_case_matches_reference(variant, index):
    case = random_case(variant, index)
    want = case.reference()
    assert want.updates, "every case should make at least one update"
    problems = compare(observed(case.netsim()), want)
    assert not problems, f"{case}\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Hand-worked traces: the reference itself against numbers computed by hand


def hand(rule, params, times, until, pull=0.0, push=0.0, max_updates=0) -> Case:
    """One worker per class: worker i has replay list times[i] and the given latencies."""
    n = len(times)
    return Case(
        rule, params, [1] * n, [list(t) for t in times], [pull] * n, [push] * n, until, max_updates
    )


def rounded(trace: Trace):
    return [(round(t, 9), pairs) for t, pairs in trace.updates]


def test_hand_ssgd():
    # Workers 0, 1, 2 compute 1.0, 1.5, 2.0 s; pull 0.1, push 0.2 → arrivals at 1.3, 1.8, 2.3:
    # round 1 closes at 2.3. Round 2: 2.3 + 0.3 + 2.0 = 4.6. T = 5: two updates, τ = 0.
    case = hand("ssgd", {}, [[1.0], [1.5], [2.0]], 5.0, pull=0.1, push=0.2)
    want = case.reference()
    assert rounded(want) == [(2.3, [(0, 0), (1, 0), (2, 0)]), (4.6, [(0, 0), (1, 0), (2, 0)])]
    # Worker 0 per round: comm 0.3, compute 1.0, idle 1.0; after 4.6 it pulls 0.1 s, computes 0.3 s.
    assert want.shares[0] == pytest.approx((2.3, 0.7, 2.0))
    # Worker 2 never idles: compute 2 × 2.0 + 0.3, comm 2 × 0.3 + 0.1.
    assert want.shares[2] == pytest.approx((4.3, 0.7, 0.0))
    assert not compare(observed(case.netsim()), want)


def test_hand_gsgd():
    # Groups {0, 1} (1.0 s and 1.2 s) and {2} (2.5 s), no latency, T = 5.2.
    # G0 updates at 1.2 (v1) and 2.4 (v2); G2 at 2.5 (read v0, v_before 2: τ 2 → v3); G0 at 3.6
    # (read v2, v_before 3: τ 1 → v4) and 4.8 (read v4: τ 0 → v5); G2 at 5.0 (read v3: τ 2 → v6).
    case = hand("gsgd", {"groups": [[0, 1], [2]]}, [[1.0], [1.2], [2.5]], 5.2)
    want = case.reference()
    assert rounded(want) == [
        (1.2, [(0, 0), (1, 0)]),
        (2.4, [(0, 0), (1, 0)]),
        (2.5, [(2, 2)]),
        (3.6, [(0, 1), (1, 1)]),
        (4.8, [(0, 0), (1, 0)]),
        (5.0, [(2, 2)]),
    ]
    # Worker 0 idles 0.2 s in each of 4 G0 rounds and computes 4 × 1.0 + 0.4 (4.8 → 5.2).
    assert want.shares[0] == pytest.approx((4.4, 0.0, 0.8))
    assert not compare(observed(case.netsim()), want)


def test_hand_backup_finish_then_drop():
    # M = 3, b = 1 (N = 2); workers 0, 1 take 1.0, 1.1 s, worker 2 alternates 2.5 s and 0.4 s. T = 3.5.
    # Step 0: 0 at 1.0, 1 at 1.1 → v1 at 1.1. Step 1: 0 at 2.1, 1 at 2.2 → v2 at 2.2.
    # Worker 2's v0 gradient arrives at 2.5: dropped, it restarts on v2 (0.4 s) and pushes at 2.9
    # with τ 0 → buffered. Worker 0 at 3.2 → v3 at 3.2 from {0, 2}. Worker 1 (read v2) arrives at
    # 3.3: dropped.
    case = hand("backup", {"backups": 1}, [[1.0], [1.1], [2.5, 0.4]], 3.5)
    want = case.reference()
    assert rounded(want) == [
        (1.1, [(0, 0), (1, 0)]),
        (2.2, [(0, 0), (1, 0)]),
        (3.2, [(0, 0), (2, 0)]),
    ]
    assert [(round(t, 9), w, v) for t, w, v in want.drops] == [(2.5, 2, 0), (3.3, 1, 2)]
    assert want.pushed == [3, 3, 2]
    # Worker 2 computes [0, 2.5], [2.5, 2.9], [3.2, 3.5]; idles [2.9, 3.2].
    assert want.shares[2] == pytest.approx((3.2, 0.0, 0.3))
    assert not compare(observed(case.netsim()), want)


def test_hand_backup_cancel():
    # Same workers, late_policy = cancel. At 1.1 worker 2 (computing 2.5 s on v0) is pre-empted and
    # restarts on v1 with its next draw, 0.4 s → pushes at 1.5 with τ 0; worker 0 at 2.1 closes
    # step 1 → v2 at 2.1 from {0, 2}. Worker 1 (due 2.2) is pre-empted at 2.1 and pushes at 3.2;
    # worker 2 restarts on v2 with 2.5 s. Step 2: 0 at 3.1, 1 at 3.2 → v3 at 3.2; worker 2 is
    # pre-empted again. No drops. T = 3.5.
    case = hand("backup", {"backups": 1, "late_policy": "cancel"}, [[1.0], [1.1], [2.5, 0.4]], 3.5)
    want = case.reference()
    assert rounded(want) == [
        (1.1, [(0, 0), (1, 0)]),
        (2.1, [(0, 0), (2, 0)]),
        (3.2, [(0, 0), (1, 0)]),
    ]
    assert want.drops == []
    # Worker 1 never waits (a contributor restarts at the instant it closes a step): compute 3.5.
    # Worker 0 idles [1.0, 1.1] and [3.1, 3.2]. Worker 2 computes [0, 1.1] (cancelled), [1.1, 1.5],
    # [2.1, 3.2] (cancelled), [3.2, 3.5] and idles [1.5, 2.1].
    assert want.shares[1] == pytest.approx((3.5, 0.0, 0.0))
    assert want.shares[0] == pytest.approx((3.3, 0.0, 0.2))
    assert want.shares[2] == pytest.approx((2.9, 0.0, 0.6))
    assert not compare(observed(case.netsim()), want)


def test_hand_kbatch_sync():
    # K = 2, workers 1.0 s and 2.4 s. Worker 0 pushes at 1.0 (v0, kept, gets v0 back) and 2.0
    # (second minibatch on v0) → v1 at 2.0 from worker 0 twice; worker 1 is pre-empted and restarts
    # on v1 (2.4 s → 4.4). Worker 0 on v1: 3.0 and 4.0 → v2 at 4.0; worker 1 restarts again. T = 4.5.
    case = hand("kbatch_sync", {"k": 2}, [[1.0], [2.4]], 4.5)
    want = case.reference()
    assert rounded(want) == [(2.0, [(0, 0), (0, 0)]), (4.0, [(0, 0), (0, 0)])]
    assert want.pushed == [4, 0]
    assert not compare(observed(case.netsim()), want)


def test_hand_ssp_zero():
    # s = 0, workers 1.0 s and 2.5 s: each gradient its own update, barrier rounds.
    # 0 pushes at 1.0 (v1, τ 0), clock (1, 0): blocked. 1 pushes at 2.5 (v2, τ 1), min clock 1 →
    # both restart on v2. 0 at 3.5 (v3, τ 0), 1 at 5.0 (v4, τ 1). T = 5.2.
    case = hand("ssp", {"s": 0}, [[1.0], [2.5]], 5.2)
    want = case.reference()
    assert rounded(want) == [(1.0, [(0, 0)]), (2.5, [(1, 1)]), (3.5, [(0, 0)]), (5.0, [(1, 1)])]
    assert want.shares[0] == pytest.approx((2.2, 0.0, 3.0))
    assert not compare(observed(case.netsim()), want)


def test_hand_kasync_max_updates():
    # K = 2 of 3 workers (1.0, 1.5, 2.2 s): v1 at 1.5 from 0 and 1; 0 again at 2.5 and 2 at 2.2
    # → v2 at 2.5 (2 read v0: τ 1; 0 read v1: τ 0). max_updates = 2 stops the run at 2.5.
    case = hand("kasync", {"k": 2}, [[1.0], [1.5], [2.2]], 10.0, max_updates=2)
    want = case.reference()
    assert rounded(want) == [(1.5, [(0, 0), (1, 0)]), (2.5, [(0, 0), (2, 1)])]
    assert want.sim_time == pytest.approx(2.5)
    assert not compare(observed(case.netsim()), want)


def test_hand_gsgd_group_timeout():
    # Groups {0, 1} (1.0 s, 1.5 s) and {2} (0.9 s), group_timeout 1.2 s, T = 4.
    # 0.9: 2 → v1 (τ 0). 1.2: G0's timer finds only 0 (read v0) → v2, τ 1; 0 restarts on v2.
    # 1.5: 1's late v0 gradient joins G0's next round; 1 waits. 1.8: 2 (read v1) → v3, τ 1.
    # 2.2: 0 (read v2) completes G0 → v4 with τ 3 − 2 = 1 for 0 and 3 − 0 = 3 for 1; both on v4.
    # 2.7: 2 (read v3) → v5. 3.4: G0's timer (round from 2.2) finds only 0 → v6. 3.6: 2 → v7.
    case = hand("gsgd", {"groups": [[0, 1], [2]], "group_timeout": 1.2}, [[1.0], [1.5], [0.9]], 4.0)
    want = case.reference()
    assert rounded(want) == [
        (0.9, [(2, 0)]),
        (1.2, [(0, 1)]),
        (1.8, [(2, 1)]),
        (2.2, [(0, 1), (1, 3)]),
        (2.7, [(2, 1)]),
        (3.4, [(0, 1)]),
        (3.6, [(2, 1)]),
    ]
    assert [(round(t, 9), kind, who) for t, kind, who in want.events] == [
        (1.2, "group_timeout", (0, (0,))),
        (3.4, "group_timeout", (0, (0,))),
    ]
    # Worker 1 computes [0, 1.5] and [2.2, 3.7], waits [1.5, 2.2] and [3.7, 4.0].
    assert want.shares[1] == pytest.approx((3.0, 0.0, 1.0))
    assert want.shares[0] == pytest.approx((3.6, 0.0, 0.4))
    assert not compare(observed(case.netsim()), want)


def test_hand_ssgd_round_timeout():
    # Workers 1.0, 1.5, 2.5 s, round_timeout 1.1 s, T = 5.8: only worker 0 beats the timer, so each
    # round closes at its start + 1.1 with worker 0 alone (1.1, 2.2, 3.3, 4.4, 5.5). Worker 1's
    # gradients (read v0 at 0, v1 at 1.5, v2 at 3.0) arrive at 1.5, 3.0, 4.5, each one round late:
    # dropped, and it restarts at once. Worker 2's arrive at 2.5 (v0) and 5.0 (v2): dropped.
    case = hand("ssgd", {"round_timeout": 1.1}, [[1.0], [1.5], [2.5]], 5.8)
    want = case.reference()
    assert rounded(want) == [(round(1.1 * r, 9), [(0, 0)]) for r in range(1, 6)]
    assert [(round(t, 9), w, v) for t, w, v in want.drops] == [
        (1.5, 1, 0),
        (2.5, 2, 0),
        (3.0, 1, 1),
        (4.5, 1, 2),
        (5.0, 2, 2),
    ]
    assert len(want.events) == 5
    assert not compare(observed(case.netsim()), want)


# ---------------------------------------------------------------------------------------------
# The documented tie rule (§0 "Simultaneous events")


def test_released_together_the_pusher_first_then_id_order_kasync():
    # kasync K = 2, three workers of 1.0 s, no latency, T = 2.5. At 0 all three are woken in id
    # order, so at 1.0 they arrive 0, 1, 2. 1 is the K-th: v1 from {0, 1} (τ 0); the reply goes
    # to 0 (waiting: woken later in the instant) and to 1 (the pusher: starts at once). 2's
    # gradient (read v0) waits in the buffer. At 2.0 the pusher 1 arrives before 0: v2 from
    # {1 (τ 0), 2 (τ 1)}; 0's gradient waits.
    case = hand("kasync", {"k": 2}, [[1.0], [1.0], [1.0]], 2.5)
    want = [(1.0, [(0, 0), (1, 0)]), (2.0, [(1, 0), (2, 1)])]
    assert rounded(case.reference()) == want
    assert rounded(observed(case.netsim())) == want


def test_released_together_the_pusher_first_then_id_order_backup():
    # backup, 1 backup (N = 2), three workers of 1.0 s, T = 2.5. At 1.0: 0 then 1 arrive, v1 from
    # {0, 1}; 0 is woken later, 1 (the pusher) restarts at once; 2 arrives read v0: dropped, and
    # restarts at once too. At 2.0 the order is 1, 2, 0: v2 from {1, 2}; 0's gradient (read v1)
    # is one version late: dropped.
    case = hand("backup", {"backups": 1}, [[1.0], [1.0], [1.0]], 2.5)
    want = case.reference()
    assert rounded(want) == [(1.0, [(0, 0), (1, 0)]), (2.0, [(1, 0), (2, 0)])]
    assert [(round(t, 9), w, v) for t, w, v in want.drops] == [(1.0, 2, 0), (2.0, 0, 1)]
    assert not compare(observed(case.netsim()), want)
