"""The reward hook: ``reward="outcome"``, ``"luck_adjusted"`` or a callable, on the AEC env, the Gymnasium
single and vector envs and the SB3 VecEnv (rewards computed in :mod:`strategic_reserve_env.outcome`)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test

from strategic_reserve_env import env, luck, raw_env
from strategic_reserve_env.config import Config
from strategic_reserve_env.gym_env import StrategicReserveEnv, StrategicReserveVectorEnv
from strategic_reserve_env.learner import LearnerGames
from strategic_reserve_env.outcome import LuckAdjusted, Transition, as_reward_function
from strategic_reserve_env.sb3_env import StrategicReserveVecEnv

VALUE = luck.DEFAULT_VALUE
EXACT = 1e-9  # float64 sums of a few dozen terms
FLOAT32 = 1e-5  # sums of a few dozen float32 rewards (the single-agent envs' dtype)


def lowest(observations, masks, rng):
    """A deterministic policy: the lowest legal square."""
    return np.argmax(masks, axis=-1)


def random_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(B,) a uniformly random legal square of each row (any square of an empty row)."""
    return np.argmax((masks | ~masks.any(-1, keepdims=True)) * rng.random(masks.shape), axis=-1)


def test_reward_spec_errors():
    with pytest.raises(ValueError, match="reward must be one of"):
        as_reward_function("luck")
    for make in (lambda: raw_env(reward=3), lambda: StrategicReserveEnv(reward="win")):
        with pytest.raises(ValueError, match="reward must be one of"):
            make()


def test_checkers_pass_with_luck_adjusted_rewards():
    api_test(env(reward="luck_adjusted"), num_cycles=300)
    api_test(raw_env(reward="luck_adjusted"), num_cycles=300)
    check_env(StrategicReserveEnv(reward="luck_adjusted"), skip_render_check=True)


def play_aec(environment, seed: int, rng: np.random.Generator):
    """One game of random moves; each agent's return, and each agent's own luck (of the rolls after reset)
    computed from the game after each step by :func:`luck.luck_of_latest_roll`."""
    environment.reset(seed=seed)
    returns = dict.fromkeys(environment.possible_agents, 0.0)
    own_luck = dict.fromkeys(environment.possible_agents, 0.0)
    for agent in environment.agent_iter():
        observation, reward, terminated, truncated, _ = environment.last()
        returns[agent] += reward
        if terminated or truncated:
            environment.step(None)
            continue
        environment.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
        game = environment.unwrapped.game
        if not game.done:
            own_luck[environment.agent_selection] += float(luck.luck_of_latest_roll(VALUE, game))
    return returns, own_luck, environment.unwrapped.game.winner


def test_aec_return_is_outcome_minus_own_luck_plus_the_others():
    rng = np.random.default_rng(3)
    for seed in range(6):
        returns, own_luck, winner = play_aec(raw_env(reward="luck_adjusted"), seed, rng)
        for colour, agent in enumerate(("player_0", "player_1")):
            outcome = 1.0 if winner == colour else -1.0
            other = "player_1" if colour == 0 else "player_0"
            assert returns[agent] == pytest.approx(outcome - own_luck[agent] + own_luck[other], abs=EXACT)
        assert sum(returns.values()) == pytest.approx(0.0, abs=EXACT)  # zero-sum, as the outcome


def test_aec_luck_term_has_mean_zero_given_the_action():
    """Exactly: from a mid-game position, for every legal placement, the next roller's reward averaged over
    the 36 rolls that may follow is 0 (forced rolls), and the other agent's is its negative."""
    environment = raw_env(reward="luck_adjusted")
    environment.reset(seed=5)
    for _ in range(9):
        environment.step(int(np.flatnonzero(environment.observe(environment.agent_selection)["action_mask"])[-1]))
    mover = environment.agent_selection
    legal = np.flatnonzero(environment.observe(mover)["action_mask"])
    assert legal.size > 1
    for action in legal:
        roller_rewards, mover_rewards = [], []
        for rolled in range(36):
            trial = copy.deepcopy(environment)
            trial.force_rolls([rolled])
            trial.step(int(action))
            roller = trial.agent_selection
            assert roller != mover and not trial.game.done
            roller_rewards.append(trial.rewards[roller])
            mover_rewards.append(trial.rewards[mover])
        assert np.ptp(roller_rewards) > 0  # the rolls' luck differs
        assert np.mean(roller_rewards) == pytest.approx(0.0, abs=EXACT)
        np.testing.assert_allclose(mover_rewards, -np.array(roller_rewards), atol=EXACT)


