"""Scenario tests with forced dice, state views, auto-reset, truncation and records."""

from __future__ import annotations

import re
from dataclasses import fields

import numpy as np
import pytest

from strategic_reserve_env import BLUE, RED, Game
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import SQUARE_INDEX, STANDARD_BOARD, dice_for, square_for_dice, squares_of
from strategic_reserve_env.core.config import Config, StartPosition
from strategic_reserve_env.core.rules import HIT_EMPTY, HIT_ENEMY, HIT_FRIENDLY
from strategic_reserve_env.core.sampling import nth_set_bit, popcount, uniform_square
from strategic_reserve_env.files import records
from strategic_reserve_env.speed import engine_speed as bench

S = SQUARE_INDEX


def names(bits: int) -> list[str]:
    from strategic_reserve_env.core.board import square_name

    return [square_name(s) for s in squares_of(int(bits))]


def test_start_position_views():
    state = engine.init(Config(), 2)
    assert state.board_strings() == [STANDARD_BOARD] * 2
    assert state.reserves().tolist() == [[7, 7], [7, 7]]
    assert state.board()[0, S["b2"]] == 1 and state.board()[0, S["c2"]] == 2
    assert (state.board() > 0).sum() == 2 * 12
    assert not state.legal_mask().any()
    assert state.to_move.tolist() == [RED, RED]


def test_three_kinds_of_hit_in_one_batch():
    """b2 is red (friendly for Red), c2 blue (enemy), a1 empty."""
    state = engine.roll(engine.init(Config(), 3), np.array([S["b2"], S["c2"], S["a1"]]))
    assert state.hit.tolist() == [HIT_FRIENDLY, HIT_ENEMY, HIT_EMPTY]
    # friendly b2: its group is b2 alone; touching blue b3 and c2 go, each a single checker
    assert names(state.captured[0]) == ["c2", "b3"]
    assert names(state.legal[0]) == ["b1", "a2", "c2", "b3"]
    # enemy c2: just that checker goes; every empty square is legal
    assert names(state.captured[1]) == ["c2"]
    assert popcount(int(state.legal[1])) == 36 - 11
    assert state.captured[2] == 0 and popcount(int(state.legal[2])) == 36 - 12
    assert state.reserves()[:, 1].tolist() == [9, 8, 7]


def test_win_and_auto_reset_in_step():
    start = StartPosition(board="R" + "." * 35, reserves=(1, 3), to_move="red")
    config = Config(start=start)
    state = engine.roll(engine.init(config, 2), np.array([S["f6"], S["f6"]]))
    state, outcome = engine.step(state, np.array([S["f6"], S["a2"]]), np.array([S["a1"], S["a1"]]), config)
    assert outcome.ended.tolist() == [True, True]
    assert outcome.winner.tolist() == [RED, RED]
    assert outcome.plies.tolist() == [1, 1]
    assert not outcome.truncated.any()
    # both games restarted and rolled a1 (a red checker: friendly hit)
    assert state.board_strings() == [start.board] * 2
    assert state.ply.tolist() == [0, 0] and not state.done.any()
    assert state.hit.tolist() == [HIT_FRIENDLY, HIT_FRIENDLY]


def test_without_autoreset_finished_games_wait():
    start = StartPosition(board="R" + "." * 35, reserves=(1, 3), to_move="red")
    config = Config(start=start)
    state = engine.roll(engine.init(config, 1), np.array([S["f6"]]))
    state, outcome = engine.step(state, np.array([S["f6"]]), np.array([S["a1"]]), config, autoreset=False)
    assert outcome.ended.tolist() == [True]
    assert state.winner.tolist() == [RED] and state.done.all()
    assert state.legal.tolist() == [0]  # no roll for a finished game
    # a later step ignores its action and dice and reports nothing new
    later, outcome = engine.step(state, np.array([99]), np.array([-5]), config, autoreset=False)
    assert not outcome.ended.any()
    assert later.board_strings() == state.board_strings() and later.ply.tolist() == [1]


def test_truncation_at_the_ply_limit():
    config = Config(ply_limit=3)
    game = Game(config)
    state = engine.init(config, 1)
    for ply, square in enumerate([S["a1"], S["f6"], S["a6"]], start=1):
        state = engine.roll(state, np.array([square]))
        state = engine.place(state, np.array([square]), config)
        game.roll(square)
        game.place(square)
        assert state.truncated.tolist() == [ply == 3] and game.truncated == (ply == 3)
    assert state.winner.tolist() == [-1] and state.done.all()


