"""How much better than greedy can a placement be? Rollout values of every legal placement.

`strategic-reserve headroom [--positions 300] [--rollouts 2000] [--seed 0]`
samples decisions from greedy self-play (each game stopped at a random
decision), and for each decision plays every legal placement out
`--rollouts` times, greedy against greedy, with the same dice streams for
every placement (common random numbers). It reports, averaged over the
decisions, the mover's win probability gained by a placement chosen by
rollouts over greedy's own choice:

- **split-sample gain**: the placement is chosen on one half of the rollouts
  and scored on the other half (and vice versa), so the noise that makes a
  placement look best is not counted as gain. It is what a one-step rollout
  improvement of greedy achieves with `--rollouts / 2` rollouts per
  placement, a lower bound of the best one-step improvement;
- **in-sample gain**: best mean minus greedy's mean on all rollouts, biased
  upwards by the noise (an upper-side figure);
- **spread**: best minus worst placement, how much the decision matters at all.

`--luck` scores each rollout luck-adjusted: the mover's result minus the mover's net luck over the
rollout's rolls (`strategic_reserve_env.core.luck`, reserve-race value), which has the same expectation
and about a fifteenth of the variance, so a rollout is then worth about 15 raw ones (``--rollouts 2048
--luck`` is about 30,000 raw rollouts per placement).

Greedy's value is the mean over the placements greedy ties between (it picks
one of them at random). Decisions where the mover places its last checker,
or has one legal square, are skipped: there is nothing to choose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from strategic_reserve_env.agents.greedy import GreedyAgent, expected_losses
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import RED, bitboards_to_array
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.luck import DEFAULT_VALUE, ValueFunction
from strategic_reserve_env.core.outcome import SCORE_SCALE, reward
from strategic_reserve_env.core.sampling import popcount
from strategic_reserve_env.envs import arena
from strategic_reserve_env.files.progress import track


@dataclass(frozen=True)
class Decision:
    """Rollout results of one decision."""

    squares: np.ndarray  # (C,) int64 legal placements
    results: np.ndarray  # (C, N) float64: the mover's result of rollout n after placing on squares[c] (1 won,
    # 0 lost; luck-adjusted: that minus the mover's net luck)
    greedy: np.ndarray  # (C,) bool: the placements greedy ties between

    def gains(self) -> tuple[float, float, float]:
        """(split-sample gain, in-sample gain, spread) in win probability; see the module docstring."""
        half = self.results.shape[1] // 2
        first, second = self.results[:, :half].mean(axis=1), self.results[:, half:].mean(axis=1)
        split = 0.5 * (
            (second[np.argmax(first)] - second[self.greedy].mean())
            + (first[np.argmax(second)] - first[self.greedy].mean())
        )
        value = self.results.mean(axis=1)
        return float(split), float(value.max() - value[self.greedy].mean()), float(value.max() - value.min())


def sample_decisions(count: int, seed: int, config: Config) -> engine.State:
    """Up to `count` decisions of greedy self-play, one per game, at a random decision of each game."""
    rng = np.random.default_rng([seed, 1])
    stop = rng.integers(0, 24, size=count)  # greedy self-play games last 24 plies on average
    found = {}

    def keep(state: engine.State) -> None:
        for game in np.flatnonzero(~state.done & (state.ply == stop)):
            found.setdefault(int(game), state[np.array([game])])

    greedy = GreedyAgent()
    arena.play(
        [greedy, greedy],
        np.zeros(count),
        10**6 * seed + np.arange(count),
        config,
        [np.random.default_rng([seed, 2])] * 2,
        on_ply=keep,
    )
    return engine.concatenate([found[game] for game in sorted(found)])


def rollouts(
    decision: engine.State,
    count: int,
    dice_seed: int,
    config: Config,
    rng: np.random.Generator,
    luck: ValueFunction | None = None,
) -> Decision:
    """Every legal placement of one decision (a State of 1 game), played out `count` times by greedy; with
    `luck` (a value function) each result is luck-adjusted (the mover's outcome minus its net luck)."""
    squares = np.flatnonzero(bitboards_to_array(decision.legal)[0])
    mover = int(decision.to_move[0])
    games = engine.place(decision[np.zeros(len(squares) * count, dtype=np.int64)], np.repeat(squares, count), config)
    greedy = GreedyAgent()
    result = arena.play(
        [greedy, greedy],
        np.zeros(games.batch_size),
        dice_seed + np.tile(np.arange(count), len(squares)),
        config,
        [rng, rng],
        start=games,
        luck=luck,
    )
    results = SCORE_SCALE.of(reward(result.winner, mover))  # the mover's: 1 won, 0 lost, 1/2 truncated
    if result.red_luck is not None:
        results = result.adjusted(SCORE_SCALE, results, 0 if mover == RED else 1)  # agent 0 played Red
    losses = expected_losses(decision.me, decision.opp, bitboards_to_array(decision.legal))[0, squares]
    return Decision(squares, results.reshape(len(squares), count), losses == losses.min())


def measure(positions: int = 300, rollouts_per_placement: int = 2000, seed: int = 0, luck: bool = False) -> list[str]:
    """The headroom measurement (see the module docstring): the lines of its summary. `ValueError` unless
    `positions` >= 1 and `rollouts_per_placement` is an even number >= 2."""
    if positions < 1 or rollouts_per_placement < 2 or rollouts_per_placement % 2:
        raise ValueError("--positions must be >= 1 and --rollouts an even number >= 2")
    config, rng = Config(), np.random.default_rng([seed, 3])
    value = DEFAULT_VALUE if luck else None
    decisions = sample_decisions(positions, seed, config)
    gains = []
    for index in track(range(decisions.batch_size), unit="decision", description="headroom"):
        decision = decisions[np.array([index])]
        if decision.reserve_me[0] == 1 or popcount(decision.legal)[0] < 2:
            continue
        dice_seed = 10**9 * (seed + 1) + 10**6 * index
        gains.append(rollouts(decision, rollouts_per_placement, dice_seed, config, rng, value).gains())
    split, in_sample, spread = np.array(gains).T
    error = split.std(ddof=1) / np.sqrt(len(split)) if len(split) > 1 else float("nan")
    kind = "luck-adjusted greedy" if luck else "greedy"
    return [
        f"{len(gains)} decisions, {rollouts_per_placement} {kind} rollouts per placement (common dice):",
        f"  split-sample gain over greedy  {split.mean():+.4f} +- {1.96 * error:.4f} (95 %)"
        " win probability per decision",
        f"  in-sample gain over greedy     {in_sample.mean():+.4f} (biased upwards by noise)",
        f"  best - worst placement         {spread.mean():.4f}",
    ]
