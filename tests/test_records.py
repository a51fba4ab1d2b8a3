"""Records are games, not episodes: no ply limit on replay, record_of round trips, header precedence."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategic_reserve_env import Game, env
from strategic_reserve_env.__main__ import main
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import STANDARD_BOARD, parse_square, square_name
from strategic_reserve_env.core.config import MAX_PLY_LIMIT, Config, StartPosition
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.files import records

from conftest import REPO, random_start

LONG_GAME = 1_600  # plies: longer than the environments' default ply limit of 1000


def play_on(game: Game, rng: np.random.Generator, plies: int = MAX_PLY_LIMIT) -> list[dict]:
    """Up to `plies` plies of uniformly random dice and placements (fewer if the game ends), and
    their trace as they were played (plies numbered from the start of the game's history)."""
    trace = []
    while not game.done and len(trace) < plies:
        mover = game.to_move
        game.roll(int(rng.integers(36)))
        rolled, hit, captured, legal = game.rolled, game.hit, game.captured, game.legal
        placed = int(uniform_square(legal, float(rng.random())))
        game.place(placed)
        trace.append(
            records.trace_entry(
                len(game.history),
                mover,
                rolled,
                hit,
                captured,
                legal,
                placed,
                game.red,
                game.blue,
                game.reserves,
                game.winner,
            )
        )
    return trace


def play_random(config: Config, seed: int) -> tuple[Game, list[dict]]:
    """A game of uniformly random dice and placements, and its trace as it was played."""
    game = Game(config)
    return game, play_on(game, np.random.default_rng(seed))


def through_json(record: records.Record) -> records.Record:
    """The record written as JSON text and parsed back."""
    return records.parse_record(json.loads(json.dumps(record.to_json())))


def test_a_1600_ply_game_replays_in_full(tmp_path, capsys):
    config = Config(reserve=12, ply_limit=MAX_PLY_LIMIT)
    seed = 0
    game, played = play_random(config, seed)
    while game.ply < LONG_GAME:  # about one random game in five of reserve 12 lasts this long
        seed += 1
        game, played = play_random(config, seed)
    assert game.winner >= 0 and game.ply >= LONG_GAME
    path = tmp_path / "long.json"
    records.write_record(records.record_of(game), path)
    assert path.stat().st_size * 20 < records.MAX_RECORD_BYTES  # the size limit leaves room for far longer games
    assert list(records.replay(records.load_record(path))) == played
    assert main(["replay", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == played


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    reserve=st.integers(1, 12),
    start_seed=st.none() | st.integers(0, 2**32 - 1),
    ply_limit=st.integers(1, 60) | st.integers(61, 3_000),
    seed=st.integers(0, 2**32 - 1),
    description=st.none() | st.text(max_size=20),
)
def test_record_of_round_trips_and_replays_to_the_same_trace(reserve, start_seed, ply_limit, seed, description):
    start = None if start_seed is None else random_start(np.random.default_rng(start_seed))
    game, played = play_random(Config(reserve=reserve, ply_limit=ply_limit, start=start), seed)
    record = records.record_of(game, description, players=("random", "me"), seed=seed)
    parsed = through_json(record)
    result = ("red", "blue")[game.winner] if game.winner >= 0 else "unfinished"
    assert parsed == records.Record(
        record.config, tuple(map(list, record.plies)), description, ("random", "me"), seed, result
    )
    assert parsed.to_json() == record.to_json()
    assert parsed.config == record.config == Config(reserve=reserve, ply_limit=MAX_PLY_LIMIT, start=start)
    assert list(records.replay(parsed)) == played  # a truncated game's replay just ends where it stopped


def test_a_record_of_a_game_the_env_truncated_replays_and_plays_on():
    limit = 40
    aec = env(reserve=12, ply_limit=limit)
    aec.reset(seed=3)
    rng = np.random.default_rng(3)
    while not any(aec.truncations.values()):
        assert not any(aec.terminations.values()), "pick a seed whose game outlasts the limit"
        mask = aec.last()[0]["action_mask"]
        aec.step(int(rng.choice(np.flatnonzero(mask))))
    game = aec.unwrapped.game
    record = records.record_of(game)
    assert record.config.ply_limit == MAX_PLY_LIMIT and game.config.ply_limit == limit
    trace = list(records.replay(through_json(record)))
    assert len(trace) == limit and trace[-1]["winner"] is None
    assert trace[-1]["board"] == game.board_string()
    assert tuple(trace[-1]["reserves"].values()) == game.reserves
    # the record goes on past the env's limit: one more ply is still a ply of the game
    empty = square_name(trace[-1]["board"].index("."))  # rolling an empty square makes it legal
    data = record.to_json()
    longer = records.parse_record({**data, "plies": [*data["plies"], [empty, empty]]})
    assert len(list(records.replay(longer))) == limit + 1


@pytest.mark.parametrize(
    "header, reserves",
    [
        ({"variant": {"reserve": 10}, "start": {"board": "R" + "." * 34 + "B", "to_move": "blue"}}, (10, 10)),
        ({"variant": {"reserve": 3}, "start": {}}, (3, 3)),
        ({"variant": {"reserve": 6}}, (6, 6)),
        ({"start": {"to_move": "blue"}}, (7, 7)),
        # start.reserves win over the variant, also above 12 (a position of a reserve-12 game)
        ({"variant": {"reserve": 3}, "start": {"reserves": {"red": 20, "blue": 5}}}, (20, 5)),
    ],
)
def test_start_reserves_then_the_variant_reserve(header, reserves):
    record = records.parse_record({**header, "plies": [["a1", "a1"]]})
    assert record.config.start_position.reserves == reserves
    first = next(records.replay(record))
    mover = first["mover"]
    assert first["reserves"][mover] == dict(zip(("red", "blue"), reserves, strict=True))[mover] - 1
    board = list(header.get("start", {}).get("board", STANDARD_BOARD))
    board[parse_square("a1")] = mover[0].upper()  # a1 is empty, or emptied by the roll, and placed on
    assert first["board"] == "".join(board)


@pytest.mark.parametrize(
    "header, message",
    [
        ({"variant": {"reserve": 0}}, r"variant\.reserve must be in 1\.\.12, got 0"),
        ({"variant": {"reserve": "7"}}, r"variant\.reserve must be an integer in 1\.\.12, got '7'"),
        ({"variant": {"reserve": True}}, r"variant\.reserve must be an integer"),
        ({"variant": {"reserve": 13}, "start": {"reserves": {"red": 7, "blue": 7}}}, r"variant\.reserve must be in"),
        ({"variant": [7]}, r"variant must be an object with only 'reserve'"),
        ({"start": []}, r"start must be an object, got list"),
        ({"start": {"side": "red"}}, r"unknown start field\(s\): side"),
        ({"start": {"to_move": "green"}}, r"start\.to_move must be 'red' or 'blue', got 'green'"),
        ({"start": {"reserves": {"red": 0, "blue": 7}}}, r"start\.reserves\.red must be in 1\.\.36, got 0"),
        ({"start": {"reserves": {"red": 7, "blue": "7"}}}, r"start\.reserves\.blue must be an integer"),
        ({"start": {"reserves": [7, 7]}}, r"start\.reserves must be \{'red': n, 'blue': n\}"),
        ({"start": {"board": "X" * 36}}, r"start\.board: "),
        ({"start": {"board": "R" * 36}}, r"start\.board needs at least one empty square"),
        ({"description": 5}, r"description must be a string, got int"),
    ],
)
def test_bad_headers_name_the_field(header, message):
    with pytest.raises(records.RecordError, match=message) as caught:
        records.parse_record({**header, "plies": []})
    assert caught.value.ply is None


def test_to_json_writes_start_only_when_the_config_has_one():
    plain = records.Record(Config(reserve=6), ())
    assert plain.to_json() == {"variant": {"reserve": 6}, "plies": []}
    assert through_json(plain) == plain
    custom = records.parse_record({"variant": {"reserve": 9}, "start": {"to_move": "blue"}, "plies": []})
    assert custom.to_json()["start"] == {"board": STANDARD_BOARD, "reserves": {"red": 9, "blue": 9}, "to_move": "blue"}
    assert through_json(custom) == custom


def test_the_record_of_a_loaded_game_starts_from_the_loaded_position():
    config = Config(reserve=9)
    rng = np.random.default_rng(5)
    state = engine.init(config, 3)
    for _ in range(25):  # 25 random plies in a batch; every game then awaits its roll
        state = engine.roll(state, rng.integers(0, 36, 3))
        state = engine.place(state, uniform_square(state.legal, rng.random(3)), config)
    assert not state.done.any()
    game = Game(config)
    game.load(state, 2)
    start = game.history_start()
    assert start == StartPosition(
        state.board_strings()[2], tuple(int(r) for r in state.reserves()[2]), ("red", "blue")[int(state.to_move[2])]
    )
    played = play_on(game, rng, plies=30)
    assert played[0]["ply"] == 1 and game.ply == 25 + len(played)
    record = records.record_of(game)
    assert record.config.start == start
    assert list(records.replay(through_json(record))) == played
    game.reset()  # back to the configured start: records start there again
    assert game.history_start() is None and records.record_of(game).config.start is None


def test_a_game_loaded_after_its_roll_or_its_win_has_no_record():
    config = Config()
    rolled = engine.roll(engine.init(config, 1), np.array([parse_square("e5")]))
    game = Game(config)
    game.load(rolled, 0)
    with pytest.raises(ValueError, match="loaded after its roll"):
        records.record_of(game)
    won = records.parse_record(
        {"start": {"board": "R" + "." * 35, "reserves": {"red": 1, "blue": 3}}, "plies": [["f6", "f6"]]}
    )
    finished = Game(won.config)
    finished.roll(parse_square("f6"))
    finished.place(parse_square("f6"))
    game.load(finished.to_state(), 0)
    with pytest.raises(ValueError, match="loaded after it was won"):
        records.record_of(game)


# -- the optional header fields players, seed and result (docs/RULES.md, "Game records") ---------------------


def _finished_record() -> tuple[dict, str]:
    """A record of a finished game from seed 5 (random play) as JSON data, and its winner's colour."""
    game, _ = play_random(Config(reserve=3), 5)
    assert game.winner >= 0
    return records.record_of(game, players=("greedy", "person"), seed=5).to_json(), ("red", "blue")[game.winner]


def test_header_fields_round_trip_and_a_matching_result_replays():
    data, winner = _finished_record()
    assert (data["players"], data["seed"], data["result"]) == ({"red": "greedy", "blue": "person"}, 5, winner)
    record = records.parse_record(json.loads(json.dumps(data)))
    assert (record.players, record.seed, record.result) == (("greedy", "person"), 5, winner)
    assert list(records.replay(record))[-1]["winner"] == winner


@pytest.mark.parametrize("claim", ["loser", "unfinished"])
def test_a_result_the_replay_contradicts_is_rejected_naming_the_field(claim, tmp_path, capsys):
    data, winner = _finished_record()
    data["result"] = {"loser": "blue" if winner == "red" else "red", "unfinished": "unfinished"}[claim]
    with pytest.raises(
        records.RecordError, match=rf"^result: the record says '{data['result']}', but its plies end '{winner}'$"
    ):
        list(records.replay(records.parse_record(data)))
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(data))
    assert main(["replay", str(path)]) == 1
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == len(data["plies"])  # every ply's line, then the error
    assert (
        captured.err.strip()
        == f"error: {path}: result: the record says '{data['result']}', but its plies end '{winner}'"
    )


def test_an_unfinished_result_matches_a_record_that_stops_before_the_end():
    data, _ = _finished_record()
    data["plies"] = data["plies"][:3]
    data["result"] = "unfinished"
    assert len(list(records.replay(records.parse_record(data)))) == 3


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("players", {"red": "a"}, r"players must be \{'red': name, 'blue': name\}"),
        ("players", {"red": "a", "blue": 3}, r"players must be"),
        ("players", ["a", "b"], r"players must be"),
        ("seed", "7", r"seed must be an integer"),
        ("seed", True, r"seed must be an integer"),
        ("seed", 2**70, r"seed must be an integer \(magnitude below 2\*\*64\)"),
        ("result", "draw", r"result must be 'red', 'blue' or 'unfinished', got 'draw'"),
        ("result", None, None),  # JSON null: the field is absent
    ],
)
def test_bad_header_fields_are_rejected_naming_them(field, value, message):
    data, _ = _finished_record()
    data[field] = value
    if message is None:
        assert records.parse_record(data).result is None
        return
    with pytest.raises(records.RecordError, match=message):
        records.parse_record(data)


# -- a record with a duplicate key ------------------------------------------------------------------------------------


def test_a_record_with_a_duplicate_key_is_refused():
    record = json.loads((REPO / "tests/data/conformance/cling_game_00.json").read_text())
    text = json.dumps(record)
    doubled = text[:-1] + ', "plies": []}'
    assert records.load_record(io.BytesIO(text.encode()), name="ok").plies  # the record itself reads
    with pytest.raises(records.RecordError, match=r"^dup: key 'plies' appears twice in one object$"):
        records.load_record(io.BytesIO(doubled.encode()), name="dup")
