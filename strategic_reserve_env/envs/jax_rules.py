"""The rules of `strategic_reserve_env.core.rules` in JAX, on pairs of uint32 bitboards.

A bitboard of `strategic_reserve_env.core.board`'s layout (41 bits of an int64)
is held as a pair `(low, high)` of uint32 words: `low` its bits 0..31,
`high` its bits 32..63, so `jax_enable_x64` may stay off. Every function
here mirrors the function of the same name in `rules.py`, operator for
operator, on one game (`vmap` them for a batch); the only differences are of
representation: the pair instead of one integer, `jnp.where` instead of the
sign-shift masks, and a group fill whose loop can run under `jit`. Nothing
here validates its inputs (`strategic_reserve_env.envs.pgx_env` does).

Needs the optional extra `jax` (`pip install "strategic-reserve-env[jax]"`).
"""

from __future__ import annotations

from typing import NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from strategic_reserve_env.core.board import BIT, BOARD_SIZE, FULL, NO_PLAYER, NUM_SQUARES, STRIDE
from strategic_reserve_env.core.rules import HIT_ENEMY, HIT_FRIENDLY

WORD_BITS = 32
_LOW = (1 << WORD_BITS) - 1
Integers = TypeVar("Integers", int, np.ndarray)

#: passes of :func:`group` unrolled before its ``while_loop`` (most groups of a game settle within them;
#: a longer group goes on in the loop, one pass an iteration, until it stops growing)
UNROLLED_PASSES = 4


class Bits(NamedTuple):
    """One bitboard as two uint32 words (scalars for one game, or arrays of one shape)."""

    low: jax.Array  # uint32: bits 0..31 of the int64 bitboard
    high: jax.Array  # uint32: bits 32..63

    # Read from outside (tests, a user's look at a State), pairs read as one (..., 2) array of their words,
    # `[..., 0]` the low words and `[..., 1]` the high ones, batch axes first: its shape, dtype and numpy array.

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the pairs as one array: the words' shape, then 2."""
        return (*jnp.shape(self.low), 2)

    @property
    def dtype(self) -> np.dtype:
        """The words' dtype (uint32)."""
        return np.dtype(self.low.dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """`np.asarray(bits)`: the (..., 2) array of the words (`shape`)."""
        del copy  # the stacked array is always a new one
        return np.stack([np.asarray(self.low), np.asarray(self.high)], axis=-1).astype(dtype or self.dtype)


def split(bits: Integers) -> tuple[Integers, Integers]:
    """A bitboard -> its (low, high) words: Python ints of a Python int, int64 arrays of an int64 array."""
    return bits & _LOW, bits >> WORD_BITS


def constant(bits: int) -> Bits:
    """A Python-int bitboard as a pair of uint32 scalars."""
    low, high = split(bits)
    return Bits(jnp.uint32(low), jnp.uint32(high))


#: (36, 2) uint32: square index -> the pair with that square's bit (``board.BIT`` split)
BIT_PAIRS = np.array([split(b) for b in BIT], dtype=np.uint32)
_FULL = split(FULL)


def _full() -> Bits:
    return Bits(jnp.uint32(_FULL[0]), jnp.uint32(_FULL[1]))


def square_bits(square: jax.Array) -> Bits:
    """The pair of a square index 0..35 (the caller keeps it in range): bit `s + s // 6` (`board.BIT`),
    computed rather than looked up (a gather costs more under `vmap`)."""
    square = jnp.asarray(square).astype(jnp.uint32)
    position = square + square // BOARD_SIZE
    low = jnp.where(position < WORD_BITS, jnp.uint32(1) << (position & (WORD_BITS - 1)), jnp.uint32(0))
    high = jnp.where(position >= WORD_BITS, jnp.uint32(1) << (position & (WORD_BITS - 1)), jnp.uint32(0))
    return Bits(low, high)


def first_squares(n: jax.Array) -> Bits:
    """The pair of the first `min(n, 36)` squares in index order (`n >= 0`; `observation`'s reserve
    planes): every bit below square `n`'s."""
    n = jnp.minimum(jnp.asarray(n), NUM_SQUARES).astype(jnp.uint32)
    position = n + n // BOARD_SIZE  # square n's bit (42 for n = 36: past the board)
    low = jnp.where(position >= WORD_BITS, jnp.uint32(_LOW), (jnp.uint32(1) << (position & 31)) - 1)
    high = jnp.where(position > WORD_BITS, (jnp.uint32(1) << ((position - WORD_BITS) & 31)) - 1, jnp.uint32(0))
    return and_(Bits(low, high), _full())


def and_(a: Bits, b: Bits) -> Bits:
    return Bits(a.low & b.low, a.high & b.high)


def or_(a: Bits, b: Bits) -> Bits:
    return Bits(a.low | b.low, a.high | b.high)


def xor(a: Bits, b: Bits) -> Bits:
    return Bits(a.low ^ b.low, a.high ^ b.high)


def add(a: Bits, b: Bits) -> Bits:
    """`a + b` with the carry from the low word into the high one (modulo 2**64)."""
    low = a.low + b.low
    carry = (low < a.low).astype(jnp.uint32)
    return Bits(low, a.high + b.high + carry)


def shift_left(a: Bits, n: int) -> Bits:
    """`a << n` for 0 < n < 32."""
    return Bits(a.low << n, (a.high << n) | (a.low >> (WORD_BITS - n)))


def shift_right(a: Bits, n: int) -> Bits:
    """`a >> n` for 0 < n < 32."""
    return Bits((a.low >> n) | (a.high << (WORD_BITS - n)), a.high >> n)


def is_zero(a: Bits) -> jax.Array:
    """bool: no bit set."""
    return (a.low | a.high) == 0


def count(a: Bits) -> jax.Array:
    """int32: the number of bits set (`int.bit_count`)."""
    return (jax.lax.population_count(a.low) + jax.lax.population_count(a.high)).astype(jnp.int32)


def select(condition: jax.Array, if_true: Bits, if_false: Bits) -> Bits:
    """`jnp.where` on both words."""
    return Bits(jnp.where(condition, if_true.low, if_false.low), jnp.where(condition, if_true.high, if_false.high))


def adjacent(x: Bits) -> Bits:
    """Squares orthogonally next to any square of `x` (`x`'s own squares may be included)."""
    near = or_(or_(shift_left(x, 1), shift_right(x, 1)), or_(shift_left(x, STRIDE), shift_right(x, STRIDE)))
    return and_(near, _full())


def _grow(x: Bits, mask: Bits) -> Bits:
    """One pass of `group` (`rules.group`'s pass): down and up one rank, one square towards
    file a, and a whole run towards file f through the carry of `x + mask`."""
    run = xor(add(x, mask), mask)
    near = or_(shift_right(x, 1), or_(shift_left(x, STRIDE), shift_right(x, STRIDE)))
    return and_(or_(or_(x, run), near), mask)


def _differs(a: Bits, b: Bits) -> jax.Array:
    return (a.low != b.low) | (a.high != b.high)


def group(seed: Bits, mask: Bits) -> Bits:
    """Squares of `mask` orthogonally connected to `seed`; `seed` must lie within `mask`.

    `UNROLLED_PASSES` passes in straight-line code, then a `while_loop`
    of one pass an iteration until the set stops growing (under `vmap`, until
    every game's set has: the loop's trip count is the slowest game's). Scalars for one game, or
    arrays of one shape, filled elementwise.
    """
    previous, x = seed, seed
    for _ in range(UNROLLED_PASSES):
        previous, x = x, _grow(x, mask)

    def grow_once(carry: tuple[Bits, jax.Array]) -> tuple[Bits, jax.Array]:
        current, _ = carry
        grown = _grow(current, mask)
        return grown, _differs(grown, current)

    x, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[1]), grow_once, (x, _differs(x, previous)))
    return x


