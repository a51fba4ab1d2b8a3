"""The one batched turn loop over `State`: every place that plays
games with policies (the arena and evaluation, the single-agent envs' opponents, the benchmark, the
experiments) advances them here.

A *turn* of a game is its roll (unless the roll is already made and a
placement is due), the choice of its mover's policy, and the placement:

- **who moves**: the caller says which games take a turn (`acting`, (B,)
  bool) and which policy acts in each (`policy_of`, (B,) int64 index into
  its policies); `actions_by_policy` calls each policy once per turn,
  batched over its own games, in index order, and only over the games where
  a placement is due: a policy is never asked about a game with no move due
  (its mask would be empty), which a function written for one game cannot
  answer;
- **dice** come from explicit streams: any object with ``next(mask) -> (B,)
  int64`` rolled squares, where only the games of `mask` advance
  (`BatchDice`), so a game's rolls
  never depend on the other games of the batch;
- **checked actions**: the caller's `act` turns a policy's answer into
  legal squares (with `checked_actions`)
  and its faults into the caller's error (`AgentError`, `OpponentError`);
- **outcome**: the engine's fields (`winner`, `truncated`, `ply`) after
  the placement; `strategic_reserve_env.core.outcome` scores them.

Every function is pure over the State; the only effects are the dice
streams' counters and whatever `act` does. A turn of a few games of a
batch (e.g. the games that start again in the middle of a learner's step)
costs the engine those games alone (`SPARSE`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from . import engine
from .config import Config

#: ``act(state, index, games) -> (k,) squares``: policy ``index``'s choices in the games ``games`` ((k,)
#: int64 indices, ascending) of ``state`` (rolled; a placement is due in each of them)
Act = Callable[[engine.State, int, np.ndarray], np.ndarray]
#: ``decide(state, acting) -> (B,) squares``: the actions of the games where ``acting`` ((B,) bool);
#: the other rows are ignored
Decide = Callable[[engine.State, np.ndarray], np.ndarray]


class Dice(Protocol):
    """A source of rolled squares: `next(mask)` gives (B,) int64 squares, advancing only the games of
    `mask` ((B,) bool)."""

    def next(self, mask: np.ndarray) -> np.ndarray: ...


def roll(state: engine.State, dice: Dice, games: np.ndarray) -> engine.State:
    """`state` with the games of `games` ((B,) bool; live ones, no placement due) rolled from `dice`."""
    return engine.roll(state, dice.next(games), active=games)


def place(state: engine.State, actions: np.ndarray, config: Config, games: np.ndarray) -> engine.State:
    """`state` with the checkers `actions` ((B,) squares, checked legal) placed in the games of `games`."""
    return engine.place(state, actions, config, active=games)


def actions_by_policy(
    state: engine.State, acting: np.ndarray, policy_of: np.ndarray, policies: int, act: Act
) -> np.ndarray:
    """(B,) int64 actions: for each policy index `0 .. policies - 1` in turn that moves in some game of
    `acting`, `act(state, index, games)` for its games (0 in the rows of no acting game)."""
    actions = np.zeros(state.batch_size, dtype=np.int64)
    for index in range(policies):
        games = np.flatnonzero(acting & (policy_of == index))
        if games.size:
            actions[games] = act(state, index, games)
    return actions


def turn(
    state: engine.State,
    acting: np.ndarray,
    dice: Dice,
    decide: Decide,
    config: Config,
    on_roll: Callable[[engine.State], None] | None = None,
) -> engine.State:
    """One turn of the live games where `acting` ((B,) bool): those not yet rolled roll from `dice`,
    `on_roll(state)` (if given) sees the rolled state, `decide` chooses, and the checkers are placed.
    The other games are unchanged."""
    to_roll = acting & ~state.awaiting_placement
    if to_roll.any():
        state = roll(state, dice, to_roll)
    if on_roll is not None:
        on_roll(state)
    return place(state, decide(state, acting), config, acting)


def play_out(
    state: engine.State,
    dice: Dice,
    decide: Decide,
    config: Config,
    on_roll: Callable[[engine.State], None] | None = None,
    max_turns: int | None = None,
) -> engine.State:
    """Turns of every live game until all are over (won, or at the ply limit), or for `max_turns` turns
    at most (None: no limit; the games still going then await their next roll); `on_roll(state)` sees
    the state after every roll and, once, the final state."""
    turns = 0
    while not (done := state.done).all() and (max_turns is None or turns < max_turns):
        state = turn(state, ~done, dice, decide, config, on_roll)
        turns += 1
    if on_roll is not None:
        on_roll(state)
    return state


__all__ = ["Act", "Decide", "Dice", "actions_by_policy", "place", "play_out", "roll", "turn"]
