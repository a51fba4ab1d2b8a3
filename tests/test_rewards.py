"""The reward hook: `reward="outcome"`, `"luck_adjusted"` or a callable, on the AEC env, the Gymnasium
single and vector envs and the SB3 VecEnv (rewards computed in `strategic_reserve_env.core.outcome`), the
ledger's scales (a roll's luck counts 2 x against a +-1 reward, 1 x against a score) wherever results are
luck-adjusted, and reward callables that fail (nothing changes)."""

from __future__ import annotations

import copy
import functools
import pickle

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test

from experiments.reward_variance import arena_returns, env_returns
from strategic_reserve_env import env, raw_env
from strategic_reserve_env.agents import RandomAgent
from strategic_reserve_env.agents.greedy import GreedyAgent
from strategic_reserve_env.core import luck
from strategic_reserve_env.core.board import RED
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.outcome import (
    OUTCOME,
    REWARD_SCALE,
    SCORE_SCALE,
    Ledger,
    LuckAdjusted,
    Transition,
    as_reward_function,
    checked_rewards,
    reward,
)
from strategic_reserve_env.envs import arena
from strategic_reserve_env.envs.gym_env import StrategicReserveEnv, StrategicReserveVectorEnv
from strategic_reserve_env.envs.learner import LearnerGames
from strategic_reserve_env.envs.sb3_env import StrategicReserveVecEnv
from strategic_reserve_env.evaluation.tournament import Settings, dice_seeds, play_pairing

from conftest import RaceByRolls

