"""The batched engine: B games advanced in lockstep with numpy array operations.

Every function here is a pure function of an explicit `State`; chance
enters only as an array of rolled squares (forced by the caller, or drawn with
`draw_rolls` from an explicit `numpy.random.Generator`). No Python
loop runs over the games of a batch.

A ply has two halves:

1. `roll` - the rolled square of each game resolves its captures and
   sets the legal placements;
2. `place` - each game's action (a square index) puts a checker down,
   ends the game on a win or at the ply limit, and passes the turn.

`step` is `place`, then reset of finished games (optional), then the
next `roll`. Finished games are left untouched by `roll` and `place`
until `reset` starts them again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace

import numpy as np

from . import rules
from .board import (
    BIT_ARRAY,
    BLUE,
    NO_PLAYER,
    NUM_SQUARES,
    RED,
    bitboards_to_array,
    brief,
    checked_int,
    dice_for,
    names_of,
    square_name,
)
from .config import Config

_INT = np.int64


class IllegalActionError(ValueError):
    """An action that is not a legal placement (or not a square at all) for a game of the batch."""


@dataclass(frozen=True)
class State:
    """A batch of B games. Bitboards use the layout of `strategic_reserve_env.core.board`.

    Boards and reserves are stored from the side of the player to move, so
    passing the turn is a swap. Use `red`, `blue`,
    `board` and `reserves` for absolute colours.
    """

    me: np.ndarray  # (B,) int64 bitboard: checkers of the player to move
    opp: np.ndarray  # (B,) int64 bitboard: checkers of the other player
    reserve_me: np.ndarray  # (B,) int64 checkers off the board, player to move
    reserve_opp: np.ndarray  # (B,) int64 checkers off the board, other player
    to_move: np.ndarray  # (B,) int64 RED=0 / BLUE=1; once a game is over, the player who would move next
    ply: np.ndarray  # (B,) int64 placements made so far
    winner: np.ndarray  # (B,) int64 RED, BLUE, or NO_PLAYER=-1 while nobody has won
    truncated: np.ndarray  # (B,) bool: the ply limit ended the game without a winner
    rolled: np.ndarray  # (B,) int64 square of the latest roll, -1 before the first roll
    hit: np.ndarray  # (B,) int64 kind of the latest roll: rules.HIT_EMPTY / HIT_ENEMY / HIT_FRIENDLY
    captured: np.ndarray  # (B,) int64 bitboard: squares the latest roll emptied (the other player's)
    legal: np.ndarray  # (B,) int64 bitboard: legal placements; 0 when no placement is due

    @property
    def batch_size(self) -> int:
        """Number of games B."""
        return self.me.shape[0]

    @property
    def done(self) -> np.ndarray:
        """(B,) bool: the game is over (won or truncated)."""
        return (self.winner != NO_PLAYER) | self.truncated

    @property
    def awaiting_placement(self) -> np.ndarray:
        """(B,) bool: the roll is made and a placement is due."""
        return self.legal != 0

    def red(self) -> np.ndarray:
        """(B,) int64 bitboard of Red's checkers."""
        return rules.from_side(self.me, self.opp, self.to_move, RED)[0]

    def blue(self) -> np.ndarray:
        """(B,) int64 bitboard of Blue's checkers."""
        return rules.from_side(self.me, self.opp, self.to_move, RED)[1]

    def reserves(self) -> np.ndarray:
        """(B, 2) int64 checkers off the board, columns (red, blue)."""
        return np.stack(rules.from_side(self.reserve_me, self.reserve_opp, self.to_move, RED), axis=1)

    def roller(self) -> np.ndarray:
        """(B,) int64 player who made the latest roll (the mover while a placement is due): `rules.roller`."""
        return rules.roller(self.legal, self.to_move)

    def dice(self) -> np.ndarray:
        """(B, 2) int64 (purple, green) of the latest roll from the roller's seat (`board.dice_for`);
        (0, 0) before any roll."""
        dice = np.stack(dice_for(self.rolled, self.roller()), axis=1)
        return np.where(self.rolled[:, None] >= 0, dice, 0)

    def board(self) -> np.ndarray:
        """(B, 36) int8 board: 0 empty, 1 red, 2 blue."""
        return bitboards_to_array(self.red()).astype(np.int8) + 2 * bitboards_to_array(self.blue()).astype(np.int8)

    def legal_mask(self) -> np.ndarray:
        """(B, 36) bool legal placements (all False when no placement is due)."""
        return bitboards_to_array(self.legal)

    def board_strings(self) -> list[str]:
        """The B boards as 36-character strings (docs/RULES.md notation)."""
        chars = np.array([".", "R", "B"])
        return ["".join(row) for row in chars[self.board()]]

    def __getitem__(self, index) -> State:
        """The games selected by `index` (a slice, an integer array or a bool mask) as a new State."""
        if isinstance(index, (int, np.integer)):
            index = slice(index, index + 1 if index != -1 else None)
        return State(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


def concatenate(states: list[State]) -> State:
    """One State holding the games of several, in order."""
    return State(**{f.name: np.concatenate([getattr(s, f.name) for s in states]) for f in fields(State)})


def init(config: Config, batch_size: int) -> State:
    """B games at the configured start position, before the first roll."""
    checked_int("batch_size", batch_size, 1)
    start = config.start_position
    red, blue = start.bitboards
    mover = start.mover
    me, opp = (red, blue) if mover == RED else (blue, red)
    reserve_me, reserve_opp = start.reserves if mover == RED else start.reserves[::-1]

    def filled(value, dtype=_INT):
        return np.full(batch_size, value, dtype=dtype)

    return State(
        me=filled(me),
        opp=filled(opp),
        reserve_me=filled(reserve_me),
        reserve_opp=filled(reserve_opp),
        to_move=filled(mover),
        ply=filled(0),
        winner=filled(NO_PLAYER),
        truncated=filled(False, bool),
        rolled=filled(-1),
        hit=filled(rules.HIT_EMPTY),
        captured=filled(0),
        legal=filled(0),
    )


def reset(state: State, mask: np.ndarray, config: Config) -> State:
    """Games where `mask` ((B,) bool) start again from the start position; the others are kept."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (state.batch_size,):
        raise ValueError(f"reset mask must have shape ({state.batch_size},), got {mask.shape}")
    games = mask.nonzero()[0]
    if games.size == 0:
        return state
    values = {}
    for name, value in _start_values(config).items():
        array = getattr(state, name).copy()
        array[games] = value
        values[name] = array
    return State(**values)


@functools.lru_cache(maxsize=64)
def _start_values(config: Config) -> dict:
    """Field name -> the scalar every game holds at the start position (before the first roll)."""
    fresh = init(config, 1)
    return {f.name: getattr(fresh, f.name)[0].item() for f in fields(State)}


def draw_rolls(rng: np.random.Generator, batch_size: int, plies: int | None = None) -> np.ndarray:
    """Uniform rolled squares: shape (B,), or (plies, B) to draw many turns at once."""
    shape = (batch_size,) if plies is None else (plies, batch_size)
    return rng.integers(0, NUM_SQUARES, size=shape, dtype=_INT)


def _select(mask, if_true, if_false):
    """`np.where` keeping the dtype of `if_false`."""
    return np.where(mask, if_true, if_false).astype(if_false.dtype, copy=False)


def integers(values: object, shape: tuple[int, ...], what: str, error: type = ValueError) -> np.ndarray:
    """`values` as an integer numpy array of `shape` (its dtype kept): the one check of square
    indices' type and shape (`as_squares`, and the PettingZoo env's single action).

    Raises `error` naming `what` for a non-integer type (floats and bools
    included: `6.9` is not square 6) or any other shape. Values are not
    range-checked here (the caller says which games must hold a square).
    """
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):  # e.g. a ragged list
        array = np.asarray(None)
    if array.dtype.kind not in "iu":
        shown = brief(values) if array.ndim == 0 else f"an array of dtype {array.dtype}"
        raise error(f"{what} must be integer square indices 0..{NUM_SQUARES - 1}, got {shown}")
    if array.shape != shape:
        raise error(f"{what} must have shape {shape}, got {array.shape}")
    return array


def as_squares(values: object, batch_size: int, what: str = "squares", error: type = ValueError) -> np.ndarray:
    """(B,) int64 square indices from integer `values` of shape (`batch_size`,): `integers`."""
    return integers(values, (batch_size,), what, error).astype(_INT, copy=False)


def _first_bad(bad: np.ndarray) -> int:
    """Index of the first True of a (B,) bool array."""
    return int(np.flatnonzero(bad)[0])


def _playing(state: State, active) -> np.ndarray | None:
    """(B,) bool: games not over and, if `active` is given, selected by it; `None` when that is
    every game, whether or not `active` was given (the callers then skip their masks)."""
    done = state.done
    if active is None:
        return None if not done.any() else ~done
    active = np.asarray(active, dtype=bool)
    if active.shape != (state.batch_size,):
        raise ValueError(f"active must have shape ({state.batch_size},), got {active.shape}")
    live = active & ~done
    return None if live.all() else live


def _outside_board(squares: np.ndarray) -> np.ndarray:
    """(B,) bool: int64 `squares` not in 0..35 (a negative one is a huge unsigned number)."""
    return squares.view(np.uint64) >= NUM_SQUARES


def roll(state: State, squares, active=None) -> State:
    """Resolve the roll on `squares` ((B,) ints 0..35) in each live game (and, if given, where
    `active`); every other game is unchanged and its entry of `squares` ignored."""
    squares = as_squares(squares, state.batch_size, "squares")
    return _roll(state, squares, _playing(state, active))


def _roll(state: State, squares: np.ndarray, live: np.ndarray | None) -> State:
    """`roll` of (B,) int64 `squares` in the games where `live` (every game if None)."""
    out_of_range = _outside_board(squares)
    if live is not None:
        out_of_range &= live
    if out_of_range.any():
        game = _first_bad(out_of_range)
        raise ValueError(f"game {game}: rolled square {int(squares[game])} is not in 0..35")
    rolled_twice = state.legal != 0
    if live is not None:
        rolled_twice &= live
    if rolled_twice.any():
        raise ValueError(f"game {_first_bad(rolled_twice)}: rolled again before placing")
    rows = _few(live)
    if rows is not None:
        return _on_rows(state, rows, lambda part: _roll(part, squares[rows], None))
    rolled = BIT_ARRAY.take(squares, mode="clip")
    opp, reserve_opp, captured, legal, hit = rules.roll(state.me, state.opp, state.reserve_opp, rolled)
    new = _with(state, opp=opp, reserve_opp=reserve_opp, rolled=squares, hit=hit, captured=captured, legal=legal)
    return new if live is None else _keep_finished(live, new, state)


def place(state: State, actions, config: Config, active=None) -> State:
    """Each live game (and, if given, where `active`) puts a checker on its action square,
    then the turn passes.

    `actions`: (B,) square indices; entries of other games are ignored.
    Raises `IllegalActionError` naming the first game whose action is
    not a legal placement; the state is not changed.
    """
    actions = as_squares(actions, state.batch_size, "actions")
    return _place(state, actions, config, _playing(state, active))


def _place(state: State, actions: np.ndarray, config: Config, live: np.ndarray | None) -> State:
    """`place` of (B,) int64 `actions` in the games where `live` (every game if None)."""
    placed = BIT_ARRAY.take(actions, mode="clip")
    illegal = (placed & state.legal) == 0
    illegal |= _outside_board(actions)
    if live is not None:
        illegal &= live
    if illegal.any():
        raise _illegal(state, actions, _first_bad(illegal))
    rows = _few(live)
    if rows is not None:
        return _on_rows(state, rows, lambda part: _place(part, actions[rows], config, None))
    after = rules.place(rules.place_reads(state), placed, config.ply_limit)
    new = _with(state, **dict(zip(rules.PLACED_FIELDS, after, strict=True)))
    return new if live is None else _keep_finished(live, new, state)


def illegal_actions(state: State, actions, active=None) -> np.ndarray:
    """(B,) bool: live (and `active`) games whose action is not a legal placement now."""
    actions = as_squares(actions, state.batch_size, "actions")
    placed = BIT_ARRAY.take(actions, mode="clip")
    bad = _outside_board(actions) | ((placed & state.legal) == 0)
    live = _playing(state, active)
    return bad if live is None else bad & live


def forfeit(state: State, mask) -> State:
    """The player to move loses the live games where `mask` (for envs that punish illegal moves;
    not a rule of the game). No checker moves; the other player is recorded as the winner."""
    mask = _playing(state, mask)
    if mask is None:  # every game is live and selected
        mask = np.ones(state.batch_size, dtype=bool)
    return replace(state, winner=np.where(mask, state.to_move ^ 1, state.winner), legal=np.where(mask, 0, state.legal))


def _illegal(state: State, actions: np.ndarray, game: int) -> IllegalActionError:
    """The error for game `game`'s action, saying what was wrong."""
    action = int(actions[game])
    if not 0 <= action < NUM_SQUARES:
        return IllegalActionError(f"game {game}: action {action} is not a square index 0..35")
    legal = int(state.legal[game])
    if legal == 0:
        return IllegalActionError(f"game {game}: no placement is due (roll first)")
    return IllegalActionError(
        f"game {game}: {square_name(action)} (action {action}) is not a legal placement; legal: {names_of(legal)}"
    )


