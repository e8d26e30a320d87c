"""Compute-time models: how long one minibatch gradient takes on a worker (s)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, count, cycle, repeat
from os import PathLike
from typing import Iterator

import numpy as np

from ..errors import ScenarioError
from ..params import quote_key, show

__all__ = [
    "TimeModel",
    "Constant",
    "Exponential",
    "ShiftedExponential",
    "LogNormal",
    "Uniform",
    "Pareto",
    "Replay",
    "TIME_MODELS",
    "make_time_model",
]

CHUNK = 16
"""Draws generated at once per worker. The k-th draw does not depend on it (numpy's variates
consume the generator's stream in order; tests/workload/test_timemodels.py); small blocks keep
memory per worker small (100,000 workers: 0.73 GB peak with 16, 1.65 GB with 256)."""


class TimeModel:
    """A distribution of per-iteration compute time (s)."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """*n* i.i.d. draws, ndarray of shape (n,), seconds."""
        raise NotImplementedError

    def mean(self) -> float:
        """Expected time (s); ``inf`` when it does not exist."""
        raise NotImplementedError

    def typical(self) -> float:
        """Median time (s): the typical step, finite even for heavy tails."""
        raise NotImplementedError

    def draws(self, rng: np.random.Generator, member: int = 0) -> Iterator[float]:
        """Endless iterator of draws for worker number *member* of its class: blocks of
        :data:`CHUNK`, each drawn when the previous one is used up (a C-level iterator
        over them: the engine takes one draw per computation)."""
        return chain.from_iterable(self.sample(rng, CHUNK).tolist() for _ in count())


@dataclass(frozen=True)
class Constant(TimeModel):
    """Always *value* seconds."""

    value: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value)

    def draws(self, rng: np.random.Generator, member: int = 0) -> Iterator[float]:
        return repeat(self.value)

    def typical(self) -> float:
        return self.value

    def mean(self) -> float:
        return self.value


@dataclass(frozen=True)
class Exponential(TimeModel):
    """Exponential with the given *mean* (s), i.e. rate 1/mean."""

    mean_s: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self.mean_s, n)

    def typical(self) -> float:
        return self.mean_s * math.log(2)

    def mean(self) -> float:
        return self.mean_s


@dataclass(frozen=True)
class ShiftedExponential(TimeModel):
    """*shift* seconds plus an exponential of mean *mean_s* (Dutta et al. 2018)."""

    shift: float
    mean_s: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.shift + rng.exponential(self.mean_s, n)

    def typical(self) -> float:
        return self.shift + self.mean_s * math.log(2)

    def mean(self) -> float:
        return self.shift + self.mean_s


@dataclass(frozen=True)
class LogNormal(TimeModel):
    """exp(N(log median, sigma²)): *median* seconds, log-scale spread *sigma*."""

    median: float
    sigma: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(np.log(self.median), self.sigma, n)

    def typical(self) -> float:
        return self.median

    def mean(self) -> float:
        return self.median * float(np.exp(self.sigma**2 / 2))


@dataclass(frozen=True)
class Uniform(TimeModel):
    """Uniform on [low, high] seconds."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)

    def typical(self) -> float:
        return (self.low + self.high) / 2

    def mean(self) -> float:
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class Pareto(TimeModel):
    """Pareto (type I) with minimum *scale* seconds and tail index *shape*."""

    shape: float
    scale: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.scale * (1.0 + rng.pareto(self.shape, n))

    def typical(self) -> float:
        return self.scale * math.exp(min(math.log(2) / self.shape, 700.0))

    def mean(self) -> float:
        return self.shape * self.scale / (self.shape - 1) if self.shape > 1 else float("inf")


@dataclass(frozen=True)
class Replay(TimeModel):
    """Replays recorded times, one list per worker of the class, cycling at the end.

    *times* is a tuple of tuples: ``times[m]`` is the list of worker *m* of the class.
    A single list is shared by every worker of the class.
    """

    times: tuple[tuple[float, ...], ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        flat = np.concatenate([np.asarray(t, float) for t in self.times])
        return np.resize(flat, n)

    def draws(self, rng: np.random.Generator, member: int = 0) -> Iterator[float]:
        return cycle(self.times[member % len(self.times)])

    def typical(self) -> float:
        return float(np.median(np.concatenate([np.asarray(t, float) for t in self.times])))

    def mean(self) -> float:
        return float(np.mean(np.concatenate([np.asarray(t, float) for t in self.times])))


_MAXIMUM = {"sigma": 10.0}
"""Upper bounds of shape parameters (lognormal sigma > 10 puts e^100 between draws)."""


def _num(spec: dict, key: str, where: str, *, positive: bool = True) -> float:
    if key not in spec:
        raise ScenarioError(f"{where}.{key}", "missing (a number of seconds)")
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{where}.{key}", f"expected a number, got {show(value)}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        need = "a finite number > 0" if positive else "a finite number >= 0"
        raise ScenarioError(f"{where}.{key}", f"{value!r} is not allowed ({need})")
    if key in _MAXIMUM and value > _MAXIMUM[key]:
        raise ScenarioError(
            f"{where}.{key}", f"{value!r} is not allowed (must be <= {_MAXIMUM[key]:g})"
        )
    return value


def _replay(
    spec: dict, where: str, count: int, base: str | PathLike | None, worker_class: str | None
) -> Replay:
    if "run" in spec:
        return _replay_run(spec, where, base, worker_class)
    times = spec.get("times")
    if not isinstance(times, list) or not times:
        raise ScenarioError(
            f"{where}.times",
            "expected a non-empty list of times (s) or one list per worker (or run = a real "
            "run's folder)",
        )
    lists = times if all(isinstance(t, list) for t in times) else [times]
    if len(lists) not in (1, count):
        raise ScenarioError(
            f"{where}.times", f"{len(lists)} lists given; give 1 or one per worker ({count})"
        )
    for i, seq in enumerate(lists):
        if not seq:
            raise ScenarioError(f"{where}.times[{i}]", "empty list")
        for j, t in enumerate(seq):
            if not isinstance(t, (int, float)) or isinstance(t, bool):
                raise ScenarioError(
                    f"{where}.times[{i}][{j}]", f"expected a time in s, got {show(t)}"
                )
            make_time_model(t, f"{where}.times[{i}][{j}]")
    return Replay(tuple(tuple(float(t) for t in seq) for seq in lists))


def _replay_run(
    spec: dict, where: str, base: str | PathLike | None, worker_class: str | None
) -> Replay:
    """``{dist = "replay", run = FOLDER}``: the times a real run measured (its folder, relative
    to *base*, the scenario's folder), of the class named *worker_class* there (or the
    ``worker_class`` key), each iteration's ``measure`` (:data:`~.replayed.MEASURES`)."""
    from pathlib import Path

    from .replayed import MEASURES, read_measured_times

    run = spec["run"]
    if not isinstance(run, str) or not run:
        raise ScenarioError(
            f"{where}.run", f"expected the path of a real run's folder, got {show(run)}"
        )
    name = spec.get("worker_class", worker_class)
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}.worker_class", f"expected a class name, got {show(name)}")
    measure = spec.get("measure", "cycle")
    if measure not in MEASURES:
        raise ScenarioError(
            f"{where}.measure", f"{show(measure)} is not allowed (allowed: {', '.join(MEASURES)})"
        )
    folder = Path(base or ".").joinpath(Path(run).expanduser())
    try:
        return Replay(read_measured_times(folder, name, measure))
    except ValueError as exc:
        raise ScenarioError(f"{where}.run", str(exc)) from None


_PARAMS = {
    "constant": (("value",), lambda p: Constant(p["value"])),
    "exponential": (("mean",), lambda p: Exponential(p["mean"])),
    "shifted_exponential": (("shift", "mean"), lambda p: ShiftedExponential(p["shift"], p["mean"])),
    "lognormal": (("median", "sigma"), lambda p: LogNormal(p["median"], p["sigma"])),
    "uniform": (("low", "high"), lambda p: Uniform(p["low"], p["high"])),
    "pareto": (("shape", "scale"), lambda p: Pareto(p["shape"], p["scale"])),
}
TIME_MODELS = tuple(_PARAMS) + ("replay",)


def make_time_model(
    spec: object,
    where: str,
    count: int = 1,
    *,
    base: str | PathLike | None = None,
    worker_class: str | None = None,
) -> TimeModel:
    """Build a time model from its scenario table.

    *spec* is a number (a constant time, s) or a table ``{dist = NAME, ...}``;
    *where* is the table's dotted key, used in error messages; *count* is the
    number of workers of the class (for ``replay``); *base* (the scenario's folder) and
    *worker_class* (the class's name) resolve ``replay`` from a real run's folder.
    """
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        value = float(spec)
        if not (np.isfinite(value) and value > 0):
            raise ScenarioError(where, f"{spec!r} is not allowed (a time in s, finite and > 0)")
        return Constant(value)
    if not isinstance(spec, dict):
        raise ScenarioError(where, f"expected a number or a table with 'dist', got {show(spec)}")
    dist = spec.get("dist")
    if dist not in TIME_MODELS:
        raise ScenarioError(
            f"{where}.dist", f"{show(dist)} is not allowed (allowed: {', '.join(TIME_MODELS)})"
        )
    if dist == "replay":
        allowed: tuple[str, ...] = (
            ("dist", "run", "worker_class", "measure") if "run" in spec else ("dist", "times")
        )
    else:
        allowed = ("dist",) + _PARAMS[dist][0]
    for key in spec:
        if key not in allowed:
            raise ScenarioError(
                f"{where}.{quote_key(key)}",
                f"unknown key for dist {dist!r} (allowed: {', '.join(allowed)})",
            )
    if dist == "replay":
        return _replay(spec, where, count, base, worker_class)
    names, build = _PARAMS[dist]
    params = {k: _num(spec, k, where, positive=k not in ("shift",)) for k in names}
    if dist == "uniform" and params["low"] >= params["high"]:
        raise ScenarioError(
            f"{where}.high", f"must exceed low ({params['low']!r}), got {params['high']!r}"
        )
    return build(params)
