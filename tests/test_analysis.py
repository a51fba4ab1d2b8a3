"""The analysis of one game (`evaluation/analysis.py`): the luck of each roll and the error of each placement."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.luck_values import load_luck_value, placement_values
from strategic_reserve_env.core.board import parse_square
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.luck import luck_of_latest_roll
from strategic_reserve_env.core.observation import mask_from_planes, planes
from strategic_reserve_env.evaluation import analysis
from strategic_reserve_env.files import records

from conftest import conformance_records


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
