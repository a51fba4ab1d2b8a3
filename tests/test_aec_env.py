"""The PettingZoo AEC env: PettingZoo's own tests, spec details, infos, errors, copies, forced dice, conformance."""

from __future__ import annotations

import copy
import json
import pickle
import warnings

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, render_test, seed_test

from strategic_reserve_env import IllegalActionError, env, raw_env
from strategic_reserve_env.core.board import SQUARE_INDEX, parse_square
from strategic_reserve_env.core.config import StartPosition
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.oracle import ReferenceGame
from strategic_reserve_env.envs.aec_env import INFO_KEYS, NO_ROLL, describe, roll_info
from strategic_reserve_env.files import records

from conftest import conformance_records, expected_trace, random_start

S = SQUARE_INDEX
AGENTS = ("player_0", "player_1")
WIN_IN_ONE = StartPosition(board="R" + "." * 35, reserves=(1, 3), to_move="red")  # Red's next placement wins


def other(agent: str) -> str:
    return AGENTS[1 - AGENTS.index(agent)]


def legal_squares(e) -> list[int]:
    return np.flatnonzero(e.observe(e.agent_selection)["action_mask"]).tolist()


def rules_dice(square: int, roller: int) -> tuple[int, int]:
    """(purple, green) from the roller's seat, written from RULES.md (A turn, 1)."""
    file_index, rank = square % 6, square // 6 + 1
    return (file_index + 1, rank) if roller == 0 else (6 - file_index, 7 - rank)


def snapshot(e) -> tuple:
    """Everything a step or reset could change, as plain comparable values."""
    raw = e.unwrapped
    game = raw.game
    infos = {agent: {k: np.asarray(v).tolist() for k, v in info.items()} for agent, info in raw.infos.items()}
    return (
        game.board_string(),
        game.reserves,
        game.ply,
        game.rolled,
        game.legal,
        game.winner,
        game.truncated,
        list(game.history),
        raw.agent_selection,
        list(raw.agents),
        dict(raw.rewards),
        dict(raw._cumulative_rewards),
        dict(raw.terminations),
        dict(raw.truncations),
        infos,
        raw.dice.key,
        raw.dice.counter,
        list(raw.dice.forced),
    )


# -- PettingZoo's own tests, registry -----------------------------------------------------
def test_pettingzoo_api_test():
    api_test(env(), num_cycles=1000)


def test_pettingzoo_api_test_raw_env():
    api_test(raw_env(), num_cycles=1000)


def test_pettingzoo_seed_test():
    seed_test(env, num_cycles=1000)


@pytest.mark.slow
def test_pettingzoo_render_test():
    render_test(env)


def test_registry_and_metadata():
    made = pettingzoo.make("aec", "strategic_reserve_v2", reserve=6)
    made.reset(seed=0)
    assert made.unwrapped.config.reserve == 6
    for old in ("strategic_reserve_v0", "strategic_reserve_v1"):  # v1 took the luck at half its scale
        with pytest.raises(Exception, match=f"{old[-2:]} for 'strategic_reserve' not found. Available version: v2"):
            pettingzoo.make("aec", old)
    metadata = raw_env.metadata
    assert metadata["name"] == "strategic_reserve_v2" and metadata["is_parallelizable"] is False
    assert metadata["render_modes"] == ["human", "ansi", "rgb_array"] and metadata["render_fps"] > 0
    e = raw_env()
    assert e.possible_agents == ["player_0", "player_1"]
    assert e.observation_space("player_0") is e.observation_space("player_0")
    assert e.action_space("player_1").n == 36
    space = e.observation_space("player_0")
    assert space["observation"].shape == (6, 6, 9) and space["action_mask"].shape == (36,)


