"""Checks shared by the env tests: what a failed call must leave unchanged, and the vector env's masks."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from strategic_reserve_env.core.board import NUM_SQUARES
from strategic_reserve_env.core.observation import LEGAL_PLANE


def snapshot(env) -> dict:
    """Everything a step of `env` (any env wrapping LearnerGames as `env.games`) may change, copied."""
    games = env.games
    values = {f.name: getattr(games.state, f.name).copy() for f in fields(games.state)}
    values.update(
        seat=games.seat.copy(),
        opponent=games.opponent_id.copy(),
        dice=games.dice.counters.copy(),
        chance=games.chance.counters.copy(),
        masks=env.action_masks().copy(),
        observations=games.observations().copy(),
        rng=(id(games.rng), repr(games.rng.bit_generator.state)),
    )  # the generator and its state
    return values


def assert_unchanged(env, before: dict) -> None:
    """`env` is as `snapshot` found it."""
    after = snapshot(env)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)


def assert_vector_masks(observations: np.ndarray, masks: np.ndarray, ended: np.ndarray) -> None:
    """The vector env's masks: the observation's legal plane where a game goes on, all 36 squares where it
    just ended (the next step ignores that action); so every row has a square to sample."""
    legal_plane = observations[..., LEGAL_PLANE].reshape(len(masks), NUM_SQUARES).astype(bool)
    np.testing.assert_array_equal(masks[~ended], legal_plane[~ended])
    assert masks[ended].all() and not legal_plane[ended].any()
    assert masks.any(axis=1).all()
