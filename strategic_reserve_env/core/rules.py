"""The rules of Strategic Reserve as pure functions of bitboards.

Every function takes and returns bitboards in the layout of
`strategic_reserve_env.core.board`, either Python `int` (one game, fastest
for single games) or `np.int64` arrays of shape `(B,)` (a batch, one
element per game). Only operators that mean the same on both are used
(`& | ^ + - << >>` and comparisons), so there is one copy of the rules.
Branches become masks: `(x - 1) >> 63` is all ones when `x == 0` and zero
otherwise, for Python ints and int64 alike.

Positions are seen from the mover: `me` is the bitboard of the player to
move, `opp` the other player's (and `reserve_me`, `reserve_opp` their
reserves). A ply is `roll` then `place`; `from_side` and
`roller` read a position back in absolute colours. The engine
(`strategic_reserve_env.core.engine`, arrays) and
`Game` (ints) call these and check their
inputs; nothing here validates.
"""

from __future__ import annotations

import operator

import numpy as np

from .board import FULL, NO_PLAYER, STRIDE

HIT_EMPTY, HIT_ENEMY, HIT_FRIENDLY = 0, 1, 2
HIT_NAMES = ("empty", "enemy", "friendly")
SIGN_SHIFT = 63  # ``(x - 1) >> SIGN_SHIFT`` is -1 (all ones) for x == 0, else 0


def adjacent(x):
    """Squares orthogonally next to any square of `x` (`x`'s own squares may be included)."""
    return ((x << 1) | (x >> 1) | (x << STRIDE) | (x >> STRIDE)) & FULL


COMPACT_MIN = 256  # a batch fill narrows to the games still growing only while it holds at least this many
FINISH_ALONE = 8  # a batch fill finishes its games one by one (the int fill) once at most this many still grow
#: the array fill's shift counts as read-only 0-d int64 arrays: numpy converts a Python int operand on every call
_ONE, _STRIDE = np.array(1, dtype=np.int64), np.array(STRIDE, dtype=np.int64)
_ONE.flags.writeable = _STRIDE.flags.writeable = False


def group(seed, mask):
    """Squares of `mask` orthogonally connected to `seed`; `seed` must lie within `mask`.

    Each pass grows the set by one square down and up the board and by one
    square towards file `a`, and along a whole run towards file `f` at
    once: adding `mask` to the set sends a carry from every seed square to
    the top of its run, flipping every bit on the way (the guard bit ends
    the run at the edge of the rank).

    Python ints (one game) loop until the set stops growing. Arrays (any
    shape; `seed` and `mask` broadcast together) fill only the games with a
    seed, and go on with only the games still growing whenever at most half
    of them are (while at least `COMPACT_MIN` are left); once at most
    `FINISH_ALONE` still grow, each of them is finished by the int fill: in
    a batch most groups are empty or settle within a pass or two, so a few
    long groups cost little.
    """
    if type(seed) is int and type(mask) is int:
        while seed:  # an empty seed's group is empty: no pass
            grown = (seed | ((seed + mask) ^ mask) | (seed >> 1) | (seed << STRIDE) | (seed >> STRIDE)) & mask
            if grown == seed:
                return seed
            seed = grown
        return seed
    if not (type(seed) is np.ndarray and type(mask) is np.ndarray and seed.shape == mask.shape):
        seed, mask = np.broadcast_arrays(seed, mask)  # (the engine's arrays have one shape: no broadcast)
    result = seed.flatten()  # a fresh (N,) copy: games without a seed keep their empty group
    index = (result != 0).nonzero()[0]  # (n,) games still filled, in result (nonzero of bools is fastest)
    x, mask = result[index], mask.reshape(-1)[index]
    while True:
        grown = _grow(x, mask)
        growing = grown != x
        count = np.count_nonzero(growing)
        if count <= FINISH_ALONE:
            break
        if 2 * count <= x.size and x.size >= COMPACT_MIN:
            result[index] = grown  # final for the games that stopped; the others are written again later
            keep = growing.nonzero()[0]
            index, grown, mask = index[keep], grown[keep], mask[keep]
        x = grown
    result[index] = grown  # final but in the few games still growing, which the int fill finishes alone
    if count:
        rows = growing.nonzero()[0]
        for game, start, within in zip(index[rows].tolist(), grown[rows].tolist(), mask[rows].tolist(), strict=True):
            result[game] = group(start, within)  # the int fill
    return result.reshape(seed.shape) if seed.ndim else result[0]  # numpy scalars in, a numpy scalar out


