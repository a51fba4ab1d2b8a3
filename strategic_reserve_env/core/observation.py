"""Observation planes, from one player's side, for one game or a batch.

`(6, 6, NUM_PLANES)` int8 of 0/1, channels last, `[rank_index, file_index]`
in absolute coordinates (row 0 is rank 1, Red's near row; column 0 is file
a), so plane cell `(r, f)` is square `6 * r + f`, the action index.

| plane | content |
| --- | --- |
| 0 | the observer's checkers |
| 1 | the opponent's checkers |
| 2 | legal placements (equal to the action mask; zeros when not to move) |
| 3 | the square of the latest roll |
| 4 | squares the latest roll emptied (captured checkers) |
| 5 | all ones if the latest roll was an enemy hit (for the player who rolled) |
| 6 | all ones if it was a friendly hit |
| 7 | the observer's reserve as a count: its first `min(reserve, 36)` squares in index order (a1, b1, ..., f6) are 1 |
| 8 | the opponent's reserve, the same way |

With the mask this is a complete description of the decision: the position
after the roll's captures, both reserves (exact up to 36, far above what a
game from the standard start can reach) and the legal squares. Colour is
not encoded because the rules treat both colours alike.

Every plane is a bitboard, so one unpack of bytes produces the channels-last
array directly, for one game or for B games.
"""

from __future__ import annotations

import struct
import threading

import numpy as np

from .board import BIT_POSITION, BITBOARD_BYTES, BOARD_SIZE, FULL, NUM_SQUARES, STRIDE, bits_of
from .rules import HIT_ENEMY, HIT_FRIENDLY, from_side

NUM_PLANES = 9
PLANE_NAMES = (
    "own",
    "opponent",
    "legal",
    "rolled",
    "captured",
    "enemy_hit",
    "friendly_hit",
    "own_reserve",
    "opponent_reserve",
)
OBSERVATION_SHAPE = (BOARD_SIZE, BOARD_SIZE, NUM_PLANES)
LEGAL_PLANE = PLANE_NAMES.index("legal")
#: _COUNT_BITS[n]: bitboard of the first n squares (index order), n = 0..36
_COUNT_BITS_LIST = [bits_of(range(n)) for n in range(NUM_SQUARES + 1)]
_COUNT_BITS = np.array(_COUNT_BITS_LIST, dtype=np.int64)
_ROLLED_BITS_LIST = [1 << p for p in BIT_POSITION] + [0]  # index -1 (no roll yet) -> 0
_ROLLED_BITS = np.array(_ROLLED_BITS_LIST, dtype=np.int64)


_LEGAL_CELLS = np.arange(NUM_SQUARES) * NUM_PLANES + LEGAL_PLANE  # (36,) flat index of each square's legal cell
_INT64_BITS = 64
#: (256, 8) int8: the eight bits of each byte value as 0/1, lowest bit first
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").view(np.int8)
_BYTE_BITS.flags.writeable = False  # a table: read, never written
#: one game's nine bitboards -> their 72 bytes (little-endian, as the gather below reads them)
_PACK_PLANES = struct.Struct(f"<{NUM_PLANES}Q")


class _PackedPlanes(threading.local):
    """Per thread, the 72 bytes one game's nine bitboards are packed into (`_PACK_PLANES.pack_into`), read at
    once by the gather that follows: written and read again for every one-game observation."""

    def __init__(self) -> None:
        self.bytes = bytearray(_PACK_PLANES.size)
        self.array = np.frombuffer(self.bytes, dtype=np.uint8)  # (72,) uint8: the same memory, for the gather


_PACKED = _PackedPlanes()
#: (6, 6, 9) index into the 9 x 64 bits of one game's planes (bitboards' bytes, lowest bit first):
#: ``[rank, file, plane]``
_SINGLE_ORDER = (np.arange(NUM_PLANES) * _INT64_BITS + np.array(BIT_POSITION)[:, None]).reshape(OBSERVATION_SHAPE)


