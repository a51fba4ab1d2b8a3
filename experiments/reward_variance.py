"""How much of a game's variance the luck-adjusted reward removes: the variance of a game's return with
`reward="luck_adjusted"` divided by the plain outcome's, on the same games.

`python -m experiments.reward_variance [--games 3000] [--seed 0]` prints one line a pairing:

- `env`: a greedy learner against greedy in `LearnerGames` (the
  single-agent envs' engine), each game's first episode played with both rewards on the same dice (the
  learner's ties broken by the same generator), under the race value (the default);
- `env-random`: the same with uniformly random players under the race-random value;
- `arena`: uniformly random self-play in `strategic_reserve_env.envs.arena.play` under the race-random
  value, Red's return on the reward's scale (+-1) from the arena's kept luck.

A line gives both returns' means with their 95 % intervals (the luck-adjusted mean must match the outcome's)
and the variance ratio. tests/test_rewards.py holds the bounds at the issue's sizes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from strategic_reserve_env.agents import RandomAgent
from strategic_reserve_env.agents.greedy import GreedyAgent
from strategic_reserve_env.core import luck
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.outcome import REWARD_SCALE, LuckAdjusted, reward
from strategic_reserve_env.envs import arena
from strategic_reserve_env.envs.learner import LearnerGames

Z95 = 1.96  # two-sided 95 % normal quantile


@dataclass(frozen=True)
class Returns:
    """The returns of the same games under the outcome and the luck-adjusted reward (+-1 scale)."""

    outcome: np.ndarray  # (N,) float64: each game's return with reward="outcome" (+1, -1, or 0 truncated)
    adjusted: np.ndarray  # (N,) float64: each game's return with the luck-adjusted reward

    @property
    def ratio(self) -> float:
        """Variance of the luck-adjusted return over the outcome's."""
        return float(self.adjusted.var() / self.outcome.var())

    def line(self, name: str) -> str:
        def mean(x: np.ndarray) -> str:
            return f"{x.mean():+.4f} ± {Z95 * x.std(ddof=1) / np.sqrt(len(x)):.4f}"

        return (
            f"{name}: {len(self.outcome)} games, mean return outcome {mean(self.outcome)}, "
            f"luck-adjusted {mean(self.adjusted)}, variance ratio {self.ratio:.3f}"
        )


def first_returns(learner, opponent, reward_spec, games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each game's first episode of `learner` (a policy, acting on the batch) against `opponent` in
    LearnerGames with `reward_spec`: (N,) returns and (N,) outcomes (+-1, 0 truncated), float64."""
    play = LearnerGames(Config(), games, opponent, reward=reward_spec)
    play.reset(seed * games + np.arange(games), rng=np.random.default_rng([seed, 1]))
    rng = np.random.default_rng([seed, 2])
    returns, outcomes = np.zeros(games), np.zeros(games)
    live = np.ones(games, dtype=bool)
    while live.any():
        actions = learner.act(play.observations(), play.action_masks(), rng)
        step = play.step(actions, autoreset=True)
        returns += np.where(live, step.rewards, 0.0)
        ended = live & (step.terminated | step.truncated)
        outcomes[ended] = step.outcomes[ended]
        live &= ~ended
    return returns, outcomes


def env_returns(learner, opponent, value: luck.ValueFunction, games: int, seed: int) -> Returns:
    """`first_returns` under the outcome and under `LuckAdjusted(value)`, on the same games."""
    outcome, outcomes = first_returns(learner, opponent, "outcome", games, seed)
    adjusted, adjusted_outcomes = first_returns(learner, opponent, LuckAdjusted(value), games, seed)
    if not (np.array_equal(outcome, outcomes) and np.array_equal(outcomes, adjusted_outcomes)):
        raise AssertionError("the two rewards' games differ")
    return Returns(outcome, adjusted)


def arena_returns(agent, value: luck.ValueFunction, games: int, seed: int) -> Returns:
    """Self-play of `agent` in the arena with `value`'s luck kept: Red's return, +-1 scale."""
    games_played = arena.play(
        [agent, agent],
        np.zeros(games, dtype=np.int64),
        seed * games + np.arange(games),
        Config(),
        [np.random.default_rng([seed, 3])] * 2,
        luck=value,
    )
    outcome = reward(games_played.winner, np.zeros(games, dtype=np.int64)).astype(np.float64)
    return Returns(outcome, arena_adjusted(outcome, games_played))


def arena_adjusted(outcome: np.ndarray, games_played: arena.Games) -> np.ndarray:
    """Red's luck-adjusted return on the +-1 scale from the arena's kept luck (agent 0 plays Red)."""
    return games_played.adjusted(REWARD_SCALE, outcome, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=3000, help="games per pairing (default 3000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of dice and tie-breaks (default 0)")
    args = parser.parse_args()
    greedy, random = GreedyAgent(), RandomAgent()
    print(env_returns(greedy, greedy, luck.DEFAULT_VALUE, args.games, args.seed).line("env greedy vs greedy, race"))
    print(
        env_returns(random, random, luck.RANDOM_RACE_VALUE, args.games, args.seed).line(
            "env random vs random, race-random"
        )
    )
    print(
        arena_returns(random, luck.RANDOM_RACE_VALUE, args.games, args.seed).line("arena random self-play, race-random")
    )


if __name__ == "__main__":
    main()