def _with(state: State, **changes: np.ndarray) -> State:
    """`state` with some fields replaced: `dataclasses.replace` without its per-call
    inspection of the fields (this runs twice a ply)."""
    return State(**{**vars(state), **changes})


#: a roll or placement in at most 1/SPARSE of the batch's games works on those games alone and writes
#: them back (the others' captures are not resolved only to be thrown away)
SPARSE = 4


def _few(live: np.ndarray | None) -> np.ndarray | None:
    """(k,) indices of the games of `live` when they are few enough to work on alone, else None."""
    if live is None:
        return None
    rows = np.flatnonzero(live)
    return rows if SPARSE * len(rows) <= len(live) else None


def _on_rows(state: State, rows: np.ndarray, change) -> State:
    """`state` with the games `rows` ((k,) indices) replaced by `change` of them (a batch of k);
    a field `change` left alone stays shared."""
    part = state[rows]
    changed = change(part)
    values = {}
    for f in fields(State):
        column, new = getattr(state, f.name), getattr(changed, f.name)
        if new is not getattr(part, f.name):
            column = column.copy()
            column[rows] = new
        values[f.name] = column
    return State(**values)


def _keep_finished(live: np.ndarray, new: State, old: State) -> State:
    """`new` for the games in `live`, `old` for the others (fields `new` did not touch are shared)."""
    values = {}
    for f in fields(State):
        new_value, old_value = getattr(new, f.name), getattr(old, f.name)
        values[f.name] = new_value if new_value is old_value else _select(live, new_value, old_value)
    return State(**values)


