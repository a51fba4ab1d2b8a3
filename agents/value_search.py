"""The value-search agent: each legal placement scored by a learned value of the position it leaves.

Placing on ``p`` leaves a position about to be rolled by the opponent; its
value for the agent is ``1 - V(position)``, with ``V`` the roller's win
probability of :mod:`agents.value_net` (whose input shows what each of the
opponent's 36 equally likely rolls would capture, so the chance node is in the
features rather than enumerated). The agent places where that is largest,
ties broken at random; placing its last checker wins at once. All legal
placements of all games of a batch go through the network in one call.

Spec: ``value:PATH.safetensors`` (default ``models/value_net.safetensors``).
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.board import BIT_ARRAY

from .base import argmin_random_ties, read_position

DEFAULT_MODEL = "models/value_net.safetensors"


class ValueSearchAgent:
    """One ply of search over the agent's placements with a learned value at the leaves."""

    uses_observation = True

    def __init__(self, value, name: str = "value") -> None:
        self.value_net, self.name = value, name

    @classmethod
    def load(cls, path: str = DEFAULT_MODEL) -> ValueSearchAgent:
        from .value_net import load_value_net

        return cls(load_value_net(path), name=f"value:{path}")

    def placement_values(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(B, 36) float64 the agent's win probability after placing on each square (-inf where illegal)."""
        position = read_position(observations, masks)
        legal = np.asarray(masks, dtype=bool)
        game, square = np.nonzero(legal)
        m, o = position.reserve_me[game], position.reserve_opp[game]
        leaf = self.value_net.value(position.opp[game], position.me[game] | BIT_ARRAY[square], o, m - 1)
        values = np.full(legal.shape, -np.inf)
        values[game, square] = np.where(m <= 1, 1.0, 1.0 - leaf)
        return values

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        values = self.placement_values(observations, masks)
        return argmin_random_ties(-values, np.asarray(masks, dtype=bool), rng, step=1e-12)

    def __repr__(self) -> str:
        return f"ValueSearchAgent({self.name!r})"
