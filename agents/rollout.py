"""The rollout agent: one step of rollout improvement of greedy, on the batched engine (spec `rollout`).

For each decision of a batch:

1. **Candidates.** The `width` legal placements with the fewest expected losses by greedy
   (`expected_losses`, the cheap filter); fewer when fewer are legal.
2. **Rollouts.** From the position after each candidate, `rollouts` games are played to the end with
   greedy for both players (ties at random), all of them (every decision, candidate and rollout of the
   batch) in one engine batch advanced by the one turn loop (`strategic_reserve_env.core.turns.play_out`).
   **Common dice**: rollout `n` of a decision rolls the same squares whichever candidate was placed
   (one dice stream per decision and rollout, shared by the candidates), so the candidates are compared
   on the same luck.
3. **Luck-adjusted results.** A rollout's result is a score (1 if the decider won, 0 if it lost, 0.5 at
   the ply limit), minus the decider's luck in the rollout's rolls plus the opponent's, on the score's
   scale (`strategic_reserve_env.core.outcome.Ledger` and `SCORE_SCALE`; the luck of
   `strategic_reserve_env.core.luck` under `value`, by default the reserve-race model): each luck term
   has mean zero, so the mean result estimates the same win probability with much less noise
   (`luck=false` keeps the raw results).
   With `horizon=H` (H > 0) a rollout stops after H turns (placements) of the players: a game still
   going then scores `value`'s expectation of the decider's win probability over the next roll (the
   mean over the 36 rolls of the roller's value after each, from the decider's side), minus the same luck
   terms: cheaper, and biased only as far as `value` is wrong at the horizon.
4. The candidate with the best mean result is played (ties: the lower greedy loss, then the lower square).

Options (`rollout:rollouts=64,width=6,luck=true,horizon=0,base=greedy`): `rollouts` per candidate
(1..4096), `width` candidates (1..36), `luck`, `horizon` (0..1000 turns; 0: to the end of the game),
`base`: the policy improved, `greedy` (above) or `ppo`, the shipped network, which then picks the
candidates (its most probable legal squares) and plays both sides of the rollouts (its most probable
square; about 1.3 times greedy's cost a decision). The agent is deterministic given the `rng` of
`RolloutAgent.act` (the rollouts' dice seeds and greedy's tie-breaks come from it).

Measured (2-core machine shared with other jobs): `rollout:rollouts=64` scored 0.510 ± 0.013 against greedy
(luck-adjusted, 120 pairs of paired dice, seed 2), at about 0.1 CPU seconds a decision (about 0.75 games/s on
an idle core against greedy). How much one step can give, on the headroom decisions
(`strategic-reserve headroom --positions 60 --seed 1 --rollouts 2048 --luck`: 43
decisions, every legal placement, 1,024 + 1,024 luck-adjusted rollouts each, about 30,000 raw ones): the
split-sample gain over greedy is +0.0051 ± 0.0017 win probability a decision (in-sample +0.0061), so the
one-step improvement is about +0.005 a decision, +0.06 a game at greedy's 12 to 13 decisions a player.
With 200 + 200 rollouts the split-sample figure was +0.0027 ± 0.0021: the gain is there, but choosing
well enough to take it needs about a thousand luck-adjusted rollouts of every legal placement, some 5 CPU
seconds a decision here (`rollouts=64,width=6` takes 0.1).
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.core import engine, turns
from strategic_reserve_env.core.board import NO_PLAYER, NUM_SQUARES, RED, bitboards_to_array, brief, checked_int
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.dice import BatchDice
from strategic_reserve_env.core.luck import DEFAULT_VALUE, ValueFunction, roll_values
from strategic_reserve_env.core.observation import mover_planes
from strategic_reserve_env.core.outcome import SCORE_SCALE, Ledger, reward

from .greedy import NOT_COMPUTED, expected_losses
from .position import Position, argmin_random_ties, read_position

MAX_ROLLOUTS = 4096
MAX_HORIZON = 1000  # turns of a truncated rollout (0: to the end)
ENGINE_BATCH = 16384  # rollout games advanced at once (bounds memory: greedy's arrays are (games, 36, groups))
_SEED_RANGE = 2**62
BASES = ("greedy", "ppo")  # the base policy: candidates and both players of the rollouts
POSITION_FIELDS = ("me", "opp", "legal", "reserve_me", "reserve_opp")  # Position's fields, in order
_GREEDY_STEP = 1.0  # expected losses are integers (totals over the 36 rolls): noise below 1 breaks ties only


class RolloutAgent:
    """One-step rollout improvement of greedy with common dice and luck-adjusted rollouts (module docstring)."""

    uses_observation = True

    def __init__(
        self,
        rollouts: int = 64,
        width: int = 6,
        luck: bool = True,
        horizon: int = 0,
        value: ValueFunction = DEFAULT_VALUE,
        base: str = "greedy",
    ) -> None:
        horizon = checked_int("rollout horizon", horizon, 0, MAX_HORIZON)
        rollouts = checked_int("rollout rollouts", rollouts, 1, MAX_ROLLOUTS)
        width = checked_int("rollout width", width, 1, NUM_SQUARES)
        if not isinstance(luck, bool):
            raise ValueError(f"rollout luck must be true or false, got {luck!r}")
        if base not in BASES:
            raise ValueError(f"rollout base must be one of {', '.join(BASES)}, got {brief(base)}")
        self.base, self.network = base, None
        if base == "ppo":
            from .ppo import PPOAgent  # the shipped network, loaded once

            self.network = PPOAgent.shipped()
        self.rollouts, self.width, self.luck, self.horizon, self.value = rollouts, width, luck, horizon, value
        self.config = Config()
        self.name = (
            f"rollout:rollouts={rollouts},width={width}"
            + (f",horizon={horizon}" if horizon else "")
            + ("" if luck else ",luck=false")
            + ("" if base == "greedy" else f",base={base}")
        )

    def candidates(
        self, me: np.ndarray, opp: np.ndarray, legal: np.ndarray, observations: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """`(squares, valid)`, both (B, width): the base policy's best legal squares, best first (greedy: the
        fewest expected losses; ppo: the network's most probable, from `observations`), ties to the lower
        square; `valid` False where fewer squares are legal."""
        if self.network is None:
            cost = expected_losses(me, opp, legal).astype(np.float64)  # (B, 36), NOT_COMPUTED where illegal
        else:
            cost = np.where(legal, -self.network.probabilities(observations, legal), float(NOT_COMPUTED))
        ranked = np.argsort(cost, axis=-1, kind="stable")[:, : self.width]
        valid = np.take_along_axis(legal, ranked, axis=-1)
        return ranked, valid

    def move_values(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(B, 36) float64: each candidate's mean rollout result (`candidate_values`), NaN on the squares
        not searched: the form of `ExpectimaxAgent.move_values`, which distillation labels with."""
        squares, valid, values = self.candidate_values(observations, masks, rng)
        every = np.full((len(squares), NUM_SQUARES), np.nan)
        rows = np.broadcast_to(np.arange(len(squares))[:, None], squares.shape)
        every[rows[valid], squares[valid]] = values[valid]
        return every

    def candidate_values(
        self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`(squares, valid, values)`, each (B, width): the candidates, whether each is one, and its mean
        (luck-adjusted) rollout result, the decider's win probability estimate (NaN where not valid).
        The decisions are searched in chunks of at most `ENGINE_BATCH` rollout games."""
        position = read_position(observations, masks)
        squares, valid = self.candidates(position.me, position.opp, np.asarray(masks, dtype=bool), observations)
        values = np.full(squares.shape, np.nan)
        chunk = max(1, ENGINE_BATCH // (self.width * self.rollouts))
        for start in range(0, len(squares), chunk):
            rows = slice(start, start + chunk)
            part = Position(*(getattr(position, name)[rows] for name in POSITION_FIELDS))
            values[rows] = self._rollout_values(part, squares[rows], valid[rows], rng)
        return squares, valid, values

    def _rollout_values(
        self, position: Position, squares: np.ndarray, valid: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """(b, width) mean rollout results of the candidates `squares` of the b decisions of `position`."""
        batch, width, rollouts = len(squares), self.width, self.rollouts
        shape = (batch, width, rollouts)

        def spread(x: np.ndarray) -> np.ndarray:
            return np.broadcast_to(np.asarray(x, dtype=np.int64)[:, None, None], shape).reshape(-1)

        games = int(np.prod(shape))
        state = engine.State(
            me=spread(position.me),
            opp=spread(position.opp),
            reserve_me=spread(position.reserve_me),
            reserve_opp=spread(position.reserve_opp),
            to_move=np.full(games, RED, dtype=np.int64),  # the decider plays Red in its rollouts
            ply=np.zeros(games, dtype=np.int64),
            winner=np.full(games, NO_PLAYER, dtype=np.int64),
            truncated=np.zeros(games, dtype=bool),
            rolled=np.zeros(games, dtype=np.int64),
            hit=np.zeros(games, dtype=np.int64),
            captured=np.zeros(games, dtype=np.int64),
            legal=spread(position.legal),
        )
        stand_in = np.where(valid, squares, squares[:, :1])  # the best square stands in for missing ones
        state = engine.place(state, np.broadcast_to(stand_in[:, :, None], shape).reshape(-1), self.config)
        seeds = rng.integers(_SEED_RANGE, size=(batch, 1, rollouts))  # common dice across the candidates
        dice = BatchDice(np.broadcast_to(seeds, shape).reshape(-1))
        ledger = Ledger(games, value=self.value if self.luck else None)  # one row a rollout: the decider (Red)

        def decide(state: engine.State, acting: np.ndarray) -> np.ndarray:
            actions = np.zeros(state.batch_size, dtype=np.int64)
            rows = np.flatnonzero(acting)
            legal_rows = bitboards_to_array(state.legal[rows])
            if self.network is not None:
                actions[rows] = self.network.act(mover_planes(state[rows]), legal_rows, rng)
                return actions
            losses = expected_losses(state.me[rows], state.opp[rows], legal_rows).astype(np.float64)
            actions[rows] = argmin_random_ties(losses, legal_rows, rng, step=_GREEDY_STEP)
            return actions

        def on_roll(state: engine.State) -> None:
            rolled = state.awaiting_placement & ~state.done
            if rolled.any():
                ledger.roll(state, state.to_move == RED, rolled)

        state = turns.play_out(state, dice, decide, self.config, on_roll, max_turns=self.horizon or None)
        results = SCORE_SCALE.of(reward(state.winner, RED))  # the decider's: 1 won, 0 lost, 1/2 at the ply limit
        live = np.flatnonzero(~state.done)  # at the horizon, before the next roll: the value's expectation
        if live.size:
            rows = state[live]
            mover = roll_values(self.value, rows.me, rows.opp, rows.reserve_me, rows.reserve_opp).mean(axis=-1)
            results[live] = SCORE_SCALE.of_probability(np.where(rows.to_move == RED, mover, 1.0 - mover))
        results = SCORE_SCALE.adjusted(results, ledger.luck)
        return np.where(valid, results.reshape(shape).mean(axis=-1), np.nan)

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        squares, _, values = self.candidate_values(observations, masks, rng)
        best = np.argmax(np.where(np.isnan(values), -np.inf, values), axis=-1)  # first best: the lower greedy loss
        return squares[np.arange(len(squares)), best]

    def __repr__(self) -> str:
        return (
            f"RolloutAgent(rollouts={self.rollouts}, width={self.width}, luck={self.luck}, horizon={self.horizon}, "
            f"base={self.base!r})"
        )


__all__ = ["MAX_ROLLOUTS", "RolloutAgent"]
