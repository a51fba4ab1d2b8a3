"""Luck of a roll (strategic_reserve_env.core.luck): the 36 outcomes against the scalar reference, hand-worked rolls,
and the estimator's defining property (mean zero over the chance model, for any value function)."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_reserve_env.core import engine, luck
from strategic_reserve_env.core.board import BIT_ARRAY, NUM_SQUARES, RED, parse_square
from strategic_reserve_env.core.config import Config, StartPosition
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.oracle import ReferenceGame

from conftest import RaceByRolls, random_start


def _reference_after(start: StartPosition, square: int) -> tuple[int, int, list[int]]:
    """(roller's reserve, other's reserve, legal squares) after the roll on `square`, by the reference."""
    game = ReferenceGame(start.board, {"red": start.reserves[0], "blue": start.reserves[1]}, start.to_move)
    legal = game.roll(square)
    roller, other = game.mover, "B" if game.mover == "R" else "R"
    return game.reserves[roller], game.reserves[other], legal


def test_every_roll_and_its_luck_agree_with_the_scalar_reference(rng):
    """Random positions, all 36 rolls: the engine's post-roll reserves and legal squares are the reference's,
    and the race luck of each roll is V(actual) - mean V computed from the reference's reserves."""
    for _ in range(40):
        start = random_start(rng, max_reserve=9)
        game = Game(Config(start=start))
        after = luck.every_roll(game.me, game.opp, game.reserve_me, game.reserve_opp)
        assert after.me.shape == (NUM_SQUARES,)
        expected = [_reference_after(start, square) for square in range(NUM_SQUARES)]
        assert after.reserve_me.tolist() == [e[0] for e in expected]
        assert after.reserve_opp.tolist() == [e[1] for e in expected]
        assert [np.flatnonzero(BIT_ARRAY & legal).tolist() for legal in after.legal.tolist()] == [
            e[2] for e in expected
        ]
        race = np.array([luck.race_win_probability(e[0], e[1]) for e in expected])
        for square in rng.choice(NUM_SQUARES, size=4, replace=False).tolist():
            got = luck.roll_luck(luck.DEFAULT_VALUE, game.me, game.opp, game.reserve_me, game.reserve_opp, square)
            assert got == pytest.approx(race[square] - race.mean(), abs=1e-12)


def test_a_roll_that_captures_a_singleton_is_worth_what_the_race_says():
    """Red (reserve 3) to roll against a lone blue checker on c3 (Blue's reserve 2), one red checker on a1:
    the roll c3 captures it (Blue's reserve 3), a1 is a friendly hit that touches nothing, every other roll is
    empty. By hand: luck(c3) = V(3, 3) - mean and luck(other) = V(3, 2) - mean, with
    mean = (V(3, 3) + 35 V(3, 2)) / 36, V(3, 3) = sigmoid(B / sqrt 6) and V(3, 2) = sigmoid((B - A) / sqrt 5)."""
    board = ["."] * NUM_SQUARES
    board[parse_square("c3")], board[parse_square("a1")] = "B", "R"
    game = Game(Config(start=StartPosition("".join(board), (3, 2), "red")))
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    v_even = sigmoid(luck.RACE_B / np.sqrt(6.0))
    v_behind = sigmoid((-luck.RACE_A + luck.RACE_B) / np.sqrt(5.0))
    mean = (v_even + 35 * v_behind) / 36
    rolls = np.arange(NUM_SQUARES)
    got = luck.roll_luck(luck.DEFAULT_VALUE, game.me, game.opp, game.reserve_me, game.reserve_opp, rolls)
    expected = np.full(NUM_SQUARES, v_behind - mean)
    expected[parse_square("c3")] = v_even - mean
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert got[parse_square("c3")] > 0.1  # a lucky roll: the race evened


