"""Named random streams derived from one scenario seed."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["Streams"]


class Streams:
    """Every random stream of a run, derived from one seed.

    A stream is named (``"compute"``, ``"batch"``, ``"init"``, ...) and may carry an
    index (a worker id). Its generator is seeded by ``SeedSequence(seed,
    spawn_key=(crc32(name), index))``, so a stream depends only on the seed, its
    name and its index: adding a component never shifts another component's draws,
    and runs of different algorithms with one seed share every stream (common
    random numbers).

    Parameters
    ----------
    seed : int
        The scenario seed (non-negative).
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def seed_sequence(self, name: str, index: int = 0) -> np.random.SeedSequence:
        """The seed sequence of stream *name* number *index*."""
        return np.random.SeedSequence(self.seed, spawn_key=(zlib.crc32(name.encode()), index))

    def rng(self, name: str, index: int = 0) -> np.random.Generator:
        """A fresh generator for stream *name* number *index*."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence(name, index)))
