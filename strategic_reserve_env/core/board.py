"""Board geometry, notation and the bitboard layout.

Squares are numbered as in docs/RULES.md: `index = (rank - 1) * 6 + file_index`
(`a1` = 0, `f1` = 5, `f6` = 35). Actions use these indices.

Bitboards pack one colour's checkers into an integer. Each rank takes
`STRIDE = 7` bits: six for the files and one *guard bit* that is always
zero, so that shifting by one or adding a carry can never spill from one rank
into the next. Square `s` lives at bit `s + s // 6`; the highest used bit
is 40, so a bitboard fits a signed int64 with room to spare. The same value is
either a Python `int` (one game) or an `np.int64` array (a batch), and the
rule functions in `strategic_reserve_env.core.rules` work on both.
"""

from __future__ import annotations

import reprlib

import numpy as np

BOARD_SIZE = 6  # files and ranks
NUM_SQUARES = BOARD_SIZE * BOARD_SIZE
STRIDE = BOARD_SIZE + 1  # bits per rank: six squares and one guard bit
BITBOARD_BYTES = (BOARD_SIZE * STRIDE + 7) // 8  # low bytes of a bitboard that hold squares (6)
FILES = "abcdef"
COLOURS = ("red", "blue")
RED, BLUE = 0, 1
NO_PLAYER = -1
BOARD_CHARS = {".": 0, "R": 1, "B": 2}  # board-string characters -> (B, 36) view values

SQUARE_NAMES = tuple(f"{FILES[s % BOARD_SIZE]}{s // BOARD_SIZE + 1}" for s in range(NUM_SQUARES))
SQUARE_INDEX = {name: s for s, name in enumerate(SQUARE_NAMES)}

