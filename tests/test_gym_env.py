"""Gymnasium single-agent and vector envs: checks, cross-interface determinism, auto-reset, masks, per-game
seeding, and bad input (actions, call order, faulty opponents) answered by a clear error with nothing changed."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import strategic_reserve_env  # noqa: F401 - registers the envs
from strategic_reserve_env import IllegalActionError, raw_env
from strategic_reserve_env.core.config import Config, StartPosition
from strategic_reserve_env.envs.gym_env import StrategicReserveEnv, StrategicReserveVectorEnv
from strategic_reserve_env.envs.learner import LearnerGames, OpponentError, ResetNeeded

from env_checks import assert_unchanged, assert_vector_masks, snapshot


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


# -- per-game seeding of the vector env, masks with final observations, bad input answered with nothing changed -------


INFO_KEYS = ("action_mask", "seat", "ply")


def learner(observation: np.ndarray, mask: np.ndarray) -> int:
    """A deterministic learner that still varies its choice: a legal square picked by the position."""
    legal = np.flatnonzero(mask)
    return int(legal[int(observation.sum()) % len(legal)])


def _single_env_run(seed: int, length: int, **kwargs) -> list[tuple]:
    """`length` records of one StrategicReserveEnv: reset(seed), then steps, reset() after each episode."""
    env = StrategicReserveEnv(**kwargs)
    observation, info = env.reset(seed=seed)
    run = [("reset", observation, info)]
    while len(run) < length:
        observation, reward, terminated, truncated, info = env.step(learner(observation, info["action_mask"]))
        run.append(("step", observation, reward, terminated, truncated, info))
        if terminated or truncated:
            observation, info = env.reset()
            run.append(("reset", observation, info))
    return run


def _vector_env_runs(num_envs: int, seed: int, steps: int, **kwargs) -> list[list[tuple]]:
    """Per sub-env, the same records: a step that restarts a finished game is that env's reset."""
    vector = StrategicReserveVectorEnv(num_envs, **kwargs)
    observations, infos = vector.reset(seed=seed)
    runs = [[("reset", observations[i], {k: infos[k][i] for k in INFO_KEYS})] for i in range(num_envs)]
    restarting = np.zeros(num_envs, dtype=bool)
    for _ in range(steps):
        actions = np.array([learner(observations[i], infos["action_mask"][i]) for i in range(num_envs)])
        observations, rewards, terminated, truncated, infos = vector.step(actions)
        for i in range(num_envs):
            info = {k: infos[k][i] for k in INFO_KEYS}
            if restarting[i]:
                assert (rewards[i], terminated[i], truncated[i]) == (0.0, False, False)
                runs[i].append(("reset", observations[i], info))
            else:
                runs[i].append(
                    ("step", observations[i], float(rewards[i]), bool(terminated[i]), bool(truncated[i]), info)
                )
        restarting = terminated | truncated
    return runs


def _assert_same_info(got: dict, want: dict, final: bool) -> None:
    assert (got["seat"], got["ply"]) == (want["seat"], want["ply"])
    if final:  # the vector env accepts (and ignores) any action next; the single env none until reset
        assert got["action_mask"].all() and not want["action_mask"].any()
    else:
        np.testing.assert_array_equal(got["action_mask"], want["action_mask"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {},  # the built-in random opponent, random seats
        {"opponent": lowest},  # a deterministic opponent
        {"opponent": ["random", lowest, "random"]},  # a pool, drawn per game
        {"seat": "blue", "ply_limit": 9},  # truncations
    ],
    ids=["random", "deterministic", "pool", "truncated"],
)
def test_sub_env_i_plays_the_single_env_game_of_seed_plus_i(kwargs):
    seed, num_envs = 11, 3
    runs = _vector_env_runs(num_envs, seed - 1, 300, **kwargs)
    episodes = 0
    for i, run in enumerate(runs):
        expected = _single_env_run(seed - 1 + i, len(run), **kwargs)
        for got, want in zip(run, expected, strict=False):
            assert got[0] == want[0]  # a reset where the single env was reset
            np.testing.assert_array_equal(got[1], want[1])
            if got[0] == "step":
                assert got[2:5] == want[2:5]
                _assert_same_info(got[5], want[5], final=got[3] or got[4])
            else:
                _assert_same_info(got[2], want[2], final=False)
        episodes += sum(record[0] == "reset" for record in run) - 1
    assert episodes > 15  # many episodes, each with its own seat draw
    seats = {record[-1]["seat"] for run in runs for record in run}
    assert seats == ({"red", "blue"} if "seat" not in kwargs else {"blue"})


def test_sub_env_of_seed_minus_i_matches_the_readme_claim():
    # README: "the same game on ... the single-agent env and sub-env i of a vector env seeded seed - i"
    seed = 40
    for i in range(3):
        run = _vector_env_runs(3, seed - i, 60)[i]
        expected = _single_env_run(seed, len(run))
        for got, want in zip(run, expected, strict=True):
            np.testing.assert_array_equal(got[1], want[1])