def test_aec_outcome_reward_is_unchanged_by_the_hook():
    """The default and "outcome" give the outcome alone: the same rewards, step by step, as before."""
    rewards = []
    for reward in (None, "outcome"):
        environment = raw_env() if reward is None else raw_env(reward=reward)
        environment.reset(seed=2)
        seen = []
        for _agent in environment.agent_iter():
            observation, r, terminated, truncated, _ = environment.last()
            seen.append(r)
            action = None if terminated or truncated else int(np.flatnonzero(observation["action_mask"])[0])
            environment.step(action)
        rewards.append(seen)
    assert rewards[0] == rewards[1] and set(rewards[0]) <= {-1, 0, 1} and rewards[0][-2:] in ([1, -1], [-1, 1])


def test_gym_env_luck_adjusted_matches_the_aec_env():
    """A learner on Red against the lowest-square opponent: its luck-adjusted return in the Gymnasium env
    equals player_0's in the AEC env playing the same moves with the same dice (seed)."""
    for seed in range(4):
        single = StrategicReserveEnv(opponent=lowest, seat="red", reward="luck_adjusted")
        observation, info = single.reset(seed=seed)
        gym_return, done = 0.0, False
        while not done:
            observation, reward, terminated, truncated, info = single.step(int(np.argmax(info["action_mask"])))
            gym_return += reward
            done = terminated or truncated
        aec = raw_env(reward="luck_adjusted")
        aec.reset(seed=seed)
        aec_return = 0.0
        for agent in aec.agent_iter():
            observation, reward, terminated, truncated, _ = aec.last()
            if agent == "player_0":
                aec_return += reward
            aec.step(None if terminated or truncated else int(np.argmax(observation["action_mask"])))
        assert gym_return == pytest.approx(aec_return, abs=FLOAT32)


