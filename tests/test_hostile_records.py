"""Records at the edges (issue 29, items 18-20): a huge duplicate key is echoed shortened, a closed standard input
and a full standard output end with one line and a non-zero exit, and `analyse` computes in batches, with
the same numbers as one ply at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from strategic_reserve_env import records
from strategic_reserve_env.agents import RandomAgent, load_agent
from strategic_reserve_env.agents.luck_values import load_luck_value, placement_values
from strategic_reserve_env.arena import play_logged
from strategic_reserve_env.board import ECHO_LIMIT, parse_square
from strategic_reserve_env.config import Config
from strategic_reserve_env.evaluation import analysis
from strategic_reserve_env.game import Game
from strategic_reserve_env.luck import luck_of_latest_roll
from strategic_reserve_env.observation import mask_from_planes, planes

from conftest import REPO, conformance_records

GAME = {"plies": [["a1", "a1"], ["b1", "b1"], ["e5", "e4"]]}


def command(*args: str, shell_suffix: str = "") -> subprocess.CompletedProcess:
    line = " ".join([f"'{sys.executable}'", "-m", "strategic_reserve_env", *(f"'{a}'" for a in args)]) + shell_suffix
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=REPO, timeout=120)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr, stderr[:500]
    return lines[0]


@pytest.mark.parametrize("tool", ["replay", "analyse"])
def test_a_two_megabyte_duplicate_key_is_echoed_shortened(tmp_path, tool):
    key = "k" * 2_000_000
    path = tmp_path / "dup.json"
    path.write_text('{"plies": [], "' + key + '": 1, "' + key + '": 2}')
    result = command(tool, str(path))
    assert result.returncode == 1
    line = one_line(result.stderr)
    assert "appears twice" in line and "k" * (ECHO_LIMIT + 1) not in line and len(line) < 300


@pytest.mark.parametrize("tool", ["replay", "analyse"])
def test_a_closed_standard_input_is_one_line(tool):
    result = command(tool, "-", shell_suffix=" <&-")
    assert result.returncode == 1
    assert "standard input" in one_line(result.stderr)


@pytest.mark.parametrize("tool", ["replay", "analyse"])
def test_a_full_standard_output_is_one_line(tmp_path, tool):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GAME))
    result = command(tool, str(path), shell_suffix=" > /dev/full")
    assert result.returncode == 1
    assert "standard output" in one_line(result.stderr)


def test_a_full_standard_output_on_a_long_replay_is_one_line(tmp_path):
    """Past the first buffer's worth of lines, the failure comes in the middle of the printing."""
    path = tmp_path / "long.json"
    _, game = play_logged([RandomAgent(), RandomAgent()], 0, dice_seed=3, config=Config(ply_limit=1000))
    records.write_record(records.record_of(game), path)
    assert len(records.load_record(path).plies) > 20  # more lines than fit a small write
    result = command("replay", str(path), shell_suffix=" > /dev/full")
    assert result.returncode == 1
    one_line(result.stderr)


# -- 20: analyse in batches ------------------------------------------------------------------------------------


def per_ply(record, agent_spec: str, luck_spec: str) -> list[tuple[float, float, float]]:
    """(luck, value of the placement played, value of the best) for each ply, one ply at a time: the
    computation the batched analysis must reproduce."""
    agent, value = load_agent(agent_spec), load_luck_value(luck_spec)
    rows = []

    def on_roll(game: Game) -> None:
        observation = planes(game, game.to_move)[None]
        values = placement_values(agent, observation, mask_from_planes(observation))[0]
        rows.append((float(luck_of_latest_roll(value, game)), values))

    trace = list(records.replay(record, on_roll=on_roll))
    result = []
    for entry, (luck, values) in zip(trace, rows, strict=True):
        placed = parse_square(entry["place"])
        result.append((luck, float(values[placed]), float(np.nanmax(values))))
    return result


@pytest.mark.parametrize("path", conformance_records()[:6], ids=lambda p: p.stem)
def test_the_batched_analysis_matches_one_ply_at_a_time(path):
    record = records.load_record(path)
    expected = per_ply(record, "expectimax:depth=1", "race")
    got = analysis.analyse(record, "expectimax:depth=1", "race", chunk=3)
    assert len(got.plies) == len(expected)
    for ply, (luck, placed, best) in zip(got.plies, expected, strict=True):
        assert ply.luck == pytest.approx(luck, abs=1e-12)
        assert ply.value_placed == pytest.approx(placed, abs=1e-12)
        assert ply.value_best == pytest.approx(best, abs=1e-12)