def test_the_last_checker_roll_is_luckless_and_a_lost_race_too():
    """A roller with one checker left wins whatever it rolls (V = 1 after every roll): no luck at all."""
    game = Game(Config(start=StartPosition("." * 35 + "B", (1, 4), "red")))
    rolls = np.arange(NUM_SQUARES)
    got = luck.roll_luck(luck.DEFAULT_VALUE, game.me, game.opp, game.reserve_me, game.reserve_opp, rolls)
    np.testing.assert_array_equal(got, np.zeros(NUM_SQUARES))


class _Noise:
    """A deliberately bad value function: uniform noise, fixed by its seed (it ignores the position)."""

    name = "noise"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, after: luck.AfterRoll) -> np.ndarray:
        return self.rng.random(np.shape(after.me))


@pytest.mark.parametrize("value", [luck.DEFAULT_VALUE, _Noise(3)], ids=["race", "noise"])
def test_luck_has_mean_zero_over_the_36_rolls_and_is_read_back_after_the_roll(value, rng):
    """The estimator's premise, per position: the luck of the 36 equally likely rolls averages to zero. And the
    luck read from the state after a roll (`luck.luck_of_latest_roll`, as the evaluation reads it) is
    the luck of that roll from the position before it, for a batch and for a Game."""
    starts = [random_start(rng, max_reserve=9) for _ in range(24)]
    state = engine.concatenate([engine.init(Config(start=s), 1) for s in starts])
    values = luck.roll_values(luck.DEFAULT_VALUE, state.me, state.opp, state.reserve_me, state.reserve_opp)
    lucks = values - values.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(lucks.mean(axis=-1), 0.0, atol=1e-12)
    rolled = rng.integers(0, NUM_SQUARES, size=state.batch_size)
    after = engine.roll(state, rolled)
    np.testing.assert_allclose(
        luck.luck_of_latest_roll(luck.DEFAULT_VALUE, after), lucks[np.arange(state.batch_size), rolled], atol=1e-12
    )
    game = Game(Config(start=starts[0]))
    game.roll(int(rolled[0]))
    assert luck.luck_of_latest_roll(luck.DEFAULT_VALUE, game) == pytest.approx(lucks[0, rolled[0]], abs=1e-12)
    if value is not luck.DEFAULT_VALUE:  # any V: the noise's own 36 values also average out exactly
        noisy = luck.roll_values(value, state.me, state.opp, state.reserve_me, state.reserve_opp)
        np.testing.assert_allclose((noisy - noisy.mean(axis=-1, keepdims=True)).mean(axis=-1), 0.0, atol=1e-12)


def test_a_value_function_of_the_wrong_shape_and_bad_squares_are_refused():
    game = Game()
    position = (game.me, game.opp, game.reserve_me, game.reserve_opp)

    class Scalar:
        name = "scalar"

        def __call__(self, after):
            return 0.5

    with pytest.raises(ValueError, match=r"value function 'scalar' returned shape \(\), expected \(36,\)"):
        luck.roll_luck(Scalar(), *(np.int64(x) for x in position), 3)  # numpy integers: all 36 rolls
    # one position of Python ints asks about its distinct positions after a roll (13 from the start)
    with pytest.raises(ValueError, match=r"returned shape \(\), expected \(13,\) \(the shape of the positions"):
        luck.roll_luck(Scalar(), *position, 3)
    with pytest.raises(ValueError, match="rolled squares must be in 0..35"):
        luck.roll_luck(luck.DEFAULT_VALUE, *position, 36)
    assert isinstance(luck.DEFAULT_VALUE, luck.ValueFunction) and game.to_move == RED