# -- infos ----------------------------------------------------------------------------------
def assert_info_schema(info: dict) -> None:
    """The fixed keys, with fixed-shape numbers (and no strings, lists or tuples)."""
    assert tuple(info) == INFO_KEYS
    for key in ("roll", "roller", "hit"):
        assert type(info[key]) is int, (key, info[key])
    assert 0 <= info["roll"] < 36 and info["roller"] in (0, 1) and info["hit"] in (0, 1, 2)
    for key, shape in (("dice", (2,)), ("captured", (36,))):
        value = info[key]
        assert isinstance(value, np.ndarray) and value.dtype == np.int8 and value.shape == shape, (key, value)
    assert set(np.unique(info["captured"])) <= {0, 1}
    assert ((1 <= info["dice"]) & (info["dice"] <= 6)).all()


def assert_infos(e) -> None:
    """Every agent present has an info of the fixed schema; they describe the same roll in their own arrays."""
    infos = e.infos
    assert set(infos) == set(e.agents)
    for info in infos.values():
        assert_info_schema(info)
    if len(infos) == 2:
        first, second = infos.values()
        assert describe(first) == describe(second)
        assert first["dice"] is not second["dice"] and first["captured"] is not second["captured"]


def play_checked(e, rng: np.random.Generator, rolls: list[int]) -> int:
    """Play one game (already reset with `rolls` forced) uniformly at random, mirrored on the reference
    game; check every agent's info after reset, after every step and to the end. Returns the plies."""
    raw = e.unwrapped
    ref = ReferenceGame.from_config(raw.config)
    plies = 0
    last_roll = None
    while e.agents:
        assert_infos(e)
        agent = e.agent_selection
        _, _, terminated, truncated, info = e.last()
        if terminated or truncated:
            # the game is over: both infos still show the latest roll, made by the last mover
            assert {k: np.asarray(v).tolist() for k, v in info.items()} == last_roll
            e.step(None)
            continue
        legal = ref.roll(rolls[plies])
        assert info["roll"] == rolls[plies] and info["roller"] == AGENTS.index(agent)
        assert tuple(info["dice"]) == rules_dice(rolls[plies], info["roller"])
        assert describe(info)["hit"] == ref.hit
        assert np.flatnonzero(info["captured"]).tolist() == ref.captured
        assert legal_squares(e) == legal
        last_roll = {k: np.asarray(v).tolist() for k, v in info.items()}
        square = int(rng.choice(legal))
        ref.place(square)
        e.step(square)
        plies += 1
    return plies


@pytest.mark.parametrize("make", [raw_env, env], ids=["raw_env", "env"])
def test_infos_have_fixed_keys_and_shapes_and_describe_each_roll(make):
    """Many games from random starts, won and truncated: at every step each agent's info has the fixed
    keys and shapes, and describes the roll as the reference implementation resolves it."""
    rng = np.random.default_rng(2024)
    total = 0
    for game in range(60):
        start = random_start(rng) if game % 2 else None
        e = make(start=start, ply_limit=int(rng.integers(5, 60)))
        rolls = rng.integers(0, 36, size=200).tolist()
        e.reset(seed=game, options={"rolls": rolls})
        total += play_checked(e, rng, rolls)
    assert total > 1000


def test_info_content_in_a_forced_dice_scenario():
    e = raw_env()
    e.reset(seed=0, options={"rolls": ["e5", "e3"]})
    # Red rolls e5 onto its own group {e5}: a friendly hit that removes Blue's e4 and d5
    for agent in AGENTS:
        info = e.infos[agent]
        assert info["roll"] == S["e5"] and info["roller"] == 0 and info["hit"] == 2
        assert info["dice"].tolist() == [5, 5]
        assert info["captured"].tolist() == [1 if s in (S["e4"], S["d5"]) else 0 for s in range(36)]
        assert describe(info) == {
            "roll": "e5",
            "roller": "player_0",
            "dice": (5, 5),
            "hit": "friendly",
            "captured": ["e4", "d5"],
        }
    e.step(S["e6"])
    # Blue rolls e3, Red's lone checker: an enemy hit; Blue reads the dice from the opposite seat
    for agent in AGENTS:
        info = e.infos[agent]
        assert describe(info) == {
            "roll": "e3",
            "roller": "player_1",
            "dice": (2, 4),
            "hit": "enemy",
            "captured": ["e3"],
        }
        assert info["hit"] == 1 and info["captured"].dtype == np.int8 and info["captured"].sum() == 1


