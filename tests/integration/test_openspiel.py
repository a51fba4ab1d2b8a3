"""OpenSpiel 2.0.2: the game `python_strategic_reserve` under OpenSpiel's own checks, the conformance records
replayed through OpenSpiel states, OpenSpiel's MCTS as an agent of evaluate.py, and agents as OpenSpiel bots.

pyspiel is imported unconditionally: in .venv-integrations a missing OpenSpiel fails these tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import evaluate_bots, mcts

import strategic_reserve_env.envs.openspiel as sre_openspiel
from strategic_reserve_env.__main__ import main as cli
from strategic_reserve_env.agents import GreedyAgent, RandomAgent, load_agent
from strategic_reserve_env.commands.evaluate import main as evaluate
from strategic_reserve_env.core.board import BLUE, RED, bits_of, parse_square, square_name
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, MAX_PLY_LIMIT, Config
from strategic_reserve_env.core.engine import IllegalActionError
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE, PLANE_NAMES, planes
from strategic_reserve_env.core.rules import HIT_EMPTY, HIT_ENEMY, HIT_FRIENDLY
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.files import records
from strategic_reserve_env.pictures.render import ansi

CONFORMANCE = Path(__file__).resolve().parents[1] / "data" / "conformance"
RECORDS = sorted(CONFORMANCE.glob("*.json"))
PLANE = {name: index for index, name in enumerate(PLANE_NAMES)}
LONG = 1_000  # plies: the generated records are longer (and the default ply limit is this)


def game_of(reserve: int = 7, ply_limit: int = DEFAULT_PLY_LIMIT):
    return pyspiel.load_game(sre_openspiel.GAME_NAME, {"reserve": reserve, "ply_limit": ply_limit})


def view(state, player: int) -> np.ndarray:
    """The observation tensor of `player` as (6, 6, 9) planes."""
    return np.asarray(state.observation_tensor(player)).reshape(OBSERVATION_SHAPE)


def bits(view_: np.ndarray, plane: str) -> int:
    return bits_of(np.flatnonzero(view_[..., PLANE[plane]].reshape(-1)))


def openspiel_trace(state, plies: list[tuple[int, int]]) -> list[str]:
    """The trace lines of `plies` ((rolled, placed) squares) played from `state`, each roll a chance outcome
    and each placement an action, read back from OpenSpiel's interface alone: the legal actions and their
    names, the observation tensors (captures, kind of hit, board, reserves) and the returns (winner)."""
    lines = []
    for number, (rolled, placed) in enumerate(plies, start=1):
        assert state.is_chance_node(), f"ply {number}"
        assert state.chance_outcomes() == [(square, 1 / 36) for square in range(36)]
        state.apply_action(rolled)
        mover = state.current_player()
        legal = state.legal_actions()
        assert [state.action_to_string(mover, action) for action in legal] == [square_name(s) for s in legal]
        seen = view(state, mover)
        enemy, friendly = seen[..., PLANE["enemy_hit"]].any(), seen[..., PLANE["friendly_hit"]].any()
        hit = HIT_ENEMY if enemy else HIT_FRIENDLY if friendly else HIT_EMPTY
        state.apply_action(placed)
        red_view = view(state, RED)
        reserves = tuple(int(red_view[..., PLANE[p]].sum()) for p in ("own_reserve", "opponent_reserve"))
        returns = state.returns()
        winner = returns.index(1.0) if state.is_terminal() and 1.0 in returns else -1
        entry = records.trace_entry(
            number,
            mover,
            rolled,
            hit,
            bits(seen, "captured"),
            bits_of(legal),
            placed,
            bits(red_view, "own"),
            bits(red_view, "opponent"),
            reserves,
            winner,
        )
        lines.append(records.trace_line(entry))
    return lines


def first_state(game, record: records.Record):
    """The OpenSpiel state a record starts from: the game's initial state, or its custom start."""
    if record.config.start is None:
        return game.new_initial_state()
    return game.state_at(Game(record.config))


def squares(record: records.Record) -> list[tuple[int, int]]:
    return [(parse_square(rolled), parse_square(placed)) for rolled, placed in record.plies]


# ------------------------------------------------------------------------------ OpenSpiel's own checks


