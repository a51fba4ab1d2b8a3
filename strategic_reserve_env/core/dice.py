"""Counter-based dice: the n-th roll of a game stream is a pure function of (key, n).

The environments draw their rolls here so that one seed gives the same dice
on every interface (the PettingZoo env, the single-agent env, game `i` of a
vector env seeded `seed - i`) without a generator object per game: a batch
of B streams (`BatchDice`) is advanced with a handful of uint64 array operations, and a
single game's stream (`GameDice`) with the same operations on Python ints.

The mixer is SplitMix64 (Steele, Lea and Flood, 2014): stream `key` yields
`mix(key + (n + 1) * GAMMA)` for n = 0, 1, ...; a square is that value
`(value >> 32) * 36 >> 32` (a multiply-high; bias below 1e-8).

A game's other chance (the single-agent envs' seat and opponent draws, the
built-in random opponent's choices) comes from `UniformStreams`: the
same construction keyed by the same seed under another *tag*
(`stream_key` `(seed, tag)`), yielding floats `(value >> 11) * 2**-53`
in [0, 1). Tag 0 is the dice.
"""

from __future__ import annotations

import numpy as np

from .board import NUM_SQUARES, brief, is_integer, is_square_index

MASK64 = (1 << 64) - 1
MAX_SEED = 1 << 64
"""Seeds are integers of magnitude below this (0 .. MAX_SEED - 1 for a fresh game; a game record may hold a
negative one): the dice key a game by its seed's 64 bits, so a larger seed would replay a smaller one's game. The
one seed bound of the package: the envs, the records and the commands check against it, and seeds drawn for a
game come from below it."""
DRAWN_SEEDS = MAX_SEED >> 1
"""Seeds drawn for a new game (by an env reset without a seed, an agent seeding a library) are below this: a
non-negative int64, what numpy's and JAX's generators take."""
GAMMA = 0x9E3779B97F4A7C15  # the golden-ratio increment of SplitMix64
_MUL1 = 0xBF58476D1CE4E5B9
_MUL2 = 0x94D049BB133111EB
TAG_GAMMA = 0xD1B54A32D192ED03  # another odd constant: separates the streams of one seed by tag
DICE_TAG = 0  # the dice; stream_key(seed) of every earlier version
CHANCE_TAG = 1  # a game's other chance: seat and opponent draws, the built-in random opponent's choices
_FLOAT_BITS = 53  # a float64 mantissa: uniforms are multiples of 2**-53


def _wrap(x):
    """Reduce to 64 bits: Python ints need it, uint64 arrays wrap by themselves."""
    return x & MASK64 if type(x) is int else x


def mix(x):
    """SplitMix64 finaliser; Python ints (masked to 64 bits) or uint64 arrays (wrapping)."""
    x = _wrap((x ^ (x >> 30)) * _MUL1)
    x = _wrap((x ^ (x >> 27)) * _MUL2)
    return x ^ (x >> 31)


def stream_key(seed: int, tag: int = DICE_TAG) -> int:
    """The key of stream `tag` of a game seeded `seed` (an integer of magnitude below `MAX_SEED`, taken as its
    64 bits); tag 0 is its dice. `ValueError` for any other seed: one beyond 64 bits would play the game of
    the seed it reduces to."""
    if not is_integer(seed) or not -MAX_SEED < seed < MAX_SEED:
        raise ValueError(f"seed must be an integer of magnitude below 2**64, got {brief(seed)}")
    return mix((int(seed) * GAMMA + tag * TAG_GAMMA) & MASK64)


def stream_value(key, counter):
    """The 64-bit value number `counter` of stream `key`; ints or uint64 arrays."""
    return mix(_wrap(key + _wrap((counter + 1) * GAMMA)))


def rolled_square(key, counter):
    """Square (0..35) of roll number `counter` of stream `key`; ints or uint64 arrays."""
    square = (stream_value(key, counter) >> 32) * NUM_SQUARES >> 32
    return square if type(square) is int else square.astype(np.int64)


def uniform(key, counter):
    """Float in [0, 1) number `counter` of stream `key`; ints (a float) or uint64 arrays (float64)."""
    value = stream_value(key, counter) >> (64 - _FLOAT_BITS)
    if type(value) is int:
        return value / 2**_FLOAT_BITS
    return value.astype(np.float64) * 2.0**-_FLOAT_BITS


class _Streams:
    """B counter-based streams of one tag, advanced together.

    `keys` ((B,) uint64) come from `stream_key`; `counters` count the
    values drawn so far per stream. Saving `counters` (with `keys`) saves
    the streams' whole state.
    """

    tag = DICE_TAG

    def __init__(self, seeds) -> None:
        seeds = np.atleast_1d(np.asarray(seeds))
        self.keys = np.array([stream_key(int(s), self.tag) for s in seeds], dtype=np.uint64)  # (B,) uint64
        self.counters = np.zeros(len(seeds), dtype=np.uint64)  # (B,) uint64 values drawn per stream

    def get_state(self) -> dict[str, np.ndarray]:
        """`{"keys", "counters"}`: copies of the (B,) uint64 arrays that are the streams' whole state."""
        return {"keys": self.keys.copy(), "counters": self.counters.copy()}

    @classmethod
    def from_state(cls, state: dict, size: int):
        """Streams continuing `get_state` of `size` streams; `ValueError` if it does not fit."""
        arrays = [np.asarray(state[name]) for name in ("keys", "counters")]
        if any(array.shape != (size,) or array.dtype.kind not in "iu" for array in arrays):
            raise ValueError(f"the saved {cls.__name__} are not {size} streams of integer keys and counters")
        streams = cls(np.zeros(0, dtype=np.int64))
        streams.keys, streams.counters = (array.astype(np.uint64) for array in arrays)
        return streams

    def _advance(self, mask: np.ndarray | None) -> np.ndarray:
        """(B,) uint64 counters before the draw; only streams where `mask` advance."""
        counters = self.counters
        if mask is None:
            self.counters = counters + np.uint64(1)
        else:
            self.counters = counters + np.asarray(mask, dtype=np.uint64)
        return counters

    def _next_of_one(self) -> int:
        """The counter of a batch of one stream before the draw, as a Python int; the stream advances."""
        counter = int(self.counters[0])
        self.counters = np.array([counter + 1], dtype=np.uint64)
        return counter


