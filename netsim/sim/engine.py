"""The one composer: scenario → SimPy environment, PS, workers → Result."""

from __future__ import annotations

import gc
import time
import zlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from ..config.scenario import Scenario, check_dataset, labels_problem, shards_problem
from ..config.server import check_receive_horizon, check_server_horizon, check_snapshot_time
from ..errors import ScenarioError
from ..net.comm import FixedLatency, NetworkComm, make_comm
from ..rng import Streams
from ..rules.base import Rule
from ..workload.backends import BACKENDS
from ..workload.datasets import Dataset
from ..workload.loading import load_data
from ..workload.models import Model
from ..workload.partition import ClassData, PartitionError, histograms, partition
from ..workload.sources import SOURCES
from . import outcome
from .collector import building
from .dynamics import Dynamics
from .evaluation import Evaluator
from .records import Recorder, Result, Snapshot
from .server import ParameterServer
from .servicequeue import check_server_model, install, push_bytes
from .startup import form_groups, record_spans, start_workers
from .summary import Summary
from .worker import WorkerState

if TYPE_CHECKING:
    from ..config.scenario import DataSpec

Process = Generator[simpy.Event, Any, None]
"""A SimPy process body."""
Decide = Callable[..., Any]
"""The grouping decision injected into a run (:func:`netsim.tuning.race.decide`: scenario,
prepared, measurement, rule, on_rung -> Recommendation)."""