@pytest.mark.parametrize("reserve", [1, 4, 7, 12])
def test_random_sim_test_with_serialization(reserve):
    # random games of reserve 12 often last thousands of plies: a ply limit keeps the test short
    pyspiel.random_sim_test(game_of(reserve, ply_limit=400), num_sims=3, serialize=True, verbose=False)


def test_random_sim_test_with_games_ended_by_the_ply_limit():
    game = game_of(7, ply_limit=6)
    pyspiel.random_sim_test(game, num_sims=5, serialize=True, verbose=False)
    state = game.new_initial_state()
    while not state.is_terminal():
        actions = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        state.apply_action(actions[0])
    assert len(state.history()) == game.max_history_length() == 12  # six rolls and six placements
    assert state.returns() == [0.0, 0.0]  # nobody places a reserve of 7 in 3 turns: the truncation


def test_game_type_and_sizes():
    game = game_of(6, ply_limit=300)
    kind = game.get_type()
    assert kind.short_name == "python_strategic_reserve"
    assert kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert kind.reward_model == pyspiel.GameType.RewardModel.TERMINAL
    assert (game.num_players(), game.num_distinct_actions(), game.max_chance_outcomes()) == (2, 36, 36)
    assert (game.min_utility(), game.max_utility(), game.utility_sum()) == (-1.0, 1.0, 0.0)
    assert (game.max_game_length(), game.max_chance_nodes_in_history()) == (300, 300)
    assert (game.max_history_length(), game.max_move_number()) == (600, 600)  # the rolls counted
    assert game.observation_tensor_shape() == list(OBSERVATION_SHAPE)
    assert game.get_parameters() == {"reserve": 6, "ply_limit": 300}
    assert pyspiel.load_game("python_strategic_reserve").get_parameters() == {"reserve": 7, "ply_limit": 1000}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"reserve": 13}, "python_strategic_reserve: reserve must be in 1..12, got 13"),
        ({"ply_limit": 0}, "python_strategic_reserve: ply_limit must be in 1..2147483647, got 0"),
        ({"ply_limit": sre_openspiel.MAX_PLY_LIMIT + 1}, "ply_limit must be at most 1073741823 .OpenSpiel counts"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, message):
    with pytest.raises(ValueError, match=message):
        game_of(**params)


def test_unknown_parameters_are_refused():
    with pytest.raises(
        pyspiel.SpielError, match="Unknown parameter 'colour'. Available parameters are: ply_limit, reserve"
    ):
        pyspiel.load_game("python_strategic_reserve", {"colour": 1})


def test_chance_outcome_and_action_k_are_square_k():
    game = game_of()
    state = game.new_initial_state()
    assert state.current_player() == pyspiel.PlayerId.CHANCE
    assert [state.action_to_string(pyspiel.PlayerId.CHANCE, k) for k in (0, 35)] == ["roll a1", "roll f6"]
    state.apply_action(parse_square("c4"))  # Red rolls c4: an empty square of the standard start
    position = Game()
    position.roll(parse_square("c4"))
    assert state.current_player() == RED
    assert state.legal_actions() == position.legal_squares()
    state.apply_action(parse_square("a1"))
    position.place(parse_square("a1"))
    assert state.current_player() == pyspiel.PlayerId.CHANCE
    assert state.history() == [parse_square("c4"), parse_square("a1")]
    assert state.position.board_string() == position.board_string()


def test_observation_tensor_string_and_str_are_the_projects_along_a_game():
    game = game_of(5)
    state, rng = game.new_initial_state(), np.random.default_rng(7)
    while not state.is_terminal():
        position = state.position
        for player in (RED, BLUE):
            assert np.array_equal(view(state, player), planes(position, player))
            assert state.observation_string(player) == ansi(position)
        assert str(state) == ansi(position)
        actions = list(range(36)) if state.is_chance_node() else state.legal_actions()
        state.apply_action(int(rng.choice(actions)))


def test_clone_serialize_and_illegal_actions():
    game = game_of()
    state = game.new_initial_state()
    for action in (14, 0, 20, 35):  # c3 rolled, a1 placed; c4 rolled, f6 placed
        state.apply_action(action)
    state.apply_action(9)  # d2 rolled: a decision node
    copy = state.clone()
    copy.apply_action(copy.legal_actions()[0])
    assert state.current_player() == RED and str(state) != str(copy)
    again = game.deserialize_state(state.serialize())
    assert (str(again), again.history(), again.legal_actions()) == (str(state), state.history(), state.legal_actions())
    assert np.array_equal(view(again, BLUE), view(state, BLUE))
    before = (str(state), state.history())
    illegal = next(square for square in range(36) if square not in state.legal_actions())
    with pytest.raises(IllegalActionError, match=f"{square_name(illegal)} is not a legal placement"):
        state.apply_action(illegal)
    assert (str(state), state.history()) == before