def first_episode_returns(reward, num_games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random learners against the random opponent in a vector env: each sub-env's first return and outcome."""
    vector = StrategicReserveVectorEnv(num_games, reward=reward)
    vector.reset(seed=seed)
    games: LearnerGames = vector.games
    rng = np.random.default_rng(seed)
    returns, outcomes, live = np.zeros(num_games), np.zeros(num_games), np.ones(num_games, dtype=bool)
    while live.any():
        before = games.state.winner.copy()
        _, rewards, terminated, truncated, _ = vector.step(random_actions(vector.action_masks(), rng))
        ended = live & (terminated | truncated)
        returns += np.where(live, rewards, 0.0)
        outcomes[ended] = np.where(games.state.winner[ended] == games.seat[ended], 1.0, -1.0)
        assert (before[ended] == -1).all()
        live &= ~ended
    return returns, outcomes


def test_luck_adjusted_returns_keep_the_mean_and_lose_most_of_the_variance():
    """Same seeds and moves, both rewards: the luck-adjusted return's mean is the outcome's (their difference,
    a sum of mean-zero luck terms, within 4 standard errors of 0) and its variance under half the outcome's
    (measured: about 0.26 of it for random play under the race model)."""
    games = 3000
    outcome_returns, outcomes = first_episode_returns("outcome", games, seed=11)
    adjusted, adjusted_outcomes = first_episode_returns("luck_adjusted", games, seed=11)
    np.testing.assert_array_equal(outcomes, adjusted_outcomes)  # the same games
    np.testing.assert_array_equal(outcome_returns, outcomes)
    difference = adjusted - outcome_returns
    assert abs(difference.mean()) < 4 * difference.std() / np.sqrt(games)
    assert adjusted.var() < 0.5 * outcome_returns.var()


def test_vector_env_is_deterministic_by_seed_and_matches_single_envs():
    def rewards_of(make, steps=60):
        rng, seen = np.random.default_rng(0), []
        environment = make()
        environment.reset(seed=21)
        for _ in range(steps):
            masks = environment.action_masks()
            seen.append(np.atleast_1d(environment.step(lowest(None, masks, rng))[1]))
        return np.array(seen)

    vector = rewards_of(lambda: StrategicReserveVectorEnv(3, opponent=lowest, reward="luck_adjusted"))
    np.testing.assert_array_equal(
        vector, rewards_of(lambda: StrategicReserveVectorEnv(3, opponent=lowest, reward="luck_adjusted"))
    )
    assert not np.isin(vector, (-1.0, 0.0, 1.0)).all()
    single = StrategicReserveEnv(opponent=lowest, reward="luck_adjusted")
    single.reset(seed=21)
    for step in range(12):  # the first sub-env's first game, step by step (it lasts longer than 12 steps)
        reward = single.step(int(lowest(None, single.action_masks(), None)))[1]
        assert np.float32(reward) == vector[step, 0]


def test_callable_sees_the_rolls_since_the_learners_decision():
    seen: list[Transition] = []

    def record(transition: Transition) -> np.ndarray:
        seen.append(transition)
        return transition.outcome * 2.0

    games = LearnerGames(Config(), 8, "random", seat="red", reward=record)
    games.reset(np.arange(8))
    rng = np.random.default_rng(1)
    for _ in range(30):
        step = games.step(random_actions(games.action_masks(), rng), autoreset=True)
        np.testing.assert_array_equal(step.rewards, 2.0 * step.outcomes)
        transition = seen[-1]
        opponent, learner = transition.rolls
        assert not opponent.own.any() and learner.own.all()
        np.testing.assert_array_equal(learner.made, ~transition.ended)  # the learner rolled where it goes on
        for roll in transition.rolls:
            rows = roll.made
            me, opp, reserve_me, reserve_opp = (x[rows] for x in roll.before)
            captured = opp & ~roll.after.opp[rows]
            np.testing.assert_array_equal(roll.after.me[rows], me)
            np.testing.assert_array_equal(roll.after.reserve_opp[rows], reserve_opp + np.bitwise_count(captured))
            np.testing.assert_array_equal(roll.after.reserve_me[rows], reserve_me)
            assert (roll.after.legal[rows] != 0).all()
    assert any(t.ended.any() for t in seen)


def test_a_bad_reward_function_raises_and_changes_nothing():
    games = LearnerGames(Config(), 2, "random", reward=lambda transition: np.zeros(3))
    games.reset([1, 2])
    state = games.state
    with pytest.raises(ValueError, match="reward function returned shape"):
        games.step(np.argmax(games.action_masks(), axis=-1))
    assert games.state is state


def test_sb3_vec_env_luck_adjusted_rewards_and_outcomes():
    vec = StrategicReserveVecEnv(16, opponents=("random",), seed=4, reward=LuckAdjusted(VALUE))
    plain = StrategicReserveVecEnv(16, opponents=("random",), seed=4)
    vec.reset(), plain.reset()
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(60):
        actions = random_actions(vec.action_masks(), rng)
        for environment in (vec, plain):
            environment.step_async(actions)
        (_, rewards, done, infos), (_, plain_rewards, plain_done, plain_infos) = vec.step_wait(), plain.step_wait()
        np.testing.assert_array_equal(done, plain_done)
        for i in np.flatnonzero(done):
            assert infos[i]["learner_won"] == plain_infos[i]["learner_won"] == (plain_rewards[i] > 0)
            finished += 1
        assert not np.isin(rewards, (-1.0, 0.0, 1.0)).all()
    assert finished > 0
