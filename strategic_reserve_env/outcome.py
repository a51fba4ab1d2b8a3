"""Rewards from the engine's outcome: the one place where a result becomes +1, -1 or 0.

Used by every environment (the PettingZoo env for each agent, the single-agent
envs for the learner) so that a win, a loss, a forfeit and a truncation score
the same everywhere.
"""

from __future__ import annotations

import numpy as np

WIN, LOSS, NO_RESULT = 1, -1, 0


def reward(winner, player):
    """The reward of ``player`` (RED or BLUE) in games won by ``winner`` (RED, BLUE, or NO_PLAYER = -1
    while nobody has won, or after a truncation): ``WIN`` (+1) if ``player`` won, ``LOSS`` (-1) if the
    other player did, ``NO_RESULT`` (0) otherwise.

    Python ints give an int; (B,) int64 arrays (either argument) give (B,) int64.
    """
    if type(winner) is int and type(player) is int:
        return WIN if winner == player else LOSS if winner == player ^ 1 else NO_RESULT
    winner, player = np.asarray(winner), np.asarray(player)
    return np.where(winner == player, WIN, np.where(winner == player ^ 1, LOSS, NO_RESULT))