# ------------------------------------------------------------------------ the rules, through OpenSpiel


def test_conformance_records_replay_through_openspiel_states():
    assert len(RECORDS) >= 30
    custom = 0
    for path in RECORDS:
        record = records.load_record(path)
        custom += record.config.start is not None
        state = first_state(game_of(record.config.reserve), record)
        expected = path.with_name(path.stem + ".trace.jsonl").read_text().splitlines()
        assert openspiel_trace(state, squares(record)) == expected, path.stem
        won = json.loads(expected[-1])["winner"] is not None
        assert state.is_terminal() == won, path.stem
    assert custom > 0  # records from custom starts are among them


def long_random_record(seed: int) -> records.Record:
    """The record of a game of uniformly random rolls and placements (reserve 12), from `seed` on: the first
    that lasts longer than LONG plies."""
    while True:
        rng, game = np.random.default_rng(seed), Game(Config(reserve=12, ply_limit=MAX_PLY_LIMIT))
        while not game.done:
            game.roll(int(rng.integers(36)))
            game.place(int(uniform_square(game.legal, float(rng.random()))))
        if game.ply > LONG:
            return records.record_of(game)
        seed += 1


@pytest.mark.parametrize("seed", [0, 10])
def test_records_longer_than_the_default_ply_limit_match_the_replay_command(seed, tmp_path, capsys):
    record = long_random_record(seed)
    path = tmp_path / "long.json"
    records.write_record(record, path)
    assert cli(["replay", str(path)]) == 0
    expected = capsys.readouterr().out.splitlines()
    plies = squares(record)
    assert len(expected) == len(plies) > LONG
    game = game_of(12, ply_limit=len(plies))  # the last ply wins rather than truncates
    state = game.new_initial_state()
    assert openspiel_trace(state, plies) == expected
    assert state.is_terminal() and sorted(state.returns()) == [-1.0, 1.0]
    # under the default ply limit the same game is truncated: utility 0 for both, the history at its longest
    truncated = game_of(12).new_initial_state()
    openspiel_trace(truncated, plies[:LONG])
    assert truncated.is_terminal() and truncated.returns() == [0.0, 0.0]
    assert len(truncated.history()) == game_of(12).max_history_length()


# -------------------------------------------------------------------------------- search and bots


def test_the_rollout_evaluator_draws_what_openspiels_draws():
    """GameRolloutEvaluator plays its rollouts on the Game: the same values as OpenSpiel's evaluator."""
    game, rng = game_of(4), np.random.default_rng(1)
    state = game.new_initial_state()
    for _ in range(7):  # a few plies in: a chance node, then a decision node
        actions = list(range(36)) if state.is_chance_node() else state.legal_actions()
        state.apply_action(int(rng.choice(actions)))
    for start in (state, game.new_initial_state()):
        ours = sre_openspiel.GameRolloutEvaluator(n_rollouts=40, random_state=np.random.RandomState(3))
        theirs = mcts.RandomRolloutEvaluator(n_rollouts=40, random_state=np.random.RandomState(3))
        values = [ours.evaluate(start) for _ in range(3)]
        assert np.array_equal(values, [theirs.evaluate(start) for _ in range(3)])
        assert len({tuple(v) for v in values}) > 1  # the rollouts differ: the comparison means something


def test_decision_state_is_the_observed_position():
    game, played = game_of(), Game()
    rng = np.random.default_rng(4)
    for _ in range(9):
        played.roll(int(rng.integers(36)))
        played.place(int(uniform_square(played.legal, float(rng.random()))))
    played.roll(int(rng.integers(36)))  # Blue to place
    seen = planes(played, played.to_move)
    state = game.decision_state(
        bits(seen, "own"), bits(seen, "opponent"), played.reserve_me, played.reserve_opp, played.legal
    )
    assert state.current_player() == RED  # the mover plays Red in the search
    assert state.legal_actions() == played.legal_squares()
    assert np.array_equal(view(state, RED)[..., :3], seen[..., :3])  # own, opponent, legal
    assert np.array_equal(view(state, RED)[..., 7:], seen[..., 7:])  # the reserves
    with pytest.raises(ValueError, match="a decision node needs a legal square"):
        game.decision_state(0, 0, 1, 1, 0)


