"""Luck: how much a roll helped its roller, from the exact chance model (every roll is one of 36 squares).

The luck of a roll is the roller's win probability just after it, minus the mean of that over the 36 rolls
it could have made from the same position:

```text
luck = V(roller's position after the actual roll) - mean over the 36 rolls r of V(position after r)
```

where `V` (a `ValueFunction`) gives the roller's win probability at its decision, just after a
roll's captures, with its placement due. Given everything before the roll, the 36 rolls are equally likely,
so a roll's luck has mean zero **for any V**: subtracting it from an outcome leaves the outcome's expectation
unchanged, and a good V (one that follows the real win probability) removes most of the dice's variance.
That is the variance reduction of GNU Backgammon's luck analysis and of poker's AIVAT. The roller's luck
counts for it and against the other player.

`V` must be fixed before the games it scores are played (never fitted on them), and may be anything that
maps positions to win probabilities: `RaceValue`, the reserve-race model (the default, a closed form
of the two reserves), or an adapter around an agent's search or a network (in
`strategic_reserve_env.agents`). Luck is written once, here: the evaluation, the analysis of a game,
the luck-adjusted rewards and the search agents all take their terms from `roll_luck`.

Positions are the engine's: bitboards seen from the roller, who is the mover when it rolls. The rules are the
engine's own (`strategic_reserve_env.core.rules.roll`), applied to every roll at once on arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import rules
from .board import BIT, BIT_ARRAY, FULL, NUM_SQUARES, squares_of

RACE_A, RACE_B = 1.553, 0.368
"""The reserve-race model's coefficients: a logistic regression on the 96,661 decisions of 4,000 greedy
self-play games (`python -m experiments.fit_race_model` in a clone reproduces the fit)."""


RANDOM_RACE_A, RANDOM_RACE_B = 0.582, 0.072
"""The same model fitted on uniformly random self-play (the 199,706 decisions of 4,000 games;
`python -m experiments.fit_race_model --random`): random players lose far more checkers, so a reserve lead
is worth less."""


def race_win_probability(
    mover_reserve, opponent_reserve, a: float = RACE_A, b: float = RACE_B, xp: Any = np
) -> np.ndarray:
    """P(the player to decide wins) from both reserves at a decision (arrays of any shape, broadcast):

    ```python
    ```
    1                                        if m == 1 (the mover places its last checker)
    0                                        if o == 1 < m (the opponent does so next)
    sigmoid((A * (o - m) + B) / sqrt(m + o))   otherwise (A = a, B = b; default RACE_A, RACE_B)

    `xp` is the array module: numpy (float64 results) or `jax.numpy` inside `jit` (the search of
    `strategic_reserve_env.agents.mctx_search`; float32 results, as jax's default).
    """
    m = xp.asarray(mover_reserve) + 0.0  # a float of the module's default width
    o = xp.asarray(opponent_reserve) + 0.0
    p = 1.0 / (1.0 + xp.exp(-(a * (o - m) + b) / xp.sqrt(xp.maximum(m + o, 1.0))))
    p = xp.where(o <= 1, 0.0, p)
    return xp.where(m <= 1, 1.0, p)


_TABLE_BITS = 6
RACE_TABLE_RESERVES = 1 << _TABLE_BITS
"""`RaceValue` looks its model up in a table for reserves below this (every reserve of a game: at most 12 in
reserve and 36 on the board), the values `race_win_probability` gives."""


_MOST_OPPONENT = RACE_TABLE_RESERVES - NUM_SQUARES  # an opponent's reserve below this stays in the table after a roll


@functools.lru_cache(maxsize=16)
def _race_table(a: float, b: float) -> np.ndarray:
    """(RACE_TABLE_RESERVES, RACE_TABLE_RESERVES) float64, read-only: `race_win_probability` with `a` and
    `b` at [mover's reserve, opponent's reserve] (kept per model, not in its `RaceValue`: copies stay small)."""
    reserves = np.arange(RACE_TABLE_RESERVES)
    table = race_win_probability(reserves[:, None], reserves[None, :], a, b)
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=16)
def _race_rows(a: float, b: float) -> tuple[tuple[float, ...], ...]:
    """`_race_table(a, b)` as rows of Python floats (the same values), for one position's rolls."""
    return tuple(map(tuple, _race_table(a, b).tolist()))


@dataclass(frozen=True)
class AfterRoll:
    """Positions just after a roll, the roller to place; the fields are arrays of one shape (any shape)."""

    me: np.ndarray  # (...) int64 bitboard: the roller's checkers
    opp: np.ndarray  # (...) int64 bitboard: the other player's checkers, after the roll's captures
    reserve_me: np.ndarray  # (...) int64: the roller's reserve (>= 1: a placement is due)
    reserve_opp: np.ndarray  # (...) int64: the other player's reserve, the roll's captures included
    legal: np.ndarray  # (...) int64 bitboard: the roller's legal placements (never 0)


@runtime_checkable
class ValueFunction(Protocol):
    """The roller's win probability just after a roll: `value(after) -> float64 array of after's shape`,
    each in [0, 1]. `name` says which function it is (results and reports print it)."""

    name: str

    def __call__(self, after: AfterRoll) -> np.ndarray: ...


class RaceValue:
    """The reserve-race model at the roller's decision: `race_win_probability` of the two reserves
    just after the roll (so the roll's captures count), with coefficients `a` and `b` (default: the fit
    on greedy self-play, named `race`). Needs no search: about a microsecond a position.

    The closer V follows the real win probability of the players being scored, the more variance the luck
    terms remove: `RANDOM_RACE_VALUE` (`race-random`) is the fit for uniformly random players."""

    def __init__(self, a: float = RACE_A, b: float = RACE_B, name: str = "race") -> None:
        self.a, self.b, self.name = float(a), float(b), name

    def __call__(self, after: AfterRoll) -> np.ndarray:
        mover, opponent = np.asarray(after.reserve_me), np.asarray(after.reserve_opp)
        if mover.dtype.kind in "iu" and opponent.dtype.kind in "iu" and not ((mover | opponent) >> _TABLE_BITS).any():
            return _race_table(self.a, self.b)[mover, opponent]  # every reserve below RACE_TABLE_RESERVES
        return race_win_probability(mover, opponent, self.a, self.b)

    def after_rolls(self, me: int, opp: int, reserve_me: int, reserve_opp: int) -> list[float]:
        """This value after each of the 36 rolls of one position (Python ints, the roller `me`; the
        reserves in the table and `reserve_opp` at least `NUM_SQUARES` below its end), Python floats in
        square order: the table's values of the reserves after each roll's captures (`_each_roll`), as
        `__call__` reads them."""
        return _each_roll(me, opp, _race_rows(self.a, self.b)[reserve_me], reserve_opp)

    def __repr__(self) -> str:
        return f"RaceValue(a={self.a}, b={self.b}, name={self.name!r})"


DEFAULT_VALUE = RaceValue()
"""The value function the evaluation, the analysis and the luck-adjusted rewards use unless told otherwise."""
RANDOM_RACE_VALUE = RaceValue(RANDOM_RACE_A, RANDOM_RACE_B, name="race-random")
"""The race model fitted on random self-play: the value function for scoring uniformly random players."""


def every_roll(me, opp, reserve_me, reserve_opp) -> AfterRoll:
    """The positions after each of the 36 rolls of the roller (the mover, before its roll): fields of shape
    `(..., 36)`, roll `k` (square `k`) last, from arrays (or ints) of any shape broadcast together."""
    me, opp, reserve_me, reserve_opp = (
        np.asarray(x, dtype=np.int64)[..., None] for x in (me, opp, reserve_me, reserve_opp)
    )
    shape = np.broadcast_shapes(me.shape, opp.shape, reserve_me.shape, reserve_opp.shape, (NUM_SQUARES,))
    flat = [np.broadcast_to(x, shape).reshape(-1) for x in (me, opp, reserve_opp, BIT_ARRAY)]
    opp_after, reserve_opp_after, _, legal, _ = rules.roll(*flat)
    return AfterRoll(
        me=np.broadcast_to(me, shape),
        opp=opp_after.reshape(shape),
        reserve_me=np.broadcast_to(reserve_me, shape),
        reserve_opp=reserve_opp_after.reshape(shape),
        legal=legal.reshape(shape),
    )


def distinct_rolls(me: int, opp: int, reserve_me: int, reserve_opp: int) -> tuple[AfterRoll, list[int]]:
    """The positions after the 36 rolls of one position (Python ints): `(after, outcome)`,
    `after` the `AfterRoll` of one roll per group of alike squares ((n,) int64 fields, n <= 36) and
    `outcome` the index into them of each roll `k` (36 ints). Every empty square gives one position (nothing
    captured), and so does every square of one group (a group of the roller's: the same enemy checkers
    touch it; an enemy group: the same checkers are captured), so the rules run once per group."""
    outcome = [-1] * NUM_SQUARES
    positions: list[tuple[int, int, int, int, int]] = []  # the AfterRoll fields of each distinct roll
    for square, bit in enumerate(BIT):
        if outcome[square] >= 0:  # a square of a group (or an empty square) already rolled on
            continue
        opp_after, reserve_after, captured, legal, _ = rules.roll(me, opp, reserve_opp, bit)
        index = len(positions)
        positions.append((me, opp_after, reserve_me, reserve_after, legal))
        # the squares whose roll gives this position: an enemy hit's captured group, a friendly hit's group,
        # or every empty square
        alike = captured if bit & opp else rules.group(bit, me) if bit & me else FULL ^ (me | opp)
        for other in squares_of(alike):
            outcome[other] = index
    return AfterRoll(*np.array(positions, dtype=np.int64).T.copy()), outcome  # the fields: rows of one array


def _each_roll(me: int, opp: int, outcomes: Sequence, offset: int) -> list:
    """`outcomes[offset + n]` for each of the 36 rolls of one position (Python ints, the roller `me`), in
    square order, `n` the checkers the roll captures: what `distinct_rolls` finds, from each player's groups
    rather than a roll per group. `rules.resolve_roll` captures every enemy group its seeds (the rolled
    square, and the squares touching a friendly hit's group) fall in, so an enemy hit takes its own group,
    a friendly hit every enemy group touching its group, and an empty square nothing (`tests/test_luck.py`
    checks every roll against `rules.roll`)."""
    each = [outcomes[offset]] * NUM_SQUARES  # an empty square, or a friendly hit touching no enemy
    alone = opp & ~rules.adjacent(opp)  # enemy checkers with no neighbour of their own: a hit takes one
    one = outcomes[offset + 1]
    for square in squares_of(alone):
        each[square] = one
    enemies = []  # (group, its checkers) of each enemy group of two or more
    rest = opp ^ alone
    while rest:
        enemy = rules.group(rest & -rest, opp)
        count = enemy.bit_count()
        enemies.append((enemy, count))
        rest ^= enemy
        outcome = outcomes[offset + count]
        for square in squares_of(enemy):
            each[square] = outcome
    facing = me & rules.adjacent(opp)  # the roller's checkers next to an enemy checker
    mine_alone = me & ~rules.adjacent(me)
    while facing:  # each of the roller's groups holding one: a roll on it captures every enemy group it touches
        mine = facing & -facing
        if not mine & mine_alone:
            mine = rules.group(mine, me)
        facing &= ~mine
        touching = rules.adjacent(mine) & opp
        count = (touching & alone).bit_count()
        for enemy, size in enemies:
            if enemy & touching:
                count += size
        outcome = outcomes[offset + count]
        for square in squares_of(mine):
            each[square] = outcome
    return each


_COUNTS = range(NUM_SQUARES + 1)  # a count of captured checkers as itself (`roll_captures`)


def roll_captures(me: int, opp: int) -> list[int]:
    """The checkers each of the 36 rolls of one position (Python ints, the roller `me`) captures, in square
    order: what `distinct_rolls` finds, counted (`_each_roll`)."""
    return _each_roll(me, opp, _COUNTS, 0)


def mean_of_rolls(values: list[float]) -> float:
    """The mean of 36 roll values (Python floats, in square order) as numpy's `values.mean()` works it out
    on a (36,) float64 array, bit for bit: its pairwise summation, which below its block of 128 values
    keeps eight running sums (value `k` into sum `k % 8`, to the last multiple of 8), adds them as a tree
    and then the rest in turn; then the division (`tests/test_luck.py` checks it against numpy)."""
    v = values
    if len(v) != NUM_SQUARES:
        raise ValueError(f"the mean of the rolls takes {NUM_SQUARES} values, got {len(v)}")
    eights = (
        ((v[0] + v[8] + v[16] + v[24]) + (v[1] + v[9] + v[17] + v[25]))
        + ((v[2] + v[10] + v[18] + v[26]) + (v[3] + v[11] + v[19] + v[27]))
    ) + (
        ((v[4] + v[12] + v[20] + v[28]) + (v[5] + v[13] + v[21] + v[29]))
        + ((v[6] + v[14] + v[22] + v[30]) + (v[7] + v[15] + v[23] + v[31]))
    )
    return (eights + v[32] + v[33] + v[34] + v[35]) / NUM_SQUARES


def single_roll_luck(value: ValueFunction, me: int, opp: int, reserve_me: int, reserve_opp: int, rolled: int) -> float:
    """`roll_luck` of one position and one roll (Python ints) as a Python float, the same bits: a
    `RaceValue` on Python floats (`RaceValue.after_rolls`, `mean_of_rolls`), any other
    value asked once about each distinct position after a roll (`distinct_rolls`)."""
    if not 0 <= rolled < NUM_SQUARES:
        raise ValueError(f"rolled squares must be in 0..{NUM_SQUARES - 1}")
    if type(value) is RaceValue and _in_race_table(reserve_me, reserve_opp):
        values = value.after_rolls(me, opp, reserve_me, reserve_opp)
    else:
        values = _single_roll_values(value, me, opp, reserve_me, reserve_opp).tolist()
    return values[rolled] - mean_of_rolls(values)


def _in_race_table(reserve_me: int, reserve_opp: int) -> bool:
    """The reserves of one position are in a race value's table, before and after any roll's captures."""
    return 0 <= reserve_me < RACE_TABLE_RESERVES and 0 <= reserve_opp < _MOST_OPPONENT


def _single_roll_values(value: ValueFunction, me: int, opp: int, reserve_me: int, reserve_opp: int) -> np.ndarray:
    """(36,) float64: `roll_values` of one position (Python ints), `value` asked once about each distinct
    position after a roll (`distinct_rolls`); a `RaceValue`, which reads the reserves alone, looks up the
    reserves after each roll's captures (`RaceValue.after_rolls`)."""
    if type(value) is RaceValue and _in_race_table(reserve_me, reserve_opp):
        return np.array(value.after_rolls(me, opp, reserve_me, reserve_opp), dtype=np.float64)
    after, outcome = distinct_rolls(me, opp, reserve_me, reserve_opp)
    values = np.asarray(value(after), dtype=np.float64)
    if values.shape != after.me.shape:
        raise ValueError(
            f"value function {value.name!r} returned shape {values.shape}, expected {after.me.shape} "
            "(the shape of the positions it was given)"
        )
    return values.take(outcome)


def roll_values(value: ValueFunction, me, opp, reserve_me, reserve_opp) -> np.ndarray:
    """`(..., 36)` float64: the roller's win probability after each of its 36 rolls (`value` of
    `every_roll`), from the position before the roll. One position of Python ints asks `value` once
    about each distinct position after a roll (`distinct_rolls`), in one call."""
    if type(me) is int and type(opp) is int and type(reserve_me) is int and type(reserve_opp) is int:
        return _single_roll_values(value, me, opp, reserve_me, reserve_opp)
    if type(value) is RaceValue and (race := _race_roll_values(value, me, opp, reserve_me, reserve_opp)) is not None:
        return race
    values = np.asarray(value(every_roll(me, opp, reserve_me, reserve_opp)), dtype=np.float64)
    expected = np.broadcast_shapes(*(np.shape(x) for x in (me, opp, reserve_me, reserve_opp))) + (NUM_SQUARES,)
    if values.shape != expected:
        raise ValueError(f"value function {value.name!r} returned shape {values.shape}, expected {expected}")
    return values


def _race_roll_values(value: RaceValue, me, opp, reserve_me, reserve_opp) -> np.ndarray | None:
    """`roll_values` of a `RaceValue` on arrays (broadcast together): the reserves after each roll looked up
    in its table, the rules run on the occupied squares alone but a lone enemy checker (a hit captures it)
    and a roller's checker touching none (a hit captures nothing), as a roll on an empty square captures
    nothing; None when a reserve could leave the table (then `every_roll` serves)."""
    me, opp, reserve_me, reserve_opp = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.int64) for x in (me, opp, reserve_me, reserve_opp))
    )
    if ((reserve_me | reserve_opp) < 0).any() or (reserve_me >= RACE_TABLE_RESERVES).any():
        return None
    if (reserve_opp >= _MOST_OPPONENT).any():
        return None
    shape = me.shape
    me, opp = me.reshape(-1), opp.reshape(-1)
    lone_enemies = opp & ~rules.adjacent(opp)  # an enemy checker with no neighbour of its own: a hit takes it alone
    quiet = me & ~rules.adjacent(me | opp)  # the roller's checkers touching no checker: a hit captures nothing
    # (N, 36): the checkers each roll captures, the rules run on the other occupied squares alone
    captures = ((lone_enemies[:, None] & BIT_ARRAY) != 0).astype(np.int64)
    games, squares = ((((me | opp) ^ (lone_enemies | quiet))[:, None] & BIT_ARRAY) != 0).nonzero()
    captures[games, squares] = np.bitwise_count(rules.captured_by(me[games], opp[games], BIT_ARRAY[squares]))
    table = _race_table(value.a, value.b)
    values = table[reserve_me.reshape(-1, 1), reserve_opp.reshape(-1, 1) + captures]
    return values.reshape(shape + (NUM_SQUARES,))