def test_infos_at_the_end_of_a_game_show_the_last_roll():
    e = raw_env(start=WIN_IN_ONE)
    e.reset(seed=0, options={"rolls": ["a1"]})  # friendly hit on Red's a1: legal b1, a2
    e.step(S["b1"])
    assert e.terminations == {"player_0": True, "player_1": True} and e.agent_selection == "player_1"
    assert e.observe("player_0")["action_mask"].sum() == 0 and e.observe("player_1")["action_mask"].sum() == 0
    expected = {"roll": "a1", "roller": "player_0", "dice": (1, 1), "hit": "friendly", "captured": []}
    assert_infos(e)
    assert all(describe(info) == expected for info in e.infos.values())
    e.step(None)
    assert list(e.infos) == ["player_0"] and describe(e.infos["player_0"]) == expected
    assert describe(e.last()[4]) == expected


def test_infos_after_truncation_show_the_last_roll():
    e = env(ply_limit=2)
    e.reset(seed=0, options={"rolls": ["a1", "f6"]})  # two empty hits
    e.step(S["c1"])
    e.step(S["d1"])
    assert all(e.truncations.values())
    assert_infos(e)
    assert describe(e.infos["player_0"]) == {
        "roll": "f6",
        "roller": "player_1",
        "dice": (1, 1),
        "hit": "empty",
        "captured": [],
    }


def test_info_arrays_are_independent():
    e = raw_env()
    e.reset(seed=0, options={"rolls": ["e5"]})
    mine = e.infos["player_0"]
    mine["captured"][:] = 0
    mine["dice"][:] = 0
    assert describe(e.infos["player_1"])["captured"] == ["e4", "d5"] and e.infos["player_1"]["dice"].tolist() == [5, 5]
    assert e.game.captured  # the game is untouched


def test_roll_info_before_any_roll_and_describe():
    info = roll_info(Game())
    assert info["roll"] == info["roller"] == info["hit"] == NO_ROLL == -1
    assert info["dice"].tolist() == [0, 0] and info["captured"].dtype == np.int8 and not info["captured"].any()
    assert describe(info) == {"roll": None, "roller": None, "dice": None, "hit": None, "captured": []}


def test_the_readme_sampling_loop_never_fails():
    """The README's loop (mask sampling, None for done agents) on both envs, through wins, truncations,
    and custom starts."""
    rng = np.random.default_rng(7)
    ends = {"won": 0, "truncated": 0}
    for game in range(120):
        make = (env, raw_env)[game % 2]
        start = random_start(rng) if game % 3 == 0 else None
        e = make(start=start, ply_limit=int(rng.integers(3, 80)))
        e.reset(seed=game)
        for _agent in e.agent_iter():
            observation, reward, terminated, truncated, info = e.last()
            if terminated or truncated:
                action = None
            else:
                action = int(np.random.choice(np.flatnonzero(observation["action_mask"])))
            e.step(action)
        assert e.agents == []
        ends["won" if e.unwrapped.game.winner >= 0 else "truncated"] += 1
    assert ends["won"] > 10 and ends["truncated"] > 10


# -- bad calls: a clear error, and the env goes on unchanged ---------------------------------
MAKERS = pytest.mark.parametrize("make", [raw_env, env], ids=["raw_env", "env"])


def mid_game(make, **kwargs):
    e = make(**kwargs)
    e.reset(seed=3)
    for _ in range(5):
        e.step(legal_squares(e)[0])
    return e