def test_openspiel_mcts_is_an_agent_governed_by_the_generator():
    agent = load_agent("openspiel-mcts:simulations=8")
    assert agent.name == "openspiel-mcts:simulations=8,rollouts=1"
    assert load_agent(agent.name).name == agent.name
    rng = np.random.default_rng(0)
    positions = []
    for _ in range(6):
        game = Game()
        for _ in range(int(rng.integers(0, 12))):
            game.roll(int(rng.integers(36)))
            game.place(int(uniform_square(game.legal, float(rng.random()))))
        game.roll(int(rng.integers(36)))
        positions.append(game)
    observations = np.stack([planes(game, game.to_move) for game in positions])
    masks = np.stack([np.isin(np.arange(36), game.legal_squares()) for game in positions])
    masks[2] = False  # a game where no placement is due: 0, not looked at
    first = agent.act(observations, masks, np.random.default_rng(5))
    assert np.array_equal(first, agent.act(observations, masks, np.random.default_rng(5)))
    for row, (game, square) in enumerate(zip(positions, first, strict=True)):
        assert square in game.legal_squares() if row != 2 else square == 0
    others = {tuple(agent.act(observations, masks, np.random.default_rng(seed))) for seed in range(6)}
    assert len(others) > 1  # the generator draws the search's randomness


@pytest.mark.parametrize("spec", ["openspiel-mcts:simulations=0", "openspiel-mcts:uct=-1.0", "openspiel-mcts:x=1"])
def test_bad_mcts_specs_are_refused(spec):
    with pytest.raises(ValueError, match="simulations|uct|unknown option"):
        load_agent(spec)


def test_mcts_plays_full_games_against_greedy_through_evaluate(tmp_path, capsys):
    spec = "openspiel-mcts:simulations=10"
    runs = []
    for name in ("first", "again"):
        out = tmp_path / name
        assert (
            evaluate(
                [spec, "greedy", "--games", "4", "--batch", "4", "--seed", "2", "--no-progress", "--out", str(out)]
            )
            == 0
        )
        runs.append(json.loads((out / "results.json").read_text())["pairings"])
    assert spec + ",rollouts=1" in capsys.readouterr().out
    (pairing,) = runs[0]
    assert (pairing["a"], pairing["b"], pairing["games"]) == (spec + ",rollouts=1", "greedy", 4)
    assert pairing["truncated"] == 0 and 0 <= pairing["score"] <= 1
    drop = ("seconds",)
    assert [{k: v for k, v in p.items() if k not in drop} for p in runs[1]] == [
        {k: v for k, v in p.items() if k not in drop} for p in runs[0]
    ]  # --seed governs the dice and the search


def test_agents_as_openspiel_bots_in_evaluate_bots():
    game = game_of(5)
    greedy, random = (
        sre_openspiel.PolicyBot(GreedyAgent(), np.random.default_rng(1)),
        sre_openspiel.PolicyBot(RandomAgent()),
    )
    returns = np.array([pyspiel.evaluate_bots(game.new_initial_state(), [greedy, random], seed) for seed in range(100)])
    assert np.all(np.sort(returns, axis=1) == [-1.0, 1.0])
    # greedy as Red beats random in 68 % of games (evaluate.py greedy random --reserve 5 --games 400: 0.680)
    assert np.mean(returns[:, 0] == 1.0) > 0.55
    # and against OpenSpiel's own MCTS bot, through OpenSpiel's Python evaluate_bots
    search = sre_openspiel.mcts_bot(game, 8, 1, np.random.RandomState(0), sre_openspiel.DEFAULT_UCT)
    for players in ([search, random], [greedy, search]):
        result = evaluate_bots.evaluate_bots(game.new_initial_state(), players, np.random.RandomState(2))
        assert sorted(result) == [-1.0, 1.0]
    with pytest.raises(ValueError, match="a bot steps at a decision node"):
        greedy.step(game.new_initial_state())
