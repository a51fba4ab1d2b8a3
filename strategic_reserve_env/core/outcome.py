"""Rewards and scores: the one place where what happened in a game becomes a reward or a score.

Used by every environment (the PettingZoo env for each agent, the single-agent envs for the learner), the
arena, the rollout agent and the tournament, so that a win, a loss, a forfeit, a truncation and a roll's luck
count the same everywhere.

- `reward`: the outcome, +1 (win), -1 (loss or forfeit) or 0 (no result yet, or a truncation).
- **Scales** (`Scale`): a result is a reward on `REWARD_SCALE` (+1 win, -1 loss, 0 draw) or a
  score on `SCORE_SCALE` (1 win, 0 loss, 1/2 draw; the scale of a win probability). A roll's **luck**
  (`strategic_reserve_env.core.luck`) is a difference of win probabilities, so on a scale whose win and
  loss are `win - loss` apart it counts `(win - loss)` times: **2 x luck** against a +-1 reward, 1 x
  luck against a score. `Scale.luck` is the only place that conversion is written.
- The **ledger** (`Ledger`) records, per row (an agent in a game), the rolls and the results as they
  happen, and turns them into rewards (`Ledger.settle`) or a net luck (`Ledger.luck`) that
  `Scale.adjusted` takes out of a result on any scale.
- A **reward function** (`RewardFunction`) turns a `Transition` (what happened to one agent
  since its last decision: the rolls made, with the positions before and after each, and the outcome) into
  its reward. The environments take one as `reward=`: `"outcome"` (`OUTCOME`, the default),
  `"luck_adjusted"` (`LuckAdjusted` with `DEFAULT_VALUE`), a
  `LuckAdjusted` with a value function of one's own, or any callable (`as_reward_function`). It
  is always called; one that ignores the rolls says so (`uses_rolls = False`, as `OUTCOME` does)
  and no roll is recorded for it. Its answer must be finite real numbers (`checked_rewards`).

**Luck-adjusted rewards.** The reward is the outcome minus the agent's luck in the step's rolls, on the
reward's scale (2 x luck): the luck of its own rolls counts for it and is subtracted, the luck of the other
player's rolls counts against it and is added back (`strategic_reserve_env.core.luck.roll_luck`). Each
roll's luck has mean zero given everything before the roll, the agent's action included (the 36 rolls are
equally likely, whatever the value function), so every luck term has mean zero given the action before it:
every policy's expected return is unchanged, and so are the policy gradients' expectations (the terms are
like a baseline that depends on chance only), while a value function that follows the real win probability
removes most of the dice's variance (on the wrong scale, 1 x luck, it removes well under half of what it
can: `experiments/reward_variance.py`).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, cast, runtime_checkable

import numpy as np

from . import luck
from .board import brief, clip
from .luck import AfterRoll, ValueFunction

WIN, LOSS, NO_RESULT = 1, -1, 0
_FEW_ROWS = 8  # rewards of up to this many rows are checked as Python floats (faster than numpy for a few)


def reward(winner, player):
    """The reward of `player` (RED or BLUE) in games won by `winner` (RED, BLUE, or NO_PLAYER = -1
    while nobody has won, or after a truncation): `WIN` (+1) if `player` won, `LOSS` (-1) if the
    other player did, `NO_RESULT` (0) otherwise.

    Python ints give an int; (B,) int64 arrays (either argument) give (B,) int64.
    """
    if type(winner) is int and type(player) is int:
        return WIN if winner == player else LOSS if winner == player ^ 1 else NO_RESULT
    winner, player = np.asarray(winner), np.asarray(player)
    return np.where(winner == player, WIN, np.where(winner == player ^ 1, LOSS, NO_RESULT))


@dataclass(frozen=True)
class Scale:
    """The values of a win, a loss and a draw (a truncation) on one scale of results."""

    name: str
    win: float
    loss: float
    draw: float
    _values: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # (3,) float64: the results of the outcomes LOSS, NO_RESULT, WIN (in that order), for of()
        object.__setattr__(self, "_values", np.array((self.loss, self.draw, self.win), dtype=np.float64))

    def of(self, outcome) -> np.ndarray:
        """float64 results on this scale of `reward`'s outcomes (+1 `win`, -1 `loss`, 0 `draw`)."""
        return self._values[np.asarray(outcome) - LOSS]

    def of_one(self, outcome: int) -> float:
        """`of` one outcome (a Python int) as a Python float, the same value."""
        return self._values.item(outcome - LOSS)

    def of_probability(self, probability) -> np.ndarray:
        """float64: the expected result on this scale of a win probability (its draws not counted)."""
        return self.loss + (self.win - self.loss) * np.asarray(probability, dtype=np.float64)

    def luck(self, luck):
        """float64: `luck` (a difference of win probabilities) on this scale, `(win - loss) * luck` (a
        Python float of a Python float, the same bits)."""
        return (self.win - self.loss) * (luck if type(luck) is float else np.asarray(luck, dtype=np.float64))

    def adjusted(self, result, luck):
        """float64: `result` (on this scale) less the net `luck` that helped it: `result - luck(luck)`;
        the same expectation as `result`, since every roll's luck has mean zero (a Python float of Python
        floats, the same bits)."""
        if type(result) is float and type(luck) is float:
            return result - self.luck(luck)
        return np.asarray(result, dtype=np.float64) - self.luck(luck)