def test_state_dice_match_the_roller_seat():
    start = StartPosition(to_move="blue")
    config = Config(start=start)
    state = engine.init(config, 36)
    assert state.dice().tolist() == [[0, 0]] * 36  # before any roll
    rolled = engine.roll(state, np.arange(36))
    assert rolled.dice().tolist() == [list(dice_for(s, BLUE)) for s in range(36)]
    # after the placement the turn has passed, but the dice still read from the roller's (Blue's) seat
    placed = engine.place(rolled, uniform_square(rolled.legal, np.zeros(36)), config)
    assert placed.dice().tolist() == rolled.dice().tolist()
    red_rolled = engine.roll(placed, np.arange(36)[::-1].copy())
    assert red_rolled.dice().tolist() == [list(dice_for(s, RED)) for s in range(35, -1, -1)]


def test_dice_from_each_seat():
    assert dice_for(S["a1"], RED) == (1, 1) and dice_for(S["f6"], RED) == (6, 6)
    assert dice_for(S["b1"], BLUE) == (5, 6) and dice_for(S["f6"], BLUE) == (1, 1)
    for square in range(36):
        for mover in (RED, BLUE):
            assert square_for_dice(*dice_for(square, mover), mover) == square
    with pytest.raises(ValueError, match="dice must be 1..6"):
        square_for_dice(0, 3, RED)


def test_uniform_square_is_uniform_over_set_bits():
    bits = int(engine.init(Config(), 1).me[0])  # the six red start squares
    counts = np.zeros(36, dtype=int)
    uniforms = np.random.default_rng(0).random(60_000)
    picks = uniform_square(np.full(60_000, bits, dtype=np.int64), uniforms)
    np.add.at(counts, picks, 1)
    assert set(np.flatnonzero(counts)) == set(squares_of(bits))
    assert counts[counts > 0].min() > 9_000 and counts.max() < 11_000
    for k in range(6):  # the int path agrees with the array path
        assert nth_set_bit(bits, k) == int(nth_set_bit(np.array([bits]), np.array([k]))[0])


def test_record_of_a_played_game_replays_to_the_same_position(tmp_path):
    rng = np.random.default_rng(3)
    game = Game(Config(reserve=5))
    while not game.done:
        game.roll(int(rng.integers(36)))
        game.place(int(uniform_square(game.legal, float(rng.random()))))
    path = tmp_path / "game.json"
    records.write_record(records.record_of(game), path)
    trace = list(records.replay(records.load_record(path)))
    assert len(trace) == game.ply
    assert trace[-1]["board"] == game.board_string()
    assert trace[-1]["winner"] == ["red", "blue"][game.winner]


def test_state_indexing_and_game_round_trip():
    config = Config()
    state = engine.roll(engine.init(config, 4), np.array([0, S["b2"], S["c2"], 3]))
    assert state[1].batch_size == 1 and state[-1].batch_size == 1
    assert state[np.array([True, False, True, False])].hit.tolist() == [HIT_EMPTY, HIT_ENEMY]
    game = Game(config)
    game.load(state, 1)
    assert game.legal_squares() == squares_of(int(state.legal[1]))
    back = game.to_state()
    assert back.board_strings() == state[1].board_strings() and back.legal.tolist() == [int(state.legal[1])]


def test_game_declares_the_state_fields_in_order():
    declared = [name for name in Game.__annotations__ if name not in ("config", "history", "_start", "_origin")]
    assert declared == [f.name for f in fields(engine.State)]
    assert set(Game.__slots__) >= set(declared)


def test_roller_and_dice_through_a_ply():
    game = Game(Config(start=StartPosition(to_move="blue")))
    assert game.dice == (0, 0)
    game.roll(S["b1"])
    assert (game.roller, game.dice) == (BLUE, (5, 6))  # Blue rolled and must place
    game.place(game.legal_squares()[0])
    assert (game.to_move, game.roller, game.dice) == (RED, BLUE, (5, 6))  # placed: still Blue's roll
    game.roll(S["b1"])
    assert (game.roller, game.dice) == (RED, (2, 1))