class Resolved(NamedTuple):
    """What `resolve_roll` returns (`rules.resolve_roll`'s tuple)."""

    opp: Bits  # the opponent's checkers left
    captured: Bits  # the squares removed (always the opponent's)
    legal: Bits  # the squares the mover may place on
    hit: jax.Array  # int32 HIT_EMPTY / HIT_ENEMY / HIT_FRIENDLY


def resolve_roll(me: Bits, opp: Bits, rolled: Bits) -> Resolved:
    """Captures and legal placements for a roll on the one-square pair `rolled` (`rules.resolve_roll`)."""
    friendly = group(and_(rolled, me), me)  # the mover's group G on a friendly hit, else 0
    touching = adjacent(friendly)
    # an enemy hit seeds the rolled square; a friendly hit seeds every enemy checker touching G
    captured = group(and_(or_(rolled, touching), opp), opp)
    opp = xor(opp, captured)
    empty = xor(_full(), or_(me, opp))
    no_group = is_zero(friendly)
    legal = and_(empty, select(no_group, _full(), touching))  # no group: every empty square
    hit = jnp.where(no_group, 0, HIT_FRIENDLY) + jnp.where(is_zero(and_(captured, rolled)), 0, HIT_ENEMY)
    return Resolved(opp, captured, legal, hit.astype(jnp.int32))


def roll(me: Bits, opp: Bits, reserve_opp: jax.Array, rolled: Bits) -> tuple[Bits, jax.Array, Bits, Bits, jax.Array]:
    """The roll on `rolled`: `resolve_roll`, and the captured checkers go back to their owner's
    reserve (`rules.roll`). Returns `(opp, reserve_opp, captured, legal, hit)` after the roll."""
    opp, captured, legal, hit = resolve_roll(me, opp, rolled)
    return opp, reserve_opp + count(captured), captured, legal, hit