def test_one_position_on_ints_gives_the_values_and_luck_of_all_36_rolls_on_arrays(rng):
    """`distinct_rolls` (one position of Python ints, each group's roll worked out once) expands to
    `every_roll` field by field, and `roll_values` and `roll_luck` on ints equal their array results bit for bit,
    under any value function (here one that reads every field)."""

    class EveryField:
        name = "every-field"

        def __call__(self, after):
            fields = (after.me, after.opp, after.reserve_me, after.reserve_opp, after.legal)
            return (sum(np.bitwise_count(x) * (k + 1) for k, x in enumerate(fields)) % 97) / 97.0

    for _ in range(60):
        start = random_start(rng, max_reserve=9)
        game = Game(Config(start=start))
        position = (game.me, game.opp, game.reserve_me, game.reserve_opp)
        after, outcome = luck.distinct_rolls(*position)
        every = luck.every_roll(*(np.int64(x) for x in position))
        for name in ("me", "opp", "reserve_me", "reserve_opp", "legal"):
            np.testing.assert_array_equal(getattr(after, name).take(outcome), getattr(every, name), err_msg=name)
        assert sorted(set(outcome)) == list(range(len(after.me)))  # every position told is some roll's
        for value in (luck.DEFAULT_VALUE, EveryField()):
            arrays = luck.roll_values(value, *(np.int64(x) for x in position))
            np.testing.assert_array_equal(luck.roll_values(value, *position), arrays)
            rolled = int(rng.integers(NUM_SQUARES))
            assert luck.roll_luck(value, *position, rolled) == luck.roll_luck(
                value, *(np.int64(x) for x in position), rolled
            )


def test_the_race_value_looks_up_the_values_of_its_model():
    """`RaceValue` reads a table of `race_win_probability` for reserves below `RACE_TABLE_RESERVES`, and
    computes the model beyond: the same float64 values bit for bit, in one call and element by element."""
    mover, opponent = (grid.ravel() for grid in np.meshgrid(np.arange(70), np.arange(70)))
    zeros = np.zeros_like(mover)
    for value in (luck.DEFAULT_VALUE, luck.RANDOM_RACE_VALUE, luck.RaceValue(0.9, -0.2)):
        expected = luck.race_win_probability(mover, opponent, value.a, value.b)
        np.testing.assert_array_equal(value(luck.AfterRoll(zeros, zeros, mover, opponent, zeros)), expected)
        for i in range(0, mover.size, 97):
            one = luck.AfterRoll(*(x[i : i + 1] for x in (zeros, zeros, mover, opponent, zeros)))
            assert value(one)[0] == expected[i]
    assert luck.RACE_TABLE_RESERVES > 12 + NUM_SQUARES  # every reserve of a game is looked up


def test_the_captures_of_each_roll_and_the_race_values_from_them_are_the_rules_bit_for_bit(rng):
    """`roll_captures` (each player's groups, kept per bitboard) counts what `rules.roll` captures on each of
    the 36 squares, in random positions and along random games; the race value's 36 roll values and the
    luck of a roll from them are those of the general path (a value asked about `distinct_rolls`) bit for bit,
    asked twice (the second time from the cached groups)."""
    from strategic_reserve_env.core import rules
    from strategic_reserve_env.core.sampling import uniform_square

    positions = []
    for _ in range(150):
        game = Game(Config(start=random_start(rng, max_reserve=12)))
        positions.append((game.me, game.opp, game.reserve_me, game.reserve_opp))
    game = Game()
    for _ in range(1500):  # positions of random play, many groups touching
        game.roll(int(rng.integers(NUM_SQUARES)))
        game.place(uniform_square(game.legal, float(rng.random())))
        if game.done:
            game.reset()
        positions.append((game.me, game.opp, game.reserve_me, game.reserve_opp))
    general = RaceByRolls()
    for me, opp, reserve_me, reserve_opp in positions:
        expected = [rules.roll(me, opp, 0, bit)[2].bit_count() for bit in BIT_ARRAY.tolist()]
        assert luck.roll_captures(me, opp) == expected
        values = luck.roll_values(general, me, opp, reserve_me, reserve_opp)
        for _ in range(2):
            assert luck.roll_values(luck.DEFAULT_VALUE, me, opp, reserve_me, reserve_opp).tobytes() == values.tobytes()
        rolled = int(rng.integers(NUM_SQUARES))
        mine = luck.roll_luck(luck.DEFAULT_VALUE, me, opp, reserve_me, reserve_opp, rolled)
        theirs = luck.roll_luck(general, me, opp, reserve_me, reserve_opp, rolled)
        assert np.float64(mine).tobytes() == np.float64(theirs).tobytes()
        assert mine == values[rolled] - values.mean()


