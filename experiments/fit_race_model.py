"""Refit the reserve-race win probability used by the expectimax agent.

`python -m experiments.fit_race_model [--games 4000] [--seed 0] [--random]` plays greedy
(or, with `--random`, uniformly random) self-play games in one batch, records (mover reserve, opponent reserve, did
the mover win) at every decision, and fits
`P = sigmoid((A * (o - m) + B) / sqrt(m + o))` by maximum likelihood on the
decisions with both reserves above 1 (the others are certain). It prints A
and B; strategic_reserve_env/core/luck.py holds the values of the default run (`RACE_A`, `RACE_B`) and of
`--random` (`RANDOM_RACE_A`, `RANDOM_RACE_B`).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import minimize

from strategic_reserve_env.agents import RandomAgent
from strategic_reserve_env.agents.greedy import GreedyAgent
from strategic_reserve_env.core import engine, turns
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.dice import BatchDice
from strategic_reserve_env.core.policies import choose


def self_play_decisions(games: int, seed: int, random: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mover reserve, opponent reserve, mover won) at every decision of greedy (or random) self-play."""
    config, rng = Config(), np.random.default_rng(seed)
    agent = RandomAgent() if random else GreedyAgent()
    records = []

    def record(state: engine.State) -> None:  # every decision, after its roll
        live = np.flatnonzero(~state.done)
        records.append((live, state.reserve_me[live], state.reserve_opp[live], state.to_move[live]))

    def decide(state: engine.State, acting: np.ndarray) -> np.ndarray:  # one agent plays both sides
        return turns.actions_by_policy(
            state,
            acting,
            np.zeros(games, dtype=np.int64),
            1,
            lambda position, _, rows: choose(agent, position[rows], rng),
        )

    dice = BatchDice(np.arange(games) + seed * games)
    state = turns.play_out(engine.init(config, games), dice, decide, config, on_roll=record)
    game, mine, theirs, mover = (np.concatenate(column) for column in zip(*records, strict=True))
    return mine, theirs, (state.winner[game] == mover).astype(np.float64)


def fit(mine: np.ndarray, theirs: np.ndarray, won: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood (A, B) on decisions where neither reserve is 1."""
    keep = (mine > 1) & (theirs > 1)
    scale = np.sqrt(mine[keep] + theirs[keep])
    features = np.stack([(theirs[keep] - mine[keep]) / scale, 1.0 / scale], axis=1)
    outcome = won[keep]

    def negative_log_likelihood(theta):
        z = features @ theta
        return np.sum(np.logaddexp(0.0, z) - outcome * z)

    a, b = minimize(negative_log_likelihood, np.zeros(2)).x
    return float(a), float(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=4000, help="greedy self-play games (default 4000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of dice and tie-breaks (default 0)")
    parser.add_argument("--random", action="store_true", help="uniformly random self-play instead of greedy")
    args = parser.parse_args()
    mine, theirs, won = self_play_decisions(args.games, args.seed, args.random)
    a, b = fit(mine, theirs, won)
    print(f"{len(won)} decisions from {args.games} games: A = {a:.3f}, B = {b:.3f}")


if __name__ == "__main__":
    main()
