"""What the agents share: a position read back from observations, the captures of each roll, tie-breaking.

An agent acts on a batch of games (the interface is
`strategic_reserve_env.core.policies.Policy`); the search agents read each
game's position from its `(B, 6, 6, 9)` planes and `(B, 36)` masks
(`read_position`), look at what each of the 36 rolls would capture
(`captures_by_roll`), and pick among equal choices at random
(`argmin_random_ties`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from strategic_reserve_env.core.board import BIT_ARRAY, NUM_SQUARES, array_to_bitboards
from strategic_reserve_env.core.observation import PLANE_NAMES, reserve_of_plane
from strategic_reserve_env.core.rules import resolve_roll
from strategic_reserve_env.core.sampling import popcount

OWN, OPPONENT = PLANE_NAMES.index("own"), PLANE_NAMES.index("opponent")
OWN_RESERVE, OPPONENT_RESERVE = PLANE_NAMES.index("own_reserve"), PLANE_NAMES.index("opponent_reserve")


@dataclass(frozen=True)
class Position:
    """The mover's view of B games, as bitboards and counts."""

    me: np.ndarray  # (B,) int64 bitboard of the mover's checkers (after the roll's captures)
    opp: np.ndarray  # (B,) int64 bitboard of the opponent's checkers
    legal: np.ndarray  # (B,) int64 bitboard of legal placements
    reserve_me: np.ndarray  # (B,) int64 (exact up to 36)
    reserve_opp: np.ndarray  # (B,) int64


def read_position(observations: np.ndarray, masks: np.ndarray) -> Position:
    """Bitboards and reserves from (B, 6, 6, 9) planes and (B, 36) masks."""
    batch = observations.shape[0]
    flat = observations.reshape(batch, NUM_SQUARES, -1)
    return Position(
        me=array_to_bitboards(flat[:, :, OWN]),
        opp=array_to_bitboards(flat[:, :, OPPONENT]),
        legal=array_to_bitboards(masks),
        reserve_me=reserve_of_plane(observations[..., OWN_RESERVE]).astype(np.int64),
        reserve_opp=reserve_of_plane(observations[..., OPPONENT_RESERVE]).astype(np.int64),
    )


def captures_by_roll(roller: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each position (`roller`/`target` bitboard arrays, broadcast together) and each of
    the 36 rolls of `roller`: `target`'s checkers left and how many were captured.

    Returns two arrays of shape `(..., 36)`; the rules are the engine's `resolve_roll` (whose
    `me` is the roller, `opp` the target).
    A roll on an empty square captures nothing, so only rolls on occupied squares are computed.
    """
    shape = np.broadcast_shapes(np.shape(roller), np.shape(target)) + (NUM_SQUARES,)
    rollers = np.broadcast_to(np.asarray(roller)[..., None], shape).reshape(-1)
    targets = np.broadcast_to(np.asarray(target)[..., None], shape).reshape(-1)
    rolls = np.broadcast_to(BIT_ARRAY, shape).reshape(-1)
    hits = np.flatnonzero((rollers | targets) & rolls)
    left = targets.copy()
    lost = np.zeros(left.shape, dtype=np.int64)
    left[hits], captured, _, _ = resolve_roll(rollers[hits], targets[hits], rolls[hits])
    lost[hits] = popcount(captured)
    return left.reshape(shape), lost.reshape(shape)


def argmin_random_ties(values: np.ndarray, legal: np.ndarray, rng: np.random.Generator, step: float) -> np.ndarray:
    """Row-wise argmin over legal entries, ties broken uniformly at random.

    `step` is the smallest gap between two different values (noise below it cannot reorder them).
    """
    noisy = np.where(legal, values + rng.random(values.shape) * (step / 2), np.inf)
    return np.argmin(noisy, axis=-1)
