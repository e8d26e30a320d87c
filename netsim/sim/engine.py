"""The one composer: scenario → SimPy environment, PS, workers → Result."""

from __future__ import annotations

import gc
import math
import time
import weakref
import zlib
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import simpy

from ..config.scenario import Scenario, check_dataset, labels_problem, shards_problem
from ..config.server import check_server_horizon
from ..errors import ScenarioError
from ..net.comm import NoServer, make_comm
from ..rng import Streams
from ..rules.base import stalled_on
from ..workload.datasets import Dataset
from ..workload.loading import load_data
from ..workload.models import Model, make_model
from ..workload.partition import ClassData, PartitionError, histograms, partition
from .collector import building
from .lean import LeanCrew
from .measurement import measure
from .records import (
    GroupSnapshot,
    Recorder,
    Result,
    Snapshot,
    WorkerStats,
    class_accuracy,
    idle_pct,
)
from .server import ParameterServer
from .servicequeue import check_server_model, install
from .summary import run_extras
from .worker import (
    COMM,
    COMPUTE,
    DOWN,
    IDLE,
    BatchSampler,
    Computation,
    RowGather,
    WorkerState,
    worker_process,
)

__all__ = [
    "Prepared",
    "prepare",
    "check_data",
    "load_checked",
    "simulate",
    "Simulation",
    "RunInterrupted",
    "group_snapshots",
    "worker_stats",
    "evaluation_sets",
    "divergence_limit",
]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM turned into it) during a run; ``result`` holds everything
    recorded until then, with status ``interrupted``."""

    def __init__(self, result: Result):
        super().__init__(result.message)
        self.result = result
        self.summary: dict | None = None
        """The summary of the files written for it, when the run had a folder (the API's)."""


@dataclass(frozen=True)
class Prepared:
    """What every algorithm of one scenario and seed shares: data, shards, initial model.

    ``unused_rows``: training rows in no shard (labels no worker class may hold).
    """

    dataset: Dataset
    model: Model
    shards: tuple
    w0: np.ndarray
    unused_rows: int = 0

    def data_summary(self, spec, batch_size: int = 0) -> dict:
        """The ``data`` entry of summary.json: partition, rows and label histogram per worker;
        ``workers_below_batch``: the workers with fewer rows than *batch_size* (each of
        their minibatches is their whole shard, smaller than the batch), when there are any."""
        ds = self.dataset
        p = spec.partition
        params = {
            "iid": {},
            "dirichlet": {"alpha": p.alpha},
            "shards": {"classes_per_worker": p.classes_per_worker},
            "quantity": {
                "quantity": p.law,
                **({"alpha": p.alpha} if p.law == "dirichlet" else {"exponent": p.exponent}),
            },
        }
        return {
            "partition": p.method,
            **params[p.method],
            "train_rows": int(ds.X_train.shape[0]),
            "test_rows": int(ds.X_test.shape[0]),
            "n_classes": int(ds.n_classes),
            "unused_rows": int(self.unused_rows),
            "rows_per_worker": [len(s) for s in self.shards],
            "label_histogram": histograms(self.shards, ds.y_train, ds.n_classes),
            **(
                {"workers_below_batch": few}
                if (few := [i for i, s in enumerate(self.shards) if len(s) < batch_size])
                else {}
            ),
        }


def load_checked(scenario: Scenario, rng) -> Dataset:
    """The scenario's data, checked against it (rows per worker, classes per model).

    Raises ScenarioError (file set): DataNotFoundError when files are missing, else for
    a malformed file or data the scenario cannot use.
    """
    try:
        dataset = load_data(scenario.data, rng)
    except ScenarioError as exc:  # missing data files: name the scenario
        exc.file = exc.file or scenario.path
        raise
    # a malformed, truncated (EOFError, zlib.error from gzip) or unreadable file, or a size it cannot give
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        key = (
            "data.train_file"
            if scenario.data.train_file
            else "data.dir"
            if scenario.data.source in ("mnist", "libsvm")
            else "data.path"
            if scenario.data.source == "npz"
            else "data.function"
            if scenario.data.source == "callable"
            else "data"
        )
        what = (
            str(exc)
            if isinstance(exc, ValueError)
            else f"cannot be read: {exc or type(exc).__name__}"
        )
        raise ScenarioError(key, what, scenario.path) from None
    check_dataset(
        scenario,
        dataset.X_train.shape[0],
        dataset.n_classes,
        _entries(dataset.X_train) + _entries(dataset.X_test),
    )
    return dataset


def _entries(X) -> int:
    """Entries an evaluation reads in *X*: all of a dense array, the stored ones of a sparse matrix."""
    return int(X.nnz) if hasattr(X, "nnz") else int(X.size)


def check_data(scenario: Scenario, labels: dict | None = None) -> None:
    """What :func:`prepare` would refuse about the data, for ``validate``: loads the
    files of sources whose size is not known from the scenario alone (mnist, libsvm),
    synthetic data (its size sets the evaluations' cost), and the data of any scenario
    whose partition could leave a worker without rows (a non-IID partition or a worker
    class with its own labels or partition), and cuts it.

    *labels*, when given, memoises what the checks need of each loaded draw (its
    training labels, classes and entries) by data spec, and by seed where a partition
    cuts the labels, so a sweep checking many points loads each draw once and keeps
    only its labels.
    """
    skewed = scenario.data.partition.method != "iid" or any(
        wc.labels is not None or wc.partition is not None for wc in scenario.workers
    )
    if scenario.data.source in ("mnist", "libsvm", "synthetic", "npz", "callable") or skewed:
        streams = Streams(scenario.run.seed)
        # the labels a partition cuts depend on the seed, except MNIST's (its files fix the split);
        # the sizes the other checks read do not
        key = (
            scenario.data,
            scenario.run.seed if skewed and scenario.data.source != "mnist" else None,
        )
        if labels is not None and key in labels:
            y, n_labels, entries = labels[key]
            check_dataset(
                scenario, y.shape[0], n_labels, entries
            )  # its limits depend on the run and workers too
        else:
            dataset = load_checked(scenario, streams.rng("data"))
            y, n_labels = dataset.y_train, dataset.n_classes
            if labels is not None:
                labels[key] = (y, n_labels, _entries(dataset.X_train) + _entries(dataset.X_test))
            del dataset
        if skewed:
            _partition(scenario, y, n_labels, streams.rng("shards"))
    check_server_model(scenario, load_checked, labels)  # [server]: no update longer than the run


def prepare(scenario: Scenario) -> Prepared:
    """Load data, cut one shard per worker, draw the initial model (all from the seed)."""
    streams = Streams(scenario.run.seed)
    dataset = load_checked(scenario, streams.rng("data"))
    model, w0 = _model(scenario, dataset, streams.rng("init"))
    if scenario.server is not None:  # before any run folder is claimed
        check_server_horizon(scenario.server, w0.size, scenario.run.until, scenario.path)
    if scenario.model.backend == "torch":
        from ..workload.torch_model import examples_in_dtype

        dataset = examples_in_dtype(dataset, model)
    shards, unused = _partition(scenario, dataset.y_train, dataset.n_classes, streams.rng("shards"))
    return Prepared(dataset, model, tuple(shards), w0, unused)


def _model(
    scenario: Scenario, dataset: Dataset, rng: np.random.Generator
) -> tuple[Model, np.ndarray]:
    """The scenario's model for *dataset* and its initial weights (n_params,), drawn from *rng*."""
    spec = scenario.model
    if spec.backend == "torch":
        from ..workload.torch_model import make_torch_model

        seed = int(rng.integers(2**63))  # the module's own initialisation, under torch's generator
        try:
            model = make_torch_model(
                spec, dataset.input_shape, dataset.n_classes, seed, scenario.n_workers
            )
        except ScenarioError as exc:
            exc.file = exc.file or scenario.path
            raise
        d = model.n_params()
        w0 = model.initial_weights() if spec.init == "default" else None
    else:
        model = make_model(spec.name, l2=spec.l2, n_classes=dataset.n_classes, hidden=spec.hidden)
        d = model.n_params(dataset.X_train.shape[1])
        w0 = model.init_weights(dataset.X_train.shape[1], rng) if spec.init == "he" else None
    if w0 is None:
        w0 = np.zeros(d) if spec.init == "zeros" else rng.normal(0.0, spec.init_scale, d)
    return model, w0.astype(spec.master_dtype, copy=False)


def _partition(
    scenario: Scenario, y: np.ndarray, n_labels: int, rng: np.random.Generator
) -> tuple[list, int]:
    """Each worker's rows of the training labels *y* (n,) in 0..*n_labels* − 1
    (:func:`netsim.workload.partition.partition`); ScenarioError when a label list or k
    does not fit the labels, or a worker would get no rows."""
    default = scenario.data.partition
    for i, wc in enumerate(scenario.workers):
        if wc.labels is not None and (why := labels_problem(wc.labels, n_labels, scenario.data)):
            raise ScenarioError(f"workers[{i}].data.labels", why, scenario.path)
        spec = wc.partition or default
        if spec.method == "shards" and (
            why := shards_problem(spec.classes_per_worker, n_labels, given=True)
        ):
            key = "data.classes_per_worker"
            raise ScenarioError(f"workers[{i}].{key}" if wc.partition else key, why, scenario.path)
    classes = [ClassData(wc.count, wc.partition, wc.labels) for wc in scenario.workers]
    try:
        return partition(y, classes, default, rng, scenario.data.min_rows)
    except (PartitionError, ValueError) as exc:
        j = getattr(exc, "worker_class", None)
        key = (
            "data.partition"
            if j is None
            or (scenario.workers[j].partition is None and scenario.workers[j].labels is None)
            else f"workers[{j}].data"
        )
        need = "one row" if scenario.data.min_rows == 1 else "data.min_rows rows"
        raise ScenarioError(
            key,
            f"{exc} (every worker needs at least {need}: change the partition "
            "parameters, the label lists or the worker counts)",
            scenario.path,
        ) from None


class Simulation:
    """One run being built and executed; ``snapshot()`` gives the live state."""

    def __init__(
        self,
        scenario: Scenario,
        algorithm: str | None = None,
        prepared: Prepared | None = None,
        label: str | None = None,
        *,
        rule=None,
        eval_set: tuple[np.ndarray, np.ndarray] | None = None,
        lean: bool = True,
        decide=None,
    ):
        with building():  # see netsim.sim.collector
            self._build(scenario, algorithm, prepared, label, rule, eval_set, lean, decide)

    def _build(self, scenario, algorithm, prepared, label, rule, eval_set, lean, decide) -> None:
        self.scenario = scenario
        self.algorithm = algorithm or scenario.run.algorithm
        self.label = label or self.algorithm
        self.prepared = prepared or prepare(scenario)
        self.rule = rule if rule is not None else scenario.rule(self.algorithm)
        self.eval_set = (
            eval_set  # pilots: (X (n, d), y (n,)) the loss is evaluated on, no test accuracy
        )
        self.streams = Streams(scenario.run.seed)
        self.env = simpy.Environment()
        self.recorder = Recorder()
        self._evaluated = None  # (weak reference to the model array, loss, accuracy, per-class)
        # of the last evaluation: a weak one, so an old model is not kept for it
        self.stop = self.env.event()
        self.classes = scenario.worker_class_names()
        self.states = [WorkerState(i) for i in range(scenario.n_workers)]
        run = scenario.run
        self.ps = ParameterServer(
            self.env,
            self.prepared.w0,
            self.rule,
            self.states,
            self.recorder,
            self.stop,
            run.max_updates,
            self._on_update if run.eval_every_updates else None,
        )
        if self.rule.update.spares_1d:  # weight decay spares the 1-d parameters
            self.ps.optimizer = self.rule.update.state(self.prepared.model.one_d_ranges())
        self.model = self.prepared.model
        """The model this run computes with (its own state once :meth:`begin` made it: buffers)."""
        self.grouping: dict | None = None
        self.started = False
        self.interrupted = ""
        self._stop_requested = False
        self.returning = (
            Counter()
        )  # worker id -> recoveries scheduled (crash durations, recover events)
        self.lost: set[int] = set()  # workers down with no recovery scheduled
        for event in scenario.events:
            if event.kind == "recover":
                self.returning.update(event.workers)
        self.comm, self.net = make_comm(
            self.env,
            scenario.pull_latencies(),
            scenario.push_latencies(),
            scenario.network,
            self.prepared.w0.size,
        )
        self.ps.comm = self.comm
        self.ps.rng = self.streams.rng("peers")
        self.service = install(self.env, self.ps, scenario, self.comm, self.streams.rng("server"))
        self.link_events_left = sum(event.kind == "link" for event in scenario.events)
        self.cut: dict[int, tuple[float, float]] = {}
        """Workers cut off from the PS: (pull, push) shortest times (s), one longer than
        the whole run (a link at bandwidth 0, or all but), once no link event is left."""
        self._find_cut()
        self.decide = decide
        """The grouping decision for a rule that asks for one (``rule.wants_recommendation()``):
        ``decide(scenario, prepared, measurement, rule, on_rung)`` returns an object with
        ``groups``, ``lr`` and ``as_dict()`` (:func:`netsim.tuning.race.decide`). The engine
        does not race candidates itself; whoever runs such a scenario passes the tuner in."""
        self.lean = lean
        """Whether the workers may run as lean callbacks (:mod:`netsim.sim.lean`) when the run allows it."""
        self.eval_train, self.eval_test = evaluation_sets(
            self.prepared.dataset, scenario.run.eval_rows, self.streams.rng("eval")
        )
        """(X, y) the loss is evaluated on, and the test set of the accuracy (all rows, or ``run.eval_rows``)."""

    @property
    def general_reason(self) -> str:
        """Why the workers run as SimPy processes ('' : they run as lean callbacks)."""
        return lean_blocker(self.scenario, self.rule, self.comm) if self.lean else "asked for"

    # -- evaluation -------------------------------------------------------
    def evaluate(self) -> None:
        """Append (update, time, training objective, test accuracy); costs no simulated time."""
        ds, model, w = self.prepared.dataset, self.model, self.ps.average()
        curve = self.recorder.curve
        if curve and curve[-1][0] == self.ps.version and curve[-1][1] == self.env.now:
            return
        X_test, y_test = self.eval_test
        last = self._evaluated
        if last is not None and last[0]() is w and curve[-1][0] == self.ps.version:
            # the model is the very array evaluated last (no update, no replicas since):
            # its loss and accuracies are the same floats, not computed again
            loss, acc, per_class = last[1:]
        elif self.eval_set is None:
            loss = float(model.loss(w, *self.eval_train))
            pred = model.predict(w, X_test)
            acc = float(np.mean(pred == y_test))  # = model.accuracy, with the predictions kept
            per_class = class_accuracy(pred, y_test, ds.n_classes)
        else:  # a pilot: loss on a fixed subsample of the training set, no test accuracy
            loss, acc, per_class = float(model.loss(w, *self.eval_set)), float("nan"), None
        self._evaluated = (
            None if self.ps.replicas is not None else (weakref.ref(w), loss, acc, per_class)
        )
        curve.append((self.ps.version, float(self.env.now), loss, acc))
        if self.rule.replicated:  # 0 at the start, before the workers' models part
            self.recorder.consensus.append(self.ps.consensus_distance(w))
        if per_class is not None:
            self.recorder.class_accuracy.append(list(per_class))
        if not np.isfinite(loss):
            self.ps.finish(
                f"non-finite loss at update {self.ps.version}, simulated time {self.env.now:g} s"
            )
        elif loss > divergence_limit(curve[0][2]):
            self.ps.finish(
                f"loss {loss:.3g} at update {self.ps.version}, simulated time {self.env.now:g} s, "
                f"above {DIVERGENCE_FACTOR:.0e} × the initial loss {curve[0][2]:.3g}"
            )

    def _on_update(self, ps) -> None:
        if ps.version % self.scenario.run.eval_every_updates == 0:
            self.evaluate()

    def _evaluator(self, every: float):
        while True:
            yield self.env.timeout(every)
            self.evaluate()

    def _progress(self, callback, every: float):
        while True:
            yield self.env.timeout(every)
            self._honour_stop_request()
            callback(self.snapshot())
            self._honour_stop_request()  # a signal during the callback stops here, not one tick later

    def _flusher(self, sink, every: float):
        while True:
            yield self.env.timeout(every)
            self._honour_stop_request()
            sink(self.recorder)
            self._honour_stop_request()

    def request_stop(self) -> None:
        """Ask the run to end (signal-handler safe: only sets a flag). The run stops at the
        next progress or flush tick, between two events, so no update is half recorded;
        ``run`` then raises RunInterrupted."""
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        """Whether :meth:`request_stop` was called."""
        return self._stop_requested

    def _honour_stop_request(self) -> None:
        if self._stop_requested and not self.stop.triggered:
            self.stop.succeed("interrupted")

    # -- run --------------------------------------------------------------
    def run(self, progress=None, progress_every: float | None = None, sink=None) -> Result:
        """Run to ``run.until`` (s) or ``run.max_updates``; *progress(snapshot)* is called
        with a :class:`Snapshot` every *progress_every* simulated seconds (default:
        1/200 of the horizon), and *sink(recorder)* (e.g. a RunWriter's ``flush``)
        every 1/1000 of the horizon.

        Raises RunInterrupted (a KeyboardInterrupt) carrying the partial Result when
        interrupted (Ctrl-C)."""
        self.begin(progress, progress_every, sink)
        try:
            self.advance(self.scenario.run.until)
        except KeyboardInterrupt:
            self.recorder.trim()
            self.interrupted = f"interrupted at simulated time {self.env.now:g} s"
            raise RunInterrupted(self._result(time.perf_counter() - self._wall)) from None
        return self.end()

    def begin(self, progress=None, progress_every: float | None = None, sink=None) -> None:
        """Build the worker processes, form groups and start the rule (no time passes yet)."""
        scenario, env = self.scenario, self.env
        self._wall = time.perf_counter()
        self._progress_cb = progress
        prep = self.prepared
        X, y = prep.dataset.X_train, prep.dataset.y_train
        self.model = model = prep.model.for_run(scenario.run.seed)
        self.ps.vectors = model.vectors
        gradient = model.gradient
        residual = model.residual if scenario.run.compact_gradients else None
        late = (
            residual is not None and self.rule.reads_current()
        )  # factors at the end: pre-emption wastes none
        batch = scenario.run.batch_size
        gather = RowGather(X)  # one scratch buffer for every worker's minibatch rows
        crew = None
        if not self.general_reason:
            comm = None if all(self.comm.instant) else self.comm
            crew = LeanCrew(env, self.ps, model, y, gather, comm)
        how = Computation(gradient, X, y, residual, gather, late)
        self.ps.lean = crew is not None
        with building():  # see netsim.sim.collector
            for wid, wc, m in scenario.worker_slots():
                st = self.states[wid]
                draws = wc.compute.draws(self.streams.rng("compute", wid), m)
                sampler = BatchSampler(prep.shards[wid], batch, self.streams.rng("batch", wid))
                if crew is not None:
                    crew.add(st, sampler, draws)
                else:
                    comm = NoServer(self.comm) if self.rule.peer else self.comm
                    st.process = env.process(
                        worker_process(env, st, self.ps, comm, how, sampler, draws)
                    )
        self._record_spans(scenario.run.timeline_until)
        self.evaluate()
        delay = self._form_groups()
        if self.ps.stalled:
            pass  # the grouping measurement cannot end: training never starts
        elif delay > 0:
            env.timeout(delay).callbacks.append(lambda _e: self._start())
        else:
            self._start()
        if scenario.run.eval_every:
            env.process(self._evaluator(scenario.run.eval_every))
        if progress is not None:
            env.process(self._progress(progress, progress_every or scenario.run.until / 200))
        if sink is not None:
            env.process(self._flusher(sink, scenario.run.until / 1000))
        if scenario.events:
            env.process(self._dynamics(scenario.events))
        deadline = env.timeout(scenario.run.until)
        deadline.callbacks.append(lambda _: self.stop.triggered or self.stop.succeed("until"))

    @property
    def stopped(self) -> bool:
        """True once the run has ended (horizon, max updates or divergence)."""
        return self.stop.processed

    def advance(self, until: float) -> None:
        """Run up to simulated time *until* (s; at most ``run.until``) or the run's end.

        A run advanced in pieces makes the same events as one advanced at once.
        """
        until = min(until, self.scenario.run.until)
        if self.stopped or until <= self.env.now:
            return
        with np.errstate(over="ignore", invalid="ignore"):  # divergence is detected and reported
            if until >= self.scenario.run.until:
                self.env.run(until=self.stop)
            else:
                self.env.run(
                    until=self.env.any_of([self.stop, self.env.timeout(until - self.env.now)])
                )
        if self._stop_requested:
            raise KeyboardInterrupt

    def end(self) -> Result:
        """Evaluate the final model (the last finite one after divergence); the Result."""
        with np.errstate(over="ignore", invalid="ignore"):
            if not self.ps.diverged:
                self.evaluate()
            else:
                self._evaluate_last_finite()
        if (
            self._progress_cb is not None
        ):  # the end state, also when max_updates stops the run between two snapshots
            self._progress_cb(self.snapshot())
        return self._result(time.perf_counter() - self._wall)

    def _start(self) -> None:
        self.started = True
        self.rule.start(self.ps)
        self._check_progress()

    def _evaluate_last_finite(self) -> None:
        """After divergence: the loss of the last finite model, at the time of divergence."""
        if self.ps.last_finite is None:
            return
        version, w = self.ps.last_finite
        model = self.model
        loss = float(model.loss(w, *self.eval_train))
        acc = float(model.accuracy(w, *self.eval_test))
        curve = self.recorder.curve
        if np.isfinite(loss) and not (curve and curve[-1][0] == version):
            curve.append((version, float(self.env.now), loss, acc))

    def _form_groups(self) -> float:
        """Measure and group when the rule asks for it (``rule.probe_rounds()``);
        returns the measurement time (s)."""
        rule = self.rule
        rounds = rule.probe_rounds()
        if not rounds:
            self.grouping = rule.grouping_record()
            return 0.0
        m = measure(
            self.scenario,
            self.prepared.w0.size,
            rounds,
            self.streams,
            [st.slowdown for st in self.states],
        )
        if self._unmeasurable(m):
            return 0.0
        if rule.wants_recommendation():
            if self.decide is None:
                raise ScenarioError(
                    f"algorithms.{self.algorithm}.grouping",
                    "'auto' races pilot runs, which this "
                    "caller did not provide: run the scenario through netsim.api (or the "
                    "netsim command), or pass decide=netsim.tuning.race.decide",
                    self.scenario.path,
                )
            rec = self.decide(self.scenario, self.prepared, m, rule, self._racing)
            rule.adopt(rec.groups, rec.lr)
            record = rec.as_dict()
        else:
            record = rule.on_measured(m.iteration, self.scenario.run.seed)
        self.grouping = {**record, "measurement": m.as_dict()}
        self.ps.record_event(
            "measurement", duration=m.duration, groups=[list(g) for g in rule.groups]
        )
        self.ps.reset_groups(len(rule.groups))
        return m.duration

    def _unmeasurable(self, m) -> bool:
        """End the run ``stalled`` when the grouping measurement *m* cannot end within the
        run (some worker is cut off from the PS), or ends too late for any training."""
        horizon = self.scenario.run.until
        off = m.cut_off(horizon)
        if off:
            self.ps.stalled_on = off
            self.ps.stall(
                f"stalled at simulated time 0 s: the grouping measurement cannot end within "
                f"run.until = {horizon:g} s: {_workers(off)} cut off from the parameter server "
                f"(their probe transfers take longer than the run, or never end)"
            )
            return True
        if m.duration < horizon:
            return False
        late = np.flatnonzero(m.iteration.sum(axis=1) >= horizon).tolist()
        self.ps.stalled_on = late or list(range(len(self.states)))
        rounds = m.iteration.shape[1]
        self.ps.stall(
            f"stalled at simulated time 0 s: the grouping measurement ({rounds} probe rounds "
            f"of every worker) takes {m.duration:.4g} s, not less than run.until = {horizon:g} s, "
            f"so training would never start ({_workers(self.ps.stalled_on)} the last to end); "
            f"lower algorithms.{self.algorithm}.probe_rounds or raise run.until"
        )
        return True

    def _racing(self, rung: int, rungs: int, candidates: int) -> None:
        """Progress of the grouping race (``grouping = "auto"``) before training starts; a
        stop request (Ctrl-C) abandons it."""
        if self._stop_requested:
            raise KeyboardInterrupt
        if self._progress_cb is not None:
            self._progress_cb(
                replace(
                    self.snapshot(),
                    note=f"choosing the grouping: rung {rung + 1} of {rungs}, "
                    f"{candidates} (grouping, η) candidates racing",
                )
            )

    def _dynamics(self, events):
        """Apply the scenario's timed events; each is logged in the run's events."""
        env, ps = self.env, self.ps
        for event in events:
            if event.time > env.now:
                yield env.timeout(event.time - env.now)
            ps.record_event(
                event.kind,
                **{k: v for k, v in event.as_dict().items() if k not in ("time", "kind")},
            )
            if event.kind == "slowdown":
                for wid in event.workers:
                    self.states[wid].slowdown = event.factor
            elif event.kind == "crash":
                for wid in event.workers:
                    self._crash(wid)
                if event.duration:
                    self.returning.update(event.workers)
                    env.timeout(event.duration).callbacks.append(
                        lambda _e, ids=event.workers: self._recover(ids, True)
                    )
                for w in event.workers:
                    if self.returning[w] <= 0:
                        self.lost.add(w)
                    else:
                        self.lost.discard(w)
                self._check_progress()
            elif event.kind == "recover":
                self._recover(event.workers, False)
            else:
                self.net.set_link(*event.link, bandwidth=event.bandwidth, latency=event.latency)
                self.link_events_left -= 1
                self._find_cut()
                self._check_progress()

    def _crash(self, wid: int) -> None:
        st = self.states[wid]
        if not st.down:
            st.down = True
            st.crashes += 1
            st.job = None  # no pre-emption on top of the crash
            st.process.interrupt("crash")

    def _recover(self, ids, logged_elsewhere: bool) -> None:
        """Bring crashed workers *ids* back; the rule sends them a model (``on_rejoin``)."""
        back = []
        for wid in ids:
            self.returning[wid] -= 1
            st = self.states[wid]
            if st.down:
                st.down = False
                back.append(wid)
            self.lost.discard(wid)
        if back and logged_elsewhere:
            self.ps.record_event("recover", workers=back)
        for wid in back:
            st = self.states[wid]
            if st.revive is not None and not st.revive.triggered:
                st.revive.succeed()
            # the rule sends a model once the worker waits for one (after its revive, or after the
            # interrupt of a crash at this very instant), so it reads the model current then
            self.env.timeout(0).callbacks.append(
                lambda _e, wid=wid, n=st.crashes: self._rejoin(wid, n)
            )

    def _rejoin(self, wid: int, crashes: int) -> None:
        st = self.states[wid]
        if self.started and not st.down and st.crashes == crashes:
            self.rule.on_rejoin(self.ps, wid)

    def _find_cut(self) -> None:
        """Refresh :attr:`cut` (after the last link event, the network stays as it is)."""
        if self.link_events_left:
            self.cut = {}
            return
        horizon = self.scenario.run.until
        if self.rule.peer:  # no PS: cut off from the other workers
            self.cut = {w: (math.inf, math.inf) for w in self.comm.isolated(horizon)}
            return
        times = (self.comm.min_times(w) for w in range(len(self.states)))
        self.cut = {
            w: (pull, push)
            for w, (pull, push) in enumerate(times)
            if pull > horizon or push > horizon
        }

    def _cut_now(self) -> set[int]:
        """The cut-off workers that can never push again: the push is cut, or the pull is
        and the worker does not already hold a model (computing, or pushing)."""
        horizon = self.scenario.run.until
        blocked = set()
        for w, (pull, push) in self.cut.items():
            st = self.states[w]
            holds = st.phase == COMPUTE or (st.phase == COMM and st.job is None)
            if push > horizon or not holds:
                blocked.add(w)
        return blocked

    def _check_progress(self) -> None:
        """End the run as ``stalled`` when no update can ever happen again.

        Checked after crashes, link events, pushes and rule timers while some worker is
        down for good or cut off from the PS (:attr:`cut`): the rule says what its next
        update needs (``Rule.waiting``); when every alternative needs such a worker,
        nothing will change until ``run.until``.
        """
        watched = self.lost or self.cut
        self.ps.watch = self._check_progress if watched else None
        if not watched or not self.started or self.stop.triggered:
            return
        cut = self._cut_now() - self.lost
        blocking = stalled_on(self.rule.waiting(self.ps), self.lost | cut, len(self.states))
        if blocking is not None:
            self.ps.stalled_on = blocking
            self.ps.stall(
                f"stalled at simulated time {self.env.now:g} s: no update can happen again; "
                f"{self.algorithm} waits for workers {blocking}, {self._why(blocking, cut)}"
            )

    def _why(self, blocking: list[int], cut: set[int]) -> str:
        """Why each of *blocking* cannot push again (the stall message's tail)."""
        down = [w for w in blocking if w not in cut]
        off = [w for w in blocking if w in cut]
        if not off:
            return "down with no recovery scheduled"
        parts = [f"{_workers(down)} down with no recovery scheduled"] if down else []
        if self.rule.peer:
            parts.append(
                f"{_workers(off)} cut off from the other workers (no message to or from "
                f"{'it' if len(off) == 1 else 'them'} ends within run.until = "
                f"{self.scenario.run.until:g} s)"
            )
            return "; ".join(parts)
        w = off[0]
        pull, push = self.cut[w]
        which, took = ("push", push) if push >= pull else ("pull", pull)
        why = (
            f"a link on worker {w}'s {which} path is cut"
            if took == np.inf
            else f"worker {w}'s {which} takes at least {took:.3g} s alone on the network, "
            f"longer than run.until = {self.scenario.run.until:g} s"
        )
        parts.append(f"{_workers(off)} cut off from the parameter server ({why})")
        return "; ".join(parts)

    def _record_spans(self, until: float) -> None:
        if until == 0:
            return
        for st in self.states:
            st.spans = self.recorder.spans
        if self.service is not None:
            self.service.spans = self.recorder.spans
        if until > 0:

            def stop_recording(_):
                for st in self.states:
                    st.enter(st.phase, self.env.now)
                    st.spans = None
                if self.service is not None:
                    self.service.close_spans(self.env.now)

            self.env.timeout(until).callbacks.append(stop_recording)

    def _result(self, wall_s: float) -> Result:
        now = float(self.env.now)
        stats = worker_stats(self.states, self.classes, self.rule.group_index(), now)
        ps = self.ps
        status = (
            "interrupted"
            if self.interrupted
            else "diverged"
            if ps.diverged
            else "stalled"
            if ps.stalled
            else "ok"
        )
        data = self.prepared.data_summary(self.scenario.data, self.scenario.run.batch_size)
        ended = {}
        if ps.diverged:
            ended["diverged_at"] = {"update": ps.version, "sim_time": now}
        if ps.stalled:
            ended["stalled_at"] = {"sim_time": now, "waiting_for": ps.stalled_on}
        extra = run_extras(self.scenario, data, self.rule, self.grouping, ended)
        if self.service is not None:
            self.service.close_spans(now)
            extra["server"] = self.service.summary(now)
        if self.net is not None:
            plan = self.scenario.network
            extra["network"] = {
                "topology": plan.topology,
                "ps_host": plan.ps_host,
                "worker_hosts": list(plan.worker_hosts),
                "sharing": plan.sharing,
                "message_bytes": self.comm.model_bytes,
                "header_bytes": plan.header_bytes,
                "busiest_links": [
                    {"link": f"{u}->{v}", "utilisation": float(x)}  # none over no time
                    for u, v, x in (self.net.link_utilisation(now)[:10] if now > 0 else [])
                ],
            }
        return Result(
            scenario=self.scenario.name,
            algorithm=self.algorithm,
            label=self.label,
            seed=self.scenario.run.seed,
            sim_time=now,
            updates=self.ps.version,
            groups=[list(g) for g in self.rule.groups],
            workers=stats,
            records=self.recorder,
            status=status,
            message=self.interrupted or ps.diverged or ps.stalled,
            wall_s=wall_s,
            final_w=self.ps.w,
            model_info=self.model.export_info(),
            extra=extra,
        )

    def snapshot(self) -> Snapshot:
        """The live state for a progress display (see :class:`Snapshot`)."""
        now = float(self.env.now)
        curve = self.recorder.curve
        groups = group_snapshots(self.rule.groups, self.states, self.ps, now)
        last = curve[-1] if curve else None
        run = self.scenario.run
        return Snapshot(
            self.label,
            self.algorithm,
            now,
            run.until,
            self.ps.version,
            run.max_updates,
            last[2] if last else None,
            last[3] if last else None,
            last[1] if last else None,
            last[0] if last else None,
            groups,
        )


def worker_stats(states, classes: list[str], group_of: list[int], now: float) -> list[WorkerStats]:
    """Each worker's totals at *now* (s), its phase in progress closed there (*states*: the
    WorkerStates; *classes*, *group_of*: each worker's class name and group)."""
    stats = []
    for st in states:
        st.enter(st.phase, now)
        stats.append(
            WorkerStats(
                id=st.wid,
                worker_class=classes[st.wid],
                group=group_of[st.wid],
                gradients_pushed=st.pushed,
                gradients_applied=st.applied,
                gradients_dropped=st.dropped,
                compute_s=st.spent[COMPUTE],
                comm_s=st.spent[COMM],
                idle_s=st.spent[IDLE],
                down_s=st.spent[DOWN],
            )
        )
    return stats


def group_snapshots(groups, states, ps, now: float) -> tuple[GroupSnapshot, ...]:
    """Each group's figures at *now* (s): its updates, mean staleness per gradient and the
    idle share of its members (*states*: the WorkerStates; *ps*: the server's counters)."""
    out = []
    for k, members in enumerate(groups):
        idle = total = 0.0
        for w in members:
            st = states[w]
            running = now - st.since
            idle += st.spent[IDLE] + (running if st.phase == IDLE else 0.0)
            total += sum(st.spent) + running
        n_grads = ps.group_gradients[k]
        out.append(
            GroupSnapshot(
                k,
                len(members),
                ps.group_updates[k],
                ps.group_staleness[k] / n_grads if n_grads else 0.0,
                idle_pct(idle, total),
            )
        )
    return tuple(out)


DIVERGENCE_FACTOR = 1e6
"""A run has diverged when an evaluated loss exceeds this many times the initial loss (at
least 1): a loss that grew a million-fold is not coming back, and no healthy run of the
shipped scenarios comes near (their losses stay below their initial value)."""


def divergence_limit(initial: float) -> float:
    """The loss above which a run whose first evaluated loss is *initial* has diverged."""
    return DIVERGENCE_FACTOR * max(1.0, initial) if np.isfinite(initial) else np.inf


def evaluation_sets(ds: Dataset, rows: int, rng: np.random.Generator) -> tuple[tuple, tuple]:
    """The (X, y) of the training loss and of the test accuracy: all rows when *rows* is 0
    or at least the set's size, else *rows* of each drawn without replacement by *rng*
    (kept in their order in the set)."""

    def subset(X, y):
        if not rows or rows >= len(y):
            return X, y
        keep = np.sort(rng.choice(len(y), rows, replace=False))
        return X[keep], y[keep]

    return subset(ds.X_train, ds.y_train), subset(ds.X_test, ds.y_test)


def lean_blocker(scenario: Scenario, rule, comm) -> str:
    """What keeps a run's workers from running as lean callbacks ('' : nothing).

    :class:`~netsim.sim.lean.LeanWorker` cannot be interrupted or inspected and pushes
    dense gradients, so it needs a rule that never pre-empts, reads or collects a
    worker's iteration (``rule.lean``), no timed events (crashes, slowdowns, link
    changes) and no compact gradients. Its transfers may take time.
    """
    if rule.peer:
        return f"rule {rule.name} has no parameter server (its workers exchange messages)"
    if not rule.lean:
        return f"rule {rule.name} interrupts or inspects workers"
    if scenario.events:
        return "timed events"
    if scenario.run.compact_gradients:
        return "compact gradients"
    if scenario.server is not None:
        return "a server that takes time ([server])"
    return ""


def simulate(
    scenario: Scenario,
    algorithm: str | None = None,
    *,
    prepared: Prepared | None = None,
    progress=None,
    progress_every: float | None = None,
    label: str | None = None,
    decide=None,
) -> Result:
    """Run *scenario* with *algorithm* (default ``run.algorithm``) and return its Result
    (labelled *label*, default the algorithm's name); *decide*: the grouping decision of
    :class:`Simulation`. Data it loads itself (no *prepared*) is freed before it returns
    (:func:`free_cycles`)."""
    sim = Simulation(scenario, algorithm, prepared, label, decide=decide)
    result = sim.run(progress, progress_every)
    if prepared is None:
        size = data_bytes(sim.prepared.dataset)
        del sim
        free_cycles(size)
    return result


FREE_CYCLES_BYTES = 32 * 2**20
"""Data sets at least this large (bytes of their arrays) are freed at once by :func:`free_cycles`."""


def free_cycles(size: int) -> None:
    """Free now, when *size* (bytes, see :func:`data_bytes`) is large, the data of runs
    the caller has dropped.

    A simulation and its SimPy processes refer to each other (a suspended process's
    generator holds the simulation, whose event queue holds the process), so a dropped
    run keeps its data until Python's cyclic garbage collector runs a full pass, which
    is rare: a loop of runs that each load their own data kept every copy (MNIST: 0.4 GB
    a run; 3.4 GB after 12 runs, 24 GB in a long benchmark). For data of at least
    :data:`FREE_CYCLES_BYTES` this collects now (``gc.collect``: 30-130 ms after an MNIST
    run, mostly the freeing itself, more in a process with many live objects); smaller
    data is left to the collector's own pace. The caller must hold no reference to it."""
    if size >= FREE_CYCLES_BYTES:
        gc.collect()


def data_bytes(dataset: Dataset) -> int:
    """Bytes of *dataset*'s arrays (dense, or a CSR matrix's three arrays)."""

    def nbytes(a) -> int:
        return (
            a.nbytes
            if isinstance(a, np.ndarray)
            else sum(x.nbytes for x in (a.data, a.indices, a.indptr))
        )

    return sum(
        nbytes(a) for a in (dataset.X_train, dataset.y_train, dataset.X_test, dataset.y_test)
    )


def _workers(ids: list[int]) -> str:
    return f"worker {ids[0]}" if len(ids) == 1 else f"workers {ids}"
