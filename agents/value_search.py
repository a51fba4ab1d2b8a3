"""The value-search agent: expectimax over the agent's placements (and the opponent's roll) with a learned leaf.

The leaf is `strategic_reserve_env.agents.value_network`'s `V`: the win probability of the player
about to roll, from the board and both reserves (the network is shown what
each of the 36 equally likely rolls would capture, so that chance node is in
its input rather than enumerated).

- `depth=1`: placing on `p` leaves a position the opponent is about to
  roll; its value for the agent is `1 - V` of that position.
- `depth=2`: the `width` best placements of depth 1 are searched through
  the opponent's 36 rolls (exactly, with the engine's rules); after each, the
  leaf is `V` of the agent about to roll, with the opponent's reserve one
  checker smaller (as in `strategic_reserve_env.agents.expectimax`, the opponent's placement
  is not modelled except for its reserve). With an untrained network (`V`
  equal to the race evaluation averaged over the roll) this is
  `expectimax:depth=2`.

The agent places where the value is largest, ties broken at random;
placing its last checker wins at once. All leaves of all games of a batch
go through the network in one call, each distinct position once.

Spec: `value[:PATH.safetensors][,depth=1|2,width=K]` (default
the shipped network, `strategic_reserve_env.models.VALUE_NET`, depth 2, width 6).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import BIT_ARRAY, NUM_SQUARES, bitboards_to_array, checked_int
from strategic_reserve_env.core.rules import resolve_roll
from strategic_reserve_env.core.sampling import popcount

from .custom import spec_name
from .position import argmin_random_ties, captures_by_roll, read_position
from .value_network import decided, load_value_net

DEPTHS = (1, 2)


def _unique_values(value_net, me, opp, reserve_me, reserve_opp) -> np.ndarray:
    """`value_net.value` of positions given as arrays of one shape, each distinct position computed once."""
    shape = np.shape(me)
    keys = np.stack([np.broadcast_to(a, shape).reshape(-1) for a in (me, opp, reserve_me, reserve_opp)], axis=1)
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    return value_net.value(*distinct.T)[inverse.reshape(-1)].reshape(shape)


def placement_values(value_net, me, opp, legal, reserve_me, reserve_opp) -> np.ndarray:
    """(B, 36) float64 the mover's depth-1 win probability after placing on each square (-inf where illegal), of
    B rolled positions awaiting the mover's placement: bitboards `me`, `opp` (B,), `legal` (B, 36) the
    allowed squares, reserves (B,). Placing the last checker wins (1); otherwise the value is `1 - V` of the
    position the opponent is about to roll. All leaves go through `value_net` in one call, each distinct once."""
    legal = np.asarray(legal, dtype=bool)
    game, square = np.nonzero(legal)
    m, o = np.asarray(reserve_me)[game], np.asarray(reserve_opp)[game]
    leaf = _unique_values(value_net, np.asarray(opp)[game], np.asarray(me)[game] | BIT_ARRAY[square], o, m - 1)
    values = np.full(legal.shape, -np.inf)
    values[game, square] = np.where(m <= 1, 1.0, 1.0 - leaf)
    return values


def _check(depth: int, width: int) -> None:
    if depth not in DEPTHS:
        raise ValueError(f"value depth must be one of {DEPTHS}, got {depth!r}")
    checked_int("value width", width, 1, NUM_SQUARES)


class ValueSearchAgent:
    """Expectimax to `depth` 1 or 2 over the agent's placements, a learned value at the leaves."""

    uses_observation = True

    def __init__(self, value, depth: int = 2, width: int = 6, name: str = "value") -> None:
        _check(depth, width)
        self.value_net, self.depth, self.width, self.name = value, depth, width, name

    @classmethod
    def load(cls, path: str | Path, depth: int = 2, width: int = 6, label: str | None = None) -> ValueSearchAgent:
        """The agent of a value network file; `label` names it in place of `value:PATH`."""
        _check(depth, width)  # before reading the file

        options = "".join([f",depth={depth}" if depth != 2 else "", f",width={width}" if width != 6 else ""])
        return cls(load_value_net(path), depth, width, name=spec_name("value", path, label, options))

    def placement_values(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(B, 36) float64 the agent's depth-1 win probability after placing on each square (-inf where illegal)."""
        position = read_position(observations, masks)
        return placement_values(
            self.value_net, position.me, position.opp, masks, position.reserve_me, position.reserve_opp
        )

    def candidate_values(self, observations: np.ndarray, masks: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """(B, k) float64 the agent's depth-2 win probability after placing on each of `candidates` ((B, k))."""
        position = read_position(observations, masks)
        m, o = position.reserve_me[:, None, None], position.reserve_opp[:, None, None]
        placed = position.me[:, None] | BIT_ARRAY[candidates]  # (B, k)
        me_left, lost = captures_by_roll(position.opp[:, None], placed)  # (B, k, 36): the opponent's roll r1
        leaf = _unique_values(self.value_net, me_left, position.opp[:, None, None], m - 1 + lost, o - 1)
        return np.where(position.reserve_me[:, None] <= 1, 1.0, leaf.mean(axis=-1))

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        legal = np.asarray(masks, dtype=bool)
        values = self.placement_values(observations, masks)
        if self.depth == 1:
            return argmin_random_ties(-values, legal, rng, step=1e-12)
        candidates = np.argsort(-values, axis=-1, kind="stable")[:, : self.width]  # illegal ones (-inf) sort last
        rows = np.arange(len(candidates))[:, None]
        deep = self.candidate_values(observations, masks, candidates)
        choice = argmin_random_ties(-deep, legal[rows, candidates], rng, step=1e-12)
        return candidates[np.arange(len(candidates)), choice]

    def __repr__(self) -> str:
        return f"ValueSearchAgent({self.name!r}, depth={self.depth}, width={self.width})"


BACKUP_CHUNK = 256  # pre-roll positions backed up at once: about 36 * 20 leaves each go through the network


def exact_backup(value_net, me, opp, reserve_me, reserve_opp, chunk: int = BACKUP_CHUNK) -> np.ndarray:
    """(N,) float64 the exact-backup value of N pre-roll positions (roller's view) under `value_net`: the mean
    over the roller's 36 equally likely rolls of its best placement's value (the value agent's depth-1
    `placement_values`: `1 - V` of the other player's
    pre-roll position that follows, 1 for placing the last checker), with no dice noise. Positions
    `decided` get their exact value. Vectorised over positions and rolls, `chunk` positions at a time;
    each distinct rolled position is searched once."""
    me, opp = np.asarray(me, dtype=np.int64), np.asarray(opp, dtype=np.int64)
    reserve_me, reserve_opp = np.asarray(reserve_me, dtype=np.int64), np.asarray(reserve_opp, dtype=np.int64)
    known, out = decided(reserve_me, reserve_opp)
    rows = np.flatnonzero(~known)
    for first in range(0, len(rows), chunk):
        part = rows[first : first + chunk]
        shape = (len(part), NUM_SQUARES)  # (positions, rolls)
        rolled_me = np.broadcast_to(me[part, None], shape).reshape(-1)
        opp_left, captured, legal, _ = resolve_roll(
            rolled_me,
            np.broadcast_to(opp[part, None], shape).reshape(-1),
            np.broadcast_to(BIT_ARRAY, shape).reshape(-1),
        )
        keys = np.stack(
            [
                rolled_me,
                opp_left,
                legal,
                np.broadcast_to(reserve_me[part, None], shape).reshape(-1),
                np.broadcast_to(reserve_opp[part, None], shape).reshape(-1) + popcount(captured),
            ],
            axis=1,
        )
        distinct, inverse = np.unique(keys, axis=0, return_inverse=True)  # an empty roll: one position for all
        d_me, d_opp, d_legal, d_rm, d_ro = distinct.T
        best = placement_values(value_net, d_me, d_opp, bitboards_to_array(d_legal), d_rm, d_ro).max(axis=-1)
        out[part] = best[inverse.reshape(-1)].reshape(shape).mean(axis=-1)
    return out
