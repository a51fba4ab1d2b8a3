"""The core's one integer check, one square-index check and one seed bound, as every env and agent applies them."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_reserve_env import Config, Game
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.core.board import NUM_SQUARES, checked_int, is_integer, is_square_index
from strategic_reserve_env.core.dice import DRAWN_SEEDS, MAX_SEED, BatchDice, GameDice, stream_key


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, True), (np.int8(3), True), (np.uint64(2**63), True), (True, False), (np.bool_(True), False), (3.0, False)],
)
def test_an_integer_is_an_int_or_a_numpy_integer_never_a_bool(value, expected):
    assert is_integer(value) is expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("reserve", "7", 1, 12), "reserve must be an integer in 1..12, got '7'"),
        (("reserve", 13, 1, 12), "reserve must be in 1..12, got 13"),
        (("num_envs", 0, 1), "num_envs must be a positive integer, got 0"),
        (("num_envs", True, 1), "num_envs must be a positive integer, got True"),
        (("horizon", -1, 0), "horizon must be an integer >= 0, got -1"),
    ],
)
def test_checked_int_names_the_option_and_its_range(args, message):
    with pytest.raises(ValueError) as raised:
        checked_int(*args)
    assert str(raised.value) == message


def test_checked_int_returns_a_python_int_at_both_ends_of_the_range():
    assert [checked_int("width", v, 1, NUM_SQUARES) for v in (1, np.int64(36))] == [1, 36]
    assert type(checked_int("width", np.int64(36), 1, NUM_SQUARES)) is int


def test_a_square_index_is_an_integer_in_0_to_35():
    assert [is_square_index(v) for v in (0, 35, np.int16(35), -1, 36, True, 1.0)] == [
        True, True, True, False, False, False, False,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("expectimax:width=0", "expectimax width must be in 1..36, got 0"),
        ("value:width=37", "value width must be in 1..36, got 37"),
        ("rollout:rollouts=0", "rollout rollouts must be in 1..4096, got 0"),
        ("rollout:horizon=-1", "rollout horizon must be in 0..1000, got -1"),
    ],
)
def test_every_agent_option_goes_through_the_one_integer_check(spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec)


def test_an_agent_option_of_numpy_int_type_is_taken_as_the_int():
    from strategic_reserve_env.agents.expectimax import ExpectimaxAgent

    agent = ExpectimaxAgent(width=np.int64(4))
    assert agent.width == 4 and type(agent.width) is int and agent.name == "expectimax:depth=2,width=4"


def test_a_config_holds_python_ints_whatever_integer_it_was_given():
    config = Config(reserve=np.int64(6), ply_limit=np.int32(50))
    assert (config.reserve, config.ply_limit) == (6, 50)
    assert type(config.reserve) is int and type(config.ply_limit) is int


def test_the_game_refuses_a_bool_as_a_rolled_square():
    game = Game()
    with pytest.raises(ValueError, match="rolled square True is not in 0..35"):
        game.roll(True)
    game.roll(np.int8(35))  # a numpy integer square is a square
    assert game.rolled == 35


@pytest.mark.parametrize("seed", [MAX_SEED, -MAX_SEED, 2**70])
def test_a_seed_beyond_64_bits_is_refused_rather_than_replaying_a_smaller_seeds_game(seed):
    with pytest.raises(ValueError, match="seed must be an integer of magnitude below 2\\*\\*64"):
        GameDice(seed)
    with pytest.raises(ValueError, match="magnitude below 2\\*\\*64"):
        BatchDice([0, seed])


def test_the_largest_seed_has_a_game_of_its_own():
    assert stream_key(MAX_SEED - 1) not in (stream_key(0), stream_key(MAX_SEED - 2))
    assert DRAWN_SEEDS == MAX_SEED >> 1  # a non-negative int64: what numpy draws
