"""Uniform choice of a set square of a bitboard, for Python ints and int64 arrays alike.

Used for uniformly random legal play (the random agent, the benchmark): the
k-th set bit is found with byte-wise population counts (broadword select):
the running counts of a word's bytes, all at once in one multiplication, say
which byte holds the k-th set bit, and a table finishes within that byte.
"""

from __future__ import annotations

import numpy as np

from .board import bit_to_square

_BYTE = 8
_BYTE_MASK = (1 << _BYTE) - 1
_ROW_SHIFT = 5  # byte i's shift 8 * i << 5: its tables' row i * 256
WORD_BYTES = 7  # the low bytes searched: ``bits`` below 2**56 (a bitboard uses 41 bits)
_ONES = sum(1 << (_BYTE * i) for i in range(WORD_BYTES))  # 0x01 in each searched byte
_HIGHS = 0x80 * _ONES  # the top bit of each searched byte
_WORD = (1 << (_BYTE * WORD_BYTES)) - 1
_TOTAL_SHIFT = _BYTE * (WORD_BYTES - 1)  # the running count's last byte holds the whole count
#: SWAR masks of the per-byte count on Python ints: pairs, nibbles, bytes
_PAIRS, _NIBBLES, _BYTES = 0x55 * _ONES, 0x33 * _ONES, 0x0F * _ONES
#: _SELECT_LIST[byte * 8 + k]: position of the k-th set bit of ``byte`` (0 if there is none)
_SELECT_LIST = [0] * (256 * _BYTE)
for _byte in range(256):
    for _k, _position in enumerate(p for p in range(_BYTE) if _byte >> p & 1):
        _SELECT_LIST[_byte * _BYTE + _k] = _position
#: _POSITION[(i * 256 + byte) * 8 + k]: bit position of the k-th set bit of ``byte`` found in byte ``i`` of a
#: word, and _SQUARE its square index (:func:`.board.bit_to_square`): one lookup finishes either search. Row
#: i = WORD_BYTES is where an empty word's search ends (k = 0): a harmless lookup for masked-out rows
_POSITION = (_BYTE * np.arange(WORD_BYTES + 1)[:, None] + np.array(_SELECT_LIST)).reshape(-1)  # (16384,) int64
_SQUARE = bit_to_square(_POSITION)  # (16384,) int64
_POSITION_LIST, _SQUARE_LIST = _POSITION.tolist(), _SQUARE.tolist()
_POSITION.flags.writeable = _SQUARE.flags.writeable = False  # tables: read, never written


def popcount(bits):
    """Number of set bits: an int for an int, an array for an array."""
    if type(bits) is int:
        return bits.bit_count()
    return np.bitwise_count(bits).astype(np.int64)


def byte_counts(bits):
    """The population count of each byte of `bits` (below 2**56), in that byte of the result.

    An int for an int (a SWAR count), an int64 array of `bits`' shape for an array (numpy counts
    the bytes of the little-endian int64 words).
    """
    if type(bits) is int:
        bits = bits - ((bits >> 1) & _PAIRS)
        bits = (bits & _NIBBLES) + ((bits >> 2) & _NIBBLES)
        return (bits + (bits >> 4)) & _BYTES
    words = np.asarray(bits, dtype=np.int64)
    return np.bitwise_count(words.reshape(-1).view(np.uint8)).view(np.int64).reshape(words.shape)


def _running_counts(bits):
    """Byte `i` of the result: the set bits of bytes `0 .. i` of `bits` (below 2**56); the last
    searched byte (`>> 48`) is the whole count. One multiplication adds the byte counts (each sum is at
    most 56: no carries between bytes; an int64 array drops the product's bits past 64, never read)."""
    return (byte_counts(bits) * _ONES) & _WORD


def _select(bits, running, k, table: np.ndarray, table_list: list[int]):
    """`table` (or, for ints, `table_list`) at the `k`-th set bit of `bits`, given its
    `_running_counts`."""
    # byte i's top bit stays set where running_i <= k (each byte 128 + k - running_i: no borrows)
    done = (((k * _ONES) | _HIGHS) - running) & _HIGHS
    shift = popcount(done) * _BYTE  # the k-th set bit lies in the first byte whose running count passes k
    before = ((running << _BYTE) >> shift) & _BYTE_MASK  # set bits below that byte
    row = ((bits >> shift) & _BYTE_MASK) | (shift << _ROW_SHIFT)  # i * 256 + that byte
    index = row * _BYTE + (k - before)
    if type(index) is int:
        return table_list[index]
    return table.take(index)


def nth_set_bit(bits, k):
    """Bit position of the `k`-th (from 0, lowest first) set bit of `bits` (below 2**56);
    `k` < popcount, or `k = 0` for an empty word (an unspecified position, for rows the caller masks out)."""
    return _select(bits, _running_counts(bits), k, _POSITION, _POSITION_LIST)


def uniform_square(bits, uniform):
    """Square index of a set bit of `bits` chosen by `uniform` in [0, 1); ints or (B,) arrays:
    the `int(uniform * popcount(bits))`-th set bit."""
    running = _running_counts(bits)
    count = running >> _TOTAL_SHIFT
    if type(count) is int:
        k = int(uniform * count)
    else:
        k = (uniform * count).astype(np.int64)
    return _select(bits, running, k, _SQUARE, _SQUARE_LIST)