def test_readme_sampling_loop_never_runs_out_of_squares():
    # the loop of the README, including steps that end games by an illegal action
    vector = StrategicReserveVectorEnv(num_envs=8, illegal_action="lose")
    observations, infos = vector.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = np.zeros(8, dtype=bool)
    endings = illegal = 0
    for step in range(300):
        masks = infos["action_mask"]
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
        if step % 7 == 0 and not ended[0]:  # now and then env 0 plays an illegal square: its game ends at once
            actions[0] = np.flatnonzero(~masks[0])[0]
            illegal += 1
        observations, rewards, terminated, truncated, infos = vector.step(actions)
        ended = terminated | truncated
        endings += int(ended.sum())
        assert_vector_masks(observations, infos["action_mask"], ended)
    assert endings > 40 and illegal > 20


# -- bad learner input --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "action, message",
    [
        (6.9, r"actions must be integer square indices 0\.\.35, got 6\.9"),
        (np.float64(3.0), r"actions must be integer square indices 0\.\.35, got np\.float64\(3\.0\)|got 3\.0"),
        (True, r"actions must be integer square indices 0\.\.35, got True"),
        ("3", r"actions must be integer square indices 0\.\.35, got '3'"),
        (None, r"actions must be integer square indices 0\.\.35, got None"),
        ([1, 2], r"actions must have shape \(1,\), got \(2,\)"),
    ],
)
def test_single_env_rejects_non_integer_actions_and_changes_nothing(action, message):
    env, twin = StrategicReserveEnv(seat="red"), StrategicReserveEnv(seat="red")
    observation, info = env.reset(seed=5)
    twin.reset(seed=5)
    before = snapshot(env)
    with pytest.raises(ValueError, match=message):
        env.step(action)
    assert_unchanged(env, before)
    square = int(np.flatnonzero(info["action_mask"])[0])
    want = twin.step(square)
    got = env.step(np.int16(square))  # the same env, after the error, plays on as its twin
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:4] == want[1:4]
    for typed in (np.int32(square), np.uint8(square), np.array(square), np.array([square])):  # integer types
        fresh = StrategicReserveEnv(seat="red")
        fresh.reset(seed=5)
        got = fresh.step(typed)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:4] == want[1:4]