BIT_POSITION = tuple(s + s // BOARD_SIZE for s in range(NUM_SQUARES))
BIT = tuple(1 << p for p in BIT_POSITION)  # square index -> bitboard with that square
FULL = sum(BIT)  # every square of the board
BIT_ARRAY = np.array(BIT, dtype=np.int64)  # (36,) int64, BIT as an array
BIT_POSITION_ARRAY = np.array(BIT_POSITION, dtype=np.int64)  # (36,) int64

#: the standard start: the outline of the central 4x4 square in alternating colours
STANDARD_BOARD = ".......RBRB..B..R..R..B..BRBR......."
DEFAULT_RESERVE = 7


ECHO_LIMIT = 40  # characters of an input value an error message echoes
MESSAGE_LIMIT = 200  # characters of a message from user code (an agent's exception) an error message repeats


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """`text` cut to `limit` characters, ending in `...` when it was cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


_ECHO = reprlib.Repr()  # repr bounded in depth and length: a huge or deeply nested input is not expanded
_ECHO.maxlevel = 3
_ECHO.maxstring = _ECHO.maxlong = _ECHO.maxother = ECHO_LIMIT


def brief(value: object, limit: int = ECHO_LIMIT) -> str:
    """`repr(value)` cut to `limit` characters, for echoing untrusted input in an error message."""
    try:
        return clip(_ECHO.repr(value), limit)
    except Exception:  # e.g. an int past Python's 4300-digit conversion limit
        return f"<{type(value).__name__}>"


def is_integer(value: object) -> bool:
    """Whether `value` is an integer: a Python int or a numpy integer (a bool is not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def checked_int(what: str, value: object, low: int, high: int | None = None) -> int:
    """`value` as an int if it is an integer (`is_integer`) in `low..high` (no upper bound when `high` is None);
    `ValueError` naming `what` and the range. The one integer check of the settings, the envs and the agents'
    options."""
    span = f"in {low}..{high}" if high is not None else ("positive" if low == 1 else f">= {low}")
    kind = f"a {span} integer" if span == "positive" else f"an integer {span}"
    if not is_integer(value):
        raise ValueError(f"{what} must be {kind}, got {brief(value)}")
    number = int(value)  # type: ignore[call-overload]
    if number < low or (high is not None and number > high):
        raise ValueError(f"{what} must be {kind if high is None else span}, got {brief(value)}")
    return number


def is_square_index(value: object) -> bool:
    """Whether `value` is a square index: an integer (`is_integer`) in 0..35. The one check of a single square
    (an action, a forced roll) for every env and the dice."""
    return is_integer(value) and 0 <= value < NUM_SQUARES  # type: ignore[operator]


def square_name(square: int) -> str:
    """Name of a square index, e.g. `0 -> 'a1'`."""
    return SQUARE_NAMES[square]


def parse_square(name: object) -> int:
    """Index of a square name such as `'c4'`; `ValueError` if it is not one."""
    if not isinstance(name, str) or name not in SQUARE_INDEX:
        raise ValueError(f"{brief(name)} is not a square (a1 .. f6)")
    return SQUARE_INDEX[name]


def bit_to_square(position):
    """Square index of a bit position (inverse of `BIT_POSITION`); ints or arrays."""
    return position - position // STRIDE


_SQUARE_AT = {1 << p: s for s, p in enumerate(BIT_POSITION)}  # one-bit bitboard -> square index


def squares_of(bits: int) -> list[int]:
    """Square indices set in one bitboard (a Python int), in index order."""
    squares = []
    while bits:
        lowest = bits & -bits
        squares.append(_SQUARE_AT[lowest])
        bits ^= lowest
    return squares


def names_of(bits: int) -> str:
    """The squares of a bitboard as text in index order, e.g. `'e4, d5, f5'`."""
    return ", ".join(SQUARE_NAMES[s] for s in squares_of(bits))


def bits_of(squares) -> int:
    """Bitboard (a Python int) with the given square indices set."""
    total = 0
    for s in squares:
        total |= BIT[s]
    return total


def square_mask(bits: int) -> np.ndarray:
    """One bitboard (a Python int) -> a fresh `(36,) bool` square mask."""
    return (bits & BIT_ARRAY) != 0


def bitboards_to_array(bits: np.ndarray) -> np.ndarray:
    """`(B,) int64` bitboards -> `(B, 36) bool` square masks."""
    by = np.ascontiguousarray(bits, dtype=np.int64).view(np.uint8).reshape(-1, 8)[:, :BITBOARD_BYTES]
    unpacked = np.unpackbits(by, axis=1, bitorder="little")[:, : BOARD_SIZE * STRIDE]  # bit positions
    return unpacked.reshape(-1, BOARD_SIZE, STRIDE)[:, :, :BOARD_SIZE].reshape(-1, NUM_SQUARES).view(bool)


def array_to_bitboards(mask: np.ndarray) -> np.ndarray:
    """`(B, 36)` truthy square masks -> `(B,) int64` bitboards."""
    return (np.asarray(mask, dtype=bool).astype(np.int64) << BIT_POSITION_ARRAY).sum(axis=1)


def parse_board(board: object) -> tuple[int, int]:
    """Board string (36 of `R`, `B`, `.`) -> (red, blue) bitboards; `ValueError` if malformed."""
    if not isinstance(board, str):
        raise ValueError(f"board must be a string of {NUM_SQUARES} characters, got {type(board).__name__}")
    if len(board) != NUM_SQUARES:
        raise ValueError(f"board must have {NUM_SQUARES} characters, got {len(board)}")
    bad = sorted({c for c in board if c not in BOARD_CHARS})
    if bad:
        raise ValueError(f"board may only hold 'R', 'B' and '.', got {''.join(bad)!r}")
    red = bits_of(s for s, c in enumerate(board) if c == "R")
    blue = bits_of(s for s, c in enumerate(board) if c == "B")
    return red, blue


def board_string(red: int, blue: int) -> str:
    """(red, blue) bitboards (Python ints) -> 36-character board string."""
    return "".join("R" if red & b else "B" if blue & b else "." for b in BIT)


def dice_for(square, mover):
    """(purple, green) dice that roll `square` from the mover's seat (docs/RULES.md, A turn, 1).

    Ints, or arrays (`square` and `mover` broadcast together; two arrays are
    returned). Blue sits opposite Red, so Blue reads the board turned half round:
    square `s` is square `35 - s` from Blue's seat.
    """
    seat_square = square + mover * (NUM_SQUARES - 1 - 2 * square)  # mover is RED = 0 or BLUE = 1
    return seat_square % BOARD_SIZE + 1, seat_square // BOARD_SIZE + 1


def square_for_dice(purple: int, green: int, mover: int) -> int:
    """Square rolled by (purple, green) from the mover's seat; inverse of `dice_for`."""
    if not (1 <= purple <= BOARD_SIZE and 1 <= green <= BOARD_SIZE):
        raise ValueError(f"dice must be 1..{BOARD_SIZE}, got ({purple}, {green})")
    if mover == RED:
        return (green - 1) * BOARD_SIZE + purple - 1
    return (BOARD_SIZE - green) * BOARD_SIZE + BOARD_SIZE - purple
