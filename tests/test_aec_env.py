"""The PettingZoo AEC env: PettingZoo's own tests, spec details, forced dice and conformance."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, render_test, seed_test

from conftest import conformance_records, expected_trace
from strategic_reserve_env import IllegalActionError, env, raw_env, records
from strategic_reserve_env.board import SQUARE_INDEX, parse_square, square_name
from strategic_reserve_env.config import StartPosition

S = SQUARE_INDEX


def test_pettingzoo_api_test():
    api_test(env(), num_cycles=1000)


def test_pettingzoo_seed_test():
    seed_test(env, num_cycles=1000)


def test_pettingzoo_render_test():
    render_test(env)


def test_pickling_keeps_settings():
    original = env(reserve=5, ply_limit=77)
    copy = pickle.loads(pickle.dumps(original))
    copy.reset(seed=1)
    assert copy.unwrapped.config.reserve == 5 and copy.unwrapped.config.ply_limit == 77
    assert pickle.loads(pickle.dumps(raw_env())).metadata["name"] == "strategic_reserve_v0"


def test_registry_and_metadata():
    made = pettingzoo.make("aec", "strategic_reserve_v0", reserve=6)
    made.reset(seed=0)
    assert made.unwrapped.config.reserve == 6
    metadata = raw_env.metadata
    assert metadata["name"] == "strategic_reserve_v0" and metadata["is_parallelizable"] is False
    assert metadata["render_modes"] == ["human", "ansi", "rgb_array"] and metadata["render_fps"] > 0
    e = raw_env()
    assert e.possible_agents == ["player_0", "player_1"]
    assert e.observation_space("player_0") is e.observation_space("player_0")
    assert e.action_space("player_1").n == 36
    space = e.observation_space("player_0")
    assert space["observation"].shape == (6, 6, 9) and space["action_mask"].shape == (36,)


def _play_record(record_path):
    """Replay a record through the AEC env with forced dice; yield (trace entry, env) per ply."""
    record = records.load_record(record_path)
    start = record.config.start_position
    e = env(reserve=record.config.reserve, start=start)
    plies = [(parse_square(r), parse_square(p)) for r, p in record.plies]
    e.reset(seed=0, options={"rolls": [r for r, _ in plies]})
    return e, plies


@pytest.mark.parametrize("record_path", conformance_records(), ids=lambda p: p.stem)
def test_conformance_records_replay_through_the_aec_env(record_path):
    """At each decision the env shows the trace's roll, dice, hit, captures and legal squares, on
    the previous board less the captures; a win ends the game with the trace's board."""
    e, plies = _play_record(record_path)
    expected = [__import__("json").loads(line) for line in expected_trace(record_path).splitlines()]
    start = e.unwrapped.config.start_position
    board, reserves = start.board, dict(zip(("red", "blue"), start.reserves))
    for (_, placed), trace in zip(plies, expected):
        agent = e.agent_selection
        observation, _, terminated, truncated, info = e.last()
        assert not (terminated or truncated)
        assert agent == {"red": "player_0", "blue": "player_1"}[trace["mover"]]
        assert info["roll_name"] == trace["roll"] and list(info["dice"]) == trace["dice"]
        assert info["hit"] == trace["hit"]
        assert [square_name(s) for s in info["captured"]] == trace["captured"]
        assert [square_name(s) for s in np.flatnonzero(observation["action_mask"])] == trace["legal"]
        cleared = [parse_square(name) for name in trace["captured"]]
        board = "".join("." if i in cleared else c for i, c in enumerate(board))
        other = "blue" if trace["mover"] == "red" else "red"
        reserves[other] += len(cleared)
        game = e.unwrapped.game
        assert game.board_string() == board
        assert dict(zip(("red", "blue"), game.reserves)) == reserves
        e.step(placed)
        board, reserves = trace["board"], dict(trace["reserves"])
    if expected[-1]["winner"] is not None:
        assert e.unwrapped.game.board_string() == expected[-1]["board"]
        winner = {"red": "player_0", "blue": "player_1"}[expected[-1]["winner"]]
        loser = "player_1" if winner == "player_0" else "player_0"
        assert e.rewards == {winner: 1, loser: -1}
        assert all(e.terminations.values())


def test_win_rewards_and_dead_steps():
    start = StartPosition(board="R" + "." * 35, reserves=(1, 3), to_move="red")
    e = env(start=start)
    e.reset(seed=3)
    e.step(int(np.flatnonzero(e.observe("player_0")["action_mask"])[0]))
    assert e.terminations == {"player_0": True, "player_1": True}
    assert e.rewards == {"player_0": 1, "player_1": -1}
    rewards = {}
    for agent in e.agent_iter():
        _, reward, terminated, _, _ = e.last()
        assert terminated
        rewards[agent] = reward
        e.step(None)
    assert rewards == {"player_0": 1, "player_1": -1} and e.agents == []


def test_step_with_an_action_after_the_end_is_rejected():
    start = StartPosition(board="R" + "." * 35, reserves=(1, 3), to_move="red")
    e = raw_env(start=start)
    e.reset(seed=3)
    e.step(int(np.flatnonzero(e.observe("player_0")["action_mask"])[0]))
    with pytest.raises(ValueError, match="only valid action is None"):
        e.step(5)


def test_truncation_at_the_ply_limit():
    e = env(ply_limit=4)
    e.reset(seed=11)
    for _ in range(4):
        e.step(int(np.flatnonzero(e.last()[0]["action_mask"])[0]))
    assert all(e.truncations.values()) and not any(e.terminations.values())
    assert e.rewards == {"player_0": 0, "player_1": 0}


def test_illegal_move_through_env_loses_with_a_warning(caplog):
    e = env()
    e.reset(seed=0)
    mover = e.agent_selection
    illegal = int(np.flatnonzero(e.observe(mover)["action_mask"] == 0)[0])
    with caplog.at_level("WARNING"):
        e.step(illegal)
    assert "Illegal move made" in caplog.text
    assert e.rewards[mover] == -1 and all(e.terminations.values())


def test_illegal_move_on_raw_env_raises_a_clear_error():
    e = raw_env()
    e.reset(seed=0, options={"rolls": ["e5"]})  # friendly hit: legal e4, d5, f5, e6
    with pytest.raises(IllegalActionError, match="a1 is not a legal placement; legal: e4, d5, f5, e6"):
        e.step(0)
    assert e.game.ply == 0 and e.game.legal  # nothing changed


def test_observe_does_not_change_state_and_masks_only_the_mover():
    e = env()
    e.reset(seed=5)
    for _ in range(30):
        game = e.unwrapped.game
        before = (game.board_string(), game.reserves, game.legal, game.ply, e.agent_selection)
        mover = e.agent_selection
        other = "player_1" if mover == "player_0" else "player_0"
        for _ in range(3):
            mine, theirs = e.observe(mover), e.observe(other)
        assert before == (game.board_string(), game.reserves, game.legal, game.ply, e.agent_selection)
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
    info = e.infos["player_0"]
    assert info == {"roll": S["e5"], "roll_name": "e5", "dice": (5, 5), "hit": "friendly",
                    "captured": [S["e4"], S["d5"]]}
    assert e.infos["player_1"] == {}


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
    with pytest.raises(ValueError, match=r"rolls\[1\]: 'z1' is not a square"):
        raw_env().reset(options={"rolls": ["a1", "z1"]})


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
