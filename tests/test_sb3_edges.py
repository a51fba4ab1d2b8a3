"""Edges of the SB3 VecEnv: settings, actions, call order and faulty opponents get a clear error with
nothing changed; game i of a batch is the game a batch of one seeded seed + i plays."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.learner import OpponentError, ResetNeeded
from strategic_reserve_env.sb3_env import StrategicReserveVecEnv

from env_checks import assert_unchanged, snapshot


def lowest(observations, masks, rng):
    """A deterministic opponent: the lowest legal square."""
    return np.argmax(masks, axis=-1)


def _legal_actions(env) -> np.ndarray:
    """A deterministic legal action per game, varied by the position."""
    masks = env.action_masks()
    observations = env.games.observations()
    return np.array([np.flatnonzero(m)[int(o.sum()) % m.sum()] for m, o in zip(masks, observations, strict=True)])


def _assert_same_step(got, want) -> None:
    (observations, rewards, dones, infos), (observations2, rewards2, dones2, infos2) = got, want
    np.testing.assert_array_equal(observations, observations2)
    np.testing.assert_array_equal(rewards, rewards2)
    np.testing.assert_array_equal(dones, dones2)
    for info, info2 in zip(infos, infos2, strict=True):
        assert info.keys() == info2.keys()
        for key in info:
            np.testing.assert_array_equal(info[key], info2[key])


@pytest.mark.parametrize(
    "n_envs, message",
    [(0, "n_envs must be a positive integer, got 0"), (-1, "got -1"), (2.5, "got 2.5"), (None, "got None")],
)
def test_batch_size(n_envs, message):
    with pytest.raises(ValueError, match=message):
        StrategicReserveVecEnv(n_envs)


def test_one_opponent_given_as_a_string_or_an_object():
    # "random" (not a list) is the random opponent, not the letters r, a, n, d, o, m
    for opponents in ("random", load_agent("greedy"), lowest):
        env = StrategicReserveVecEnv(3, opponents=opponents, seed=1)
        assert len(env.games.opponents) == 1
    plain, listed = StrategicReserveVecEnv(4, opponents="random", seed=3), StrategicReserveVecEnv(4, seed=3)
    plain.reset(), listed.reset()
    for _ in range(20):
        actions = _legal_actions(plain)
        _assert_same_step(plain.step(actions), listed.step(actions))


@pytest.mark.parametrize(
    "actions, error, message",
    [
        (
            lambda good: good + 0.25,
            ValueError,
            r"actions must be integer square indices 0\.\.35, got an array of dtype",
        ),
        (lambda good: good.astype(bool), ValueError, "dtype bool"),
        (lambda good: good[:2], ValueError, r"actions must have shape \(3,\), got \(2,\)"),
        (lambda good: good[:, None], ValueError, r"actions must have shape \(3,\), got \(3, 1\)"),
        (lambda good: None, ValueError, "got None"),
    ],
)
def test_bad_actions_change_nothing(actions, error, message):
    env, twin = StrategicReserveVecEnv(3, seed=2), StrategicReserveVecEnv(3, seed=2)
    env.reset(), twin.reset()
    before = snapshot(env)
    good = _legal_actions(env)
    with pytest.raises(error, match=message):
        env.step(actions(good))
    assert_unchanged(env, before)
    for _ in range(10):
        good = _legal_actions(env)
        _assert_same_step(env.step(good), twin.step(good))


def test_step_before_reset():
    env = StrategicReserveVecEnv(2)
    with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    assert env.action_masks().any(axis=1).all()


def test_observations_are_the_callers_to_edit():
    env = StrategicReserveVecEnv(4, seed=0)
    observations = env.reset()
    masks = env.action_masks().copy()
    observations[:] = 0
    env.action_masks()[:] = False
    np.testing.assert_array_equal(env.action_masks(), masks)
    np.testing.assert_array_equal(env.env_method("action_masks"), list(masks))


class Flaky:
    """`lowest` until armed; then its next call returns `bad(masks)` (or raises)."""

    name = "flaky"

    def __init__(self, bad) -> None:
        self.bad, self.armed = bad, False

    def act(self, observations, masks, rng):
        if self.armed:
            self.armed = False
            return self.bad(masks)
        return lowest(observations, masks, rng)


def _raise(masks):
    raise KeyError("lost its table")


@pytest.mark.parametrize(
    "bad, message",
    [
        (_raise, r"opponent 'flaky' raised KeyError: 'lost its table'"),
        (
            lambda masks: np.argmin(masks, axis=-1),
            r"opponent 'flaky' in game \d+ returned [a-f][1-6] \(square \d+\), "
            r"which is not a legal placement; legal: [a-f][1-6]",
        ),
        (
            lambda masks: np.argmax(masks, axis=-1)[:-1],
            r"opponent 'flaky' \(choosing for game\(s\) \d+(, \d+)*\) returned shape \(\d+,\) for \d+ game\(s\)",
        ),
        (
            lambda masks: [0.5] * len(masks),
            r"opponent 'flaky' in game \d+ returned float64 values, not integer square "
            r"indices 0\.\.35 \(the first: 0\.5\)",
        ),
    ],
    ids=["raises", "illegal", "shape", "float"],
)
def test_faulty_opponent_in_a_pool(bad, message):
    # the faulty opponent plays some games of the batch, random the others
    flaky = Flaky(bad)
    env = StrategicReserveVecEnv(16, opponents=[flaky, "random"], seed=5)
    twin = StrategicReserveVecEnv(16, opponents=[Flaky(bad), "random"], seed=5)  # never armed
    env.reset(), twin.reset()
    for _ in range(3):
        actions = _legal_actions(env)
        _assert_same_step(env.step(actions), twin.step(actions))
    before = snapshot(env)
    flaky.armed = True
    with pytest.raises(OpponentError, match=message):
        env.step(_legal_actions(env))
    assert_unchanged(env, before)
    for _ in range(30):  # nothing lost: the same games go on as the twin's
        actions = _legal_actions(env)
        _assert_same_step(env.step(actions), twin.step(actions))


def test_game_i_is_the_game_of_a_batch_of_one_seeded_seed_plus_i():
    seed, n_envs = 20, 3
    batch = StrategicReserveVecEnv(n_envs, opponents=["random", lowest], seed=seed)
    alone = [StrategicReserveVecEnv(1, opponents=["random", lowest], seed=seed + i) for i in range(n_envs)]
    observations = batch.reset()
    for i, env in enumerate(alone):
        np.testing.assert_array_equal(env.reset()[0], observations[i])
    finished = 0
    for _ in range(200):
        actions = _legal_actions(batch)
        observations, rewards, dones, infos = batch.step(actions)
        for i, env in enumerate(alone):
            observation, reward, done, info = env.step(actions[i : i + 1])
            np.testing.assert_array_equal(observation[0], observations[i])
            assert (reward[0], done[0]) == (rewards[i], dones[i])
            assert info[0].keys() == infos[i].keys()
            for key in info[0]:
                np.testing.assert_array_equal(info[0][key], infos[i][key])
        finished += int(dones.sum())
    assert finished > 20


def test_an_opponents_fault_names_the_game_of_the_batch_not_the_row_it_was_given():
    # the faulty opponent plays some games of the pool; its last row is illegal: the error names that game
    def bad(masks):
        picks = np.argmax(masks, axis=-1)
        picks[-1] = np.argmin(masks[-1])
        return picks

    flaky = Flaky(bad)
    env = StrategicReserveVecEnv(8, opponents=["random", flaky], seed=3)
    env.reset()
    games = np.flatnonzero(env.games.opponent_id == 1)
    assert 0 < len(games) < 8 and games[-1] != len(games) - 1  # rows and games differ
    actions = _legal_actions(env)
    flaky.armed = True
    with pytest.raises(OpponentError) as caught:
        env.step(actions)
    last = int(games[-1])
    assert str(caught.value).startswith(f"opponent 'flaky' in game {last} returned ")
    assert "which is not a legal placement; legal: " in str(caught.value)
