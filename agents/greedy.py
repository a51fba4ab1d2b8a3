"""The greedy agent: the placement that minimises the checkers the opponent's next roll sends back.

For each legal placement p the expected loss is computed exactly over all 36
equally likely rolls of the opponent, with the engine's own rule function
seen from the opponent's seat: ``resolve_roll(opp, me | p, roll)`` removes
the mover's checkers an enemy hit or a friendly hit would take. All B games,
36 placements and 36 rolls are one array computation.
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.board import BIT_ARRAY, bitboards_to_array

from .base import argmin_random_ties, captures_by_roll, read_position

NOT_COMPUTED = 10**6  # loss shown for squares that were not evaluated


def expected_losses(me: np.ndarray, opp: np.ndarray, legal: np.ndarray | None = None) -> np.ndarray:
    """(B, 36) total over the opponent's 36 rolls of the mover's checkers lost, if the mover places on each square.

    Divide by 36 for the expectation. Only squares where ``legal`` ((B, 36) bool; default: every
    empty square) are computed; the others hold a large number.
    """
    if legal is None:
        legal = ~bitboards_to_array(me | opp)
    games, squares = np.nonzero(legal)
    _, lost = captures_by_roll(opp[games], me[games] | BIT_ARRAY[squares])  # (pairs, 36 rolls)
    losses = np.full(legal.shape, NOT_COMPUTED, dtype=np.int64)
    losses[games, squares] = lost.sum(axis=-1)
    return losses


class GreedyAgent:
    """One-ply lookahead: minimise the expected number of own checkers captured by the opponent's next roll."""

    name = "greedy"
    uses_observation = True

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        position = read_position(observations, masks)
        legal = np.asarray(masks, dtype=bool)
        losses = expected_losses(position.me, position.opp, legal)
        return argmin_random_ties(losses.astype(np.float64), legal, rng, step=1.0)

    def __repr__(self) -> str:
        return "GreedyAgent()"
