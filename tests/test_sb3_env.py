"""The SB3 VecEnv: masks after auto-reset, terminal observations, opponents, VecMonitor, and bad input (settings,
actions, call order, faulty opponents) answered by a clear error with nothing changed."""

from __future__ import annotations

import numpy as np
import pytest
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import VecMonitor

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import LEGAL_PLANE
from strategic_reserve_env.core.policies import UniformRandomPolicy
from strategic_reserve_env.envs.learner import LearnerGames, OpponentError, ResetNeeded
from strategic_reserve_env.envs.sb3_env import StrategicReserveVecEnv

from env_checks import assert_unchanged, snapshot


class CountingPolicy(UniformRandomPolicy):
    """Random, counting its calls and the games it was asked about."""

    def __init__(self, name: str) -> None:
        self.name, self.calls, self.rows = name, 0, 0

    def act(self, observations, masks, rng):
        self.calls += 1
        self.rows += len(masks)
        return super().act(observations, masks, rng)

    def act_from_uniforms(self, legal, uniforms):  # what the envs call: each game's own random stream
        self.calls += 1
        self.rows += len(legal)
        return super().act_from_uniforms(legal, uniforms)


def _random_actions(env, rng):
    masks = get_action_masks(env)
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def test_masks_match_observations_after_auto_reset():
    env = VecMonitor(StrategicReserveVecEnv(32, seed=1))
    assert is_masking_supported(env)
    observations = env.reset()
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(150):
        masks = get_action_masks(env)
        assert masks.shape == (32, 36) and masks.dtype == bool
        assert np.array_equal(masks, observations[..., LEGAL_PLANE].reshape(32, 36).astype(bool))
        assert masks.any(axis=1).all()  # every observation is a decision of the learner
        observations, rewards, dones, infos = env.step(_random_actions(env, rng))
        for i in np.flatnonzero(dones):
            resets += 1
            info = infos[i]
            assert info["TimeLimit.truncated"] is False and rewards[i] in (-1.0, 1.0)
            assert info["learner_won"] == (rewards[i] > 0)
            assert "episode" in info and info["episode"]["r"] == rewards[i]  # VecMonitor
            final = info["terminal_observation"]
            assert final.shape == (6, 6, 9) and not final[..., LEGAL_PLANE].any()
            assert not np.array_equal(final, observations[i])  # the returned observation is the new game's
        assert np.all(rewards[~dones] == 0)
    assert resets > 100


def test_truncation_is_reported():
    env = StrategicReserveVecEnv(8, config=Config(ply_limit=6), seed=0)
    env.reset()
    rng = np.random.default_rng(1)
    dones = np.zeros(8, dtype=bool)
    for _ in range(3):
        _, rewards, dones, infos = env.step(_random_actions(env, rng))
    truncated = [i for i in range(8) if dones[i] and infos[i]["TimeLimit.truncated"]]
    assert truncated and all(rewards[i] == 0 for i in truncated)


def test_learner_never_sees_the_opponents_decision():
    env = StrategicReserveVecEnv(64, opponents=[load_agent("greedy")], seed=3)
    env.reset()
    rng = np.random.default_rng(2)
    for _ in range(60):
        state, seat = env.games.state, env.games.seat
        assert not state.done.any()  # finished games restart within the step
        assert np.array_equal(state.to_move, seat) and np.all(state.legal != 0)
        env.step(_random_actions(env, rng))


def test_opponent_pool_draws_per_game_and_acts_once_per_opponent():
    pool = [CountingPolicy("a"), CountingPolicy("b"), CountingPolicy("c")]
    env = StrategicReserveVecEnv(300, opponents=pool, opponent_weights=[1, 1, 2], seed=4)
    env.reset()
    drawn = np.bincount(env.games.opponent_id, minlength=3) / 300
    assert np.allclose(drawn, [0.25, 0.25, 0.5], atol=0.08)
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(40):
        before = [p.calls for p in pool]
        _, _, dones, infos = env.step(_random_actions(env, rng))
        assert all(p.calls - b <= 2 for p, b in zip(pool, before, strict=True))  # once in the step, once for restarts
        seen |= {info["opponent"] for info in infos if "opponent" in info}
    assert seen == {"a", "b", "c"}
    assert all(p.calls >= 40 for p in pool)
    assert sum(p.rows for p in pool) < 300 * 40 * 2  # each acted only on its own games


def test_bad_pool_settings():
    with pytest.raises(ValueError, match="opponent_weights must be 2 non-negative numbers"):
        StrategicReserveVecEnv(4, opponents=["random", "random"], opponent_weights=[1, -1])
    env = StrategicReserveVecEnv(4)
    with pytest.raises(AttributeError, match="no method 'render'"):
        env.env_method("render")


def lowest_legal(observations, masks, rng):
    """A deterministic opponent: the first legal square."""
    return np.argmax(masks, axis=-1)


