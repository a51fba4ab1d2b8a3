"""Fixed settings of a game: kept apart from the state, which changes every ply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .board import (
    BLUE,
    COLOURS,
    DEFAULT_RESERVE,
    NUM_SQUARES,
    RED,
    STANDARD_BOARD,
    brief,
    checked_int,
    clip,
    parse_board,
)

MIN_RESERVE, MAX_RESERVE = 1, 12  # the variant's reserve size (docs/RULES.md: 7, or 6 on Board Game Arena)
MAX_START_RESERVE = NUM_SQUARES  # a custom start may hold more in reserve than the variant (reading)
MAX_PLY_LIMIT = 2**31 - 1  # ply counters are int32
DEFAULT_PLY_LIMIT = 1000  # plies after which an unfinished game is truncated, unless set


@dataclass(frozen=True)
class StartPosition:
    """A position to start games from.

    `board` is a 36-character board string (`R`, `B`, `.`; at least one
    empty square), `reserves` the (red, blue) checkers off the board
    (1..36 each: 0 would mean the game is already won), `to_move` `"red"`
    or `"blue"`.
    """

    board: str = STANDARD_BOARD
    reserves: tuple[int, int] = (DEFAULT_RESERVE, DEFAULT_RESERVE)
    to_move: str = "red"

    def __post_init__(self) -> None:
        try:
            red, blue = parse_board(self.board)
        except ValueError as error:
            raise ValueError(f"start.board: {error}") from None
        if (red | blue).bit_count() == NUM_SQUARES:
            raise ValueError("start.board needs at least one empty square")
        if not isinstance(self.reserves, (tuple, list)) or len(self.reserves) != 2:
            raise ValueError(f"start.reserves must be a (red, blue) pair, got {brief(self.reserves)}")
        object.__setattr__(self, "reserves", tuple(self.reserves))
        checked = [
            checked_int(f"start.reserves.{colour}", value, 1, MAX_START_RESERVE)
            for colour, value in zip(COLOURS, self.reserves, strict=True)
        ]
        object.__setattr__(self, "reserves", tuple(checked))
        if self.to_move not in COLOURS:
            raise ValueError(f"start.to_move must be 'red' or 'blue', got {brief(self.to_move)}")

    @property
    def mover(self) -> int:
        """`RED` or `BLUE`."""
        return RED if self.to_move == "red" else BLUE

    @property
    def bitboards(self) -> tuple[int, int]:
        """(red, blue) bitboards of the start board."""
        return parse_board(self.board)


@dataclass(frozen=True)
class Config:
    """Settings of a game.

    `reserve`: checkers each player starts with off the board (1..12,
    default 7). `ply_limit`: plies after which an unfinished game is
    truncated (1..2**31-1, default 1000; not a rule of the game: records replay
    without one, see docs/RULES.md).
    `start`: a custom start position; `None` means the standard setup with
    `reserve` checkers each and Red to move.
    """

    reserve: int = DEFAULT_RESERVE
    ply_limit: int = DEFAULT_PLY_LIMIT
    start: StartPosition | None = field(default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reserve", checked_int("reserve", self.reserve, MIN_RESERVE, MAX_RESERVE))
        object.__setattr__(self, "ply_limit", checked_int("ply_limit", self.ply_limit, 1, MAX_PLY_LIMIT))
        if self.start is not None and not isinstance(self.start, StartPosition):
            raise ValueError(f"start must be a StartPosition or None, got {type(self.start).__name__}")

    @property
    def start_position(self) -> StartPosition:
        """The position games start from (the standard setup unless `start` is set)."""
        if self.start is not None:
            return self.start
        return StartPosition(STANDARD_BOARD, (self.reserve, self.reserve), "red")


START_FIELDS = ("board", "reserves", "to_move")


def start_position(start: StartPosition | Mapping | None, reserve: int) -> StartPosition | None:
    """`start` as a `StartPosition` (None stays None, a StartPosition is returned as it is).

    A mapping may hold the fields `board`, `reserves` ((red, blue)) and
    `to_move`; absent ones are the standard board, `(reserve, reserve)`
    (the variant's reserve: docs/RULES.md, "Reserves at the start") and Red.
    `ValueError` for unknown fields or anything else.
    """
    if start is None or isinstance(start, StartPosition):
        return start
    if not isinstance(start, Mapping):
        raise ValueError(f"start must be a StartPosition, a mapping of its fields or None, got {type(start).__name__}")
    unknown = sorted(set(start) - set(START_FIELDS), key=str)
    if unknown:
        raise ValueError(f"unknown start field(s): {', '.join(clip(str(key)) for key in unknown)}")
    return StartPosition(
        board=start.get("board", STANDARD_BOARD),
        reserves=start.get("reserves", (reserve, reserve)),
        to_move=start.get("to_move", "red"),
    )


def make_config(
    reserve: int = DEFAULT_RESERVE, ply_limit: int = DEFAULT_PLY_LIMIT, start: StartPosition | Mapping | None = None
) -> Config:
    """A Config from the envs' keyword arguments (`start` may be a plain dict: `start_position`,
    its reserves `(reserve, reserve)` unless given); every env adapter and command line builds its Config here."""
    return Config(reserve=reserve, ply_limit=ply_limit, start=start_position(start, reserve))
