"""Gymnasium single-agent and vector envs: checks, cross-interface determinism, auto-reset, masks."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import strategic_reserve_env  # noqa: F401 - registers the envs
from strategic_reserve_env import IllegalActionError, raw_env
from strategic_reserve_env.config import StartPosition
from strategic_reserve_env.gym_env import StrategicReserveEnv, StrategicReserveVectorEnv

from edge_helpers import assert_vector_masks


def lowest(observations, masks, rng):
    """A deterministic policy: the lowest legal square."""
    return np.argmax(masks, axis=-1)


def highest(observations, masks, rng):
    """Another deterministic policy: the highest legal square."""
    return masks.shape[-1] - 1 - np.argmax(masks[..., ::-1], axis=-1)


@pytest.mark.parametrize("seat", ["random", "red", "blue"])
def test_gymnasium_env_checker(seat):
    check_env(StrategicReserveEnv(seat=seat), skip_render_check=False)


def test_registered_ids():
    single = gymnasium.make("StrategicReserve-v1", seat="blue")
    assert isinstance(single.unwrapped, StrategicReserveEnv)
    vector = gymnasium.make_vec("StrategicReserve-v1", num_envs=3, vectorization_mode="vector_entry_point")
    assert isinstance(vector, StrategicReserveVectorEnv)
    observations, infos = vector.reset(seed=1)
    assert observations.shape == (3, 6, 6, 9) and infos["action_mask"].shape == (3, 36)
    assert vector.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.NEXT_STEP


def test_v0_is_refused_naming_v1():
    """-v0 took the luck-adjusted reward's luck at half its scale: Gymnasium's deprecated-version error names v1."""
    with pytest.raises(gymnasium.error.DeprecatedEnv, match="Please use `StrategicReserve-v1` instead"):
        gymnasium.make("StrategicReserve-v0")
    with pytest.raises(gymnasium.error.DeprecatedEnv, match="Please use `StrategicReserve-v1` instead"):
        gymnasium.make_vec("StrategicReserve-v0", num_envs=2, vectorization_mode="vector_entry_point")


def _aec_game(seed: int, learner_red: bool) -> list[tuple[int, int]]:
    """(rolled, placed) of one AEC game: the learner plays `highest`, the opponent `lowest`."""
    e = raw_env()
    e.reset(seed=seed)
    moves = []
    while not (any(e.terminations.values()) or any(e.truncations.values())):
        mask = e.observe(e.agent_selection)["action_mask"][None]
        learner_moves = (e.agent_selection == "player_0") == learner_red
        action = int((highest if learner_moves else lowest)(None, mask, None)[0])
        moves.append((e.game.rolled, action))
        e.step(action)
    return moves


def _gym_game(env: StrategicReserveEnv, seed: int) -> tuple[list[tuple[int, int]], float]:
    """The same game through the single-agent env: the moves and the learner's final reward."""
    env.reset(seed=seed)
    reward, done = 0.0, False
    while not done:
        action = int(highest(None, env.action_masks()[None], None)[0])
        _, reward, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    return env.games.state.ply[0], reward


@pytest.mark.parametrize("seed", [1, 2, 9])
def test_same_seed_same_game_on_every_interface(seed):
    for seat, learner_red in (("red", True), ("blue", False)):
        aec_moves = _aec_game(seed, learner_red)
        aec_winner_is_learner = len(aec_moves) % 2 == (1 if learner_red else 0)
        single = StrategicReserveEnv(opponent=lowest, seat=seat)
        plies, reward = _gym_game(single, seed)
        assert plies == len(aec_moves)
        assert reward == (1.0 if aec_winner_is_learner else -1.0)
        # the vector env: sub-env i plays the game of seed + i
        vector = StrategicReserveVectorEnv(num_envs=3, opponent=lowest, seat=seat)
        vector.reset(seed=seed - 1)
        finished = None
        for _ in range(len(aec_moves)):
            _, rewards, terminated, truncated, _ = vector.step(highest(None, vector.action_masks(), None))
            if terminated[1] or truncated[1]:
                finished = (int(vector.games.state.ply[1]), float(rewards[1]))
                break
        assert finished == (len(aec_moves), reward)


def test_vector_env_next_step_autoreset_and_masks():
    vector = StrategicReserveVectorEnv(num_envs=16, seat="random")
    observations, infos = vector.reset(seed=3)
    rng = np.random.default_rng(0)
    ended_before = np.zeros(16, dtype=bool)
    episodes = 0
    for _ in range(400):
        masks = infos["action_mask"]
        assert_vector_masks(observations, masks, ended_before)
        assert np.array_equal(masks, vector.action_masks())
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        plies_before = vector.games.state.ply.copy()
        observations, rewards, terminated, truncated, infos = vector.step(actions)
        # an env that ended last step restarts: reward 0, a fresh game at the learner's first decision
        assert np.all(rewards[ended_before] == 0) and not np.any((terminated | truncated)[ended_before])
        assert np.all(vector.games.state.ply[ended_before] <= 1)
        # elsewhere each step is the learner's ply and (unless the game ended) the opponent's
        moved = ~ended_before & ~(terminated | truncated)
        assert np.all(vector.games.state.ply[moved] == plies_before[moved] + 2)
        assert set(np.unique(rewards[terminated])) <= {-1.0, 1.0}
        assert np.all(rewards[~terminated] == 0)
        episodes += int((terminated | truncated).sum())
        ended_before = terminated | truncated
    assert episodes > 50