VALUE = luck.DEFAULT_VALUE
EXACT = 1e-9  # float64 sums of a few dozen terms
LUCK_ON_REWARDS = 2.0  # a roll's luck is a difference of win probabilities; a +-1 reward's win and loss are 2 apart
SIGMAS = 4.0  # tolerance of the statistical tests on means: a true mean-zero effect fails one in ~16,000 seeds
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
    computed from the game after each step by `luck.luck_of_latest_roll`."""
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


def test_aec_return_is_outcome_minus_twice_own_luck_plus_twice_the_others():
    """The luck, a difference of win probabilities, counts twice against the +-1 outcome."""
    rng = np.random.default_rng(3)
    for seed in range(6):
        returns, own_luck, winner = play_aec(raw_env(reward="luck_adjusted"), seed, rng)
        for colour, agent in enumerate(("player_0", "player_1")):
            outcome = 1.0 if winner == colour else -1.0
            other = "player_1" if colour == 0 else "player_0"
            expected = outcome - LUCK_ON_REWARDS * (own_luck[agent] - own_luck[other])
            assert returns[agent] == pytest.approx(expected, abs=EXACT)
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
    for spec in (None, "outcome"):
        environment = raw_env() if spec is None else raw_env(reward=spec)
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


@pytest.mark.slow
def test_luck_adjusted_returns_keep_the_mean_and_lose_most_of_the_variance():
    """Random learners against the random opponent in the vector env, same seeds and moves, both rewards, the
    value function fitted on random play (race-random): the luck-adjusted return's mean is the outcome's (their
    difference, a sum of mean-zero luck terms, within SIGMAS standard errors of 0) and its variance at most
    0.15 of the outcome's (measured 0.11; 0.30 with the luck at half its scale). Under the race value fitted on
    greedy play, half the scale had looked right by accident here (0.27, against 1.08 at the right scale)."""
    games = 3000
    outcome_returns, outcomes = first_episode_returns("outcome", games, seed=11)
    adjusted, adjusted_outcomes = first_episode_returns(LuckAdjusted(luck.RANDOM_RACE_VALUE), games, seed=11)
    np.testing.assert_array_equal(outcomes, adjusted_outcomes)  # the same games
    np.testing.assert_array_equal(outcome_returns, outcomes)
    difference = adjusted - outcome_returns
    assert abs(difference.mean()) < SIGMAS * difference.std() / np.sqrt(games)
    assert adjusted.var() <= 0.15 * outcome_returns.var()


def _agree(returns) -> None:
    """The luck-adjusted mean return within the outcome's 95 % interval, and the paired difference of the two
    (a sum of mean-zero luck terms) within SIGMAS standard errors of 0."""
    games = len(returns.outcome)
    half_width = 1.96 * returns.outcome.std(ddof=1) / np.sqrt(games)
    assert abs(returns.adjusted.mean() - returns.outcome.mean()) < half_width
    difference = returns.adjusted - returns.outcome
    assert abs(difference.mean()) < SIGMAS * difference.std(ddof=1) / np.sqrt(games)


@pytest.mark.slow
def test_greedy_learner_against_greedy_keeps_under_an_eighth_of_the_variance():
    """The issue's measure (experiments/reward_variance.py): a greedy learner against greedy in LearnerGames
    (the single-agent envs' engine), 3,000 games, race value: the luck-adjusted return's variance at most 0.12
    of the outcome's (measured 0.083; 0.30 with the luck at half its scale), the means in agreement."""
    greedy = GreedyAgent()
    returns = env_returns(greedy, greedy, VALUE, 3000, seed=1)
    assert returns.ratio <= 0.12
    _agree(returns)


@pytest.mark.slow
def test_random_self_play_in_the_arena_keeps_under_a_seventh_of_the_variance():
    """Random self-play in the arena, 3,000 games, race-random value: Red's luck-adjusted return (+-1 scale,
    `arena.Games.adjusted` with REWARD_SCALE) has at most 0.15 of the outcome's variance (measured 0.11;
    0.31 at half the scale), the means in agreement."""
    returns = arena_returns(RandomAgent(), luck.RANDOM_RACE_VALUE, 3000, seed=0)
    assert returns.ratio <= 0.15
    _agree(returns)


def test_scales_convert_luck_by_the_distance_of_a_win_from_a_loss():
    """A luck of dp (a difference of win probabilities) moves an expected result by exactly what the scale
    makes of dp: 2 dp on the +-1 rewards, dp on the scores."""
    assert REWARD_SCALE.luck(0.25) == 0.5 and SCORE_SCALE.luck(0.25) == 0.25
    for scale in (REWARD_SCALE, SCORE_SCALE):
        assert scale.of_probability(0.7) - scale.of_probability(0.45) == pytest.approx(scale.luck(0.25))
        np.testing.assert_array_equal(scale.of([1, -1, 0]), [scale.win, scale.loss, scale.draw])
        assert scale.of_probability(1.0) == scale.win and scale.of_probability(0.0) == scale.loss
    assert REWARD_SCALE.adjusted(1.0, 0.1) == pytest.approx(0.8) and SCORE_SCALE.adjusted(1.0, 0.1) == 0.9


def test_the_arena_adjusts_scores_and_rewards_on_their_own_scales():
    """Game by game: Red's luck-adjusted score is Red's score less 1 x its net luck, its luck-adjusted reward
    the outcome less 2 x, so the score is (reward + 1) / 2 as the raw ones are; Blue's are Red's mirror."""
    played = arena.play(
        [GreedyAgent(), RandomAgent()],
        np.array([0, 1] * 20),
        dice_seeds(3, 20),
        Config(),
        [np.random.default_rng(1), np.random.default_rng(2)],
        luck=VALUE,
    )
    assert played.red_luck is not None and np.any(played.red_luck != 0)
    red_outcome = reward(played.winner, np.full(40, RED))
    red_agent = played.red_agent
    score = played.adjusted(SCORE_SCALE, SCORE_SCALE.of(red_outcome), red_agent)
    rewards = played.adjusted(REWARD_SCALE, REWARD_SCALE.of(red_outcome), red_agent)
    np.testing.assert_allclose(score, SCORE_SCALE.of(red_outcome) - played.red_luck, atol=EXACT)
    np.testing.assert_allclose(rewards, red_outcome - 2.0 * played.red_luck, atol=EXACT)
    np.testing.assert_allclose(score, (rewards + 1.0) / 2.0, atol=EXACT)
    blue = played.adjusted(SCORE_SCALE, 1.0 - SCORE_SCALE.of(red_outcome), 1 - red_agent)
    np.testing.assert_allclose(blue, 1.0 - score, atol=EXACT)
    with pytest.raises(ValueError, match="no luck was kept"):
        arena.Games(played.red_agent, played.winner, played.plies, played.truncated).adjusted(SCORE_SCALE, score, 0)


def test_the_tournaments_adjusted_scores_take_the_luck_once():
    """The tournament's luck-adjusted per-pair scores are the scores less 1 x the net luck the arena keeps on
    the same dice (the first agent's and Red's); greedy against greedy keeps most of the variance cut."""
    settings = Settings(agents=[], games=200, seed=5, progress=False)
    pairing = play_pairing("greedy", "random", settings)
    agents = [GreedyAgent(), RandomAgent()]
    red_agent = np.tile([0, 1], 100)
    played = arena.play(
        agents,
        red_agent,
        dice_seeds(5, 100),
        Config(),
        [np.random.default_rng([5, 1, index]) for index in range(2)],
        luck=VALUE,
    )
    assert played.red_luck is not None
    a_score = np.where(played.winning_agent == 0, 1.0, np.where(played.winning_agent < 0, 0.5, 0.0))
    a_luck = np.where(red_agent == 0, played.red_luck, -played.red_luck)
    np.testing.assert_allclose(pairing.pair_scores, a_score.reshape(-1, 2).mean(axis=1), atol=EXACT)
    np.testing.assert_allclose(pairing.adjusted_pair_scores, (a_score - a_luck).reshape(-1, 2).mean(axis=1), atol=EXACT)
    red_score = np.where(played.winner == RED, 1.0, np.where(played.winner < 0, 0.5, 0.0))
    np.testing.assert_allclose(
        pairing.red_adjusted_pair_scores, (red_score - played.red_luck).reshape(-1, 2).mean(axis=1), atol=EXACT
    )
    greedy = play_pairing("greedy", "greedy", Settings(agents=[], games=400, seed=2, progress=False))
    assert greedy.variance_ratio > 4  # raw per-pair variance over adjusted: about 1 / 0.08 pair by pair


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


# -- reward callables that fail change nothing ---------------------------------------------------------------


def _raise(transition: Transition) -> np.ndarray:
    raise RuntimeError("the user's reward function broke")


#: a bad answer of a reward function (given the transition), the error it must raise, and the message's words
BAD_ANSWERS = {
    "raises": (_raise, RuntimeError, "the user's reward function broke"),
    "wrong shape": (lambda t: np.zeros(len(t.outcome) + 1), ValueError, "returned shape"),
    "strings": (lambda t: np.array(["1"] * len(t.outcome)), TypeError, "rewards are real numbers"),
    "complex": (lambda t: t.outcome + 1j, TypeError, "rewards are real numbers"),
    "nan": (lambda t: np.where(np.arange(len(t.outcome)) == 0, np.nan, 0.0), ValueError, "must be finite"),
    "infinite": (lambda t: np.full(len(t.outcome), -np.inf), ValueError, "must be finite"),
    "none": (lambda t: None, TypeError, "rewards are real numbers"),
    "ragged": (lambda t: [[1.0], [1.0, 2.0]], TypeError, "not \\(rows,\\) numbers|real numbers"),
}


def _aec_state(environment) -> tuple:
    """What the AEC env holds that a step may change: the game, the dice, the rewards, the infos, who acts."""
    game, dice = environment.game, environment.dice
    return (
        repr(game),
        tuple(game.history),
        (dice.key, dice.counter, tuple(dice.forced)),
        environment.agent_selection,
        tuple(environment.agents),
        *(
            tuple(sorted(getattr(environment, name).items()))
            for name in ("rewards", "_cumulative_rewards", "terminations", "truncations")
        ),
        tuple(sorted((agent, repr(info)) for agent, info in environment.infos.items())),
    )


class Switchable:
    """A reward function that answers the outcome, or, while `bad` is set, the bad answer `name`."""

    def __init__(self, name: str) -> None:
        self.name, self.bad = name, False

    def __call__(self, transition: Transition) -> np.ndarray:
        return BAD_ANSWERS[self.name][0](transition) if self.bad else transition.outcome.astype(np.float64)


@pytest.mark.parametrize("name", sorted(BAD_ANSWERS))
def test_a_failing_reward_function_leaves_the_aec_env_as_it_was(name):
    """The step is worked out, rewards included, before anything is committed: a reward function that raises
    or answers badly raises (naming what it returned), and the env, its game, dice, rewards, infos and agent to
    act are exactly as before; once it answers well, the same step gives what it gives on an untouched copy."""
    function = Switchable(name)
    environment = raw_env(reward=function)
    environment.reset(seed=4, options={"rolls": [0, 0, 0, 35]})
    for _ in range(3):
        environment.step(int(np.flatnonzero(environment.observe(environment.agent_selection)["action_mask"])[0]))
    before, game = pickle.dumps(environment), environment.game
    state = _aec_state(environment)
    action = int(np.flatnonzero(environment.observe(environment.agent_selection)["action_mask"])[0])
    function.bad = True
    _, error, words = BAD_ANSWERS[name]
    with pytest.raises(error, match=words):
        environment.step(action)
    function.bad = False
    assert _aec_state(environment) == state and environment.game is game
    environment.step(action)
    untouched = pickle.loads(before)
    untouched.step(action)
    assert _aec_state(environment) == _aec_state(untouched)


def test_a_reward_function_failing_on_the_last_placement_leaves_the_game_unfinished():
    """The step that wins the game: the outcome is not committed when the reward function fails."""
    function = Switchable("nan")
    environment = raw_env(reward=function, start={"reserves": (1, 3)})
    environment.reset(seed=0)
    before = _aec_state(environment)
    function.bad = True
    with pytest.raises(ValueError, match="must be finite"):
        environment.step(int(np.flatnonzero(environment.observe("player_0")["action_mask"])[0]))
    function.bad = False
    assert _aec_state(environment) == before and not any(environment.terminations.values())


@pytest.mark.parametrize("name", sorted(BAD_ANSWERS))
def test_a_failing_reward_function_leaves_the_single_agent_envs_as_they_were(name):
    """LearnerGames (the Gymnasium envs and the SB3 VecEnv step through it): the same, state and streams kept."""
    function = Switchable(name)
    single = StrategicReserveEnv(reward=function)
    single.reset(seed=3)
    action = int(np.argmax(single.action_masks()))
    before = pickle.dumps(single.games)
    function.bad = True
    _, error, words = BAD_ANSWERS[name]
    with pytest.raises(error, match=words):
        single.step(action)
    function.bad = False
    assert pickle.dumps(single.games) == before
    outcome = StrategicReserveEnv()
    outcome.reset(seed=3)
    assert single.step(action)[1:4] == outcome.step(action)[1:4]
    np.testing.assert_array_equal(single.games.state.me, outcome.games.state.me)


def test_a_reward_beyond_float32_is_refused_by_the_single_agent_envs():
    """Their rewards are float32: a finite float64 that overflows it is refused, not turned into infinity."""
    games = LearnerGames(Config(), 2, "random", reward=lambda transition: np.full(2, 1e300))
    games.reset([1, 2])
    with pytest.raises(ValueError, match="beyond float32"):
        games.step(np.argmax(games.action_masks(), axis=-1))
    np.testing.assert_array_equal(checked_rewards([1e300, 0], 2), [1e300, 0.0])  # fine as float64 (the AEC env)


def _two(transition, other):
    return transition.outcome


class NoArgument:
    def __call__(self) -> np.ndarray:
        return np.zeros(2)


@pytest.mark.parametrize(
    "function",
    [lambda: 0.0, _two, NoArgument(), lambda *, transition: transition.outcome],
    ids=["no argument", "two arguments", "a method of none", "keyword only"],
)
def test_a_reward_callable_with_the_wrong_signature_is_refused_at_construction(function):
    for make in (
        lambda: raw_env(reward=function),
        lambda: env(reward=function),
        lambda: StrategicReserveEnv(reward=function),
        lambda: StrategicReserveVectorEnv(2, reward=function),
        lambda: StrategicReserveVecEnv(2, opponents=("random",), reward=function),
    ):
        with pytest.raises(ValueError, match="must take one argument"):
            make()


def test_reward_callables_that_take_one_argument_are_accepted():
    def with_default(transition, scale=2.0):
        return scale * transition.outcome

    for function in (
        with_default,
        functools.partial(_two, other=None),
        lambda *args: args[0].outcome,
        as_reward_function("outcome"),
    ):
        environment = raw_env(reward=function)
        environment.reset(seed=1)
        environment.step(int(np.flatnonzero(environment.observe(environment.agent_selection)["action_mask"])[0]))


def test_the_ledger_records_no_roll_for_a_reward_function_that_ignores_them():
    """uses_rolls = False (the outcome): the reward function is still called, with no rolls recorded; a
    function without the attribute gets them."""
    seen: list[Transition] = []

    class Ignoring:
        uses_rolls = False

        def __call__(self, transition: Transition) -> np.ndarray:
            seen.append(transition)
            return transition.outcome.astype(np.float64)

    for function in (Ignoring(), lambda transition: seen.append(transition) or transition.outcome * 1.0):
        games = LearnerGames(Config(), 4, "random", seat="red", reward=function)
        games.reset(np.arange(4))
        games.step(np.argmax(games.action_masks(), axis=-1))
    assert seen[0].rolls == () and len(seen[1].rolls) == 2
    ledger = Ledger(2, LuckAdjusted(VALUE))
    with pytest.raises(ValueError, match="returned shape"):
        Ledger(3, lambda transition: np.zeros(2)).settle()
    assert ledger.settle().tolist() == [0.0, 0.0]


# -- the AEC env's outcome step: no trial game, no ledger, the same results ------------------------------------


def _random_play_trace(environment, seed: int, games: int) -> list:
    """Everything the AEC env shows after each step of `games` random games (seeded choices), in order."""
    rng, trace = np.random.default_rng(seed), []
    environment.reset(seed=seed)
    for _ in range(games):
        for agent in environment.agent_iter():
            observation, reward_now, terminated, truncated, info = environment.last()
            trace.append((agent, reward_now, terminated, truncated, repr(info), observation["observation"].tobytes()))
            legal = np.flatnonzero(observation["action_mask"])
            environment.step(None if terminated or truncated else int(rng.choice(legal)))
            trace.append((_aec_state(environment), environment.observe(agent)["action_mask"].tobytes()))
        environment.reset()
    return trace


@pytest.mark.slow
def test_the_outcome_step_gives_what_the_general_step_gives():
    """`reward="outcome"` takes the AEC env's fast step (no trial game, no ledger); a callable giving the
    same outcome takes the general one (a trial game, the ledger): over many random games, with wins and
    truncations, both show the same rewards, infos, observations, terminations and dice, step by step."""
    for start, ply_limit in (({}, 1000), ({"reserves": (3, 2)}, 9)):
        fast = raw_env(start=start, ply_limit=ply_limit)
        general = raw_env(start=start, ply_limit=ply_limit, reward=lambda transition: OUTCOME(transition))
        assert _random_play_trace(fast, 7, 40) == _random_play_trace(general, 7, 40)


def test_the_outcome_step_takes_no_copy_of_the_game(monkeypatch):
    """The built-in outcome cannot fail: its steps copy no game (the general step plays a trial copy)."""
    environment = raw_env()
    environment.reset(seed=3)
    monkeypatch.setattr(Game, "copy", lambda self: pytest.fail("the outcome step copied the game"))
    for _ in range(30):
        if not environment.agents:
            environment.reset()
        observation, _, terminated, truncated, _ = environment.last()
        environment.step(None if terminated or truncated else int(np.flatnonzero(observation["action_mask"])[-1]))


@pytest.mark.parametrize("reward_spec", ["outcome", "custom"])
def test_a_bad_forced_roll_raises_before_the_placement(reward_spec):
    """A forced roll written into the dice directly (not through `force_rolls`) that is not a square: the
    step raises, naming it, before the placement, on both steps; the env is as it was."""
    environment = raw_env() if reward_spec == "outcome" else raw_env(reward=lambda transition: OUTCOME(transition))
    environment.reset(seed=5)
    environment.dice.forced.append(36)
    state = _aec_state(environment)
    action = int(np.flatnonzero(environment.observe(environment.agent_selection)["action_mask"])[0])
    with pytest.raises(ValueError, match="forced roll 36 is not a square"):
        environment.step(action)
    assert _aec_state(environment) == state
    environment.dice.forced[0] = 35
    environment.step(action)
    assert environment.game.rolled == 35 and environment.dice.forced == []


def _general_luck_adjusted(transition: Transition) -> np.ndarray:
    """`LuckAdjusted` over the race value asked about every distinct roll, handed the whole `Transition`: the
    general path (the rolls kept, the reward function called) of what `reward="luck_adjusted"` settles."""
    return LuckAdjusted(RaceByRolls())(transition)


def _single_env_trace(reward_spec, seed: int, steps: int) -> list:
    """(observation, reward, terminated, truncated) of `steps` random legal steps of the single env."""
    environment = StrategicReserveEnv(reward=reward_spec)
    rng = np.random.default_rng(seed)
    _, info = environment.reset(seed=seed)
    trace = []
    for _ in range(steps):
        observation, reward_now, terminated, truncated, info = environment.step(
            int(rng.choice(np.flatnonzero(info["action_mask"])))
        )
        trace.append((observation.tobytes(), repr(reward_now), terminated, truncated))
        if terminated or truncated:
            _, info = environment.reset()
    return trace


def test_the_ledger_settles_the_luck_adjusted_reward_as_its_whole_transition_gives_it():
    """`reward="luck_adjusted"` is settled from the net luck the ledger sums as the rolls are made (a `Game`'s
    on ints, the race value from each roll's captures); a callable handing the `Transition` to a
    `LuckAdjusted` whose value is asked about every distinct roll takes the general path. The same rewards,
    bit for bit, and the same games on the AEC env (wins and truncations), the single env, the vector env
    and the SB3 VecEnv."""
    for start, ply_limit in (({}, 1000), ({"reserves": (3, 2)}, 9)):
        fast = raw_env(start=start, ply_limit=ply_limit, reward="luck_adjusted")
        general = raw_env(start=start, ply_limit=ply_limit, reward=_general_luck_adjusted)
        assert _random_play_trace(fast, 3, 8) == _random_play_trace(general, 3, 8)
    assert _single_env_trace("luck_adjusted", 4, 300) == _single_env_trace(_general_luck_adjusted, 4, 300)
    vectors = [StrategicReserveVectorEnv(6, reward=spec) for spec in ("luck_adjusted", _general_luck_adjusted)]
    sb3s = [StrategicReserveVecEnv(6, seed=9, reward=spec) for spec in ("luck_adjusted", _general_luck_adjusted)]
    infos = [vector.reset(seed=2)[1] for vector in vectors]
    for sb3 in sb3s:
        sb3.reset()
    rng = np.random.default_rng(5)
    for _ in range(60):
        actions = random_actions(infos[0]["action_mask"], rng)
        steps = [vector.step(actions) for vector in vectors]
        assert steps[0][1].tobytes() == steps[1][1].tobytes() and steps[0][0].tobytes() == steps[1][0].tobytes()
        infos = [step[-1] for step in steps]
        actions = random_actions(sb3s[0].action_masks(), rng)
        results = [sb3.step(actions) for sb3 in sb3s]
        assert results[0][1].tobytes() == results[1][1].tobytes() and results[0][0].tobytes() == results[1][0].tobytes()


class _FailingValue:
    """The race value, or, while `bad` is set, a value function that raises."""

    name = "failing"

    def __init__(self) -> None:
        self.bad = False

    def __call__(self, after: luck.AfterRoll) -> np.ndarray:
        if self.bad:
            raise RuntimeError("the value function failed")
        return VALUE(after)


def test_a_luck_adjusted_value_failing_as_the_roll_is_recorded_leaves_the_envs_as_they_were():
    """The built-in `LuckAdjusted` sums its luck when the roll is recorded, before the rewards are settled: a
    value function failing there raises, and the AEC env and the single env are as before the step."""
    value = _FailingValue()
    environment = raw_env(reward=LuckAdjusted(value))
    environment.reset(seed=4)
    state = _aec_state(environment)
    action = int(np.flatnonzero(environment.observe(environment.agent_selection)["action_mask"])[0])
    single = StrategicReserveEnv(reward=LuckAdjusted(value))
    single.reset(seed=3)
    fields = lambda: {name: pickle.dumps(field) for name, field in vars(single.games).items()}  # noqa: E731
    before = fields()
    value.bad = True
    with pytest.raises(RuntimeError, match="the value function failed"):
        environment.step(action)
    with pytest.raises(RuntimeError, match="the value function failed"):
        single.step(int(np.argmax(single.action_masks())))
    value.bad = False  # (the value is pickled with the games)
    assert _aec_state(environment) == state and fields() == before
    environment.step(action)
    assert environment.game.ply == 1


class _ByRolls:
    """`value` asked about each distinct position after a roll, as any value function of one's own is: the
    general path of a race value's luck."""

    def __init__(self, value: luck.RaceValue) -> None:
        self.value, self.name = value, f"{value.name}-by-rolls"

    def __call__(self, after: luck.AfterRoll) -> np.ndarray:
        return self.value(after)


@pytest.mark.parametrize("value", [luck.DEFAULT_VALUE, luck.RANDOM_RACE_VALUE], ids=lambda value: value.name)
def test_the_race_adjusted_step_gives_the_general_steps_rewards_bit_for_bit_without_a_copy(value, monkeypatch):
    """The AEC env's built-in luck-adjusted reward under a race value plays its steps on the env's game, the
    luck on Python floats (no trial copy, no ledger); a callable handing the `Transition` to a `LuckAdjusted`
    whose value is asked about each distinct roll takes the general step. Over random games with wins and
    truncations, every reward is the same float bit for bit, and the games are the same."""

    def general(transition: Transition) -> np.ndarray:
        return LuckAdjusted(_ByRolls(value))(transition)

    for start, ply_limit in (({}, 1000), ({"reserves": (3, 2)}, 9)):
        traces = []
        for reward_spec in (general, LuckAdjusted(value)):
            if reward_spec is not general:
                monkeypatch.setattr(Game, "copy", lambda self: pytest.fail("the race-adjusted step copied the game"))
            trace = _random_play_trace(raw_env(start=start, ply_limit=ply_limit, reward=reward_spec), 11, 12)
            traces.append([(*step, step[1].hex()) if isinstance(step[1], float) else step for step in trace])
            monkeypatch.undo()
        assert traces[0] == traces[1]
        assert any(step[1] not in (0.0, 1.0, -1.0) for step in traces[1] if isinstance(step[1], float))


def test_the_single_envs_built_in_rewards_are_the_ledgers_bit_for_bit_and_its_steps_make_no_state(monkeypatch):
    """The Gymnasium single env works the built-in rewards out on Python floats and keeps its one game as a
    `Game`: its steps, observations and infos build no engine `State`. A callable giving the same reward
    takes the ledger; over random games both show the same observations and the same float32 rewards bit
    for bit."""
    outcome_trace = _single_env_trace("outcome", 6, 200)
    assert outcome_trace == _single_env_trace(lambda transition: OUTCOME(transition), 6, 200)
    assert {step[1] for step in outcome_trace} == {"0.0", "1.0", "-1.0"}
    environment = StrategicReserveEnv(reward="luck_adjusted")
    _, info = environment.reset(seed=2)
    monkeypatch.setattr(Game, "to_state", lambda self: pytest.fail("a step of the single env built a State"))
    for _ in range(100):
        _, _, terminated, truncated, info = environment.step(int(np.flatnonzero(info["action_mask"])[0]))
        if terminated or truncated:
            monkeypatch.undo()
            _, info = environment.reset()
            monkeypatch.setattr(Game, "to_state", lambda self: pytest.fail("a step of the single env built a State"))