@MAKERS
@pytest.mark.parametrize("call", ["observe", "action_space", "observation_space"])
def test_unknown_agent_is_named_with_the_known_ones(make, call):
    e = mid_game(make)
    before = snapshot(e)
    for agent in ("player_2", "Red", 0, None, ["player_0"]):
        with pytest.raises(ValueError, match=r"unknown agent .*; the agents are player_0, player_1"):
            getattr(e, call)(agent)
    assert snapshot(e) == before
    e.step(legal_squares(e)[0])
    assert e.unwrapped.game.ply == 6


@MAKERS
@pytest.mark.parametrize(
    "action, type_name",
    [
        ("a1", "str"),
        (1.0, "float"),
        (np.float32(2), "float32"),
        (True, "bool"),
        (np.bool_(False), "bool"),
        ([3], "list"),
        (np.array([3]), r"ndarray of int64, shape \(1,\)"),
        (np.array(3.0), r"ndarray of float64, shape \(\)"),
        (None, "NoneType"),
    ],
)
def test_non_integer_actions_are_rejected_with_their_type(make, action, type_name):
    e = mid_game(make)
    before = snapshot(e)
    with pytest.raises(TypeError, match=rf"an action is a square index 0..35 .*, got {type_name} "):
        e.step(action)
    assert snapshot(e) == before  # not an illegal move under env() either: the game goes on
    e.step(legal_squares(e)[0])
    assert e.unwrapped.game.ply == 6


@MAKERS
@pytest.mark.parametrize("action", [36, -1, np.int64(99), np.array(-3)])
def test_numbers_outside_the_board_are_not_squares(make, action):
    e = mid_game(make)
    before = snapshot(e)
    with pytest.raises(IllegalActionError, match=r"is not a square index \(0..35\)"):
        e.step(action)
    assert snapshot(e) == before


@MAKERS
@pytest.mark.parametrize(
    "convert",
    [int, np.int64, np.int8, np.uint8, np.array, lambda s: np.array(s, np.int16)],
    ids=["int", "int64", "int8", "uint8", "0-d array", "0-d int16 array"],
)
def test_numpy_integer_actions_play_like_ints(make, convert):
    plain, numpy = make(), make()
    for e in (plain, numpy):
        e.reset(seed=11)
    while plain.agents:
        square = (
            legal_squares(plain)[-1]
            if not (plain.terminations[plain.agent_selection] or plain.truncations[plain.agent_selection])
            else None
        )
        plain.step(square)
        numpy.step(None if square is None else convert(square))
        assert snapshot(numpy) == snapshot(plain)
    assert numpy.unwrapped.game.ply > 10


def test_illegal_move_on_raw_env_raises_a_clear_error():
    e = raw_env()
    e.reset(seed=0, options={"rolls": ["e5"]})  # friendly hit: legal e4, d5, f5, e6
    before = snapshot(e)
    with pytest.raises(IllegalActionError, match="a1 is not a legal placement; legal: e4, d5, f5, e6"):
        e.step(0)
    assert snapshot(e) == before
    e.step(S["e4"])
    assert e.game.ply == 1


def test_illegal_move_through_env_loses_with_a_warning(caplog):
    e = env()
    e.reset(seed=0)
    mover = e.agent_selection
    illegal = int(np.flatnonzero(e.observe(mover)["action_mask"] == 0)[0])
    with caplog.at_level("WARNING"):
        e.step(illegal)
    assert "Illegal move made" in caplog.text
    assert e.rewards[mover] == -1 and all(e.terminations.values())
    assert_infos(e)


def test_actions_for_done_agents_and_after_the_game():
    e = raw_env(start=WIN_IN_ONE)
    e.reset(seed=3)
    e.step(legal_squares(e)[0])
    assert e.terminations == {"player_0": True, "player_1": True}
    before = snapshot(e)
    with pytest.raises(
        ValueError,
        match=r"the game is over: player_1 is done and its only valid action is None "
        r"\(step\(None\) for each done agent, or reset\(\) for a new game\), got 5",
    ):
        e.step(5)
    assert snapshot(e) == before
    e.step(None)
    e.step(None)
    assert e.agents == []
    before = snapshot(e)
    for action in (None, 0, np.int64(3)):
        with pytest.raises(RuntimeError, match="the game is over and every agent has left it: call reset"):
            e.step(action)
        assert snapshot(e) == before
    e.observe("player_0")  # the final position can still be looked at
    e.reset(seed=4)
    e.step(legal_squares(e)[0])
    assert e.game.ply == 1


