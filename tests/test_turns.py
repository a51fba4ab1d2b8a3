"""The one turn loop (turns.py) and the one reward rule (outcome.py)."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_reserve_env.core import engine, turns
from strategic_reserve_env.core.board import BLUE, NO_PLAYER, RED
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.dice import BatchDice
from strategic_reserve_env.core.outcome import LOSS, NO_RESULT, WIN, reward
from strategic_reserve_env.core.sampling import uniform_square


@pytest.mark.parametrize(
    "winner, player, expected",
    [(RED, RED, WIN), (RED, BLUE, LOSS), (BLUE, BLUE, WIN), (BLUE, RED, LOSS), (NO_PLAYER, RED, NO_RESULT)],
)
def test_reward_scores_ints_and_arrays_alike(winner, player, expected):
    assert reward(winner, player) == expected and type(reward(winner, player)) is int
    batch = reward(np.array([winner, winner]), np.array([player, player ^ 1]))
    assert batch.tolist() == [expected, -expected]


def _uniform_decide(seed: int):
    """A decide function choosing uniformly from a counter-based stream per game (independent of the batch)."""
    streams = BatchDice(np.arange(10_000) + seed)  # any per-game stream of numbers will do

    def decide(state: engine.State, acting: np.ndarray) -> np.ndarray:
        uniforms = streams.next(np.pad(acting, (0, 10_000 - len(acting))))[: len(acting)] / 36
        return np.where(acting, uniform_square(state.legal, uniforms), 0)

    return decide


@pytest.mark.parametrize("sparse", [1, 4, 10**6])
def test_play_out_is_the_hand_written_loop(sparse, monkeypatch):
    """play_out plays exactly what rolling, choosing and placing by hand plays, whether the turns work on
    the whole batch or on the few games that move (`engine.SPARSE`), and `on_roll` sees every rolled state."""
    monkeypatch.setattr(engine, "SPARSE", sparse)
    config, games = Config(ply_limit=40), 64
    seen = []
    final = turns.play_out(
        engine.init(config, games), BatchDice(np.arange(games)), _uniform_decide(7), config, seen.append
    )
    monkeypatch.setattr(engine, "SPARSE", 10**6)  # the hand-written loop works on the whole batch
    state, dice, decide, expected = engine.init(config, games), BatchDice(np.arange(games)), _uniform_decide(7), []
    state = engine.roll(state, dice.next(~state.done))
    expected.append(state)
    while not state.done.all():
        state = engine.place(state, decide(state, ~state.done), config)
        state = engine.roll(state, dice.next(~state.done))
        expected.append(state)
    assert len(seen) == len(expected) > 20
    for got, want in zip(seen, expected, strict=True):
        assert got.board_strings() == want.board_strings()
        np.testing.assert_array_equal(got.legal, want.legal)
    for name in ("winner", "ply", "truncated", "reserve_me", "reserve_opp"):
        np.testing.assert_array_equal(getattr(final, name), getattr(expected[-1], name))
    assert (final.winner >= 0).any() and final.truncated.any()


def test_actions_by_policy_calls_each_policy_once_on_its_own_games():
    config = Config()
    state = engine.roll(engine.init(config, 6), np.arange(6))
    calls = []

    def act(position, index, games):
        calls.append((index, games.tolist()))
        return uniform_square(position.legal[games], np.full(len(games), 0.5))

    acting = np.array([True, True, False, True, True, True])
    actions = turns.actions_by_policy(state, acting, np.array([1, 0, 0, 1, 2, 1]), 3, act)
    assert calls == [(0, [1]), (1, [0, 3, 5]), (2, [4])]
    assert actions[2] == 0 and not engine.illegal_actions(state, actions, acting).any()


def test_a_turn_leaves_the_other_games_alone():
    config, games = Config(), 8
    state = engine.roll(engine.init(config, games), np.arange(games))
    acting = np.arange(games) < 2  # sparse: two of eight games move
    after = turns.turn(state, acting, BatchDice(np.arange(games)), _uniform_decide(1), config)
    np.testing.assert_array_equal(after.ply, acting.astype(np.int64))
    for name in ("me", "opp", "legal", "to_move", "rolled"):
        np.testing.assert_array_equal(getattr(after, name)[~acting], getattr(state, name)[~acting])


def test_play_out_stops_after_max_turns():
    """`max_turns`: the games are those of that many hand-written turns, each still going with exactly that
    many placements made, awaiting its roll."""
    config = Config()
    start = engine.init(config, 40)
    short = turns.play_out(start, BatchDice(np.arange(40)), _uniform_decide(1), config, max_turns=5)
    assert (short.ply == 5).all() and not short.done.any() and not short.awaiting_placement.any()
    by_hand, dice, decide = start, BatchDice(np.arange(40)), _uniform_decide(1)
    for _ in range(5):
        by_hand = turns.turn(by_hand, ~by_hand.done, dice, decide, config)
    for name in ("me", "opp", "reserve_me", "reserve_opp", "to_move", "rolled"):
        np.testing.assert_array_equal(getattr(short, name), getattr(by_hand, name))