def test_vector_env_rejects_non_integer_actions_and_changes_nothing():
    vector, twin = StrategicReserveVectorEnv(4), StrategicReserveVectorEnv(4)
    vector.reset(seed=2)
    twin.reset(seed=2)
    before = snapshot(vector)
    masks = vector.action_masks()
    good = np.array([np.flatnonzero(m)[0] for m in masks])
    for bad, message in [
        (good + 0.5, "got an array of dtype float64"),
        (good.astype(bool), "dtype bool"),
        (good[:3], r"must have shape \(4,\), got \(3,\)"),
        (good[None], r"got \(1, 4\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            vector.step(bad)
        assert_unchanged(vector, before)
    got, want = vector.step(list(good)), twin.step(good)  # a list of ints is fine
    for a, b in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(a, b)


def test_step_before_reset_raises_and_reset_still_works():
    for env in (StrategicReserveEnv(), StrategicReserveVectorEnv(3)):
        with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
            env.step(0 if isinstance(env, StrategicReserveEnv) else np.zeros(3, dtype=np.int64))
        env.reset(seed=0)
        assert env.action_masks().any(axis=-1).all()


def test_step_after_the_episode_ended_raises_until_reset():
    env = StrategicReserveEnv(seat="red", ply_limit=4)
    observation, info = env.reset(seed=3)
    done = False
    while not done:
        observation, _, terminated, truncated, info = env.step(learner(observation, info["action_mask"]))
        done = terminated or truncated
    before = snapshot(env)
    for _ in range(2):  # not "terminated=False forever": an error every time
        with pytest.raises(ResetNeeded, match=r"game 0 is over \(its episode ended\): reset"):
            env.step(0)
        assert_unchanged(env, before)
    observation, info = env.reset()
    assert info["ply"] <= 1 and info["action_mask"].any()


def test_editing_a_returned_observation_or_mask_changes_nothing():
    env = StrategicReserveEnv(seat="red")
    observation, info = env.reset(seed=4)
    masks = env.action_masks().copy()
    observation[:] = 0
    info["action_mask"][:] = False
    np.testing.assert_array_equal(env.action_masks(), masks)
    assert env.games.observations()[0].any()
    vector = StrategicReserveVectorEnv(3)
    observations, infos = vector.reset(seed=4)
    masks = vector.action_masks().copy()
    observations[:] = 0
    infos["action_mask"][:] = False
    vector.action_masks()[:] = False
    np.testing.assert_array_equal(vector.action_masks(), masks)
    vector.step(np.array([np.flatnonzero(m)[0] for m in masks]))  # the step still sees legal actions


@pytest.mark.parametrize(
    "num_envs, message",
    [
        (0, "num_envs must be a positive integer, got 0"),
        (-2, "got -2"),
        (True, "got True"),
        ("4", "got '4'"),
        (2.0, "got 2.0"),
    ],
)
def test_vector_env_size(num_envs, message):
    with pytest.raises(ValueError, match=message):
        StrategicReserveVectorEnv(num_envs)


def test_vector_env_bad_seeds_change_nothing():
    vector = StrategicReserveVectorEnv(2)
    vector.reset(seed=1)
    before = snapshot(vector)
    for seed, message in [
        ([1.5, 2], r"seed must be an int or 2 ints, got \[1\.5, 2\]"),
        ([1, 2, 3], "got 3"),
        (-1, "seeds must be non-negative, got -1"),
        ("7", r"seed must be an int or 2 ints"),
    ]:
        with pytest.raises(ValueError, match=message):
            vector.reset(seed=seed)
        assert_unchanged(vector, before)


# -- faulty opponents ---------------------------------------------------------------------------
class Flaky:
    """`lowest`, except that call number `fail_at` (from 0) returns `bad(masks)` or raises;
    `arm()` makes it the next call."""

    name = "flaky"

    def __init__(self, bad, fail_at: int = -1) -> None:
        self.fail_at, self.bad, self.calls = fail_at, bad, 0

    def arm(self) -> None:
        self.fail_at = self.calls

    def act(self, observations, masks, rng):
        self.calls += 1
        if self.calls - 1 == self.fail_at:
            return self.bad(masks)
        return lowest(observations, masks, rng)


def _raise(masks):
    raise ZeroDivisionError("the opponent's bug")


FAULTS = [
    (_raise, OpponentError, r"opponent 'flaky' raised ZeroDivisionError: the opponent's bug"),
    (
        lambda masks: np.argmin(masks, axis=-1),
        OpponentError,
        r"opponent 'flaky' in game 0 returned [a-f][1-6] \(square \d+\), which is not a legal placement;"
        r" legal: [a-f][1-6]",
    ),
    (
        lambda masks: np.full(len(masks), 99),
        OpponentError,
        r"opponent 'flaky' in game 0 returned 99, not a square index 0\.\.35",
    ),
    (
        lambda masks: np.zeros(len(masks) + 1, dtype=np.int64),
        OpponentError,
        r"opponent 'flaky' \(choosing for game\(s\) 0(, 1, 2, 3, 4)?\) returned shape \((2|6),\) for (1|5) game\(s\)",
    ),
    (
        lambda masks: np.argmax(masks, axis=-1) + 0.5,
        OpponentError,
        r"opponent 'flaky' in game 0 returned float64 values, not integer square indices 0\.\.35 \(the first: \d+\.5\)",
    ),
    (
        lambda masks: None,
        OpponentError,
        r"opponent 'flaky' \(choosing for game\(s\) 0(, 1, 2, 3, 4)?\) returned None, not an array of (1|5) square",
    ),
]


@pytest.mark.parametrize(
    "bad, error, message", FAULTS, ids=["raises", "illegal", "not-a-square", "shape", "float", "none"]
)
def test_faulty_opponent_in_the_single_env(bad, error, message):
    flaky = Flaky(bad)
    env = StrategicReserveEnv(opponent=flaky, seat="red")
    twin = StrategicReserveEnv(opponent=lowest, seat="red")
    observation, info = env.reset(seed=8)
    twin.reset(seed=8)
    for _call in range(2):  # the opponent's first two moves are fine
        action = learner(observation, info["action_mask"])
        observation, _, _, _, info = env.step(action)
        twin.step(action)
    before = snapshot(env)
    flaky.arm()
    with pytest.raises(error, match=message):
        env.step(learner(observation, info["action_mask"]))
    assert_unchanged(env, before)  # nothing lost: the env is as before the step
    # the same step again (the opponent is fine now) continues exactly the twin's game
    for _ in range(6):
        action = learner(observation, info["action_mask"])
        observation, reward, terminated, truncated, info = env.step(action)
        expected = twin.step(action)
        np.testing.assert_array_equal(observation, expected[0])
        assert (reward, terminated, truncated) == expected[1:4]
        if terminated or truncated:
            break
    env.reset(seed=1)  # and reset starts afresh
    assert env.action_masks().any()


@pytest.mark.parametrize(
    "bad, error, message", FAULTS, ids=["raises", "illegal", "not-a-square", "shape", "float", "none"]
)
def test_faulty_opponent_in_the_vector_env(bad, error, message):
    flaky = Flaky(bad)
    vector = StrategicReserveVectorEnv(5, opponent=flaky)
    twin = StrategicReserveVectorEnv(5, opponent=lowest)
    observations, infos = vector.reset(seed=6)
    twin.reset(seed=6)

    def actions():
        return np.array([learner(observations[i], infos["action_mask"][i]) for i in range(5)])

    for _ in range(3):
        chosen = actions()
        observations, _, _, _, infos = vector.step(chosen)
        twin.step(chosen)
    before = snapshot(vector)
    flaky.arm()
    with pytest.raises(error, match=message):
        vector.step(actions())
    assert_unchanged(vector, before)
    for _ in range(20):
        chosen = actions()
        observations, rewards, terminated, truncated, infos = vector.step(chosen)
        expected = twin.step(chosen)
        for got, want in zip((observations, rewards, terminated, truncated), expected[:4], strict=True):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(infos["action_mask"], expected[4]["action_mask"])


def test_opponent_failing_in_reset_leaves_the_env_as_it_was():
    # seat blue: the opponent (Red) moves inside reset
    opponent = Flaky(_raise)
    env = StrategicReserveEnv(opponent=opponent, seat="blue")
    env.reset(seed=2)
    before = snapshot(env)
    opponent.arm()
    with pytest.raises(OpponentError, match="raised ZeroDivisionError"):
        env.reset(seed=3)
    assert_unchanged(env, before)
    env.reset(seed=3)
    expected = StrategicReserveEnv(opponent=lowest, seat="blue")
    np.testing.assert_array_equal(env.games.observations(), expected.reset(seed=3)[0][None])


class Gambler:
    """A stochastic opponent: a uniformly random legal square drawn from `rng`; once armed, it draws
    and then raises."""

    name = "gambler"

    def __init__(self) -> None:
        self.armed = False

    def act(self, observations, masks, rng):
        picks = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        if self.armed:
            self.armed = False
            raise RuntimeError("drew, then failed")
        return picks


@pytest.mark.parametrize(
    "make",
    [
        lambda opponent: StrategicReserveEnv(opponent=opponent, seat="red"),
        lambda opponent: StrategicReserveVectorEnv(3, opponent=opponent, seat="red"),
    ],
    ids=["single", "vector"],
)
def test_a_stochastic_opponent_that_draws_then_fails_leaves_the_generator_as_it_was(make):
    gambler = Gambler()
    env, twin = make(gambler), make(Gambler())
    env.reset(seed=4), twin.reset(seed=4)
    for _ in range(2):
        masks = env.action_masks()
        actions = np.argmax(masks, axis=-1)
        env.step(actions), twin.step(actions)
    before = snapshot(env)
    gambler.armed = True
    with pytest.raises(OpponentError, match=r"opponent 'gambler' raised RuntimeError: drew, then failed"):
        env.step(np.argmax(env.action_masks(), axis=-1))
    assert_unchanged(env, before)
    for _ in range(8):  # the opponent draws the same numbers as the twin's, which never failed
        actions = np.argmax(env.action_masks(), axis=-1)
        got, expected = env.step(actions), twin.step(actions)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(env.action_masks(), twin.action_masks())


# -- a ply limit that ends the game before the learner's first move ---------------------------------------------------


GYM_ID = next(name for name in gymnasium.registry if name.startswith("StrategicReserve-v"))


@pytest.mark.parametrize("seat", ["blue", "random"])
def test_a_ply_limit_that_ends_the_game_before_the_learners_first_move_is_refused(seat):
    with pytest.raises(ValueError, match="ply_limit"):
        gymnasium.make(GYM_ID, ply_limit=1, seat=seat)
    with pytest.raises(ValueError, match="ply_limit"):
        LearnerGames(Config(ply_limit=1), 2, seat=seat)


def test_a_ply_limit_of_one_is_fine_for_the_first_mover():
    env = gymnasium.make(GYM_ID, ply_limit=1, seat="red")
    _, info = env.reset(seed=0)
    assert info["action_mask"].any()
    blue_first = Config(ply_limit=1, start=StartPosition(to_move="blue"))
    LearnerGames(blue_first, 1, seat="blue")
    with pytest.raises(ValueError, match="ply_limit"):
        LearnerGames(blue_first, 1, seat="red")


# -- a numpy integer seed ---------------------------------------------------------------------------------------------


def test_the_single_gymnasium_env_takes_a_numpy_integer_seed():
    one, other = gymnasium.make("StrategicReserve-v1"), gymnasium.make("StrategicReserve-v1")
    observation, info = one.reset(seed=np.int64(5))
    expected, expected_info = other.reset(seed=5)
    assert np.array_equal(observation, expected) and info.keys() == expected_info.keys()
    assert all(np.array_equal(info[key], expected_info[key]) for key in info)


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
