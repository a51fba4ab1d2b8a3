"""OpenSpiel's MCTS as an agent: the spec `openspiel-mcts[:simulations=N,rollouts=K,uct=C]`.

The search is OpenSpiel's own (`strategic_reserve_env.envs.openspiel.mcts_bot`: `MCTSBot` with random
rollouts) on the game `python_strategic_reserve`, which handles the dice as explicit chance nodes. For each
game of the batch it reads the position from the observation (`position.read_position`) and searches
from `decision_state`, that position at ply 0 of a
game with the default ply limit (an observation holds no ply count: its rollouts score a game still unfinished
that many placements later as a draw). Its randomness (the tree's chance samples and tie-breaks, the
rollouts) is drawn from the generator given to `MCTSAgent.act`, so `evaluate.py --seed` governs it.
Needs the `openspiel` extra (Python 3.11 or newer).
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.core.board import checked_int
from strategic_reserve_env.envs import openspiel

from .position import read_position

DEFAULT_SIMULATIONS, DEFAULT_ROLLOUTS = 100, 1
_SEED_BOUND = 2**32  # numpy.random.RandomState takes seeds below this


class MCTSAgent:
    """OpenSpiel's MCTS: `simulations` searches per placement, each new leaf valued by `rollouts`
    uniformly random games, `uct` the exploration constant (OpenSpiel's examples use 2)."""

    uses_observation = True

    def __init__(
        self,
        simulations: int = DEFAULT_SIMULATIONS,
        rollouts: int = DEFAULT_ROLLOUTS,
        uct: float = openspiel.DEFAULT_UCT,
    ) -> None:
        simulations = checked_int("openspiel-mcts: simulations", simulations, 1)
        rollouts = checked_int("openspiel-mcts: rollouts", rollouts, 1)
        if isinstance(uct, bool) or not isinstance(uct, (int, float)) or not uct > 0:
            raise ValueError(f"openspiel-mcts: uct must be a number > 0, got {uct!r}")
        self.simulations, self.rollouts, self.uct = simulations, rollouts, float(uct)
        self.name = f"openspiel-mcts:simulations={simulations},rollouts={rollouts}" + (
            f",uct={self.uct!r}" if self.uct != openspiel.DEFAULT_UCT else ""
        )
        self.game = openspiel.load_game()  # the default settings: the searched position comes from the observation

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B,) squares: the search's choice in each game that has a legal square (0 in the others)."""
        position = read_position(np.asarray(observations), np.asarray(masks, dtype=bool))
        actions = np.zeros(len(position.legal), dtype=np.int64)
        random_state = np.random.RandomState(int(rng.integers(_SEED_BOUND)))
        bot = openspiel.mcts_bot(self.game, self.simulations, self.rollouts, random_state, self.uct)
        for row in np.flatnonzero(position.legal):
            state = self.game.decision_state(
                int(position.me[row]),
                int(position.opp[row]),
                int(position.reserve_me[row]),
                int(position.reserve_opp[row]),
                int(position.legal[row]),
            )
            actions[row] = bot.step(state)
        return actions

    def __repr__(self) -> str:
        return f"MCTSAgent(simulations={self.simulations}, rollouts={self.rollouts}, uct={self.uct!r})"
