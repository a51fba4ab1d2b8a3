"""One game on Python ints: the fast path for single games (environments, search, replay).

`Game` keeps the same fields as `strategic_reserve_env.core.engine.State`
with B = 1, as plain ints, and calls the same rule functions
(`strategic_reserve_env.core.rules`), which run several times faster on ints
than on one-element arrays.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from . import engine, rules
from .board import (
    BIT,
    COLOURS,
    NO_PLAYER,
    RED,
    board_string,
    dice_for,
    is_square_index,
    names_of,
    square_name,
    squares_of,
)
from .config import Config, StartPosition

_FIELDS = tuple(f.name for f in fields(engine.State))  # the State fields a Game holds, in order
_BIT_OF = dict(enumerate(BIT))  # square index -> its bitboard (no entry: not a square)


class Game:
    """A single game of Strategic Reserve, mutable, with explicit chance.

    Call `roll` with the rolled square, then `place` with the
    chosen square, until `done`. Fields mean what they mean in
    `State` (bitboards are ints);
    `history` lists the (rolled, placed) squares since the last reset or
    `load` (`strategic_reserve_env.files.records.record_of` turns it
    into a record, starting from `history_start`).
    """

    __slots__ = ("config", "history", "_start", "_origin") + _FIELDS

    # the slots' types (declarations only; load() and reset() set them)
    config: Config
    history: list[tuple[int, int]]  # (rolled, placed) squares
    _start: tuple[int | bool, ...]  # the _FIELDS values of the configured start
    _origin: tuple[int | bool, ...]  # the _FIELDS values where ``history`` begins
    # _FIELDS: one game of engine.State (see its field comments) as Python ints, truncated a bool;
    # declared for the type checker (tests check they are State's fields, in order)
    me: int
    opp: int
    reserve_me: int
    reserve_opp: int
    to_move: int
    ply: int
    winner: int
    truncated: bool
    rolled: int
    hit: int
    captured: int
    legal: int

    def __init__(self, config: Config | None = None) -> None:
        self.config = config if config is not None else Config()
        self.load(engine.init(self.config, 1), 0)
        self._start = self._origin  # the configured start: reset() returns to it

    def reset(self) -> None:
        """Back to the start position, before the first roll."""
        for name, value in zip(_FIELDS, self._start, strict=True):
            setattr(self, name, value)
        self.history = []
        self._origin = self._start

    # -- conversion to and from the batched engine ---------------------------------
    @classmethod
    def of(cls, state: engine.State, index: int, config: Config) -> Game:
        """Game `index` of a batched state played under `config`, without building the configured start
        (the single-game path of a batch of one): `reset` returns to the loaded position."""
        game = cls.__new__(cls)
        game.config = config
        game.load(state, index)
        game._start = game._origin
        return game

    def load(self, state: engine.State, index: int) -> None:
        """Copy game `index` of a batched state into this game (its history starts empty)."""
        self.history = []
        for name in _FIELDS:  # .item: a Python int (truncated a bool)
            setattr(self, name, getattr(state, name).item(index))
        self._origin = tuple(getattr(self, name) for name in _FIELDS)  # where the history begins

    def to_state(self) -> engine.State:
        """This game as a batched state with B = 1."""
        row = np.array([getattr(self, name) for name in _FIELDS], dtype=np.int64)  # one array, a field a slice
        values = {name: row[i : i + 1] for i, name in enumerate(_FIELDS)}
        values["truncated"] = np.array([self.truncated], dtype=bool)
        return engine.State(**values)

    def copy(self) -> Game:
        """An independent copy."""
        other = Game.__new__(Game)
        other.restore(self)
        return other

    def restore(self, other: Game) -> None:
        """Become an independent copy of `other` (e.g. a copy taken before a step that must be undone)."""
        self.config = other.config
        self._start = other._start
        self._origin = other._origin
        self.history = list(other.history)
        for name in _FIELDS:
            setattr(self, name, getattr(other, name))

    def history_start(self) -> StartPosition | None:
        """The position `history` begins at: None for the configured start (after construction or
        `reset`), else the position `load` copied in. `ValueError` when that position
        cannot begin a record: it was loaded after its roll, or with a reserve already empty (won)."""
        if self._origin is self._start:
            return None
        origin = Game.__new__(Game)  # the loaded position, for its readable views
        for name, value in zip(_FIELDS, self._origin, strict=True):
            setattr(origin, name, value)
        if origin.legal:
            raise ValueError("the game was loaded after its roll: a record cannot start between roll and placement")
        if not all(origin.reserves):
            raise ValueError("the game was loaded after it was won: a record cannot start there")
        return StartPosition(origin.board_string(), origin.reserves, COLOURS[origin.to_move])

    # -- the two halves of a ply ---------------------------------------------------
    @property
    def done(self) -> bool:
        """The game is over (won or truncated)."""
        return self.winner != NO_PLAYER or self.truncated

    def roll(self, square: int) -> None:
        """Resolve the roll on `square` (0..35): captures, then the legal placements."""
        if self.done:
            raise ValueError("the game is over; reset it first")
        if self.legal:
            raise ValueError("rolled again before placing")
        bit = _BIT_OF.get(square, 0) if type(square) is int else 0  # a square index as an int: its bit
        if not bit:  # anything else: a numpy integer square, or no square at all
            if not is_square_index(square):
                raise ValueError(f"rolled square {square!r} is not in 0..35")
            square, bit = int(square), BIT[square]
        self.opp, self.reserve_opp, self.captured, self.legal, self.hit = rules.roll(
            self.me, self.opp, self.reserve_opp, bit
        )
        self.rolled = square

    def place(self, square: int) -> None:
        """Put a checker on `square`; `IllegalActionError` if that is not legal now.

        A legal placement is told by one test: `legal` holds the square only while a placement is due,
        which is never once the game is over; every other case goes on to the checks that say why not."""
        if type(square) is int and self.legal & _BIT_OF.get(square, 0):
            self._place(square)
            return
        if self.done:
            raise engine.IllegalActionError("the game is over; reset it first")
        if not self.legal:
            raise engine.IllegalActionError("no placement is due (roll first)")
        if not is_square_index(square) or not self.legal & BIT[square]:
            shown = square_name(int(square)) if is_square_index(square) else repr(square)
            raise engine.IllegalActionError(f"{shown} is not a legal placement; legal: {names_of(self.legal)}")
        self._place(int(square))  # a numpy integer too: the history holds ints

    def _place(self, square: int) -> None:
        """`place` of a legal `square` (an int), checked by the caller."""
        (
            self.me,
            self.opp,
            self.reserve_me,
            self.reserve_opp,
            self.to_move,
            self.ply,
            self.winner,
            self.truncated,
            self.legal,
        ) = rules.place(rules.place_reads(self), BIT[square], self.config.ply_limit)
        self.history.append((self.rolled, square))

    def forfeit(self) -> None:
        """The player to move loses (the envs' penalty for an illegal move; not a rule of the game): no
        checker moves, the other player is the winner (`engine.forfeit` of one game)."""
        if self.done:
            raise engine.IllegalActionError("the game is over; reset it first")
        self.winner, self.legal = self.to_move ^ 1, 0

    # -- readable views --------------------------------------------------------------
    @property
    def red(self) -> int:
        """Bitboard of Red's checkers."""
        return rules.from_side(self.me, self.opp, self.to_move, RED)[0]

    @property
    def blue(self) -> int:
        """Bitboard of Blue's checkers."""
        return rules.from_side(self.me, self.opp, self.to_move, RED)[1]

    @property
    def reserves(self) -> tuple[int, int]:
        """(red, blue) checkers off the board."""
        return rules.from_side(self.reserve_me, self.reserve_opp, self.to_move, RED)

    @property
    def roller(self) -> int:
        """The colour that made the latest roll (the mover while a placement is due): `rules.roller`."""
        return rules.roller(self.legal, self.to_move)

    @property
    def dice(self) -> tuple[int, int]:
        """(purple, green) of the latest roll from the roller's seat (`board.dice_for`);
        (0, 0) before any roll."""
        if self.rolled < 0:
            return 0, 0
        return dice_for(self.rolled, self.roller)

    def board_string(self) -> str:
        """The board as a 36-character string."""
        return board_string(self.red, self.blue)

    def legal_squares(self) -> list[int]:
        """Legal placements in index order (empty when no placement is due)."""
        return squares_of(self.legal)

    def __repr__(self) -> str:
        return (
            f"Game(board={self.board_string()!r}, reserves={self.reserves}, to_move={self.to_move}, "
            f"ply={self.ply}, winner={self.winner}, legal={self.legal_squares()})"
        )


__all__ = ["Game"]