class Placed(NamedTuple):
    """What `place` returns: `rules.PLACED_FIELDS`, from the side of the player to move next."""

    me: Bits
    opp: Bits
    reserve_me: jax.Array  # int32
    reserve_opp: jax.Array  # int32
    to_move: jax.Array  # int32
    ply: jax.Array  # int32
    winner: jax.Array  # int32 RED, BLUE or NO_PLAYER
    truncated: jax.Array  # bool
    legal: Bits


def place(
    me: Bits,
    opp: Bits,
    reserve_me: jax.Array,
    reserve_opp: jax.Array,
    to_move: jax.Array,
    ply: jax.Array,
    placed: Bits,
    ply_limit: int,
) -> Placed:
    """The mover puts a checker on the one-square pair `placed` (legal: the caller's to check), then
    the turn passes (`rules.place`): the reserve loses one, an empty reserve wins, a game nobody won
    is truncated once `ply + 1` reaches `ply_limit`, and no placement is due until the next roll."""
    reserve = reserve_me - 1
    won = reserve == 0
    ply = ply + 1
    winner = jnp.where(won, to_move, NO_PLAYER).astype(jnp.int32)
    truncated = (ply >= ply_limit) & ~won
    no_placement = Bits(jnp.zeros_like(placed.low), jnp.zeros_like(placed.high))
    return Placed(opp, or_(me, placed), reserve_opp, reserve, to_move ^ 1, ply, winner, truncated, no_placement)


def nth_square(bits: Bits, k: jax.Array) -> jax.Array:
    """int32: the square of the `k`-th set bit of `bits` (from 0, in square order), for
    0 <= k < `count` (`sampling.nth_set_bit`'s choice; another `k` gives some square).
    A binary search on the popcounts of halves, quarters, ... of the word holding it."""
    k = jnp.asarray(k).astype(jnp.uint32)
    low_count = jax.lax.population_count(bits.low)
    in_high = k >= low_count
    word = jnp.where(in_high, bits.high, bits.low)
    k = jnp.where(in_high, k - low_count, k)
    position = jnp.where(in_high, jnp.uint32(WORD_BITS), jnp.uint32(0))
    for width in (16, 8, 4, 2, 1):
        lower = word & jnp.uint32((1 << width) - 1)
        below = jax.lax.population_count(lower)
        up = k >= below
        k = jnp.where(up, k - below, k)
        word = jnp.where(up, word >> width, lower)
        position = position + jnp.where(up, jnp.uint32(width), jnp.uint32(0))
    return (position - position // STRIDE).astype(jnp.int32)  # board.bit_to_square


_SQUARE_BIT = np.array([b.bit_length() - 1 for b in BIT], dtype=np.uint32)  # (36,) bit position of each square
#: (36,) int32 word (0 low, 1 high) and (36,) uint32 shift of each square's bit in a pair
SQUARE_WORD = (_SQUARE_BIT // WORD_BITS).astype(np.int32)
SQUARE_SHIFT = (_SQUARE_BIT % WORD_BITS).astype(np.uint32)


def squares(bits: Bits) -> jax.Array:
    """(..., 36) bool: the squares of pairs of shape (...), in index order (`board.bitboards_to_array`):
    for a pair of (9,) words, (9, 36). Broadcasting from the words, the form XLA compiles best."""
    low, high = bits.low[..., None], bits.high[..., None]
    words = jnp.where(jnp.asarray(SQUARE_WORD) == 0, low, high)
    return ((words >> jnp.asarray(SQUARE_SHIFT)) & 1).astype(jnp.bool_)


def planes_of(bits: Bits) -> jax.Array:
    """(36, n) bool: for pairs of (n,) words (one per plane), each square's bit of every plane, squares in
    index order (`squares` transposed, built in that layout: no transpose)."""
    low, high = bits.low[None, :], bits.high[None, :]
    words = jnp.where(jnp.asarray(SQUARE_WORD)[:, None] == 0, low, high)
    return ((words >> jnp.asarray(SQUARE_SHIFT)[:, None]) & 1).astype(jnp.bool_)


def from_side(me, opp, to_move: jax.Array, side: jax.Array):
    """`(side's, the other's)` of a pair of values held from the mover's side (`rules.from_side`):
    `me` belongs to `to_move`. Arrays or `Bits` alike."""
    on_move = side == to_move
    if isinstance(me, Bits):
        return select(on_move, me, opp), select(on_move, opp, me)
    return jnp.where(on_move, me, opp), jnp.where(on_move, opp, me)


__all__ = [
    "BIT_PAIRS",
    "Bits",
    "NUM_SQUARES",
    "Placed",
    "Resolved",
    "UNROLLED_PASSES",
    "adjacent",
    "group",
    "place",
    "planes_of",
    "resolve_roll",
    "roll",
    "squares",
]
