"""The luck-adjusted evaluation: unbiased per seat and per pairing (statistical tests with stated tolerances),
the luck of conformance rolls worked by hand, agents as value functions, and the analysis of a game."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.luck_values import AgentValue, load_luck_value, observe, placement_values
from strategic_reserve_env.commands.evaluate import main
from strategic_reserve_env.core import luck
from strategic_reserve_env.core.board import RED
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.envs import arena
from strategic_reserve_env.evaluation.analysis import analyse
from strategic_reserve_env.evaluation.statistics import effective_games, score_interval
from strategic_reserve_env.evaluation.tournament import Settings, dice_seeds, duel_of, play_pairing
from strategic_reserve_env.files.records import load_record, record_of, replay

from conftest import REPO

CONFORMANCE = REPO / "tests" / "data" / "conformance"
SIGMAS = 4.0  # tolerance of the statistical tests: a true mean-zero effect fails one in ~16,000 seeds


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-x))


def _race(m: int, o: int) -> float:
    """The race model by hand (both reserves above 1)."""
    return _sigmoid((luck.RACE_A * (o - m) + luck.RACE_B) / np.sqrt(m + o))


class NoiseValue:
    """A deliberately bad value function: a pseudo-random number of the position (fixed before the games,
    unrelated to who wins)."""

    name = "noise"

    def __call__(self, after: luck.AfterRoll) -> np.ndarray:
        key = (after.me * 0x9E3779B1 + after.opp * 0x85EBCA77 + after.reserve_me * 31 + after.reserve_opp) % 1000003
        return ((key * 2654435761) % 1000003) / 1000003.0


def test_two_plies_of_a_conformance_record_have_the_luck_worked_by_hand():
    """scenario_two_plies_alternate: Red (reserve 5) has a1, Blue (5) has f6. Red's roll c3: only f6 captures
    (Blue back to 6), so luck = V(5,5) - (35 V(5,5) + V(5,6)) / 36. Red places c3; Blue rolls c3, capturing the
    lone c3 (Red back to 5); a1 would capture too, f6 is Blue's own and touches nothing: luck =
    V(5,5) - (2 V(5,5) + 34 V(5,4)) / 36 for Blue (whose reserve is 5, Red's 4 before the roll)."""
    record = load_record(CONFORMANCE / "scenario_two_plies_alternate.json")
    seen: list[float] = []
    analysis = analyse(record, "expectimax:depth=1")
    list(replay(record, on_roll=lambda game: seen.append(float(luck.luck_of_latest_roll(luck.DEFAULT_VALUE, game)))))
    first = _race(5, 5) - (35 * _race(5, 5) + _race(5, 6)) / 36
    second = _race(5, 5) - (2 * _race(5, 5) + 34 * _race(5, 4)) / 36
    assert seen == pytest.approx([first, second], abs=1e-12)
    assert [p.luck for p in analysis.plies] == pytest.approx([first, second], abs=1e-12)
    assert analysis.players[0].luck == pytest.approx(first) and analysis.players[1].luck == pytest.approx(second)


def test_the_luck_kept_by_the_arena_is_the_sum_of_each_rolls_luck():
    """Game by game, the arena's Red luck equals the sum of the luck of each roll read from the same positions
    one game at a time (`Game`, Python ints), Red's rolls counting for Red and Blue's against."""
    agents = [load_agent("greedy"), load_agent("random")]
    seen: list = []
    games = arena.play(
        agents,
        np.array([0, 1] * 4),
        dice_seeds(4, 4),
        Config(),
        [np.random.default_rng(1), np.random.default_rng(2)],
        on_ply=lambda state: seen.append(state),
        luck=luck.DEFAULT_VALUE,
    )
    expected = np.zeros(8)
    for state in seen:
        for k in np.flatnonzero(state.awaiting_placement):
            game = Game(Config())
            game.load(state, int(k))
            term = float(luck.luck_of_latest_roll(luck.DEFAULT_VALUE, game))
            expected[k] += term if game.to_move == RED else -term
    assert games.red_luck == pytest.approx(expected, abs=1e-12)
    assert np.any(expected != 0)


def _red_results(a: str, b: str, games: int, seed: int, value) -> tuple[np.ndarray, np.ndarray]:
    """(games,) Red's raw result and Red's luck-adjusted result, `a` Red in the even games."""
    agents = [load_agent(a), load_agent(b)]
    red_agent = np.tile([0, 1], games // 2)
    played = arena.play(
        agents,
        red_agent,
        dice_seeds(seed, games // 2),
        Config(),
        [np.random.default_rng([seed, i]) for i in (0, 1)],
        luck=value,
    )
    raw = np.where(played.winner == RED, 1.0, np.where(played.winner < 0, 0.5, 0.0))
    return raw, raw - played.red_luck


@pytest.mark.slow
def test_reds_adjusted_mean_is_reds_raw_win_rate_among_random_players():
    """Per seat (where symmetry proves nothing): 4,000 random games, Red's adjusted mean and raw win rate
    differ by the mean of Red's luck, which must be within SIGMAS standard errors of 0; Red's edge (about
    0.52) shows in the adjusted mean with an interval 2.5 times narrower than the raw one (V: the race
    model fitted on random play; the greedy fit, badly calibrated for random players, removes nothing, but
    stays unbiased)."""
    for value in (luck.RANDOM_RACE_VALUE, luck.DEFAULT_VALUE):
        raw, adjusted = _red_results("random", "random", 4000, 21, value)
        difference = raw - adjusted  # Red's luck, game by game
        assert abs(difference.mean()) < SIGMAS * difference.std(ddof=1) / np.sqrt(difference.size)
    raw, adjusted = _red_results("random", "random", 4000, 21, luck.RANDOM_RACE_VALUE)
    assert adjusted.std() * 2.5 < raw.std()
    low, high = score_interval(adjusted)
    assert 0.5 < low and high < 0.55  # Red's first-move edge, resolved by the adjusted score


@pytest.mark.slow
@pytest.mark.parametrize(("a", "b"), [("greedy", "random"), ("expectimax:depth=1", "greedy")])
def test_adjusted_and_raw_scores_agree_on_asymmetric_pairings(a, b):
    """Both scores estimate one expectation: they must agree within the combined 95 % interval, and the
    adjusted one is the narrower."""
    pairing = play_pairing(a, b, Settings(agents=[], games=1200, seed=7, progress=False))
    raw, adjusted = pairing.interval(), pairing.interval_adjusted()
    assert raw is not None and adjusted is not None
    combined = np.hypot((raw[1] - raw[0]) / 2, (adjusted[1] - adjusted[0]) / 2)
    assert abs(pairing.score - pairing.score_adjusted) < combined
    assert pairing.variance_ratio > 2 and pairing.luck_value == "race"


def test_a_noise_value_function_leaves_the_mean_and_only_widens_the_interval():
    pairing = play_pairing(
        "greedy", "random", Settings(agents=[], games=1200, seed=8, progress=False), luck=NoiseValue()
    )
    differences = np.array(pairing.pair_scores) - np.array(pairing.adjusted_pair_scores)
    assert abs(differences.mean()) < SIGMAS * differences.std(ddof=1) / np.sqrt(differences.size)
    assert pairing.variance_ratio < 1 and pairing.luck_value == "noise"


def test_ratings_follow_the_adjusted_variance():
    """A duel from an adjusted pairing counts the effective games whose binomial variance is the adjusted
    variance: far more than the games played when luck explained most of the variance."""
    pairing = play_pairing("greedy", "expectimax:depth=1", Settings(agents=[], games=400, seed=3, progress=False))
    duel, raw = duel_of(pairing, 0, 1), duel_of(pairing, 0, 1, adjusted=False)
    assert raw.games == 400 and duel.games == pytest.approx(effective_games(pairing.adjusted_pair_scores))
    assert duel.games > 2 * raw.games and duel.wins / duel.games == pytest.approx(pairing.score_adjusted)
    assert effective_games([0.5]) is None and effective_games([0.5, 0.5]) is None
    assert effective_games([0.5, 0.5 + 1e-15, 0.5 - 1e-15]) is None  # float rounding is no spread


def test_agents_as_value_functions_value_every_legal_placement(rng):
    """The depth-2 search widened to every square gives each legal placement a value, the searched ones equal
    to the agent's own; an agent without win probabilities is refused."""
    agent = load_agent("expectimax:depth=2")
    after = luck.every_roll(0, 0, 4, 4)
    planes, masks = observe(after)
    values = placement_values(agent, planes, masks)
    searched = agent.move_values(planes, masks)
    assert np.all(np.isfinite(values[masks.astype(bool)])) and np.all(np.isnan(values[~masks.astype(bool)]))
    assert values[np.isfinite(searched)] == pytest.approx(searched[np.isfinite(searched)])
    assert AgentValue(agent)(after) == pytest.approx(np.nanmax(values, axis=-1))
    with pytest.raises(ValueError, match="gives no win probability"):
        load_luck_value("greedy")


def test_an_agent_analysing_its_own_game_finds_no_error():
    """expectimax:depth=1 plays its best placement by its own values: analysed by itself, every error is 0;
    analysed by another agent, errors appear and are never negative; the adjusted results add up to 1."""
    agents = [load_agent("expectimax:depth=1"), load_agent("random")]
    _, game = arena.play_logged(agents, 0, 5, rng=np.random.default_rng(5))
    record = record_of(game)
    own = analyse(record, "expectimax:depth=1")
    red, blue = own.players
    assert all(p.error == pytest.approx(0.0, abs=1e-12) for p in own.plies if p.roller == "red")
    assert blue.error_rate > 0 and all(p.error >= 0 for p in own.plies)
    assert red.adjusted + blue.adjusted == pytest.approx(1.0)
    assert red.result == (1.0 if own.winner == "red" else 0.0)
    assert red.adjusted == pytest.approx(red.result - red.luck + blue.luck)
    ply, share = own.luck_by_ply()
    assert ply.tolist() == list(range(1, len(record.plies) + 1)) and share.sum() == pytest.approx(red.luck - blue.luck)


def test_the_analyse_command_prints_the_table_and_the_json():
    record = str(CONFORMANCE / "clump_game_00.json")
    command = [sys.executable, "-m", "strategic_reserve_env", "analyse", record, "--agent", "expectimax:depth=1"]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "luck-adjusted" in text and "error rate" in text
    data = json.loads(subprocess.run([*command, "--json"], capture_output=True, text=True, check=True).stdout)
    assert len(data["plies"]) == 18 and [p["player"] for p in data["players"]] == ["red", "blue"]
    bad = subprocess.run([*command[:-2], "--agent", "greedy"], capture_output=True, text=True)
    assert bad.returncode == 2 and "gives no win probability" in bad.stderr


def test_results_json_carries_the_adjusted_score(tmp_path):
    out = tmp_path / "run"
    assert main(["random", "greedy", "--games", "40", "--no-progress", "--out", str(out)]) == 0
    pairing = json.loads((out / "results.json").read_text())["pairings"][0]
    assert pairing["luck_value"] == "race" and len(pairing["adjusted_pair_scores"]) == 20
    assert pairing["score_adjusted"] == pytest.approx(np.mean(pairing["adjusted_pair_scores"]))
    assert pairing["ci95_adjusted"][0] < pairing["score_adjusted"] < pairing["ci95_adjusted"][1]
    assert pairing["variance_ratio"] > 0
    assert main(["random", "greedy", "--games", "4", "--no-progress", "--luck-value", "greedy"]) == 2


def test_keeping_the_luck_changes_no_game():
    """The luck is read, never drawn: the same games with and without it (v1 stays reproducible)."""
    agents = [load_agent("greedy"), load_agent("random")]
    played = [
        arena.play(
            agents, np.tile([0, 1], 20), dice_seeds(2, 20), Config(), [np.random.default_rng(i) for i in (0, 1)], luck=v
        )
        for v in (None, luck.DEFAULT_VALUE)
    ]
    assert played[0].red_luck is None and played[1].red_luck is not None
    assert np.array_equal(played[0].winner, played[1].winner) and np.array_equal(played[0].plies, played[1].plies)
