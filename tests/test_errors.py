"""Bad input gets a clear error that says what was wrong and where, and changes nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

from strategic_reserve_env import Game
from strategic_reserve_env.__main__ import main
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import SQUARE_INDEX, STANDARD_BOARD
from strategic_reserve_env.core.config import Config, StartPosition
from strategic_reserve_env.files import records

from conftest import REPO


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"reserve": 0}, r"reserve must be in 1\.\.12, got 0"),
        ({"reserve": 13}, r"reserve must be in 1\.\.12, got 13"),
        ({"reserve": "7"}, r"reserve must be an integer in 1\.\.12"),
        ({"reserve": True}, r"reserve must be an integer"),
        ({"ply_limit": 0}, r"ply_limit must be in 1\.\.2147483647, got 0"),
        ({"start": "standard"}, r"start must be a StartPosition or None"),
    ],
)
def test_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Config(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"board": "R" * 35}, r"start\.board: board must have 36 characters, got 35"),
        ({"board": "X" + STANDARD_BOARD[1:]}, r"start\.board: board may only hold 'R', 'B' and '\.', got 'X'"),
        ({"board": "R" * 36}, r"start\.board needs at least one empty square"),
        ({"reserves": (0, 7)}, r"start\.reserves\.red must be in 1\.\.36, got 0"),
        ({"reserves": (7, 40)}, r"start\.reserves\.blue must be in 1\.\.36, got 40"),
        ({"reserves": (7,)}, r"start\.reserves must be a \(red, blue\) pair"),
        ({"to_move": "green"}, r"start\.to_move must be 'red' or 'blue', got 'green'"),
    ],
)
def test_bad_start_position(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StartPosition(**kwargs)


def _rolled(config: Config, squares: list[int]) -> engine.State:
    return engine.roll(engine.init(config, len(squares)), np.array(squares))


def _copy(state: engine.State) -> dict:
    return {f.name: getattr(state, f.name).copy() for f in fields(state)}


def _unchanged(state: engine.State, before: dict) -> bool:
    return all(np.array_equal(getattr(state, k), v) for k, v in before.items())


def test_illegal_action_names_game_and_square_and_changes_nothing():
    config = Config()
    # game 2 rolls e5 (a red checker): only squares next to its group are legal
    state = _rolled(config, [0, 0, SQUARE_INDEX["e5"], 0])
    before = _copy(state)
    actions = np.array([SQUARE_INDEX["a1"]] * 4)
    with pytest.raises(
        engine.IllegalActionError, match=r"game 2: a1 \(action 0\) is not a legal placement; legal: e4, d5, f5, e6"
    ):
        engine.place(state, actions, config)
    assert _unchanged(state, before)


@pytest.mark.parametrize(
    "actions, error, message",
    [
        ([0, 36], engine.IllegalActionError, r"game 1: action 36 is not a square index 0\.\.35"),
        ([-1, 0], engine.IllegalActionError, r"game 0: action -1 is not a square index"),
        ([0, 0, 0], ValueError, r"actions must have shape \(2,\), got \(3,\)"),
        ([[0, 0]], ValueError, r"actions must have shape \(2,\), got \(1, 2\)"),
        ([0.0, 1.0], ValueError, r"actions must be integer square indices 0\.\.35, got an array of dtype float64"),
    ],
)
def test_malformed_actions(actions, error, message):
    state = _rolled(Config(), [0, 0])
    with pytest.raises(error, match=message):
        engine.place(state, np.array(actions), Config())


def test_place_before_roll_and_roll_twice():
    config = Config()
    state = engine.init(config, 3)
    with pytest.raises(engine.IllegalActionError, match="game 0: no placement is due"):
        engine.place(state, np.zeros(3, dtype=np.int64), config)
    rolled = engine.roll(state, np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="game 0: rolled again before placing"):
        engine.roll(rolled, np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match=r"game 1: rolled square 40 is not in 0\.\.35"):
        engine.roll(state, np.array([0, 40, 0]))
    with pytest.raises(ValueError, match=r"batch_size must be a positive integer, got 0"):
        engine.init(config, 0)
    with pytest.raises(ValueError, match=r"reset mask must have shape \(3,\)"):
        engine.reset(state, np.zeros(2, dtype=bool), config)


def test_game_errors():
    game = Game()
    with pytest.raises(engine.IllegalActionError, match="no placement is due"):
        game.place(0)
    game.roll(SQUARE_INDEX["e5"])
    with pytest.raises(ValueError, match="rolled again before placing"):
        game.roll(0)
    with pytest.raises(engine.IllegalActionError, match="a1 is not a legal placement; legal: e4, d5, f5, e6"):
        game.place(0)
    with pytest.raises(engine.IllegalActionError, match="99 is not a legal placement"):
        game.place(99)
    game.place(SQUARE_INDEX["e4"])
    with pytest.raises(ValueError, match=r"rolled square 36 is not in 0\.\.35"):
        game.roll(36)


def test_game_place_takes_numpy_integers_and_refuses_the_rest_by_name():
    """Game.place: numpy integers are squares (the history records ints), bools and other types are
    refused with their repr, an illegal numpy integer by its square's name, and nothing after the end."""
    game = Game(Config(ply_limit=2))
    game.roll(SQUARE_INDEX["e5"])
    for square, shown in [
        (np.int64(0), "a1"),
        (np.uint8(40), "np.uint8(40)"),
        (5.0, "5.0"),
        (np.bool_(True), "np.True_"),
    ]:
        with pytest.raises(
            engine.IllegalActionError, match=f"^{re.escape(shown)} is not a legal placement; legal: e4, d5, f5, e6$"
        ):
            game.place(square)
    game.place(np.int64(SQUARE_INDEX["e4"]))
    game.roll(SQUARE_INDEX["a1"])
    game.place(np.int8(game.legal_squares()[0]))
    assert game.truncated and all(type(rolled) is int and type(placed) is int for rolled, placed in game.history)
    for square in (SQUARE_INDEX["b1"], np.int64(SQUARE_INDEX["b1"])):
        with pytest.raises(engine.IllegalActionError, match=r"^the game is over; reset it first$"):
            game.place(square)