class BatchDice(_Streams):
    """The dice of B games, advanced together: `next()` returns one roll per game, (B,) int64.

    `GameDice` is the dice of one game on Python ints (the same rolls for the same seed)."""

    def next(self, mask: np.ndarray | None = None) -> np.ndarray:
        """(B,) int64 rolled squares, one per stream; only streams where `mask` advance."""
        return rolled_square(self.keys, self._advance(mask))

    def next_of_one(self) -> int:
        """The rolled square `next` gives a batch of one stream, on Python ints (B = 1 only)."""
        return rolled_square(int(self.keys[0]), self._next_of_one())


class UniformStreams(_Streams):
    """B streams of uniform floats in [0, 1) (tag `CHANCE_TAG` of each seed), advanced together."""

    tag = CHANCE_TAG

    def next(self, mask: np.ndarray | None = None) -> np.ndarray:
        """(B,) float64 uniforms in [0, 1), one per stream; only streams where `mask` advance."""
        return uniform(self.keys, self._advance(mask))

    def next_of_one(self) -> float:
        """The uniform `next` gives a batch of one stream, on Python ints (B = 1 only)."""
        return uniform(int(self.keys[0]), self._next_of_one())

    def take(self, streams: np.ndarray) -> np.ndarray:
        """(K,) float64 uniforms of the streams `streams` ((K,) distinct indices), which alone advance:
        the values `next` would give them, computed for those streams only."""
        counters = self.counters[streams]
        advanced = self.counters.copy()
        advanced[streams] = counters + np.uint64(1)
        self.counters = advanced
        return uniform(self.keys[streams], counters)


ROLLS_AHEAD = 64  # seeded rolls a GameDice works out at once (one array computation), then hands out one by one


class GameDice:
    """The dice of one game; `forced` rolls, if any, are used first.

    `BatchDice` is the dice of B games as arrays (the same rolls for the same seeds). The
    seeded rolls are `rolled_square` of `key` and `counter` (the seeded rolls drawn so
    far): `key`, `counter` and `forced` are the whole state (set them to move the stream;
    copies and pickles hold just them). The rolls are worked out `ROLLS_AHEAD` at a time and
    kept as a cache that is only used while it holds the roll of the current `key` and `counter`."""

    __slots__ = ("key", "counter", "forced", "_block_key", "_block_start", "_block")

    def __init__(self, seed: int) -> None:
        self.key = stream_key(seed)
        self.counter = 0
        self.forced: list[int] = []
        self._forget()

    def _forget(self) -> None:
        """Empty the cache of rolls worked out ahead."""
        self._block_key: int | None = None  # the key the cached rolls are of
        self._block_start = 0  # the counter of the first cached roll
        self._block: list[int] = []  # the rolls of counters _block_start, _block_start + 1, ...

    def __getstate__(self) -> tuple[None, dict]:
        """The state `(None, slots)` a slotted object pickles, without the cache (as earlier versions wrote)."""
        return None, {"key": self.key, "counter": self.counter, "forced": self.forced}

    def __setstate__(self, state: tuple[None, dict]) -> None:
        for name, value in state[1].items():
            setattr(self, name, value)
        self._forget()

    def next(self) -> int:
        """The next rolled square."""
        if self.forced:
            return self.forced.pop(0)
        rolled = self._seeded()
        self.counter += 1
        return rolled

    def peek(self) -> int:
        """The square `next` would roll, the dice unchanged (only the cache of rolls ahead may fill);
        `ValueError` for a forced roll that is not a square index 0..35 (one written into `forced`
        directly)."""
        if not self.forced:
            return self._seeded()
        rolled = self.forced[0]
        if not is_square_index(rolled):
            raise ValueError(f"the next forced roll {rolled!r} is not a square index (0..{NUM_SQUARES - 1})")
        return int(rolled)

    def advance(self) -> None:
        """Take the next roll without reading it (the one `peek` gave)."""
        if self.forced:
            del self.forced[0]
        else:
            self.counter += 1

    def _seeded(self) -> int:
        """The seeded roll of the current `key` and `counter` (from the cache, filled as needed)."""
        counter = self.counter
        offset = counter - self._block_start
        if self._block_key != self.key or not 0 <= offset < len(self._block):
            counters = np.arange(counter, counter + ROLLS_AHEAD, dtype=np.uint64)
            self._block = rolled_square(np.uint64(self.key), counters).tolist()
            self._block_key, self._block_start, offset = self.key, counter, 0
        return self._block[offset]
