"""Counter-based dice: the n-th roll of a game stream is a pure function of (key, n).

The environments draw their rolls here so that one seed gives the same dice
on every interface (the PettingZoo env, the single-agent env, game ``i`` of a
vector env seeded ``seed - i``) without a generator object per game: a batch
of B streams is advanced with a handful of uint64 array operations, and a
single stream with the same operations on Python ints.

The mixer is SplitMix64 (Steele, Lea and Flood, 2014): stream ``key`` yields
``mix(key + (n + 1) * GAMMA)`` for n = 0, 1, ...; a square is that value
``(value >> 32) * 36 >> 32`` (a multiply-high; bias below 1e-8).
"""

from __future__ import annotations

import numpy as np

from .board import NUM_SQUARES

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15  # the golden-ratio increment of SplitMix64
_MUL1 = 0xBF58476D1CE4E5B9
_MUL2 = 0x94D049BB133111EB


def _wrap(x):
    """Reduce to 64 bits: Python ints need it, uint64 arrays wrap by themselves."""
    return x & MASK64 if type(x) is int else x


def mix(x):
    """SplitMix64 finaliser; Python ints (masked to 64 bits) or uint64 arrays (wrapping)."""
    x = _wrap((x ^ (x >> 30)) * _MUL1)
    x = _wrap((x ^ (x >> 27)) * _MUL2)
    return x ^ (x >> 31)


def stream_key(seed: int) -> int:
    """The dice stream of a game seeded ``seed`` (any int; reduced to 64 bits)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    return mix((int(seed) * GAMMA) & MASK64)


def rolled_square(key, counter):
    """Square (0..35) of roll number ``counter`` of stream ``key``; ints or uint64 arrays."""
    square = (mix(_wrap(key + _wrap((counter + 1) * GAMMA))) >> 32) * NUM_SQUARES >> 32
    return square if type(square) is int else square.astype(np.int64)


class DiceStreams:
    """B dice streams advanced together: ``next()`` returns one roll per stream, (B,) int64.

    ``keys`` ((B,) uint64) come from :func:`stream_key`; ``counters`` count
    the rolls drawn so far. :meth:`seed` restarts some streams.
    """

    def __init__(self, seeds) -> None:
        seeds = np.atleast_1d(np.asarray(seeds))
        self.keys = np.array([stream_key(int(s)) for s in seeds], dtype=np.uint64)  # (B,) uint64
        self.counters = np.zeros(len(seeds), dtype=np.uint64)  # (B,) uint64 rolls drawn per stream

    def next(self, mask: np.ndarray | None = None) -> np.ndarray:
        """(B,) int64 rolled squares, one per stream; only streams where ``mask`` advance."""
        squares = rolled_square(self.keys, self.counters)
        if mask is None:
            self.counters += np.uint64(1)
        else:
            self.counters += np.asarray(mask, dtype=np.uint64)
        return squares



class DiceStream:
    """One dice stream on Python ints; ``forced`` rolls, if any, are used first."""

    __slots__ = ("key", "counter", "forced")

    def __init__(self, seed: int) -> None:
        self.key = stream_key(seed)
        self.counter = 0
        self.forced: list[int] = []

    def next(self) -> int:
        """The next rolled square."""
        if self.forced:
            return self.forced.pop(0)
        square = rolled_square(self.key, self.counter)
        self.counter += 1
        return square