@pytest.mark.parametrize("seat", ["red", "blue"])
def test_same_step_restart_plays_the_games_step_then_restart_plays(seat):
    # step(autoreset=True) starts a game the learner ended before the opponents move; with a fixed seat
    # and a deterministic opponent nothing else draws random numbers, so the games must be identical
    batch, config = 48, Config(ply_limit=30)
    merged, plain = (LearnerGames(config, batch, lowest_legal, seat) for _ in range(2))
    for games in (merged, plain):
        games.reset(np.arange(batch) + 5, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(120):
        masks = plain.action_masks()
        actions = np.argmax(masks * rng.random(masks.shape), axis=-1)
        rewards, terminated, truncated, _, finals = merged.step(actions, autoreset=True)[:5]
        expected = plain.step(actions)[:3]
        done = expected[1] | expected[2]
        for got, want in zip((rewards, terminated, truncated), expected, strict=False):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(finals[done], plain.observations()[done])
        assert not finals[~done].any()
        plain.restart(done)
        np.testing.assert_array_equal(merged.observations(), plain.observations())
        ended += done.sum()
    assert ended > 100  # wins by both sides and truncations happened along the way


def _play(env, steps: int, seed: int) -> list:
    """`steps` steps with random legal actions; everything the env returned."""
    rng, seen = np.random.default_rng(seed), []
    for _ in range(steps):
        observations, rewards, dones, infos = env.step(_random_actions(env, rng))
        seen.append((observations, rewards, dones, [sorted(i) for i in infos]))
    return seen


def test_get_state_and_set_state_continue_the_games_exactly():
    """A second env given the first one's state (games in progress, dice streams, seats, opponents, generator)
    plays on exactly as the first; restoring into the first itself rewinds it."""
    opponents, weights = [load_agent("random"), load_agent("greedy")], [1.0, 3.0]
    env = StrategicReserveVecEnv(16, opponents, weights, seed=5)
    env.reset()
    _play(env, 7, seed=0)
    saved = env.get_state()
    ahead = _play(env, 40, seed=1)
    other = StrategicReserveVecEnv(16, opponents, weights, seed=99)
    other.reset()
    other.set_state(saved)
    env.set_state(saved)
    for replayed in (_play(other, 40, seed=1), _play(env, 40, seed=1)):
        for (o1, r1, d1, i1), (o2, r2, d2, i2) in zip(ahead, replayed, strict=True):
            assert np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2) and i1 == i2
    assert saved["dice"]["counters"].min() > 0 and any(d.any() for _, _, d, _ in ahead)  # games ended and restarted
    assert np.array_equal(other.get_state()["dice"]["counters"], env.get_state()["dice"]["counters"])


def test_set_state_rejects_a_state_of_other_games():
    env = StrategicReserveVecEnv(8, seed=0)
    env.reset()
    saved = env.get_state()
    with pytest.raises(ValueError, match="the saved games are not 4 games"):
        StrategicReserveVecEnv(4, seed=0).set_state(saved)
    saved["opponent_id"][:] = 3
    with pytest.raises(ValueError, match="opponents beyond the 1 of the pool"):
        env.set_state(saved)
    assert env.get_state()["dice"]["counters"].sum() > 0  # the env is unchanged and usable
    _play(env, 3, seed=0)


def test_learner_games_own_their_state_and_refuse_a_tampered_one():
    """LearnerGames.get_state / set_state (what the VecEnv's checkpoints hold, less its seed): a state with a
    seat that is neither colour, a negative opponent, dice streams of another size or an engine field missing
    is refused with nothing changed."""
    env = StrategicReserveVecEnv(8, seed=0)
    env.reset()
    _play(env, 3, seed=0)
    games = env.games
    saved = games.get_state()
    before = games.get_state()
    for change, message in [
        (lambda s: s["seat"].__setitem__(0, 7), "seats are not all red"),
        (lambda s: s["opponent_id"].__setitem__(0, -1), "opponents beyond"),
        (lambda s: s.__setitem__("dice", {"keys": s["dice"]["keys"][:3], "counters": s["dice"]["counters"]}), "not 8"),
        (lambda s: s["engine"].pop(next(iter(s["engine"]))), "engine state does not hold the fields"),
    ]:
        tampered = games.get_state()
        change(tampered)
        with pytest.raises(ValueError, match=message):
            games.set_state(tampered)
        after = games.get_state()
        assert all(np.array_equal(after["engine"][k], before["engine"][k]) for k in before["engine"])
        assert np.array_equal(after["dice"]["counters"], before["dice"]["counters"]) and after["rng"] == before["rng"]
    games.set_state(saved)
    _play(env, 3, seed=0)


# -- settings, actions, call order and faulty opponents: a clear error with nothing changed; per-game seeding ---------


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
