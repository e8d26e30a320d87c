"""From a scenario's [data] table to a loaded Dataset (data-directory resolution)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .datasets import DATA_ENV, Dataset
from .sources import SOURCES, load_dataset

__all__ = ["load_data", "resolve_data_dir", "DATA_ENV", "DataRequest"]


class DataRequest(Protocol):
    """What the loaders read of a scenario's ``[data]`` (:class:`~netsim.config.data.DataSpec`,
    whose fields document these; ``own``: the source's own keys)."""

    @property
    def source(self) -> str: ...
    @property
    def dir(self) -> str | None: ...
    @property
    def labels(self) -> str: ...
    @property
    def test_fraction(self) -> float: ...
    @property
    def add_bias(self) -> bool: ...
    @property
    def own(self) -> Any: ...


def resolve_data_dir(spec: DataRequest) -> str | None:
    """The directory to read for *spec* (a scenario's ``DataSpec``): ``data.dir`` (or ``--data-dir``), else ``$NETSIM_DATA_DIR``.

    A directory holding the source's subfolder (``mnist/``, ``a9a/``; else one named after
    the source) is accepted too, so one data root can serve every source.
    """
    base = spec.dir or os.environ.get(DATA_ENV)
    if base is None:
        return None
    sub = Path(base) / (SOURCES[spec.source].subdir or spec.source)
    return str(sub) if sub.is_dir() else str(base)


def load_data(spec: DataRequest, rng: np.random.Generator) -> Dataset:
    """Load the examples a scenario names. Raises DataNotFoundError when files are missing."""
    return load_dataset(
        spec.source,
        data_dir=resolve_data_dir(spec),
        labels=spec.labels,
        test_fraction=spec.test_fraction,
        add_bias=spec.add_bias,
        rng=rng,
        **SOURCES[spec.source].request(spec),
    )