def _unpack(bits: np.ndarray) -> np.ndarray:
    """(B..., 9) int64 bitboards of a batch -> (B..., 6, 6, 9) int8 planes."""
    batch_shape = bits.shape[:-1]
    by = bits.view(np.uint8).reshape(batch_shape + (NUM_PLANES, 8))[..., :BITBOARD_BYTES]
    by = np.ascontiguousarray(np.swapaxes(by, -1, -2))  # (..., 6 bytes, 9 planes)
    unpacked = np.unpackbits(by, axis=-2, bitorder="little")  # (..., 48 bit positions, 9 planes)
    ranks = unpacked[..., : BOARD_SIZE * STRIDE, :].reshape(batch_shape + (BOARD_SIZE, STRIDE, NUM_PLANES))
    return np.ascontiguousarray(ranks[..., :BOARD_SIZE, :]).view(np.int8)  # drop the guard bits


def encode(own, opponent, legal, rolled, captured, hit, own_reserve, opponent_reserve) -> np.ndarray:
    """Planes for one game (Python ints; `rolled` a square or -1) -> (6, 6, 9),
    or for a batch ((B,) arrays) -> (B, 6, 6, 9). `own` and `opponent` (checkers and reserves)
    are the observer's and the other player's, as the planes `PLANE_NAMES` call them."""
    if type(own) is int:
        packed = _PACKED  # this thread's own: no other encode writes it before the gather below reads it
        _PACK_PLANES.pack_into(
            packed.bytes,
            0,
            own,
            opponent,
            legal,
            _ROLLED_BITS_LIST[rolled],
            captured,
            FULL if hit == HIT_ENEMY else 0,
            FULL if hit == HIT_FRIENDLY else 0,
            _COUNT_BITS_LIST[min(own_reserve, NUM_SQUARES)],
            _COUNT_BITS_LIST[min(opponent_reserve, NUM_SQUARES)],
        )
        # the bits of its 72 bytes from a table ((72, 8) int8, read in C order by the second gather), then
        # the squares channels-last in one gather
        return _BYTE_BITS.take(packed.array, axis=0).take(_SINGLE_ORDER)
    bits = np.stack(
        [
            own,
            opponent,
            legal,
            _ROLLED_BITS.take(rolled),
            captured,
            np.where(hit == HIT_ENEMY, FULL, 0),
            np.where(hit == HIT_FRIENDLY, FULL, 0),
            _COUNT_BITS.take(np.minimum(own_reserve, NUM_SQUARES)),
            _COUNT_BITS.take(np.minimum(opponent_reserve, NUM_SQUARES)),
        ],
        axis=-1,
    )
    return _unpack(bits)


def planes(position, observer) -> np.ndarray:
    """Planes of a position from `observer`'s side (RED / BLUE).

    `position` is a `Game` (`observer`
    an int; returns (6, 6, 9)) or a batched State (`observer` an int or
    (B,) array; returns (B, 6, 6, 9)). The legal plane is empty where the
    observer is not to move. Branch-free: `(observer ^ to_move) - 1` is all
    ones where the observer is to move, on ints and int64 arrays alike.
    """
    p = position
    own, opponent = from_side(p.me, p.opp, p.to_move, observer)
    own_reserve, opponent_reserve = from_side(p.reserve_me, p.reserve_opp, p.to_move, observer)
    on_move = (observer ^ p.to_move) - 1  # -1 where the observer is the player to move, else 0
    return encode(own, opponent, p.legal & on_move, p.rolled, p.captured, p.hit, own_reserve, opponent_reserve)


def mover_planes(state) -> np.ndarray:
    """(B, 6, 6, 9) planes of a batched State from the side of each game's player to move."""
    return planes(state, state.to_move)


def mask_from_planes(planes: np.ndarray) -> np.ndarray:
    """The action mask(s) held in the legal plane: (..., 6, 6, 9) -> (..., 36) int8 (a fresh array)."""
    if planes.ndim == len(OBSERVATION_SHAPE):  # one game: a single gather (take reads it in C order)
        return planes.take(_LEGAL_CELLS)
    return planes[..., LEGAL_PLANE].reshape(planes.shape[:-3] + (NUM_SQUARES,)).copy()


def reserve_of_plane(plane: np.ndarray) -> np.ndarray:
    """Decode a reserve plane (..., 6, 6) back to the count it shows (capped at 36)."""
    return plane.reshape(plane.shape[:-2] + (NUM_SQUARES,)).sum(axis=-1)


__all__ = ["NUM_PLANES", "OBSERVATION_SHAPE", "PLANE_NAMES", "encode", "mask_from_planes", "mover_planes", "planes"]