def test_learner_never_sees_the_opponents_turn():
    vector = StrategicReserveVectorEnv(num_envs=32)
    vector.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(200):
        state, seat = vector.games.state, vector.games.seat
        live = ~state.done
        assert np.all(state.to_move[live] == seat[live])  # every live game waits for the learner
        assert np.all(state.legal[live] != 0)
        masks = vector.action_masks()
        vector.step(np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks]))


def test_reward_when_the_opponent_wins():
    start = StartPosition(board="R" + "." * 35, reserves=(5, 1), to_move="red")
    env = StrategicReserveEnv(seat="red", start=start)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert (reward, terminated, truncated) == (-1.0, True, False)  # Blue placed its last checker
    assert info["seat"] == "red" and not info["action_mask"].any()


def test_truncation_in_the_single_env():
    env = StrategicReserveEnv(seat="red", ply_limit=5)
    env.reset(seed=2)
    results = [env.step(int(np.flatnonzero(env.action_masks())[0]))[1:4] for _ in range(3)]
    assert results[-1] == (0.0, False, True) and results[0] == (0.0, False, False)


def test_illegal_action_loses_or_raises():
    env = StrategicReserveEnv(seat="red")
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    _, reward, terminated, _, info = env.step(illegal)
    assert (reward, terminated) == (-1.0, True)
    assert "is not a legal placement; legal:" in info["illegal_action"]
    strict = StrategicReserveEnv(seat="red", illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(IllegalActionError, match="is not a legal placement"):
        strict.step(illegal)
    vector = StrategicReserveVectorEnv(num_envs=2, seat="red")
    vector.reset(seed=0)
    actions = np.array([np.flatnonzero(~m)[0] for m in vector.action_masks()])
    actions[1] = np.flatnonzero(vector.action_masks()[1])[0]
    _, rewards, terminated, _, infos = vector.step(actions)
    assert rewards[0] == -1 and terminated[0] and infos["illegal_action"].tolist() == [True, False]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seat": "green"}, r"seat must be one of \('random', 'red', 'blue'\)"),
        ({"opponent": "no-such-agent"}, r"unknown agent 'no-such-agent'"),
        ({"opponent": 5}, r"a policy must be 'random', an object with act"),
        ({"reserve": 1}, r"red wins on its first placement before the learner can act; use seat='red'"),
        ({"illegal_action": "ignore"}, r"illegal_action must be one of \('lose', 'raise'\)"),
        ({"reserve": 40}, r"reserve must be in 1\.\.12"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StrategicReserveEnv(**kwargs)


def test_vector_env_bad_input():
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        StrategicReserveVectorEnv(num_envs=0)
    vector = StrategicReserveVectorEnv(num_envs=2)
    vector.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\), got \(3,\)"):
        vector.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="seed must be an int or 2 ints"):
        vector.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="seeds must be non-negative, got -1"):
        vector.reset(seed=-1)


def test_single_env_render_modes():
    env = StrategicReserveEnv(render_mode="ansi", seat="red")
    env.reset(seed=0)
    assert "Red to move" in env.render()
    frame = StrategicReserveEnv(render_mode="rgb_array")
    frame.reset(seed=0)
    assert frame.render().shape[2] == 3


@pytest.mark.parametrize(
    "make",
    [lambda **kw: StrategicReserveEnv(seat="red", **kw), lambda **kw: StrategicReserveVectorEnv(2, seat="red", **kw)],
    ids=["single", "vector"],
)
def test_a_start_dict_without_reserves_starts_with_the_variants_reserve(make):
    env = make(reserve=4, start={"board": "R" + "." * 35})
    env.reset(seed=0)
    assert env.games.config.start.reserves == (4, 4)
    assert env.games.state.reserves().tolist() == [[4, 4]] * env.games.num_games  # nobody has placed yet


@pytest.mark.parametrize("opponent", ["random", lowest])
@pytest.mark.parametrize("reward", ["outcome", "luck_adjusted"])
def test_the_single_env_plays_the_batched_paths_games_step_by_step(opponent, reward):
    """The single env steps its one game on the single-game path (`Game`, ints); sub-env 0 of a vector env of
    two (the batched engine) plays the same seed: every observation, reward, termination, truncation, mask and
    info of it is the single env's, episode after episode, seats drawn at random, illegal actions included."""
    single = StrategicReserveEnv(opponent=opponent, reward=reward)
    vector = StrategicReserveVectorEnv(num_envs=2, opponent=opponent, reward=reward)
    observation, info = single.reset(seed=11)
    observations, infos = vector.reset(seed=11)
    rng = np.random.default_rng(0)
    episodes = steps = 0
    while episodes < 12:
        np.testing.assert_array_equal(observation, observations[0])
        np.testing.assert_array_equal(info["action_mask"], infos["action_mask"][0])
        assert (info["seat"], info["ply"]) == (infos["seat"][0], infos["ply"][0])
        legal = np.flatnonzero(info["action_mask"])
        action = int(rng.integers(36)) if steps % 17 == 5 else int(rng.choice(legal))  # now and then illegal
        observation, reward_, terminated, truncated, info = single.step(action)
        observations, rewards, terminateds, truncateds, infos = vector.step(np.array([action, 0]))
        np.testing.assert_array_equal(observation, observations[0])
        assert (reward_, terminated, truncated) == (rewards[0], terminateds[0], truncateds[0])
        assert ("illegal_action" in info) == bool(infos.get("illegal_action", [False])[0])
        steps += 1
        if terminated or truncated:
            episodes += 1
            observation, info = single.reset()
            observations, _, _, _, infos = vector.step(np.zeros(2, dtype=np.int64))  # next-step auto-reset
    assert steps > 100
