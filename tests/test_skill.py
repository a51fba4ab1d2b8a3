"""The skill report (strategic_reserve_env.evaluation.skill_report, issue 13): its files and structure, and its figures
against
evaluate.py's own computation of the same pairings."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from strategic_reserve_env.agents import RandomAgent
from strategic_reserve_env.commands.evaluate import main as evaluate_main
from strategic_reserve_env.commands.maintainer import skill as main
from strategic_reserve_env.evaluation.benchmark_protocol import SHIPPED_PPO
from strategic_reserve_env.evaluation.skill_report import HEADROOM_COMMAND, REPORT, SkillSettings, red_pair_scores
from strategic_reserve_env.evaluation.statistics import score_interval
from strategic_reserve_env.evaluation.tournament import Settings, play_pairing

from conftest import REPO

SEED = 3
GAMES = {7: 40, 5: 20, 9: 10}  # the ladder's reserve first
PPO = SHIPPED_PPO  # the shipped model, "ppo"
AGENTS = ["random", "greedy", "expectimax:depth=1"]
BEST = PPO  # not among AGENTS: the report adds it to the ladder
ARGS = ["--agents", *AGENTS, "--best", BEST, "--games", str(GAMES[7])]
ARGS += ["--variants", *(f"{r}={g}" for r, g in GAMES.items() if r != 7), "--seed", str(SEED)]
ARGS += ["--headroom-positions", "3", "--headroom-rollouts", "4", "--no-progress"]
PAIRING_FIELDS = ("a", "b", "games", "wins_as_red", "games_as_red", "wins_as_blue", "games_as_blue", "truncated")
PAIRING_FIELDS += ("total_plies", "score", "ci95")


@pytest.fixture(scope="module")
def skill(tmp_path_factory):
    """The report of a tiny run: (its folder, the process's stdout, skill.json, SKILL.md)."""
    out = tmp_path_factory.mktemp("skill")
    done = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "skill", *ARGS, "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return out, done.stdout, json.loads((out / "skill" / "skill.json").read_text()), (out / REPORT).read_text()


@pytest.mark.slow
def test_the_report_has_its_files_parts_and_every_pairing(skill):
    out, stdout, data, markdown = skill
    for name in ("ladder.png", "variants.png", "first_player.png"):
        assert (out / "skill" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = [*AGENTS, BEST]
    assert data["agents"] == names and data["best"] == BEST
    assert [ladder["reserve"] for ladder in data["ladders"]] == list(GAMES)
    for ladder in data["ladders"]:
        assert ladder["games_per_pairing"] == GAMES[ladder["reserve"]]
        played = [(p["a"], p["b"]) for p in ladder["pairings"]]
        assert played == [(a, b) for k, a in enumerate(names) for b in names[k + 1 :]]
        assert set(ladder["ratings_elo"]) == set(names) and ladder["ratings_elo"]["random"]["rating"] == 0
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert headings == [
        "# How much of Strategic Reserve is skill",
        "## Summary",
        f"## The ladder (reserve 7, {GAMES[7]} games per pairing, seed {SEED})",
        "## First-player advantage",
        "## Headroom above greedy",
        "## Variants: reserve 5, 7, 9",
    ]
    assert data["command"] in markdown and data["command"].startswith("strategic-reserve skill --agents random")
    summary = [line for line in stdout.splitlines() if line.startswith("- **")]
    assert len(summary) == 6 and all(line in markdown for line in summary)
    for image in ("ladder", "variants", "first_player"):
        assert f"(skill/{image}.png)" in markdown
    # the headroom measurement was run, and its output quoted whole
    assert f"`{HEADROOM_COMMAND} --positions 3 --rollouts 4 --seed 0`, run by this report" in markdown
    assert any("split-sample gain over greedy" in line for line in data["headroom"]["lines"])


@pytest.mark.slow
@pytest.mark.parametrize("reserve", [7, 5])
def test_a_pairing_of_the_report_is_evaluate_pys(skill, reserve, tmp_path):
    """The report's random-greedy pairing at a reserve equals what evaluate.py computes with the same settings."""
    _, _, data, markdown = skill
    status = evaluate_main(
        ["random", "greedy", "--games", str(GAMES[reserve]), "--seed", str(SEED), "--reserve", str(reserve)]
        + ["--out", str(tmp_path), "--no-progress"]
    )
    assert status == 0
    direct = json.loads((tmp_path / "results.json").read_text())["pairings"][0]
    ladder = next(ladder for ladder in data["ladders"] if ladder["reserve"] == reserve)
    ours = ladder["pairings"][0]
    assert {k: ours[k] for k in PAIRING_FIELDS} == {k: direct[k] for k in PAIRING_FIELDS}
    if reserve == 7:  # the ladder's table shows it as evaluate.py's table does
        low, high = direct["ci95"]
        assert f"| random | greedy | {direct['score']:.3f} | [{low:.3f}, {high:.3f}] |" in markdown


@pytest.mark.slow
def test_reds_scores_follow_from_the_seat_counts_and_pool_over_the_strong_pairings(skill):
    _, _, data, _ = skill
    checked = 0
    for ladder in data["ladders"]:
        strong = []
        for p in ladder["pairings"]:
            if p["truncated"] == 0:  # Red won the games A won as Red and those A lost as Blue
                red_wins = p["wins_as_red"] + p["games_as_blue"] - p["wins_as_blue"]
                assert p["red"]["score"] == pytest.approx(red_wins / p["games"])
                checked += 1
            if RandomAgent.name not in (p["a"], p["b"]):
                strong.append(p["red"]["score"])
        assert len(strong) == 3  # greedy, expectimax:depth=1 and PPO among themselves
        assert ladder["red_among_strong_raw"]["score"] == pytest.approx(np.mean(strong))
        adjusted = [p["red_score_adjusted"] for p in ladder["pairings"] if RandomAgent.name not in (p["a"], p["b"])]
        assert ladder["red_among_strong"]["score"] == pytest.approx(np.mean(adjusted))
    assert checked >= 10


@pytest.mark.slow
@pytest.mark.parametrize("reserve", [7, 9])
def test_random_against_random_is_the_tournaments_pairing_of_two_random_agents(skill, reserve):
    _, _, data, _ = skill
    red = []
    settings = Settings(agents=[], games=GAMES[reserve], seed=SEED, reserve=reserve, progress=False)
    play_pairing(RandomAgent(), RandomAgent(), settings, on_games=lambda who, won: red.append((who, won)))
    ((who, won),) = red
    ladder = next(ladder for ladder in data["ladders"] if ladder["reserve"] == reserve)
    expected = red_pair_scores(who, won)
    assert ladder["red_among_random_raw"]["score"] == pytest.approx(expected.mean())
    assert ladder["red_among_random_raw"]["ci95"] == pytest.approx(list(score_interval(expected)))


def test_red_pair_scores_count_wins_by_seat_and_half_a_truncated_game():
    red = np.array([0, 1, 0, 1, 1, 0])  # who played Red: agent a (0) or b (1)
    won = np.array([0, 0, -1, 1, 1, 0])  # who won; -1 truncated
    # pair 0: Red won, Blue won; pair 1: truncated, Red won; pair 2: Red won twice
    assert red_pair_scores(red, won).tolist() == [0.5, 0.75, 1.0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--variants", "7=100"], "reserve 7 is the ladder's own"),
        (["--variants", "5=20", "5=40"], "each reserve once"),
        (["--variants", "5=3"], "variant 5=3: games must be an even number"),
        (["--variants", "13=10"], "variant 13=10: reserve must be in 1..12"),
        (["--variants", "9"], "write RESERVE=GAMES"),
        (["--games", "7"], "games must be an even number"),
        (["--headroom-positions", "2", "--headroom-rollouts", "5"], "headroom_rollouts must be an even number"),
        (["--agents", "random", "no_such_agent"], "no_such_agent"),
        (["--agents", "random", "greedy", "--best", "greedy:x=1"], "greedy takes no options"),
    ],
)
def test_bad_settings_stop_before_any_game_and_write_nothing(args, message, tmp_path, capsys):
    assert main([*args, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_best_agent_joins_the_ladder_once():
    assert SkillSettings(agents=("random", "greedy"), best="greedy", variants=()).specs == ("random", "greedy")
    assert SkillSettings(agents=("random",), best="greedy", variants=()).specs == ("random", "greedy")
