"""What a picture of a position shows, as plain data: the one place that decides it.

`scene_of` reads a `Game` (never changing it) and returns a
`Scene`: each square's content and marks, the two reserve panels, the labels and the caption lines.
The drawing backends only map a scene to their medium: ANSI text, RGB pixels and SVG in
`strategic_reserve_env.pictures.render`, matplotlib artists in `strategic_reserve_env.pictures.plotting`.
All of them use the colours of `PALETTE`.

Layout, shared by every backend: column 0..5 holds files a..f from left to right; row 0 is rank 6 (Blue's
side) at the top and row 5 is rank 1 (Red's near row) at the bottom; Blue's reserve panel is at the top,
Red's at the bottom.

Drawing imports the game, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

import numpy as np

from strategic_reserve_env.core.board import (
    BIT,
    BLUE,
    BOARD_SIZE,
    COLOURS,
    FILES,
    NO_PLAYER,
    NUM_SQUARES,
    RED,
    names_of,
    square_name,
)
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.rules import HIT_NAMES

RGB = tuple[int, int, int]  # 0..255 each

#: the colours of every picture, 0..255 RGB by role
PALETTE: Final[Mapping[str, RGB]] = MappingProxyType(
    {
        "background": (236, 226, 204),
        "light": (222, 196, 150),  # light squares
        "dark": (196, 164, 112),  # dark squares
        "red": (200, 40, 40),  # Red's checkers and reserve
        "blue": (40, 80, 200),  # Blue's checkers and reserve
        "rolled": (250, 210, 0),  # the frame of the rolled square
        "legal": (30, 150, 60),  # the dot of a legal placement
        "halo": (255, 255, 255),  # the rim of a legal dot, inside an ink outline: visible on any colour (heatmaps)
        "captured": (90, 90, 90),  # the ring of a square captured by the latest roll
        "ink": (40, 30, 20),  # labels and numbers
        "heat": (230, 60, 30),  # a heat value's shade in SVG (its opacity grows with the value)
    }
)

Content = Literal["red", "blue", "empty"]
Mark = Literal["legal", "rolled", "captured", "reserve"]

#: what each mark of a board picture means, in the order a legend lists them
MEANINGS: Final[Mapping[Mark, str]] = MappingProxyType(
    {
        "legal": "legal square",  # a dot: the mover may place here now
        "rolled": "rolled square",  # a frame: the square the latest roll picked
        "captured": "captured checker",  # a ring: the latest roll captured the checker that stood here
        "reserve": "checkers in reserve",  # a disc and a count beside the board: a player's checkers off it
    }
)


@dataclass(frozen=True, slots=True)
class Key:
    """One entry of a picture's legend: a mark (drawn as the board draws it) and what it means."""

    mark: Mark
    text: str


@dataclass(frozen=True, slots=True)
class Square:
    """One square of a scene: what it holds and which marks it carries."""

    index: int  # 0..35, a1 = 0, b1 = 1, ..., f6 = 35
    name: str  # e.g. "e5"
    row: int  # 0 (rank 6, top) .. 5 (rank 1, bottom)
    column: int  # 0 (file a, left) .. 5 (file f, right)
    shade: Literal["light", "dark"]  # the square's colour in PALETTE
    content: Content  # the checker on it, or "empty"
    rolled: bool  # the latest roll landed here
    captured: bool  # the latest roll captured a checker here and the square is still empty
    legal: bool  # a legal placement now, when the scene shows them (always an empty square)
    heat: float  # the heat value given for this square; NaN when none (the square is drawn plain)

    @property
    def marks(self) -> tuple[str, ...]:
        """The marks drawn on the square, in drawing order (of `MEANINGS`' names): captured, legal, rolled."""
        return ("captured",) * self.captured + ("legal",) * self.legal + ("rolled",) * self.rolled


@dataclass(frozen=True, slots=True)
class Reserve:
    """One reserve panel: a player's checkers off the board."""

    player: Literal["red", "blue"]  # the player (also its colour in PALETTE)
    count: int  # checkers in the reserve
    to_move: bool  # this player is to move (False for both once the game is over)


