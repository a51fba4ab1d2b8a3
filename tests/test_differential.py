"""The batched engine and the single-game path agree with the plain reference, ply by ply."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from strategic_reserve_env import Game
from strategic_reserve_env.core import engine
from strategic_reserve_env.core import oracle as reference
from strategic_reserve_env.core.board import COLOURS, squares_of
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.oracle import ReferenceGame
from strategic_reserve_env.core.rules import HIT_NAMES

from conftest import random_start

BATCH = 24
PLIES = 110
# (seed, reserve, custom start?, ply limit): 6 cases x 24 games x 110 plies = 15,840 plies
CASES = [
    (1, 7, False, 1000),
    (2, 6, False, 1000),
    (3, 1, False, 1000),
    (4, 12, False, 35),
    (5, 7, True, 1000),
    (6, 3, True, 60),
]


@pytest.mark.parametrize("seed, reserve, custom_start, ply_limit", CASES)
def test_engine_and_game_match_reference(seed, reserve, custom_start, ply_limit):
    rng = np.random.default_rng(seed)
    start = random_start(rng) if custom_start else None
    config = Config(reserve=reserve, ply_limit=ply_limit, start=start)
    state = engine.init(config, BATCH)
    refs = [ReferenceGame.from_config(config) for _ in range(BATCH)]
    games = [Game(config) for _ in range(BATCH)]
    ended_games = 0
    for ply in range(PLIES):
        squares = engine.draw_rolls(rng, BATCH)
        state = engine.roll(state, squares)
        legal_mask = state.legal_mask()
        reserves = state.reserves()
        choices = np.empty(BATCH, dtype=np.int64)
        for i, (ref, game) in enumerate(zip(refs, games, strict=True)):
            where = f"case seed {seed}, ply {ply}, game {i}"
            legal = ref.roll(int(squares[i]))
            game.roll(int(squares[i]))
            assert legal, where  # a live game always has a legal placement
            assert np.flatnonzero(legal_mask[i]).tolist() == legal, where
            assert game.legal_squares() == legal, where
            assert squares_of(int(state.captured[i])) == ref.captured == squares_of(game.captured), where
            assert HIT_NAMES[int(state.hit[i])] == ref.hit == HIT_NAMES[game.hit], where
            assert tuple(reserves[i]) == (ref.reserves["R"], ref.reserves["B"]) == game.reserves, where
            choices[i] = legal[rng.integers(len(legal))]
            ref.place(int(choices[i]))
            game.place(int(choices[i]))
        placed = engine.place(state, choices, config)
        boards = placed.board_strings()
        reserves = placed.reserves()
        for i, (ref, game) in enumerate(zip(refs, games, strict=True)):
            where = f"case seed {seed}, ply {ply}, game {i}"
            assert boards[i] == ref.board_string() == game.board_string(), where
            assert tuple(reserves[i]) == (ref.reserves["R"], ref.reserves["B"]), where
            expected_winner = COLOURS.index(NAME[ref.winner]) if ref.winner else -1
            assert int(placed.winner[i]) == expected_winner == game.winner, where
            assert (
                bool(placed.truncated[i]) == game.truncated == (ref.winner is None and int(placed.ply[i]) >= ply_limit)
            )
            if placed.done[i]:
                ended_games += 1
                refs[i] = ReferenceGame.from_config(config)
                games[i].reset()
        state = engine.reset(placed, placed.done, config)
    assert ended_games > 0  # resets were exercised


NAME = {"R": "red", "B": "blue"}


def test_the_reference_shares_nothing_with_the_engine():
    """The scalar reference stays independent: it imports nothing from the package (only the standard library)."""
    tree = ast.parse(Path(reference.__file__).read_text())
    nodes = list(ast.walk(tree))
    imported = {alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    imported |= {
        (node.module or "").split(".")[0] if node.level == 0 else "."
        for node in nodes
        if isinstance(node, ast.ImportFrom)
    }
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}