def _grow(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """One pass of `group` on (n,) int64 arrays, in two scratch arrays (the int fill's pass)."""
    grown = x + mask
    grown ^= mask
    grown |= x
    shifted = x >> _ONE
    grown |= shifted
    np.left_shift(x, _STRIDE, out=shifted)
    grown |= shifted
    np.right_shift(x, _STRIDE, out=shifted)
    grown |= shifted
    grown &= mask
    return grown


def resolve_roll(me, opp, rolled):
    """Captures and legal placements for a roll on the bitboard `rolled` (one square).

    Returns `(opp_after, captured, legal, hit)`: the opponent's checkers
    left, the squares removed (always the opponent's), the squares the mover
    may place on, and the kind of hit (`HIT_*`).
    """
    friendly, touching, captured = _captures(me, opp, rolled)
    opp = opp ^ captured
    empty = FULL ^ (me | opp)
    legal = empty & (touching | ((friendly - 1) >> SIGN_SHIFT))  # no group: every empty square
    hit = (friendly != 0) * HIT_FRIENDLY + ((captured & rolled) != 0) * HIT_ENEMY
    return opp, captured, legal, hit


def _captures(me, opp, rolled) -> tuple:
    """`(friendly, touching, captured)` of a roll on `rolled`: the mover's group G on a friendly hit (else
    0), the squares next to it, and the enemy checkers the roll captures."""
    friendly = group(rolled & me, me)
    touching = adjacent(friendly)
    # an enemy hit seeds the rolled square; a friendly hit seeds every enemy checker touching G
    return friendly, touching, group((rolled | touching) & opp, opp)


def captured_by(me, opp, rolled):
    """The enemy checkers a roll on `rolled` captures (`resolve_roll`'s `captured` alone)."""
    return _captures(me, opp, rolled)[2]


def roll(me, opp, reserve_opp, rolled):
    """The roll on `rolled` (a one-square bitboard): `resolve_roll`, and the captured
    checkers go back to their owner's reserve.

    Returns `(opp, reserve_opp, captured, legal, hit)` after the roll.
    """
    opp, captured, legal, hit = resolve_roll(me, opp, rolled)
    count = captured.bit_count() if type(captured) is int else np.bitwise_count(captured)
    return opp, reserve_opp + count, captured, legal, hit


#: the fields :func:`place` reads, in the order of its ``position`` argument
PLACE_READS = ("me", "opp", "reserve_me", "reserve_opp", "to_move", "ply")
#: ``position`` for :func:`place` of a State or a Game: its :data:`PLACE_READS` values
place_reads = operator.attrgetter(*PLACE_READS)
#: what :func:`place` returns, in order: fields of :class:`~strategic_reserve_env.core.engine.State`, seen from
#: the side of the player to move after the placement (rolled, hit and captured keep the latest roll)
PLACED_FIELDS = ("me", "opp", "reserve_me", "reserve_opp", "to_move", "ply", "winner", "truncated", "legal")


def place(position: tuple, placed, ply_limit: int) -> tuple:
    """The mover puts a checker on `placed` (a one-square bitboard; a legal placement is the
    caller's to check), then the turn passes. `position` is ``(me, opp, reserve_me,
    reserve_opp, to_move, ply)`` (`place_reads` of a State or a Game).

    Returns the `PLACED_FIELDS` after the placement, ints (`truncated` a bool) for one
    game or arrays for a batch. The mover's reserve loses one checker; when it is
    empty the mover has won (`winner = to_move`, else `NO_PLAYER`). A game nobody won is
    `truncated` once `ply + 1` reaches `ply_limit` (not a rule of the game:
    docs/RULES.md). `legal` becomes 0 (no placement is due until the next roll). The
    new `me` is the placer's opponent, who moves next; the new `opp` the placer's
    checkers with the new one.
    """
    me, opp, reserve_me, reserve_opp, to_move, ply = position
    reserve = reserve_me - 1
    won = (reserve - 1) >> SIGN_SHIFT  # all ones where the reserve is now empty (it was >= 1)
    ply = ply + 1
    winner = NO_PLAYER + ((to_move - NO_PLAYER) & won)
    truncated = (ply >= ply_limit) & (reserve != 0)
    no_placement = placed & 0  # 0 of the caller's kind: an int, or an array of zeros
    return opp, me | placed, reserve_opp, reserve, to_move ^ 1, ply, winner, truncated, no_placement


def from_side(me, opp, to_move, side):
    """`(side's, the other's)` of a pair held from the mover's side: `me`, `opp` (checkers
    or reserves) belong to `to_move` and the other player. `side` is a colour (`RED` for
    `(red, blue)`) or, like `to_move`, an array of colours. Branch-free: `(side ^ to_move) - 1`
    is all ones where `side` is to move."""
    swap = me ^ opp
    of_side = opp ^ (swap & ((side ^ to_move) - 1))
    return of_side, of_side ^ swap


def roller(legal, to_move):
    """The colour that made the latest roll: the player to move while its placement is due
    (`legal != 0`), else the other player (who rolled, then placed). Meaningful once a roll was made."""
    return to_move ^ (((legal - 1) >> SIGN_SHIFT) & 1)
