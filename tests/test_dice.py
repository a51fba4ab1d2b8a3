"""The dice streams: a game's dice and a batch's give the same rolls for the same seed."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from strategic_reserve_env.core.dice import (
    CHANCE_TAG,
    MAX_SEED,
    ROLLS_AHEAD,
    BatchDice,
    GameDice,
    UniformStreams,
    rolled_square,
    stream_key,
)


@pytest.mark.parametrize("seed", [0, 7, -3, MAX_SEED - 2])  # the largest seed whose neighbour is one too
def test_game_dice_are_the_batch_dice_of_the_same_seed(seed):
    game, batch = GameDice(seed), BatchDice([seed, seed + 1])
    draws = 3 * ROLLS_AHEAD + 5  # across several blocks worked out ahead
    assert [game.next() for _ in range(draws)] == [int(batch.next()[0]) for _ in range(draws)]
    assert game.counter == draws


def test_forced_rolls_come_first_and_the_seeded_stream_resumes_where_it_was():
    dice, plain = GameDice(11), GameDice(11)
    first = [dice.next() for _ in range(ROLLS_AHEAD - 1)]
    dice.forced.extend([3, 4])
    got = [dice.next() for _ in range(5)]
    expected = [plain.next() for _ in range(ROLLS_AHEAD + 2)]
    assert first == expected[: ROLLS_AHEAD - 1]
    assert got == [3, 4] + expected[ROLLS_AHEAD - 1 :]
    assert dice.counter == ROLLS_AHEAD + 2


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))], ids=["deepcopy", "pickle"])
def test_a_copy_in_the_middle_of_a_block_continues_the_same_rolls_independently(clone):
    dice = GameDice(5)
    for _ in range(ROLLS_AHEAD // 2):
        dice.next()
    twin = clone(dice)
    ahead = [dice.next() for _ in range(ROLLS_AHEAD)]
    assert [twin.next() for _ in range(ROLLS_AHEAD)] == ahead
    key = stream_key(5)
    assert ahead == [rolled_square(key, n) for n in range(ROLLS_AHEAD // 2, ROLLS_AHEAD // 2 + ROLLS_AHEAD)]
    assert np.all((0 <= np.array(ahead)) & (np.array(ahead) < 36))


def test_key_and_counter_are_the_whole_state():
    """Setting `counter` or `key` in the middle of a block moves the stream there (the rolls worked
    out ahead are only a cache)."""
    dice = GameDice(1)
    dice.next()
    dice.counter = 10
    assert dice.next() == rolled_square(dice.key, 10)
    dice.key = stream_key(2)
    assert [dice.next() for _ in range(3)] == [rolled_square(stream_key(2), n) for n in (11, 12, 13)]
    dice.counter = 3  # back before the cached block
    assert dice.next() == rolled_square(stream_key(2), 3)


#: pickle.dumps(d, protocol=2) by the version before the rolls were worked out ahead, of d = GameDice(5)
#: after two rolls with 7 forced
EARLIER_PICKLE = (
    b"\x80\x02cstrategic_reserve_env.dice\nGameDice\nq\x00)\x81q\x01N}q\x02(X\x03\x00\x00\x00keyq\x03\x8a\x08"
    b"\x9bt\xa8Qj\x899\x1bX\x07\x00\x00\x00counterq\x04K\x02X\x06\x00\x00\x00forcedq\x05]q\x06K\x07au\x86q\x07b."
)


def test_pickles_hold_key_counter_and_forced_and_load_across_versions():
    dice = GameDice(5)
    dice.next(), dice.next()
    dice.forced.append(7)
    assert dice.__reduce_ex__(2)[2] == (None, {"key": stream_key(5), "counter": 2, "forced": [7]})  # no cache
    old = pickle.loads(EARLIER_PICKLE)
    assert [old.next() for _ in range(3)] == [7, rolled_square(stream_key(5), 2), rolled_square(stream_key(5), 3)]


# -- the chance streams beside the dice (from the gym edges) ----------------------------------------------------------


def test_chance_streams():
    # take(games) gives and advances exactly what next(mask) would; tag 1 is not the dice stream
    seeds = np.arange(10) * 7 + 3
    by_mask, by_index = UniformStreams(seeds), UniformStreams(seeds)
    rng = np.random.default_rng(0)
    for _ in range(50):
        mask = rng.random(10) < 0.4
        expected = by_mask.next(mask)[mask]
        np.testing.assert_array_equal(by_index.take(np.flatnonzero(mask)), expected)
        np.testing.assert_array_equal(by_index.counters, by_mask.counters)
        assert np.all((0 <= expected) & (expected < 1))
    assert stream_key(5, CHANCE_TAG) != stream_key(5) == BatchDice([5]).keys[0]
    values = UniformStreams(np.arange(4000)).next()
    assert abs(values.mean() - 0.5) < 0.02 and len(np.unique(values)) == 4000


def test_a_batch_of_one_stream_draws_on_ints_what_next_draws():
    """`next_of_one` (the single-game path of a batch of one) gives `next`'s values and advances the same way."""
    for seed in (0, 7, 2**40 + 3):
        dice, dice_ints = BatchDice([seed]), BatchDice([seed])
        chance, chance_ints = UniformStreams([seed]), UniformStreams([seed])
        for _ in range(50):
            rolled, uniform = dice_ints.next_of_one(), chance_ints.next_of_one()
            assert type(rolled) is int and type(uniform) is float
            assert rolled == int(dice.next()[0]) and uniform == float(chance.next()[0])
        np.testing.assert_array_equal(dice_ints.counters, dice.counters)
        np.testing.assert_array_equal(chance_ints.counters, chance.counters)
