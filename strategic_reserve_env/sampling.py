"""Uniform choice of a set square of a bitboard, for Python ints and int64 arrays alike.

Used for uniformly random legal play (the random agent, the benchmark): the
k-th set bit is found by binary search on population counts, then a table
finishes the last byte.
"""

from __future__ import annotations

import numpy as np

from .board import bit_to_square

_BYTE = 8
_SEARCH_WIDTHS = (32, 16, 8)  # halve a 64-bit word down to one byte
#: _SELECT[byte * 8 + k]: position of the k-th set bit of ``byte`` (0 if there is none)
_SELECT_LIST = [0] * (256 * _BYTE)
for _byte in range(256):
    for _k, _position in enumerate(p for p in range(_BYTE) if _byte >> p & 1):
        _SELECT_LIST[_byte * _BYTE + _k] = _position
_SELECT = np.array(_SELECT_LIST, dtype=np.int64)


def popcount(bits):
    """Number of set bits: an int for an int, an array for an array."""
    if type(bits) is int:
        return bits.bit_count()
    return np.bitwise_count(bits).astype(np.int64)


def nth_set_bit(bits, k):
    """Bit position of the ``k``-th (from 0, lowest first) set bit of ``bits``; ``k`` < popcount."""
    position = 0
    for width in _SEARCH_WIDTHS:
        low = bits & ((1 << width) - 1)
        count = popcount(low)
        upper = (count - k - 1) >> 63  # all ones where the k-th bit lies above the low half
        k = k - (count & upper)
        bits = low ^ (((bits >> width) ^ low) & upper)
        position = position + (width & upper)
    index = bits * _BYTE + k
    if type(index) is int:
        return position + _SELECT_LIST[index]
    return position + _SELECT.take(index)


def uniform_square(bits, uniform):
    """Square index of a set bit of ``bits`` chosen by ``uniform`` in [0, 1); ints or (B,) arrays."""
    count = popcount(bits)
    if type(count) is int:
        k = int(uniform * count)
    else:
        k = (uniform * count).astype(np.int64)
    return bit_to_square(nth_set_bit(bits, k))