def roll_luck(value: ValueFunction, me, opp, reserve_me, reserve_opp, rolled) -> np.ndarray:
    """The roller's luck of rolling `rolled` (square indices 0..35) from the position before the roll
    (`me` the roller's checkers, `opp` the other player's, their reserves; arrays or ints of any shape,
    broadcast together, `rolled` too): `V(after the roll) - mean over the 36 rolls of V`, float64 of the
    broadcast shape."""
    if all(type(x) is int for x in (me, opp, reserve_me, reserve_opp, rolled)):  # one position and one roll
        return np.float64(single_roll_luck(value, me, opp, reserve_me, reserve_opp, rolled))
    values = roll_values(value, me, opp, reserve_me, reserve_opp)
    rolled = np.asarray(rolled, dtype=np.int64)
    if np.any((rolled < 0) | (rolled >= NUM_SQUARES)):
        raise ValueError(f"rolled squares must be in 0..{NUM_SQUARES - 1}")
    if values.ndim == 2 and rolled.shape == values.shape[:1]:  # a batch of positions and their rolls
        return values[np.arange(rolled.size), rolled] - values.mean(axis=-1)
    shape = np.broadcast_shapes(values.shape[:-1], rolled.shape)
    values = np.broadcast_to(values, shape + (NUM_SQUARES,))
    actual = np.take_along_axis(values, np.broadcast_to(rolled, shape)[..., None], axis=-1)[..., 0]
    return actual - values.mean(axis=-1)