def _record(plies, **header) -> dict:
    return {"variant": {"reserve": 7}, **header, "plies": plies}


@pytest.mark.parametrize(
    "data, message",
    [
        ([1, 2], r"a record must be a JSON object, got list"),
        ({"plies": [], "moves": []}, r"unknown record field\(s\): moves"),
        (_record([], variant={"reserve": 13}), r"record header: variant\.reserve must be in 1\.\.12, got 13"),
        (_record([], variant={"size": 7}), r"variant must be an object with only 'reserve'"),
        (_record([], start={"board": "R" * 30}), r"start\.board: board must have 36 characters, got 30"),
        (_record([], start={"reserves": {"red": 7}}), r"start\.reserves must be"),
        ({"variant": {"reserve": 7}}, r"plies must be a list"),
    ],
)
def test_malformed_record_headers(data, message):
    with pytest.raises(records.RecordError, match=message) as caught:
        records.parse_record(data)
    assert caught.value.ply is None


@pytest.mark.parametrize(
    "plies, ply, message",
    [
        ([["a1", "a1"], ["z9", "a1"]], 2, r"ply 2: 'z9' is not a square"),
        ([["a1", "a1"], ["a1"]], 2, r"ply 2: expected a \[rolled, placed\] pair"),
        ([["a1", "a1"], "a1a2"], 2, r"ply 2: expected a \[rolled, placed\] pair"),
        ([["e5", "a1"]], 1, r"ply 1: a1 is not a legal placement; legal: e4, d5, f5, e6"),
        ([["a1", "b2"]], 1, r"ply 1: b2 is not a legal placement"),
    ],
)
def test_records_that_break_the_rules_name_the_ply(plies, ply, message):
    record = records.parse_record(_record(plies))
    entries = []
    with pytest.raises(records.RecordError, match=message) as caught:
        for entry in records.replay(record):
            entries.append(entry)
    assert caught.value.ply == ply
    assert len(entries) == ply - 1  # the plies before the bad one were replayed


def test_ply_after_the_game_ended():
    start = {"board": "R" + "." * 35, "reserves": {"red": 1, "blue": 3}, "to_move": "red"}
    record = records.parse_record(_record([["f6", "f6"], ["a1", "a2"]], start=start))
    with pytest.raises(records.RecordError, match=r"ply 2: the game already ended at ply 1 \(red won\)"):
        list(records.replay(record))


def test_cli_bad_record_prints_earlier_lines_then_one_error_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_record([["a1", "a1"], ["b1", "b1"], ["e5", "zz"]])))
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "replay", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 2
    assert [json.loads(line)["ply"] for line in result.stdout.splitlines()] == [1, 2]
    assert result.stderr.count("\n") == 1
    assert "ply 3: 'zz' is not a square" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "text, message",
    [("{not json", "is not valid JSON"), (None, "cannot read")],
)
def test_cli_unreadable_record(tmp_path, capsys, text, message):
    path = tmp_path / "record.json"
    if text is not None:
        path.write_text(text)
    assert main(["replay", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1


def test_cli_bad_bench_setting(capsys):
    assert main(["bench", "--reserve", "20", "--seconds", "0.01"]) == 2
    assert "reserve must be in 1..12, got 20" in capsys.readouterr().err


@pytest.mark.parametrize("values", [[0.0, 1.0], [True, False], ["a1", "b1"], [[0], [1, 2]], None, 6.9, [0, 0, 0]])
def test_the_engine_and_the_learner_check_actions_alike(values):
    from strategic_reserve_env.envs.learner import as_actions

    state = _rolled(Config(), [0, 0])
    with pytest.raises(ValueError) as engine_error:
        engine.place(state, values, Config())
    with pytest.raises(ValueError) as learner_error:
        as_actions(values, 2)
    assert str(engine_error.value) == str(learner_error.value)
    assert str(engine_error.value).startswith("actions must ")


# -- bench's time -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", ["nan", "-1", "0", "inf"])
def test_bench_refuses_a_time_that_is_not_a_finite_positive_number(seconds, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--seconds", seconds])
    assert exit_.value.code == 2
    assert f"argument --seconds: must be a finite number of seconds > 0, got '{seconds}'" in capsys.readouterr().err