@dataclass(frozen=True)
class Outcome:
    """What `step` reports about the games that ended in it (valid where `ended`)."""

    ended: np.ndarray  # (B,) bool: the game ended with this step's placement
    winner: np.ndarray  # (B,) int64 RED, BLUE or NO_PLAYER (truncated)
    plies: np.ndarray  # (B,) int64 length of the game that ended
    truncated: np.ndarray  # (B,) bool: ended at the ply limit


def step(state: State, actions, squares, config: Config, autoreset: bool = True) -> tuple[State, Outcome]:
    """Place `actions`, restart finished games if `autoreset`, then roll `squares`.

    Returns the new state (awaiting the next placement in every live game)
    and the `Outcome` of the games that ended with this placement.
    """
    actions = as_squares(actions, state.batch_size, "actions")
    live = _playing(state, None)
    placed = _place(state, actions, config, live)
    squares = as_squares(squares, state.batch_size, "squares")
    done = placed.done
    ended = done if live is None else done & live
    outcome = Outcome(ended=ended, winner=placed.winner, plies=placed.ply, truncated=placed.truncated)
    if autoreset:
        return _roll(reset(placed, done, config), squares, None), outcome  # every game is live again
    return _roll(placed, squares, _playing(placed, None)), outcome


__all__ = [
    "BLUE",
    "IllegalActionError",
    "Outcome",
    "RED",
    "State",
    "concatenate",
    "draw_rolls",
    "forfeit",
    "illegal_actions",
    "init",
    "place",
    "reset",
    "roll",
    "step",
]