def test_the_race_values_of_a_batch_are_the_general_paths_bit_for_bit(rng):
    """On arrays the race value runs the rules on the occupied squares alone and looks the reserves up: the
    36 roll values and the lucks of a batch of random positions (an empty board among them) are those of the
    general path (`every_roll` for a value of one's own) bit for bit, and so are one position's as numpy
    integers."""
    starts = [random_start(rng, max_reserve=12) for _ in range(40)] + [StartPosition("." * NUM_SQUARES, (3, 4), "red")]
    state = engine.concatenate([engine.init(Config(start=s), 1) for s in starts])
    position = (state.me, state.opp, state.reserve_me, state.reserve_opp)
    general = RaceByRolls()
    values = luck.roll_values(general, *position)
    assert luck.roll_values(luck.DEFAULT_VALUE, *position).tobytes() == values.tobytes()
    rolled = rng.integers(0, NUM_SQUARES, size=state.batch_size)
    mine, theirs = (luck.roll_luck(value, *position, rolled) for value in (luck.DEFAULT_VALUE, general))
    assert mine.tobytes() == theirs.tobytes()
    one = tuple(np.int64(x[3]) for x in position)
    assert luck.roll_values(luck.DEFAULT_VALUE, *one).tobytes() == values[3].tobytes()


def test_the_mean_of_the_rolls_is_numpys_bit_for_bit(rng):
    """`mean_of_rolls` adds 36 Python floats in the order numpy's pairwise summation takes them: on values
    spread over 16 orders of magnitude, where another order of the additions gives other bits (a plain sum
    from the left does, for most of them), it equals `values.mean()` of the float64 array bit for bit; any
    other number of values is refused."""
    differs = 0
    for _ in range(3000):
        values = rng.random(NUM_SQUARES) * 10.0 ** rng.integers(-8, 8, NUM_SQUARES)
        expected = float(values.mean())
        assert luck.mean_of_rolls(values.tolist()).hex() == expected.hex()
        total = 0.0
        for value in values.tolist():
            total += value
        differs += total / NUM_SQUARES != expected
    assert differs > 1000
    with pytest.raises(ValueError, match="takes 36 values, got 35"):
        luck.mean_of_rolls([0.5] * 35)


def test_the_luck_of_one_roll_on_python_floats_is_the_batchs_bit_for_bit(rng):
    """`single_roll_luck` (one position of Python ints, a Python float) equals the luck of the same roll in a
    batch of positions on arrays bit for bit, under the race value (on floats from its table) and under a
    value of one's own (asked about each distinct roll), along random games; a square outside 0..35 is
    refused."""
    from strategic_reserve_env.core.sampling import uniform_square

    game, positions = Game(), []
    for _ in range(400):
        positions.append((game.me, game.opp, game.reserve_me, game.reserve_opp, int(rng.integers(NUM_SQUARES))))
        game.roll(int(rng.integers(NUM_SQUARES)))
        game.place(uniform_square(game.legal, float(rng.random())))
        if game.done:
            game.reset()
    columns = [np.array(column, dtype=np.int64) for column in zip(*positions, strict=True)]
    for value in (luck.DEFAULT_VALUE, luck.RANDOM_RACE_VALUE, RaceByRolls()):
        batch = luck.roll_luck(value, *columns)
        singles = [luck.single_roll_luck(value, *position) for position in positions]
        assert all(type(one) is float for one in singles)
        assert np.array(singles).tobytes() == batch.tobytes()
    with pytest.raises(ValueError, match="rolled squares must be in 0..35"):
        luck.single_roll_luck(luck.DEFAULT_VALUE, *positions[0][:4], 36)