def test_env_after_the_game_keeps_pettingzoos_warning(caplog):
    e = env(start=WIN_IN_ONE)
    e.reset(seed=3)
    e.step(legal_squares(e)[0])
    e.step(None)
    e.step(None)
    before = snapshot(e)
    with caplog.at_level("WARNING"):
        e.step(0)
    assert "step() called after all agents are terminated or truncated" in caplog.text
    assert snapshot(e) == before


def test_step_before_reset_says_so():
    e = raw_env()
    with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\): call reset\(\)"):
        e.step(0)
    e.reset(seed=0)
    e.step(legal_squares(e)[0])


@MAKERS
@pytest.mark.parametrize(
    "seed, options, error, message",
    [
        (5, {"rolls": ["zz"]}, ValueError, r"rolls\[0\]: 'zz' is not a square"),
        (5, {"rolls": ["a1", 36]}, ValueError, r"rolls\[1\]: 36 is not a square"),
        (None, {"rolls": "a1"}, ValueError, "rolls must be a sequence of squares"),
        ("seven", None, ValueError, "seed must be an integer"),
        (5, ["rolls"], TypeError, "options must be a dict or None, got list"),
    ],
)
def test_a_failed_reset_changes_nothing(make, seed, options, error, message):
    """The old game, its dice stream and its forced rolls stay: the game goes on as if nothing happened."""
    e = mid_game(make)
    e.unwrapped.force_rolls(["c3"])
    undisturbed = copy.deepcopy(e)
    before = snapshot(e)
    with pytest.raises(error, match=message):
        e.reset(seed=seed, options=options)
    assert snapshot(e) == before
    for _ in range(6):
        for game in (e, undisturbed):
            game.step(legal_squares(game)[0])
        assert snapshot(e) == snapshot(undisturbed)
    assert e.unwrapped.game.history[6][0] == S["c3"]  # the roll after the current one


# -- copies and pickles continue the game ----------------------------------------------------
COPIERS = pytest.mark.parametrize(
    "copier", [copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e))], ids=["deepcopy", "pickle"]
)


def observations(e) -> list:
    return [e.observe(agent)[key].tolist() for agent in AGENTS for key in ("observation", "action_mask")]


