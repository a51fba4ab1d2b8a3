"""The SB3 VecEnv: masks after auto-reset, terminal observations, opponents, VecMonitor."""

from __future__ import annotations

import numpy as np
import pytest
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import VecMonitor

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.config import Config
from strategic_reserve_env.learner import LearnerGames
from strategic_reserve_env.observation import LEGAL_PLANE
from strategic_reserve_env.policies import UniformRandomPolicy
from strategic_reserve_env.sb3_env import StrategicReserveVecEnv


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
