"""The rules of Strategic Reserve as pure functions of bitboards.

Every function takes and returns bitboards in the layout of
:mod:`strategic_reserve_env.board`, either Python ``int`` (one game, fastest
for single games) or ``np.int64`` arrays of shape ``(B,)`` (a batch, one
element per game). Only operators that mean the same on both are used
(``& | ^ + - << >>`` and comparisons), so there is one copy of the rules.
Branches become masks: ``(x - 1) >> 63`` is all ones when ``x == 0`` and zero
otherwise, for Python ints and int64 alike.

Positions are seen from the mover: ``me`` is the bitboard of the player to
move, ``opp`` the other player's (and ``reserve_me``, ``reserve_opp`` their
reserves). A ply is :func:`roll` then :func:`place`; :func:`from_side` and
:func:`roller` read a position back in absolute colours. The engine
(:mod:`strategic_reserve_env.engine`, arrays) and
:class:`~strategic_reserve_env.game.Game` (ints) call these and check their
inputs; nothing here validates.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .board import FULL, NO_PLAYER, STRIDE

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


def roll(me, opp, reserve_opp, rolled):
    """The roll on ``rolled`` (a one-square bitboard): :func:`resolve_roll`, and the captured
    checkers go back to their owner's reserve.

    Returns ``(opp, reserve_opp, captured, legal, hit)`` after the roll.
    """
    opp, captured, legal, hit = resolve_roll(me, opp, rolled)
    count = captured.bit_count() if type(captured) is int else np.bitwise_count(captured)
    return opp, reserve_opp + count, captured, legal, hit


class Placed(NamedTuple):
    """The fields a placement sets (the others - rolled, hit, captured - keep the latest roll).

    Named as :class:`~strategic_reserve_env.engine.State`'s fields, seen from the side of the
    player to move after the placement. Each is an int (or bool) for one game, an array for a batch.
    """

    me: Any  # the new mover's checkers (the placer's opponent)
    opp: Any  # the placer's checkers, with the new one
    reserve_me: Any  # the new mover's reserve
    reserve_opp: Any  # the placer's reserve, one less
    to_move: Any  # the other player
    ply: Any  # one more
    winner: Any  # the placer's colour if its reserve is now empty, else NO_PLAYER
    truncated: Any  # (bool) ``ply`` reached the ply limit and nobody won
    legal: Any  # 0: no placement is due until the next roll


def place(me, opp, reserve_me, reserve_opp, to_move, ply, placed, ply_limit) -> Placed:
    """The mover puts a checker on ``placed`` (a one-square bitboard; a legal placement is the
    caller's to check), then the turn passes.

    The mover's reserve loses one checker; when it is empty the mover has won
    (``winner = to_move``, else ``NO_PLAYER``). A game nobody won is
    ``truncated`` once ``ply + 1`` reaches ``ply_limit`` (not a rule of the
    game: docs/RULES.md). ``legal`` becomes 0 (no placement is due).
    """
    reserve = reserve_me - 1
    won = (reserve - 1) >> SIGN_SHIFT  # all ones where the reserve is now empty (it was >= 1)
    ply = ply + 1
    return Placed(
        me=opp,  # the turn passes: the other player becomes "me"
        opp=me | placed,
        reserve_me=reserve_opp,
        reserve_opp=reserve,
        to_move=to_move ^ 1,
        ply=ply,
        winner=NO_PLAYER + ((to_move - NO_PLAYER) & won),
        truncated=(ply >= ply_limit) & (reserve != 0),
        legal=placed & 0,  # 0 of the caller's kind: an int, or an array of zeros
    )


def from_side(me, opp, to_move, side):
    """``(side's, the other's)`` of a pair held from the mover's side: ``me``, ``opp`` (checkers
    or reserves) belong to ``to_move`` and the other player. ``side`` is a colour (``RED`` for
    ``(red, blue)``) or, like ``to_move``, an array of colours. Branch-free: ``(side ^ to_move) - 1``
    is all ones where ``side`` is to move."""
    swap = me ^ opp
    mine = opp ^ (swap & ((side ^ to_move) - 1))
    return mine, mine ^ swap


def roller(legal, to_move):
    """The colour that made the latest roll: the player to move while its placement is due
    (``legal != 0``), else the other player (who rolled, then placed). Meaningful once a roll was made."""
    return to_move ^ (((legal - 1) >> SIGN_SHIFT) & 1)