def before_roll(me, opp, reserve_me, reserve_opp, captured) -> tuple[Any, Any, Any, Any]:
    """The position before a roll, from the one just after it (the engine's fields after `roll`: `me` the
    roller's, `opp` and `reserve_opp` after the captures, `captured` the squares the roll emptied):
    `(me, opp, reserve_me, reserve_opp)`, the captured checkers back on the board and out of the reserve
    (Python ints for Python ints)."""
    if type(captured) is int and type(opp) is int and type(reserve_opp) is int:
        return me, opp | captured, reserve_me, reserve_opp - captured.bit_count()
    captured = np.asarray(captured, dtype=np.int64)
    return me, np.asarray(opp) | captured, reserve_me, np.asarray(reserve_opp) - np.bitwise_count(captured)


def luck_of_latest_roll(value: ValueFunction, position) -> np.ndarray:
    """The roller's luck of the latest roll of `position`, read just after that roll, before the
    placement (an `State` whose games all await a placement, or a
    `Game`): float64 of the position's batch shape (`()` for a Game)."""
    before = before_roll(position.me, position.opp, position.reserve_me, position.reserve_opp, position.captured)
    return roll_luck(value, *before, position.rolled)


__all__ = [
    "DEFAULT_VALUE",
    "RACE_A",
    "RACE_B",
    "RANDOM_RACE_A",
    "RANDOM_RACE_B",
    "RANDOM_RACE_VALUE",
    "AfterRoll",
    "RaceValue",
    "ValueFunction",
    "before_roll",
    "distinct_rolls",
    "every_roll",
    "luck_of_latest_roll",
    "mean_of_rolls",
    "race_win_probability",
    "roll_captures",
    "roll_luck",
    "roll_values",
    "single_roll_luck",
]