__all__ = [
    "Prepared",
    "prepare",
    "check_data",
    "load_checked",
    "simulate",
    "Simulation",
    "RunInterrupted",
    "lean_blocker",
    "data_bytes",
    "free_cycles",
]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM turned into it) during a run; ``result`` holds everything
    recorded until then, with status ``interrupted``."""

    def __init__(self, result: Result):
        super().__init__(result.message)
        self.result = result
        self.summary: Summary | None = None
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

    def data_summary(self, spec: DataSpec, batch_size: int = 0) -> dict:
        """The ``data`` entry of summary.json: partition, rows and label histogram per worker;
        ``workers_below_batch``: the workers with fewer rows than *batch_size* (each of
        their minibatches is their whole shard, smaller than the batch), when there are any."""
        ds = self.dataset
        p = spec.partition
        params: dict[str, dict[str, object]] = {
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


def load_checked(scenario: Scenario, rng: np.random.Generator) -> Dataset:
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
        key = SOURCES[scenario.data.source].load_error_key(scenario.data)
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
        _sets(dataset),
    )
    return dataset


def _entries(X: Any) -> int:  # an ndarray or a scipy sparse matrix
    """Entries an evaluation reads in *X*: all of a dense array, the stored ones of a sparse matrix."""
    return int(X.nnz) if hasattr(X, "nnz") else int(X.size)


def _sets(dataset: Any) -> tuple[tuple[int, int], ...]:
    """(entries, rows) of the training and the test set."""
    return tuple((_entries(X), int(X.shape[0])) for X in (dataset.X_train, dataset.X_test))


def check_data(scenario: Scenario, labels: dict | None = None) -> None:
    """What :func:`prepare` would refuse about the data, for ``validate``: loads the
    data of every source not ``sized`` (whose rows the scenario alone does not give, or
    whose size sets the evaluations' cost: all but digits), and the data of any scenario
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
    source = SOURCES[scenario.data.source]
    if not source.sized or skewed:
        streams = Streams(scenario.run.seed)
        # the labels a partition cuts depend on the seed, unless the source's files fix the split;
        # the sizes the other checks read do not
        key = (
            scenario.data,
            scenario.run.seed if skewed and not source.fixed_split else None,
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
                labels[key] = (y, n_labels, _sets(dataset))
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
        check_receive_horizon(
            scenario.server,
            push_bytes(scenario, w0.size, w0.dtype),
            scenario.run.until,
            scenario.path,
        )
        check_snapshot_time(scenario.server, w0.size, scenario.run.eval_every, scenario.path)
    dataset = BACKENDS[scenario.model.backend].examples(dataset, model)
    shards, unused = _partition(scenario, dataset.y_train, dataset.n_classes, streams.rng("shards"))
    return Prepared(dataset, model, tuple(shards), w0, unused)


def _model(
    scenario: Scenario, dataset: Dataset, rng: np.random.Generator
) -> tuple[Model, np.ndarray]:
    """The scenario's model for *dataset* and its initial weights (n_params,), drawn from *rng*."""
    spec = scenario.model
    try:
        model, w0, d = BACKENDS[spec.backend].build(spec, dataset, rng, scenario.n_workers)
    except ScenarioError as exc:
        exc.file = exc.file or scenario.path
        raise
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
    """One run being built and executed; ``snapshot()`` gives the live state.

    The one composer: the server, the workers (:mod:`netsim.sim.startup`), the evaluations
    (:mod:`netsim.sim.evaluation`), the timed events and stalls (:mod:`netsim.sim.dynamics`)
    and the Result (:mod:`netsim.sim.outcome`) meet here.
    """

    def __init__(
        self,
        scenario: Scenario,
        algorithm: str | None = None,
        prepared: Prepared | None = None,
        label: str | None = None,
        *,
        rule: Rule | None = None,
        eval_set: tuple[np.ndarray, np.ndarray] | None = None,
        lean: bool = True,
        decide: Decide | None = None,
    ) -> None:
        with building():  # see netsim.sim.collector
            self._build(scenario, algorithm, prepared, label, rule, eval_set, lean, decide)

    def _build(
        self,
        scenario: Scenario,
        algorithm: str | None,
        prepared: Prepared | None,
        label: str | None,
        rule: Rule | None,
        eval_set: tuple[np.ndarray, np.ndarray] | None,
        lean: bool,
        decide: Decide | None,
    ) -> None:
        self.scenario = scenario
        self.algorithm = algorithm or scenario.run.algorithm
        self.label = label or self.algorithm
        self.prepared = prepared or prepare(scenario)
        self.rule = rule if rule is not None else scenario.rule(self.algorithm)
        self.streams = Streams(scenario.run.seed)
        self.env = simpy.Environment()
        self.recorder = Recorder()
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
        )
        if self.rule.update.spares_1d:  # weight decay spares the 1-d parameters (torch: config)
            from ..workload.torch_model import TorchModel

            model = self.prepared.model
            if isinstance(model, TorchModel):
                self.ps.optimizer = self.rule.update.state(model.one_d_ranges())
        self.grouping: dict | None = None
        self.interrupted = ""
        self._stop_requested = False
        self.comm, self.net = make_comm(
            self.env,
            scenario.pull_latencies(),
            scenario.push_latencies(),
            scenario.network,
            self.prepared.w0.size,
        )
        self.ps.comm = self.comm
        self.ps.rng = self.streams.rng("peers")
        self.service = install(self.env, self.ps, scenario, self.streams.rng("server"))
        self.dynamics = Dynamics(self.ps, scenario, self.comm, self.net, self.algorithm)
        """The timed events and the diagnosis of stalls."""
        self.decide = decide
        """The grouping decision for a rule that asks for one (``rule.wants_recommendation()``):
        ``decide(scenario, prepared, measurement, rule, on_rung)`` returns an object with
        ``groups``, ``lr`` and ``as_dict()`` (:func:`netsim.tuning.race.decide`). The engine
        does not race candidates itself; whoever runs such a scenario passes the tuner in."""
        self.lean = lean
        """Whether the workers may run as lean callbacks (:mod:`netsim.sim.lean`) when the run allows it."""
        self.evaluator = Evaluator(
            self.ps, self.prepared.dataset, run.eval_rows, self.streams.rng("eval"), eval_set
        )
        """The evaluations: on ``eval_set`` (X, y) for a pilot (no test accuracy), else on
        all rows or ``run.eval_rows``."""
        if run.eval_every_updates:
            self.ps.on_update = self.evaluator.every_updates(run.eval_every_updates)
        self.model = self.evaluator.model = self.prepared.model
        """The model this run computes with (its own state once :meth:`begin` made it: buffers)."""

    @property
    def general_reason(self) -> str:
        """Why the workers run as SimPy processes ('' : they run as lean callbacks)."""
        return lean_blocker(self.scenario, self.rule, self.comm) if self.lean else "asked for"

    def evaluate(self) -> None:
        """Append (update, time, training objective, test accuracy); costs no simulated time."""
        self.evaluator.evaluate()

    # -- stop requests and progress ----------------------------------------
    def _progress(self, callback: Callable[[Snapshot], object], every: float) -> Process:
        while True:
            yield self.env.timeout(every)
            self._honour_stop_request()
            callback(self.snapshot())
            self._honour_stop_request()  # a signal during the callback stops here, not one tick later

    def _flusher(self, sink: Callable[[Recorder], object], every: float) -> Process:
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

    # -- run --------------------------------------------------------------
    def run(
        self,
        progress: Callable[[Snapshot], object] | None = None,
        progress_every: float | None = None,
        sink: Callable[[Recorder], object] | None = None,
    ) -> Result:
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

    def begin(
        self,
        progress: Callable[[Snapshot], object] | None = None,
        progress_every: float | None = None,
        sink: Callable[[Recorder], object] | None = None,
    ) -> None:
        """Build the worker processes, form groups and start the rule (no time passes yet)."""
        scenario, env = self.scenario, self.env
        self._wall = time.perf_counter()
        self._progress_cb = progress
        self.model = self.evaluator.model = self.prepared.model.for_run(scenario.run.seed)
        self.ps.vectors = self.model.vectors
        start_workers(self, self.model)
        record_spans(env, self.states, self.recorder, self.service, scenario.run.timeline_until)
        self.evaluate()
        delay = form_groups(self, self._racing)
        if self.ps.stalled:
            pass  # the grouping measurement cannot end: training never starts
        elif delay > 0:
            env.timeout(delay).callbacks.append(lambda _e: self._start())
        else:
            self._start()
        if scenario.run.eval_every:
            env.process(self.evaluator.every(scenario.run.eval_every))
        if progress is not None:
            env.process(self._progress(progress, progress_every or scenario.run.until / 200))
        if sink is not None:
            env.process(self._flusher(sink, scenario.run.until / 1000))
        if scenario.events:
            env.process(self.dynamics.apply(scenario.events))
        deadline = env.timeout(scenario.run.until)
        deadline.callbacks.append(self._at_deadline)

    def _at_deadline(self, _event: simpy.Event) -> None:
        if not self.stop.triggered:
            self.stop.succeed("until")

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
                self.evaluator.last_finite()
        if (
            self._progress_cb is not None
        ):  # the end state, also when max_updates stops the run between two snapshots
            self._progress_cb(self.snapshot())
        return self._result(time.perf_counter() - self._wall)

    def _start(self) -> None:
        self.dynamics.started = True
        self.rule.start(self.ps)
        self.dynamics.check_progress()

    def _result(self, wall_s: float) -> Result:
        return outcome.result(self, wall_s)

    def snapshot(self) -> Snapshot:
        """The live state for a progress display (see :class:`Snapshot`)."""
        return outcome.snapshot(self)


def lean_blocker(scenario: Scenario, rule: Rule, comm: FixedLatency | NetworkComm) -> str:
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
    progress: Callable[[Snapshot], object] | None = None,
    progress_every: float | None = None,
    label: str | None = None,
    decide: Decide | None = None,
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

    def nbytes(a: Any) -> int:
        return (
            a.nbytes
            if isinstance(a, np.ndarray)
            else sum(x.nbytes for x in (a.data, a.indices, a.indptr))
        )

    return sum(
        nbytes(a) for a in (dataset.X_train, dataset.y_train, dataset.X_test, dataset.y_test)
    )
