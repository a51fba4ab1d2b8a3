"""evaluate.py and evaluation.tournament: paired dice, determinism by seed, ratings, a small tournament
end to end, and every bad argument or agent caught before the first game (issue 11)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from agents import load_agent
from conftest import REPO
from evaluate import main
from evaluation.tournament import Pairing, Settings, bradley_terry, dice_seeds, play_pairing
from strategic_reserve_env import arena, engine
from strategic_reserve_env.config import Config


def _rolls_per_ply(agents, seeds, agent_seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The rolled square and liveness of every game after each ply."""
    rolled, live = [], []

    def record(state):
        rolled.append(state.rolled.copy())
        live.append(~state.done)

    red = np.tile([0, 1], len(seeds) // 2)
    rngs = [np.random.default_rng([agent_seed, k]) for k in range(2)]
    arena.play(agents, red, seeds, Config(), rngs, on_ply=record)
    return rolled, live


def test_both_games_of_a_pair_see_the_same_rolls():
    seeds = dice_seeds(4, 30)
    agents = (load_agent("random"), load_agent("greedy"))
    rolled, live = _rolls_per_ply(agents, seeds, agent_seed=0)
    compared = 0
    for ply_rolls, ply_live in zip(rolled, live):
        both = ply_live[0::2] & ply_live[1::2]
        assert np.array_equal(ply_rolls[0::2][both], ply_rolls[1::2][both])
        compared += int(both.sum())
    assert compared > 300
    assert not np.array_equal(rolled[0][0::2], rolled[0][2::2].tolist() + [rolled[0][0]])  # pairs differ


def test_dice_do_not_depend_on_the_agents_randomness():
    seeds = dice_seeds(4, 10)
    agents = (load_agent("random"), load_agent("random"))
    first, live_first = _rolls_per_ply(agents, seeds, agent_seed=1)
    second, live_second = _rolls_per_ply(agents, seeds, agent_seed=2)
    for a, b, la, lb in zip(first, second, live_first, live_second):
        both = la & lb
        assert np.array_equal(a[both], b[both])


def test_same_seed_same_results(tmp_path):
    for run in ("a", "b"):
        assert main(["random", "greedy", "--games", "40", "--seed", "5", "--batch", "20", "--no-progress",
                     "--out", str(tmp_path / run)]) == 0
    results = [json.loads((tmp_path / run / "results.json").read_text()) for run in ("a", "b")]
    for result in results:
        result["settings"].pop("out")
        for pairing in result["pairings"]:
            pairing.pop("seconds")
    assert results[0] == results[1]
    other = play_pairing("random", "greedy", Settings(agents=[], games=40, seed=6, progress=False))
    assert other.pair_scores != results[0]["pairings"][0]["pair_scores"]


def test_pairing_counts_add_up():
    pairing = play_pairing("greedy", "random", Settings(agents=[], games=200, seed=1, batch=100, progress=False))
    assert pairing.games_as_red == pairing.games_as_blue == 100
    wins = pairing.wins_as_red + pairing.wins_as_blue
    assert abs(pairing.score * 200 - (wins + pairing.truncated / 2)) < 1e-9
    low, high = pairing.interval()
    assert low < pairing.score < high and pairing.score > 0.6


def test_bradley_terry_orders_and_anchors():
    def pairing(a, b, score, games=1000):
        return Pairing(a, b, games, 0, 1, 0, 1, 0, 0, 1.0, [score] * (games // 2))

    ratings = bradley_terry(["strong", "random", "weak"], [
        pairing("strong", "random", 0.75), pairing("random", "weak", 0.75), pairing("strong", "weak", 0.9),
    ])
    assert ratings["random"] == (0.0, 0.0)
    assert ratings["strong"][0] > 150 and ratings["weak"][0] < -150
    assert 0 < ratings["strong"][1] < 60


def test_small_tournament_end_to_end(tmp_path):
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "evaluate.py", "random", "greedy", "expectimax:depth=1", "--games", "20", "--seed", "3",
         "--out", str(out)],
        capture_output=True, text=True, cwd=REPO, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "agent A" in result.stdout and "rating (Elo)" in result.stdout
    assert {p.name for p in out.iterdir()} == {"results.json", "results.md", "ratings.png"}
    data = json.loads((out / "results.json").read_text())
    assert len(data["pairings"]) == 3 and data["settings"]["games"] == 20
    assert (out / "ratings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_specs_and_settings():
    result = subprocess.run([sys.executable, "evaluate.py", "random", "minimax"], capture_output=True, text=True,
                            cwd=REPO, check=False)
    assert result.returncode == 2
    assert "unknown agent 'minimax'; known agents: random, greedy" in result.stderr
    assert "Traceback" not in result.stderr
    odd = subprocess.run([sys.executable, "evaluate.py", "random", "greedy", "--games", "7"],
                         capture_output=True, text=True, cwd=REPO, check=False)
    assert odd.returncode == 2 and "--games must be an even number" in odd.stderr


def test_play_continues_given_games_and_rejects_games_awaiting_a_placement():
    agents, config, seeds = (load_agent("greedy"), load_agent("random")), Config(), np.arange(40)
    red = np.tile([0, 1], 20)
    fresh = arena.play(agents, red, seeds, config, [np.random.default_rng(k) for k in range(2)])
    given = arena.play(agents, red, seeds, config, [np.random.default_rng(k) for k in range(2)],
                       start=engine.init(config, 40))
    assert np.array_equal(fresh.winner, given.winner) and np.array_equal(fresh.plies, given.plies)
    rolled = engine.roll(engine.init(config, 40), np.zeros(40, dtype=np.int64))
    with pytest.raises(ValueError, match="40 games awaiting their roll"):
        arena.play(agents, red, seeds, config, [np.random.default_rng(0)] * 2, start=rolled)
    with pytest.raises(ValueError, match="40 games awaiting their roll"):
        arena.play(agents, red, seeds, config, [np.random.default_rng(0)] * 2, start=engine.init(config, 39))
