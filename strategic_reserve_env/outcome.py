"""Rewards: the one place where what happened in a game becomes a reward.

Used by every environment (the PettingZoo env for each agent, the single-agent
envs for the learner) so that a win, a loss, a forfeit, a truncation and a roll
score the same everywhere.

- :func:`reward`: the outcome, +1 (win), -1 (loss or forfeit) or 0 (no result yet, or a truncation).
- A **reward function** (:class:`RewardFunction`) turns a :class:`Transition` (what happened to one agent
  since its last decision: the rolls made, with the positions before and after each, and the outcome) into
  its reward. The environments take one as ``reward=``: ``"outcome"`` (:data:`OUTCOME`, the default),
  ``"luck_adjusted"`` (:class:`LuckAdjusted` with :data:`~strategic_reserve_env.luck.DEFAULT_VALUE`), a
  :class:`LuckAdjusted` with a value function of one's own, or any callable (:func:`as_reward_function`).

**Luck-adjusted rewards.** The reward is the outcome minus the agent's luck in the step's rolls: the luck of
its own rolls counts for it and is subtracted, the luck of the other player's rolls counts against it and is
added back (:func:`strategic_reserve_env.luck.roll_luck`). Each roll's luck has mean zero given everything
before the roll, the agent's action included (the 36 rolls are equally likely, whatever the value function),
so every luck term has mean zero given the action before it: every policy's expected return is unchanged,
and so are the policy gradients' expectations (the terms are like a baseline that depends on chance only),
while a value function that follows the real win probability removes most of the dice's variance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from . import luck
from .luck import AfterRoll, ValueFunction

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


@dataclass(frozen=True)
class Roll:
    """One roll in each of B rows (a row: one agent in one game); the positions are the roller's side."""

    made: np.ndarray  # (B,) bool: the roll was made in this row (the other rows' fields mean nothing)
    own: np.ndarray  # (B,) bool: the rewarded agent made it (else the other player did)
    before: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (B,) int64 each: (me, opp, reserve_me,
    # reserve_opp) of the roller just before the roll (luck.roll_luck's position)
    rolled: np.ndarray  # (B,) int64: the rolled square, 0..35
    after: AfterRoll  # (B,) fields: the position just after the roll, the roller to place

    def luck(self, value: ValueFunction) -> np.ndarray:
        """(B,) float64: the roller's luck of this roll under ``value`` (0 in the rows where it was not made)."""
        result = np.zeros(self.made.shape, dtype=np.float64)
        rows = np.flatnonzero(self.made)
        if rows.size:
            result[rows] = luck.roll_luck(value, *(x[rows] for x in self.before), self.rolled[rows])
        return result


@dataclass(frozen=True)
class Transition:
    """What happened to B agents (one a row) since each one's last decision (its placement included)."""

    rolls: tuple[Roll, ...]  # the rolls made since, in order (a row may have made fewer: Roll.made)
    outcome: np.ndarray  # (B,) int64: reward() of the games that ended since (0 where none ended)
    ended: np.ndarray  # (B,) bool: the row's game ended (won, forfeited or truncated) since


def latest_roll(state, own: np.ndarray, made: np.ndarray) -> Roll:
    """The latest roll of each game of ``state`` (an engine State, or a Game seen as one row per agent),
    read just after it (the roller to place), as a :class:`Roll` with ``own`` and ``made`` ((B,) bool)."""
    before = luck.before_roll(state.me, state.opp, state.reserve_me, state.reserve_opp, state.captured)
    fields = (state.me, state.opp, state.reserve_me, state.reserve_opp, state.legal)
    after = AfterRoll(*(np.broadcast_to(np.asarray(x, dtype=np.int64), made.shape) for x in fields))
    return Roll(
        made=made,
        own=own,
        before=tuple(np.broadcast_to(np.asarray(x, dtype=np.int64), made.shape) for x in before),  # type: ignore[arg-type]
        rolled=np.broadcast_to(np.asarray(state.rolled, dtype=np.int64), made.shape),
        after=after,
    )


@runtime_checkable
class RewardFunction(Protocol):
    """``reward_function(transition) -> (B,) float`` rewards, one a row of the :class:`Transition`."""

    def __call__(self, transition: Transition) -> np.ndarray: ...


class OutcomeReward:
    """The outcome alone: +1 win, -1 loss, 0 otherwise (the rolls are ignored)."""

    name = "outcome"

    def __call__(self, transition: Transition) -> np.ndarray:
        return transition.outcome.astype(np.float64)

    def __repr__(self) -> str:
        return "OutcomeReward()"


@dataclass(frozen=True)
class LuckAdjusted:
    """The outcome minus the agent's luck in the transition's rolls under ``value``: its own rolls' luck
    subtracted, the other player's added (the module docstring says why the expected return is unchanged)."""

    value: ValueFunction = luck.DEFAULT_VALUE
    name = "luck_adjusted"

    def __call__(self, transition: Transition) -> np.ndarray:
        result = transition.outcome.astype(np.float64)
        for roll in transition.rolls:
            result -= np.where(roll.own, 1.0, -1.0) * roll.luck(self.value)
        return result


OUTCOME = OutcomeReward()
REWARDS = ("outcome", "luck_adjusted")


def as_reward_function(reward_spec: str | Callable[[Transition], np.ndarray]) -> RewardFunction:
    """The reward function of an environment's ``reward=`` argument: ``"outcome"``, ``"luck_adjusted"``
    or a callable of a :class:`Transition`; ``ValueError`` for anything else."""
    if isinstance(reward_spec, str):
        if reward_spec == "outcome":
            return OUTCOME
        if reward_spec == "luck_adjusted":
            return LuckAdjusted()
    elif callable(reward_spec):
        return reward_spec
    raise ValueError(f"reward must be one of {REWARDS} or a callable of an outcome.Transition, got {reward_spec!r}")


def is_outcome(reward_function: RewardFunction) -> bool:
    """The reward function is the plain outcome (the environments then skip recording the rolls)."""
    return isinstance(reward_function, OutcomeReward)


__all__ = [
    "LOSS",
    "NO_RESULT",
    "OUTCOME",
    "REWARDS",
    "WIN",
    "LuckAdjusted",
    "OutcomeReward",
    "Roll",
    "RewardFunction",
    "Transition",
    "as_reward_function",
    "is_outcome",
    "latest_roll",
    "reward",
]
