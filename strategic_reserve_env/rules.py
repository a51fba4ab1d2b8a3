"""The rules of Strategic Reserve as pure functions of bitboards.

Every function takes and returns bitboards in the layout of
:mod:`strategic_reserve_env.board`, either Python ``int`` (one game, fastest
for single games) or ``np.int64`` arrays of shape ``(B,)`` (a batch, one
element per game). Only operators that mean the same on both are used
(``& | ^ + - << >>`` and comparisons), so there is one copy of the rules.
Branches become masks: ``(x - 1) >> 63`` is all ones when ``x == 0`` and zero
otherwise, for Python ints and int64 alike.

Positions are seen from the mover: ``me`` is the bitboard of the player to
move, ``opp`` the other player's.
"""

from __future__ import annotations

import numpy as np

from .board import FULL, STRIDE

HIT_EMPTY, HIT_ENEMY, HIT_FRIENDLY = 0, 1, 2
HIT_NAMES = ("empty", "enemy", "friendly")
SIGN_SHIFT = 63  # ``(x - 1) >> SIGN_SHIFT`` is -1 (all ones) for x == 0, else 0


def adjacent(x):
    """Squares orthogonally next to any square of ``x`` (``x``'s own squares may be included)."""
    return ((x << 1) | (x >> 1) | (x << STRIDE) | (x >> STRIDE)) & FULL


COMPACT_AFTER = 3  # batch fills continue on the games still growing after this many passes


def group(seed, mask):
    """Squares of ``mask`` orthogonally connected to ``seed``; ``seed`` must lie within ``mask``.

    Each pass grows the set by one square down and up the board and by one
    square towards file ``a``, and along a whole run towards file ``f`` at
    once: adding ``mask`` to the set sends a carry from every seed square to
    the top of its run, flipping every bit on the way (the guard bit ends
    the run at the edge of the rank).

    In a batch most games settle within two or three passes; after
    ``COMPACT_AFTER`` passes the fill goes on with only the games still
    growing (a few percent), so long groups in a few games cost little.
    """
    x = seed
    passes = 0
    while True:
        grown = (x | ((x + mask) ^ mask) | (x >> 1) | (x << STRIDE) | (x >> STRIDE)) & mask
        if type(grown) is int:
            if grown == x:
                return x
        else:
            growing = grown != x
            if not growing.any():
                return x
            passes += 1
            if passes == COMPACT_AFTER:
                rest = np.flatnonzero(growing)
                if 4 * len(rest) < growing.size:
                    flat = grown.reshape(-1)  # a view: grown is a fresh array of this call
                    flat[rest] = group(flat[rest], np.broadcast_to(mask, grown.shape).reshape(-1)[rest])
                    return grown
        x = grown


def resolve_roll(me, opp, rolled):
    """Captures and legal placements for a roll on the bitboard ``rolled`` (one square).

    Returns ``(opp_after, captured, legal, hit)``: the opponent's checkers
    left, the squares removed (always the opponent's), the squares the mover
    may place on, and the kind of hit (``HIT_*``).
    """
    friendly = group(rolled & me, me)  # the mover's group G on a friendly hit, else 0
    touching = adjacent(friendly)
    # an enemy hit seeds the rolled square; a friendly hit seeds every enemy checker touching G
    captured = group((rolled | touching) & opp, opp)
    opp = opp ^ captured
    empty = FULL ^ (me | opp)
    legal = empty & (touching | ((friendly - 1) >> SIGN_SHIFT))  # no group: every empty square
    hit = (friendly != 0) * HIT_FRIENDLY + ((captured & rolled) != 0) * HIT_ENEMY
    return opp, captured, legal, hit