@dataclass(frozen=True, slots=True)
class Scene:
    """A position as a picture shows it; see the module's docstring for the layout."""

    squares: tuple[Square, ...]  # 36 squares in index order (a1, b1, ..., f6)
    reserves: tuple[Reserve, Reserve]  # top to bottom: Blue's panel, then Red's
    files: tuple[str, ...]  # column labels, left to right ("a" .. "f")
    ranks: tuple[str, ...]  # row labels, top to bottom ("6" .. "1")
    status: str  # whose turn it is or how the game ended (see status())
    roll: str  # the latest roll (see roll_summary())
    legal_names: str  # the legal placements named in index order ("e4, d5"), "" when none is due or shown
    legend: tuple[
        Key, ...
    ]  # what the marks mean: every mark of MEANINGS, less "legal" when legal squares are not shown

    @property
    def caption(self) -> str:
        """The status and the latest roll in one line."""
        return f"{self.status} {self.roll}"

    def rows(self) -> tuple[tuple[Square, ...], ...]:
        """The squares as rows, top (rank 6) to bottom (rank 1), each from file a to f."""
        grid: list[list[Square]] = [[] for _ in range(BOARD_SIZE)]
        for square in self.squares:
            grid[square.row].append(square)
        return tuple(tuple(row) for row in grid)


def roll_summary(game: Game) -> str:
    """One line about the latest roll, e.g. `Red rolled e5 (dice 5, 5): friendly hit, captured d5, e4`."""
    if game.rolled < 0:
        return "No roll yet."
    player = game.roller
    purple, green = game.dice
    captured = names_of(game.captured) or "nothing"
    return (
        f"{COLOURS[player].capitalize()} rolled {square_name(game.rolled)} (dice {purple}, {green}): "
        f"{HIT_NAMES[game.hit]} hit, captured {captured}."
    )


def ply_number(game: Game) -> int:
    """The number of the ply under way or just ended, as docs/RULES.md numbers plies (ply k: the game's k-th
    roll and its placement, from 1): `game.ply` (plies completed) once the game is over, otherwise the
    ply whose roll is waiting for its placement (or comes next), `game.ply + 1`."""
    return game.ply if game.done else game.ply + 1


def status(game: Game) -> str:
    """Whose turn it is, or how the game ended, with the ply's number (`ply_number`)."""
    if game.winner >= 0:
        return f"{COLOURS[game.winner].capitalize()} won at ply {game.ply}."
    if game.truncated:
        return f"Truncated at the ply limit ({game.ply} plies)."
    return f"Ply {ply_number(game)}, {COLOURS[game.to_move].capitalize()} to move."


def _heat_values(heat: object) -> np.ndarray:
    """`heat` as a (36,) float64 array; `ValueError` naming the shape unless it holds 36 numbers."""
    try:
        values = np.asarray(heat, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"heat must be 36 numbers (one per square), got {type(heat).__name__}") from error
    if values.size != NUM_SQUARES:
        raise ValueError(f"heat must be 36 numbers (one per square), got shape {values.shape}")
    return values.reshape(NUM_SQUARES)


def scene_of(game: Game, heat: object = None, legal: bool = True) -> Scene:
    """The scene of `game`. `heat`: None, or 36 numbers in square index order (any shape; NaN leaves a
    square plain) carried to each square's `heat`; `legal=False` leaves the legal placements unmarked."""
    values = np.full(NUM_SQUARES, np.nan) if heat is None else _heat_values(heat)
    red, blue = game.red, game.blue
    shown_legal = game.legal if legal else 0
    squares = []
    for index in range(NUM_SQUARES):
        rank_index, file_index = divmod(index, BOARD_SIZE)
        bit = BIT[index]
        content: Content = "red" if red & bit else "blue" if blue & bit else "empty"
        squares.append(
            Square(
                index=index,
                name=square_name(index),
                row=BOARD_SIZE - 1 - rank_index,
                column=file_index,
                shade="light" if (rank_index + file_index) % 2 else "dark",
                content=content,
                rolled=index == game.rolled,
                captured=content == "empty" and bool(game.captured & bit),
                legal=bool(shown_legal & bit),
                heat=float(values[index]),
            )
        )
    counts = game.reserves
    mover = NO_PLAYER if game.done else game.to_move
    return Scene(
        squares=tuple(squares),
        reserves=(
            Reserve("blue", counts[BLUE], mover == BLUE),
            Reserve("red", counts[RED], mover == RED),
        ),
        files=tuple(FILES),
        ranks=tuple(str(rank) for rank in range(BOARD_SIZE, 0, -1)),
        status=status(game),
        roll=roll_summary(game),
        legal_names=names_of(shown_legal),
        legend=tuple(Key(mark, text) for mark, text in MEANINGS.items() if legal or mark != "legal"),
    )


__all__ = [
    "MEANINGS",
    "PALETTE",
    "Key",
    "Reserve",
    "Scene",
    "Square",
    "ply_number",
    "roll_summary",
    "scene_of",
    "status",
]