@MAKERS
@COPIERS
def test_a_copy_continues_the_same_game_independently(make, copier):
    original = make(reserve=5, ply_limit=400, render_mode="ansi")
    original.reset(seed=21)
    for _ in range(7):
        original.step(legal_squares(original)[0])
    duplicate = copier(original)
    assert type(duplicate) is type(original) and duplicate.unwrapped is not original.unwrapped
    assert duplicate.unwrapped.config == original.unwrapped.config
    assert snapshot(duplicate) == snapshot(original) and observations(duplicate) == observations(original)
    assert duplicate.render() == original.render()
    # both play the rest of the game alike: same dice, same rewards, same ending
    while original.agents:
        done = original.terminations[original.agent_selection] or original.truncations[original.agent_selection]
        square = None if done else legal_squares(original)[len(legal_squares(original)) // 2]
        original.step(square)
        duplicate.step(square)
        assert snapshot(duplicate) == snapshot(original) and observations(duplicate) == observations(original)
    assert original.unwrapped.game.ply > 7


@MAKERS
@COPIERS
def test_a_copy_and_its_original_do_not_share_state(make, copier):
    original = make()
    original.reset(seed=5)
    original.step(legal_squares(original)[0])
    before = snapshot(original)
    duplicate = copier(original)
    duplicate.step(legal_squares(duplicate)[-1])
    duplicate.unwrapped.force_rolls(["a1"])
    duplicate.infos[duplicate.agent_selection]["captured"][:] = 1
    assert snapshot(original) == before
    duplicate.reset(seed=99)
    assert snapshot(original) == before
    original.step(legal_squares(original)[0])
    assert original.unwrapped.game.ply == 2 and duplicate.unwrapped.game.ply == 0


def test_copies_of_a_fresh_env_keep_the_settings():
    original = env(reserve=5, ply_limit=77)
    duplicate = pickle.loads(pickle.dumps(original))
    duplicate.reset(seed=1)
    assert duplicate.unwrapped.config.reserve == 5 and duplicate.unwrapped.config.ply_limit == 77
    assert pickle.loads(pickle.dumps(raw_env())).metadata["name"] == "strategic_reserve_v2"


@pytest.mark.slow
def test_a_copy_with_a_window_opens_its_own():
    original = raw_env(render_mode="human")
    original.reset(seed=0)
    original.render()
    duplicate = copy.deepcopy(original)
    assert duplicate._renderer is not original._renderer and duplicate._renderer._window is None
    duplicate.step(legal_squares(duplicate)[0])
    original.close()
    duplicate.close()


# -- the game through the env: conformance, rewards, ends, observations, dice, rendering -----
def _play_record(record_path):
    """The AEC env set up to replay a record with forced dice, and the record's (rolled, placed) plies."""
    record = records.load_record(record_path)
    e = env(reserve=record.config.reserve, start=record.config.start_position)
    plies = [(parse_square(r), parse_square(p)) for r, p in record.plies]
    e.reset(seed=0, options={"rolls": [r for r, _ in plies]})
    return e, plies


@pytest.mark.parametrize("record_path", conformance_records(), ids=lambda p: p.stem)
def test_conformance_records_replay_through_the_aec_env(record_path):
    """At each decision the env shows the trace's roll, dice, hit, captures and legal squares, on
    the previous board less the captures; a win ends the game with the trace's board."""
    e, plies = _play_record(record_path)
    expected = [json.loads(line) for line in expected_trace(record_path).splitlines()]
    start = e.unwrapped.config.start_position
    board, reserves = start.board, dict(zip(("red", "blue"), start.reserves, strict=True))
    for (_, placed), trace in zip(plies, expected, strict=True):
        agent = e.agent_selection
        observation, _, terminated, truncated, info = e.last()
        assert not (terminated or truncated)
        assert agent == {"red": "player_0", "blue": "player_1"}[trace["mover"]]
        shown = describe(info)
        assert shown["roll"] == trace["roll"] and list(shown["dice"]) == trace["dice"]
        assert shown["hit"] == trace["hit"] and shown["captured"] == trace["captured"]
        assert shown["roller"] == agent
        assert [e.unwrapped.game.legal_squares()] == [np.flatnonzero(observation["action_mask"]).tolist()]
        assert [parse_square(name) for name in trace["legal"]] == np.flatnonzero(observation["action_mask"]).tolist()
        cleared = [parse_square(name) for name in trace["captured"]]
        board = "".join("." if i in cleared else c for i, c in enumerate(board))
        opponent = "blue" if trace["mover"] == "red" else "red"
        reserves[opponent] += len(cleared)
        game = e.unwrapped.game
        assert game.board_string() == board
        assert dict(zip(("red", "blue"), game.reserves, strict=True)) == reserves
        e.step(placed)
        board, reserves = trace["board"], dict(trace["reserves"])
    if expected[-1]["winner"] is not None:
        assert e.unwrapped.game.board_string() == expected[-1]["board"]
        winner = {"red": "player_0", "blue": "player_1"}[expected[-1]["winner"]]
        assert e.rewards == {winner: 1, other(winner): -1}
        assert all(e.terminations.values())


def test_win_rewards_and_dead_steps():
    e = env(start=WIN_IN_ONE)
    e.reset(seed=3)
    e.step(legal_squares(e)[0])
    assert e.terminations == {"player_0": True, "player_1": True}
    assert e.rewards == {"player_0": 1, "player_1": -1}
    rewards = {}
    for agent in e.agent_iter():
        _, reward, terminated, _, _ = e.last()
        assert terminated
        rewards[agent] = reward
        e.step(None)
    assert rewards == {"player_0": 1, "player_1": -1} and e.agents == []


def test_truncation_at_the_ply_limit():
    e = env(ply_limit=4)
    e.reset(seed=11)
    for _ in range(4):
        e.step(int(np.flatnonzero(e.last()[0]["action_mask"])[0]))
    assert all(e.truncations.values()) and not any(e.terminations.values())
    assert e.rewards == {"player_0": 0, "player_1": 0}


def test_observe_does_not_change_state_and_masks_only_the_mover():
    e = env()
    e.reset(seed=5)
    for _ in range(30):
        before = snapshot(e)
        mover = e.agent_selection
        for _ in range(3):
            mine, theirs = e.observe(mover), e.observe(other(mover))
        assert snapshot(e) == before
        assert mine["action_mask"].any() and not theirs["action_mask"].any()
        # the two views swap own and opponent planes
        assert np.array_equal(mine["observation"][..., 0], theirs["observation"][..., 1])
        assert np.array_equal(mine["observation"][..., 7], theirs["observation"][..., 8])
        assert np.array_equal(mine["observation"][..., 2].reshape(36), mine["action_mask"])
        e.step(int(np.flatnonzero(mine["action_mask"])[-1]))
        if any(e.terminations.values()):
            break


def test_observation_planes_describe_the_roll():
    e = raw_env()
    e.reset(seed=0, options={"rolls": ["e5"]})
    planes = e.observe("player_0")["observation"]
    assert planes[4, 4, 3] == 1 and planes[..., 3].sum() == 1  # e5 is rank 5, file e
    assert planes[..., 4].reshape(36).nonzero()[0].tolist() == [S["e4"], S["d5"]]  # captured
    assert planes[..., 6].all() and not planes[..., 5].any()  # friendly hit
    assert planes[..., 7].sum() == 7 and planes[..., 8].sum() == 9  # reserves 7 and 7 + 2
    for agent in AGENTS:  # the infos say the same
        assert np.array_equal(e.infos[agent]["captured"], planes[..., 4].reshape(36))


def test_forced_rolls_then_the_seeded_stream():
    forced = raw_env()
    forced.reset(seed=9, options={"rolls": [0, "f6"]})
    plain = raw_env()
    plain.reset(seed=9)
    assert forced.game.rolled == 0
    forced.step(forced.game.legal_squares()[0])
    assert forced.game.rolled == S["f6"]
    forced.step(forced.game.legal_squares()[0])
    # forced rolls do not use up the stream: the next roll is the stream's first
    assert forced.game.rolled == plain.game.rolled


def test_same_seed_same_game_and_new_seed_new_game():
    def play(seed):
        e = raw_env()
        e.reset(seed=seed)
        history = []
        while not any(e.terminations.values()) and not any(e.truncations.values()):
            history.append(e.game.rolled)
            e.step(e.game.legal_squares()[len(e.game.legal_squares()) // 2])
        return history

    assert play(4) == play(4)
    assert play(4) != play(5)


def test_render_modes():
    e = env(render_mode="ansi")
    e.reset(seed=0, options={"rolls": ["e5"]})
    text = e.render()
    assert "a  b  c  d  e  f" in text and "Red reserve 7" in text and "Blue reserve 9" in text
    assert "[R]" in text and "Red rolled e5 (dice 5, 5)" in text and "Red to move" in text
    image = env(render_mode="rgb_array")
    image.reset(seed=0)
    frame = image.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    with pytest.raises(ValueError, match="render_mode must be one of"):
        raw_env(render_mode="video")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet = env()
        quiet.reset(seed=0)
        assert quiet.render() is None


@pytest.mark.parametrize("reserve", [4, 7, 12])
def test_a_start_dict_without_reserves_starts_with_the_variants_reserve(reserve):
    # docs/RULES.md, "Reserves at the start": start.reserves when given, otherwise the variant's reserve
    board = "RB" + "." * 34
    e = raw_env(reserve=reserve, start={"board": board})
    e.reset(seed=0)
    assert e.game.reserves == (reserve, reserve) and e.game.board_string() == board
    header = records.parse_record({"variant": {"reserve": reserve}, "start": {"board": board}, "plies": []})
    assert e.config.start == header.config.start  # the env and a record read the same header alike
    given = raw_env(reserve=reserve, start={"reserves": (2, 9), "to_move": "blue"})
    given.reset(seed=0)
    assert given.game.reserves == (2, 9) and given.config.start.to_move == "blue"


def test_a_start_dict_with_unknown_fields_is_refused():
    with pytest.raises(ValueError, match=r"unknown start field\(s\): side"):
        raw_env(start={"side": "red"})
    with pytest.raises(ValueError, match=r"start must be a StartPosition, a mapping of its fields or None, got str"):
        raw_env(start="standard")


class _StockCheckAction(pettingzoo.utils.wrappers.base.BaseWrapper):
    """The action check as a plain PettingZoo wrapper (every attribute through `__getattr__`)."""

    def step(self, action) -> None:
        super().step(self.env.unwrapped.check_action(action))


def _wrapped_trace(e, seed: int, steps: int) -> list:
    """What a user of a wrapped env sees over `steps` seeded steps (about one action in 15 an illegal
    square, which loses the game), a deep copy taken and continued half-way, resets between games."""
    rng, trace = np.random.default_rng(seed), []
    e.reset(seed=seed)
    for step in range(steps):
        if step == steps // 2:
            e = copy.deepcopy(e)
        if not e.agents:
            e.reset()
        observation, reward, terminated, truncated, info = e.last()
        trace.append((e.agent_selection, list(e.agents), reward, terminated, truncated, repr(info)))
        trace.append((observation["observation"].tobytes(), dict(e.rewards), dict(e.terminations)))
        trace.append((dict(e.truncations), dict(e._cumulative_rewards), repr(e.infos)))
        illegal = np.flatnonzero(observation["action_mask"] == 0)
        legal = np.flatnonzero(observation["action_mask"])
        if terminated or truncated:
            action = None
        else:
            action = int(rng.choice(illegal if rng.random() < 1 / 15 and illegal.size else legal))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the illegal move's warning
            e.step(action)
    return trace


@pytest.mark.slow
def test_env_wrappers_behave_as_pettingzoos_own():
    """env()'s wrappers read the step's attributes from the raw env directly: over random play with illegal
    moves, deep copies and resets, they show what PettingZoo's own wrappers in the same order show, and
    before reset they raise the same errors."""
    stock = pettingzoo.utils.wrappers.OrderEnforcingWrapper(
        _StockCheckAction(pettingzoo.utils.wrappers.TerminateIllegalWrapper(raw_env(), illegal_reward=-1))
    )
    fast = env()
    for name in ("agents", "agent_selection", "rewards", "_cumulative_rewards", "terminations", "infos"):
        errors = []
        for e in (stock, fast):
            with pytest.raises(AttributeError) as caught:
                getattr(e, name)
            errors.append(str(caught.value))
        assert errors[0] == errors[1], name
    assert _wrapped_trace(fast, 11, 600) == _wrapped_trace(stock, 11, 600)


# -- forced rolls come in order ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("rolls, kind", [({"a1", "b2"}, "set"), ({"a1": 0}, "dict"), (frozenset({3}), "frozenset")])
def test_forced_rolls_must_come_in_order(rolls, kind):
    game = env()
    with pytest.raises(ValueError, match=f"rolls must be a sequence of squares in order \\(a list\\), got a {kind}"):
        game.reset(seed=1, options={"rolls": rolls})
    game.reset(seed=1, options={"rolls": ["a1", 7]})  # the env stays usable