BENCH_LABELS = [  # in bench.COLUMNS: every row's columns start at the same place
    "engine      B=1     single-game path (Python ints)",
    "engine      B=1     batched numpy arrays",
    "engine      B=8     batched numpy arrays",
    "pettingzoo  1 game  connect_four_v3.raw_env, aec_loop",
    "aec         1 game  env(), aec_loop",
    "aec         1 game  raw_env, aec_loop",
    "aec         1 game  raw_env luck_adjusted, aec_loop",
    "gymnasium   1 env   CartPole-v1, gym_episode",
    "gym env     1 env   outcome, gym_episode",
    "gym env     1 env   luck_adjusted, gym_episode",
    "gymnasium   64      CartPole-v1 vector, masks->step",
    "vector env  64      outcome, masks->step",
    "vector env  64      luck_adjusted, masks->step",
    "sb3 VecEnv  64      outcome, collect_rollouts",
    "sb3 VecEnv  64      luck_adjusted, collect_rollouts",
    "reference   B=1     plain scalar (reference.py)",
]
#: the line each ratio of a bench line is to (by the name it prints)
BENCH_PEERS = {
    "connect_four": BENCH_LABELS[3],
    "CartPole": None,  # the gymnasium line of the same size, just above
    "outcome": BENCH_LABELS[13],
    "aec raw_env": BENCH_LABELS[5],
}
BENCH_LINE = re.compile(
    r"(?P<label>.+?)\s+(?P<rate>[\d,]+) (?:plies|steps)/s"
    r"(?:  x(?P<ratio>[\d.]+) (?P<peer>connect_four|CartPole|outcome))?"
    r"(?:, x(?P<vs_outcome>[\d.]+) outcome)?"
    r"(?:, (?P<plies>[\d,]+) plies/s x(?P<per_ply>[\d.]+) aec raw_env)?"
)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.slow
def test_bench_reports_every_interface_beside_its_peer_and_the_ratios_of_its_own_figures():
    """Each interface in its users' loop beside the library's own env of that loop (PettingZoo's connect_four,
    Gymnasium's CartPole-v1) in the same run; each printed ratio is the ratio of the printed rates."""
    lines = bench.run(seconds=0.01, batch_sizes=(1, 8))
    assert len(lines) == len(BENCH_LABELS) + 1
    rates = {}
    for label, line in zip(BENCH_LABELS, lines, strict=False):
        match = BENCH_LINE.fullmatch(line)
        assert match is not None and match["label"] == label, line
        rates[label] = _number(match["rate"])
        assert rates[label] > 0, line
        if match["peer"] is not None:
            peer = BENCH_PEERS[match["peer"]] or BENCH_LABELS[BENCH_LABELS.index(label) - 1 - ("luck" in label)]
            # rates are printed to whole units, ratios to two decimals
            assert _number(match["ratio"]) == pytest.approx(rates[label] / rates[peer], rel=0.01, abs=0.006), line
        if match["vs_outcome"] is not None:  # a luck_adjusted line beside the outcome line just above it
            assert "luck_adjusted" in label
            outcome = rates[BENCH_LABELS[BENCH_LABELS.index(label) - 1]]
            assert _number(match["vs_outcome"]) == pytest.approx(rates[label] / outcome, rel=0.01, abs=0.006), line
        else:
            assert "luck_adjusted" not in label or label.startswith("sb3"), line
        if match["plies"] is not None:
            per_ply = _number(match["plies"]) / rates[BENCH_PEERS["aec raw_env"]]
            assert _number(match["per_ply"]) == pytest.approx(per_ply, rel=0.01, abs=0.006), line
    assert [BENCH_LINE.fullmatch(line)["peer"] for line in lines[4:15]] == [
        *["connect_four"] * 3,
        None,
        *["CartPole"] * 2,
        None,
        *["CartPole"] * 2,
        None,
        "outcome",
    ]
    speed_up = re.fullmatch(
        r"speed-up vs reference: B=8 x([\d,.]+), single-game path x([\d,.]+), "
        r"aec raw_env x([\d.]+), aec env\(\) x([\d.]+)",
        lines[-1],
    )
    assert speed_up is not None, lines[-1]
    reference = rates[BENCH_LABELS[-1]]
    for printed, label in zip(speed_up.groups(), [BENCH_LABELS[i] for i in (2, 0, 5, 4)], strict=True):
        # the printed rates are rounded to whole plies/s, the ratios to one decimal (the aec ones to two)
        assert float(printed.replace(",", "")) == pytest.approx(rates[label] / reference, abs=0.051)


def test_one_game_planes_made_in_many_threads_at_once_equal_those_made_alone():
    """`observation.encode` packs one game's bitboards into bytes of its thread's own: observations made by
    several threads at once, switching every few microseconds, equal those made one at a time."""
    import sys
    import threading

    from strategic_reserve_env.core.observation import planes

    rng, games = np.random.default_rng(7), []
    game = Game(Config())
    while len(games) < 60:
        if game.done:
            game.reset()
        game.roll(int(rng.integers(36)))
        games.append(game.copy())
        if game.legal:
            game.place(int(rng.choice(game.legal_squares())))
    expected = [planes(position, side) for position in games for side in (RED, BLUE)]
    failures: list[int] = []

    def observe_all() -> None:
        for _ in range(300):
            made = [planes(position, side) for position in games for side in (RED, BLUE)]
            failures.extend(i for i, (a, b) in enumerate(zip(made, expected, strict=True)) if not np.array_equal(a, b))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=observe_all) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