REWARD_SCALE = Scale("reward", win=1.0, loss=-1.0, draw=0.0)
"""The environments' rewards: +1 win, -1 loss, 0 draw (`reward`); luck counts 2 x here."""
SCORE_SCALE = Scale("score", win=1.0, loss=0.0, draw=0.5)
"""Scores and win probabilities: 1 win, 0 loss, 1/2 draw (the tournament, the rollout agent); luck counts 1 x."""


@dataclass(frozen=True)
class Roll:
    """One roll in each of B rows (a row: one agent in one game); the positions are the roller's side."""

    made: np.ndarray  # (B,) bool: the roll was made in this row (the other rows' fields mean nothing)
    own: np.ndarray  # (B,) bool: the rewarded agent made it (else the other player did)
    before: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (B,) int64 each: (me, opp, reserve_me,
    # reserve_opp) of the roller just before the roll (luck.roll_luck's position)
    rolled: np.ndarray  # (B,) int64: the rolled square, 0..35
    after: AfterRoll  # (B,) fields: the position just after the roll, the roller to place
    single: tuple[int, int, int, int, int] | None = field(default=None, repr=False, compare=False)
    """The roll of one game in every row (a `Game`'s, `latest_roll`): `(me, opp, reserve_me, reserve_opp,
    rolled)` of `before` and `rolled` as Python ints, so that its luck is worked out once, on ints."""

    def luck(self, value: ValueFunction) -> np.ndarray:
        """(B,) float64: the roller's luck of this roll under `value` (0 in the rows where it was not made)."""
        if self.single is not None:  # one position: its 36 rolls' values once (luck.roll_values on ints)
            return np.where(self.made, luck.roll_luck(value, *self.single), 0.0)
        return _luck_where(value, self.before, self.rolled, self.made)

    def net_luck(self, value: ValueFunction) -> np.ndarray:
        """(B,) float64: the luck of this roll for the row's agent: the roller's luck where it rolled
        (`own`), its negative where the other player did, 0 where no roll was made."""
        return _for_rows(self.own, self.luck(value))


def _luck_where(
    value: ValueFunction, before: tuple[np.ndarray, ...], rolled: np.ndarray, made: np.ndarray
) -> np.ndarray:
    """(B,) float64: the roller's luck under `value` of the rolls `rolled` ((B,) int64) from the positions
    `before` ((me, opp, reserve_me, reserve_opp), (B,) int64 each) in the rows of `made` ((B,) bool), 0
    elsewhere."""
    result = np.zeros(made.shape, dtype=np.float64)
    rows = np.flatnonzero(made)
    if rows.size:
        result[rows] = luck.roll_luck(value, *(x[rows] for x in before), rolled[rows])
    return result


def _for_rows(own: np.ndarray, roller_luck: np.ndarray) -> np.ndarray:
    """(B,) float64: the roller's luck of a roll (`roller_luck`, (B,) float64, 0 where none was made) for
    each row's agent: as it is where the agent rolled (`own`), negated where the other player did."""
    return np.where(own, 1.0, -1.0) * roller_luck


def _net_luck_of(value: ValueFunction, state, own: np.ndarray, made: np.ndarray) -> np.ndarray:
    """`Roll.net_luck` of the latest roll of `state` (an engine State, or a `Game`: one position in every
    row, its luck worked out once on ints, `luck.luck_of_latest_roll`), without the `Roll`."""
    if type(state.me) is int:
        return _for_rows(own, np.where(made, luck.luck_of_latest_roll(value, state), 0.0))
    before = luck.before_roll(state.me, state.opp, state.reserve_me, state.reserve_opp, state.captured)
    return _for_rows(own, _luck_where(value, before, state.rolled, made))


@dataclass(frozen=True)
class Transition:
    """What happened to B agents (one a row) since each one's last decision (its placement included). The
    arrays of a `Ledger`'s transition are read-only: a reward function reads them and returns new ones."""

    rolls: tuple[Roll, ...]  # the rolls made since, in order (a row may have made fewer: Roll.made)
    outcome: np.ndarray  # (B,) int64: reward() of the games that ended since (0 where none ended)
    ended: np.ndarray  # (B,) bool: the row's game ended (won, forfeited or truncated) since

    def luck(self, value: ValueFunction) -> np.ndarray:
        """(B,) float64: each row's net luck in the rolls under `value` (`Roll.net_luck` summed)."""
        total = np.zeros(self.outcome.shape)
        for roll in self.rolls:
            total += roll.net_luck(value)
        return total


def latest_roll(state, own: np.ndarray, made: np.ndarray) -> Roll:
    """The latest roll of each game of `state` (an engine State, or a Game seen as one row per agent),
    read just after it (the roller to place), as a `Roll` with `own` and `made` ((B,) bool)."""
    before = luck.before_roll(state.me, state.opp, state.reserve_me, state.reserve_opp, state.captured)
    after = (state.me, state.opp, state.reserve_me, state.reserve_opp, state.legal)
    single = None
    if type(state.me) is int:  # a Game: one position in every row, its luck worked out once (Roll.single)
        single = (*before, state.rolled)
        table = _read_only(np.array([(*before, state.rolled, *after)], dtype=np.int64).T.repeat(made.size, axis=1))
        rows = list(table)  # (B,) read-only rows of one array
    else:
        rows = [_rows(x, made.shape) for x in (*before, state.rolled, *after)]
    return Roll(made, own, tuple(rows[:4]), rows[4], AfterRoll(*rows[5:]), single)  # type: ignore[arg-type]


def _rows(x, shape: tuple[int, ...]) -> np.ndarray:
    """`x` as a read-only int64 array of `shape`: a view of it when it is such an array already (an
    engine State's field), else broadcast."""
    if type(x) is np.ndarray and x.shape == shape and x.dtype == np.int64:
        return _read_only(x.view())
    return np.broadcast_to(np.asarray(x, dtype=np.int64), shape)


@runtime_checkable
class RewardFunction(Protocol):
    """`reward_function(transition) -> (B,) float` rewards, one a row of the `Transition`, finite
    real numbers. Optional attribute, read with `getattr`: `uses_rolls = False` when the rolls are not
    read (the transitions then hold none, and the environments record none: `OutcomeReward`)."""

    def __call__(self, transition: Transition) -> np.ndarray: ...


class OutcomeReward:
    """The outcome alone: +1 win, -1 loss, 0 otherwise (the rolls are ignored: `uses_rolls` is False)."""

    name = "outcome"
    uses_rolls = False

    def __call__(self, transition: Transition) -> np.ndarray:
        return REWARD_SCALE.of(transition.outcome)

    def __repr__(self) -> str:
        return "OutcomeReward()"


@dataclass(frozen=True)
class LuckAdjusted:
    """The outcome minus the agent's net luck in the transition's rolls under `value`, on the reward's
    scale (`Scale.adjusted` with `REWARD_SCALE`: `outcome - 2 * luck`): its own rolls' luck
    subtracted, the other player's added (the module docstring says why the expected return is unchanged)."""

    value: ValueFunction = luck.DEFAULT_VALUE
    name = "luck_adjusted"
    uses_rolls = True

    def __call__(self, transition: Transition) -> np.ndarray:
        return self.of_luck(transition.outcome, transition.luck(self.value))

    def of_luck(self, outcome: np.ndarray, net_luck: np.ndarray) -> np.ndarray:
        """(B,) float64 rewards of the rows' `outcome` ((B,) int: +1, -1 or 0) and net luck under `value`
        ((B,) float64, `Transition.luck`): what `__call__` returns, and what a `Ledger` settles from the
        net luck it summed as the rolls were made."""
        return REWARD_SCALE.adjusted(REWARD_SCALE.of(outcome), net_luck)

    def of_one_row(self, outcome: int, lucks: Iterable[tuple[bool, float]]) -> float:
        """One row's reward on Python floats, the same bits as a `Ledger` of that row settles it: its
        `outcome` (+1, -1 or 0) and the luck of its rolls in order, each `(own, the roller's luck)` (the
        row's agent rolled, or the other player did), the net luck summed from 0 as the rolls came (its own
        rolls' luck as it is, the other player's negated) and taken out by `of_luck`'s scale (the
        single-game path of the AEC env and the Gymnasium env)."""
        net_luck = 0.0
        for own, roller_luck in lucks:
            net_luck += roller_luck if own else -roller_luck
        return REWARD_SCALE.adjusted(REWARD_SCALE.of_one(outcome), net_luck)


OUTCOME = OutcomeReward()
REWARDS = ("outcome", "luck_adjusted")


def as_reward_function(reward_spec: str | Callable[[Transition], np.ndarray]) -> RewardFunction:
    """The reward function of an environment's `reward=` argument: `"outcome"`, `"luck_adjusted"`
    or a callable of a `Transition` (one that cannot be called with one argument is refused here,
    at construction); `ValueError` for anything else."""
    if isinstance(reward_spec, str):
        if reward_spec == "outcome":
            return OUTCOME
        if reward_spec == "luck_adjusted":
            return LuckAdjusted()
    elif callable(reward_spec):
        _check_signature(reward_spec)
        return reward_spec
    raise ValueError(
        f"reward must be one of {REWARDS} or a callable of an outcome.Transition, got {brief(reward_spec)}"
    )


def _check_signature(function: Callable) -> None:
    """`ValueError` unless `function` can be called with one positional argument (a callable whose
    signature Python cannot read, a builtin, is taken as it is)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None)
    except TypeError as error:
        raise ValueError(
            f"the reward callable {brief(function)} must take one argument (an outcome.Transition), "
            f"but its signature is {clip(str(signature))}: {error}"
        ) from None


def checked_rewards(rewards: object, rows: int, dtype: type = np.float64) -> np.ndarray:
    """A reward function's answer as (rows,) `dtype` real numbers, all finite: `TypeError` for anything
    but real numbers (strings, complex numbers, objects), `ValueError` for another shape or a NaN or an
    infinite reward (one that only overflows `dtype` included), each naming what was returned."""
    if type(rewards) is np.ndarray and rewards.dtype.kind == "f" and rewards.shape == (rows,):  # the usual answer
        result = rewards
        if rewards.dtype != dtype:
            with np.errstate(over="ignore"):  # an overflow is an infinity, refused below
                result = rewards.astype(dtype)
        if rows <= _FEW_ROWS and all(map(math.isfinite, result.tolist())) or np.isfinite(result).all():
            return result
    try:
        array = np.asarray(rewards)
    except (TypeError, ValueError) as error:  # e.g. a ragged list
        raise TypeError(
            f"the reward function returned {type(rewards).__name__}, not (rows,) numbers: {error}"
        ) from None
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"the reward function returned {array.dtype} values ({brief(rewards)}); rewards are real numbers"
        )
    if array.shape != (rows,):
        raise ValueError(f"the reward function returned shape {array.shape}, expected ({rows},)")
    with np.errstate(over="ignore"):
        result = array.astype(dtype)
    if not np.isfinite(result).all():
        row = int(np.flatnonzero(~np.isfinite(result))[0])
        raise ValueError(
            f"the reward function returned {array[row]!r} in row {row}"
            f"{'' if not np.isfinite(array[row]) else f', beyond {np.dtype(dtype).name}'}: rewards must be finite"
        )
    return result


# -- the ledger ------------------------------------------------------------------------------------------


class Ledger:
    """What happened to R rows since the ledger was last settled, recorded as it happens, and turned into
    rewards or scores here alone. A row is one agent in one game, from that agent's side (the PettingZoo env:
    its two agents; the single-agent envs: the learner of each game; the arena: Red in each game; the rollout
    agent: the decider in each rollout).

    - `roll` records a roll: for `reward_function` the `Roll` itself (unless the function says
      it does not read rolls, `uses_rolls = False`), and with `value` its luck, summed into `luck`;
      for the built-in `LuckAdjusted` (its own class, not a subclass), which reads nothing but each
      row's net luck under its value, that luck alone, summed as the rolls are made (no `Roll` built; a
      `Game`'s roll worked out on ints) and settled by `LuckAdjusted.of_luck`, the same rewards;
    - `end` records the outcome of the games that ended (`reward`'s +-1);
    - `settle` calls `reward_function` on the `Transition` of what was recorded and starts
      afresh (its answer checked by `checked_rewards`; a failure records nothing new and changes nothing);
    - `luck` is each row's net luck (its own rolls' luck minus the other player's; a difference of win
      probabilities), and `Scale.adjusted` turns a result on any scale and that luck into a
      luck-adjusted result on that scale.
    """

    def __init__(
        self, rows: int, reward_function: RewardFunction | None = None, value: ValueFunction | None = None
    ) -> None:
        self.rows = rows
        self.reward_function = reward_function
        self.value = value
        # the built-in luck-adjusted reward's value: its rows' net luck is summed as the rolls are made
        self.adjusting = reward_function.value if type(reward_function) is LuckAdjusted else None
        self.keeps_rolls = (
            reward_function is not None
            and self.adjusting is None
            and bool(getattr(reward_function, "uses_rolls", True))
        )
        self.rolls: list[Roll] = []  # the rolls since the last settlement (kept for the reward function)
        # the arrays are read-only (a transition hands them out as they are) and replaced, never written
        self.outcome = _zeros(rows, np.int64)  # (R,) int64: reward() of the games ended (0 elsewhere)
        self.ended = _zeros(rows, np.bool_)  # (R,) bool: the row's game ended since the last settlement
        self.luck = _zeros(rows, np.float64)  # (R,) float64: the row's net luck under ``value`` (0 without one)
        self.adjusting_luck = _zeros(rows, np.float64)  # (R,) float64: the row's net luck under ``adjusting``

    def roll(self, state, own: np.ndarray, made: np.ndarray) -> None:
        """The latest roll of `state` (just made in the rows of `made`, (R,) bool; `own` (R,) bool: the
        row's agent made it): kept for the reward function, and its luck summed with `value`."""
        if not self.keeps_rolls and self.value is None and self.adjusting is None:
            return
        roll = latest_roll(state, own, made) if self.keeps_rolls else None
        if roll is not None:
            self.rolls.append(roll)

        def net_luck(value: ValueFunction) -> np.ndarray:
            return roll.net_luck(value) if roll is not None else _net_luck_of(value, state, own, made)

        if self.value is not None:
            self.luck = _read_only(self.luck + net_luck(self.value))
        if self.adjusting is not None:
            self.adjusting_luck = _read_only(self.adjusting_luck + net_luck(self.adjusting))

    def end(self, ended: np.ndarray, outcome: np.ndarray) -> None:
        """The games of the rows of `ended` ((R,) bool) ended with `outcome` ((R,) int: +1, -1 or 0)."""
        self.outcome = _read_only(np.where(ended, outcome, self.outcome).astype(np.int64, copy=False))
        self.ended = _read_only(self.ended | ended)

    def transition(self) -> Transition:
        """What was recorded since the last settlement (read-only arrays; no rolls where the reward
        function is the built-in `LuckAdjusted`, settled from `adjusting_luck`)."""
        return Transition(tuple(self.rolls), self.outcome, self.ended)

    def settle(self, dtype: type = np.float64) -> np.ndarray:
        """(R,) `dtype`: the reward function's rewards of `transition`, checked
        (`checked_rewards`); then the ledger starts afresh. If the reward function raises or answers
        badly, the ledger is unchanged."""
        if self.reward_function is None:
            raise ValueError("this ledger has no reward function to settle with")
        if self.adjusting is not None:  # the built-in LuckAdjusted: of the net luck summed as the rolls came
            answer = cast(LuckAdjusted, self.reward_function).of_luck(self.outcome, self.adjusting_luck)
        else:
            answer = self.reward_function(self.transition())
        rewards = checked_rewards(answer, self.rows, dtype)
        self.rolls = []
        self.outcome, self.ended = _zeros(self.rows, np.int64), _zeros(self.rows, np.bool_)
        self.adjusting_luck = _zeros(self.rows, np.float64)
        return rewards


def _read_only(array: np.ndarray) -> np.ndarray:
    """`array`, no longer writeable (the ledger hands its arrays to reward functions as they are)."""
    array.flags.writeable = False
    return array


@functools.lru_cache(maxsize=64)
def _zeros(rows: int, dtype: type) -> np.ndarray:
    """(rows,) read-only zeros of `dtype`, shared (an empty record of the ledger)."""
    return _read_only(np.zeros(rows, dtype=dtype))


__all__ = [
    "LOSS",
    "NO_RESULT",
    "OUTCOME",
    "REWARDS",
    "REWARD_SCALE",
    "SCORE_SCALE",
    "WIN",
    "Ledger",
    "LuckAdjusted",
    "OutcomeReward",
    "Roll",
    "RewardFunction",
    "Scale",
    "Transition",
    "as_reward_function",
    "checked_rewards",
    "latest_roll",
    "reward",
]
