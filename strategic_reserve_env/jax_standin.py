"""A stand-in for the JAX env of issue 28 (``pgx_env.StrategicReserve``) with the same chance API, until it lands.

TEMPORARY: the search adapter (:mod:`strategic_reserve_env.agents.mctx_search`) is written against the chance
API of issue 28 (``new_game``, ``roll``, ``place``, ``chance_probs``, ``observe``, and pgx's State fields
``current_player``, ``legal_action_mask``, ``rewards``, ``terminated``, ``truncated``). This module gives that
API on boolean (36,) planes (simple, slower than the bitboards of the real env) so that the adapter can be
built and tested now; its differential test (tests/test_mctx_search.py) holds it to ``engine.roll`` and
``engine.place``. It is removed once branch ``jax`` is merged, and the adapter takes the real env.

The rules are ``rules.py``'s, on planes: a friendly hit seeds the mover's group of the rolled square, every
enemy checker touching it (or the rolled square itself on an enemy hit) seeds the captured enemy group, and
the legal placements are the empty squares touching the friendly group (every empty square when there is
none). Every function is pure, ``jit``- and ``vmap``-able, and leaves a finished game unchanged.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .board import BOARD_SIZE, NO_PLAYER, NUM_SQUARES, bitboards_to_array
from .config import Config


class State(NamedTuple):
    """One game (or a batch, under ``vmap``), from the mover's side like ``engine.State``."""

    me: jax.Array  # (36,) bool: the mover's checkers
    opp: jax.Array  # (36,) bool: the other player's checkers
    reserve_me: jax.Array  # () int32: the mover's reserve
    reserve_opp: jax.Array  # () int32: the other player's reserve
    current_player: jax.Array  # () int32: the mover's colour (RED 0, BLUE 1)
    ply: jax.Array  # () int32: placements made so far
    legal_action_mask: jax.Array  # (36,) bool: the legal placements; all False until the roll
    rewards: jax.Array  # (2,) float32 by colour: +-1 on the winning placement, else 0
    terminated: jax.Array  # () bool: somebody won
    truncated: jax.Array  # () bool: the ply limit ended the game


def _adjacent(x: jax.Array) -> jax.Array:
    """(36,) bool: the squares orthogonally next to a square of ``x``."""
    grid = x.reshape(BOARD_SIZE, BOARD_SIZE)
    pad = jnp.pad(grid, 1)
    near = pad[:-2, 1:-1] | pad[2:, 1:-1] | pad[1:-1, :-2] | pad[1:-1, 2:]
    return near.reshape(NUM_SQUARES)


def _group(seed: jax.Array, mask: jax.Array) -> jax.Array:
    """(36,) bool: the squares of ``mask`` connected to ``seed`` (``seed`` within ``mask``)."""

    def grow(carry):
        x, _ = carry
        grown = (x | _adjacent(x)) & mask
        return grown, jnp.any(grown != x)

    return jax.lax.while_loop(lambda carry: carry[1], grow, (seed, jnp.any(seed)))[0]


class StandInEnv:
    """The chance API of issue 28 for the standard rules (``Config``: reserve, ply limit, start)."""

    num_actions = NUM_SQUARES

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or Config()
        self.chance_probs = jnp.full(NUM_SQUARES, 1.0 / NUM_SQUARES, dtype=jnp.float32)

    def new_game(self) -> State:
        """The start position, its first roll not yet made."""
        start = self.config.start_position
        red, blue = (bitboards_to_array(np.array([b], dtype=np.int64))[0] for b in start.bitboards)
        me, opp = (red, blue) if start.mover == 0 else (blue, red)
        reserves = start.reserves if start.mover == 0 else start.reserves[::-1]
        return State(
            me=jnp.asarray(me),
            opp=jnp.asarray(opp),
            reserve_me=jnp.int32(reserves[0]),
            reserve_opp=jnp.int32(reserves[1]),
            current_player=jnp.int32(start.mover),
            ply=jnp.int32(0),
            legal_action_mask=jnp.zeros(NUM_SQUARES, dtype=bool),
            rewards=jnp.zeros(2, dtype=jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
        )

    def roll(self, state: State, square) -> State:
        """The chance half of a turn: captures of the roll on ``square`` (0..35) and the legal placements."""
        square = jnp.asarray(square, dtype=jnp.int32)
        valid = (square >= 0) & (square < NUM_SQUARES) & ~state.terminated & ~state.truncated
        rolled = jnp.arange(NUM_SQUARES) == square
        friendly = _group(rolled & state.me, state.me)
        touching = _adjacent(friendly) & ~friendly
        captured = _group((rolled | touching) & state.opp, state.opp)
        opp = state.opp & ~captured
        empty = ~(state.me | opp)
        legal = empty & jnp.where(jnp.any(friendly), touching, True)
        rolled_state = state._replace(
            opp=opp,
            reserve_opp=state.reserve_opp + jnp.sum(captured, dtype=jnp.int32),
            legal_action_mask=legal,
            rewards=jnp.zeros(2, dtype=jnp.float32),
        )
        return jax.tree.map(lambda new, old: jnp.where(valid, new, old), rolled_state, state)

    def place(self, state: State, action) -> State:
        """The decision half: the mover puts a checker on ``action``, wins with its last one, the ply limit
        truncates, and the turn passes (the next roll is due). Finished games are unchanged."""
        action = jnp.asarray(action, dtype=jnp.int32)
        valid = ~state.terminated & ~state.truncated
        reserve = state.reserve_me - 1
        won = reserve <= 0
        ply = state.ply + 1
        mover = state.current_player
        sign = jnp.where(jnp.arange(2) == mover, 1.0, -1.0).astype(jnp.float32)
        placed = state._replace(
            me=state.opp,
            opp=state.me | (jnp.arange(NUM_SQUARES) == action),
            reserve_me=state.reserve_opp,
            reserve_opp=reserve,
            current_player=1 - mover,
            ply=ply,
            legal_action_mask=jnp.zeros(NUM_SQUARES, dtype=bool),
            rewards=jnp.where(won, sign, 0.0).astype(jnp.float32),
            terminated=won,
            truncated=~won & (ply >= self.config.ply_limit),
        )
        return jax.tree.map(lambda new, old: jnp.where(valid, new, old), placed, state)

    def observe(self, state: State, player_id) -> jax.Array:
        """(6, 6, 9) int8: planes 0, 1, 2, 7 and 8 of ``observation.py`` from ``player_id``'s side (the
        latest roll's planes 3 to 6 are zeros: the search reads the position, not the roll)."""
        mine = state.current_player == player_id
        own, other = jnp.where(mine, state.me, state.opp), jnp.where(mine, state.opp, state.me)
        reserve_own = jnp.where(mine, state.reserve_me, state.reserve_opp)
        reserve_other = jnp.where(mine, state.reserve_opp, state.reserve_me)
        index = jnp.arange(NUM_SQUARES)
        zeros = jnp.zeros(NUM_SQUARES, dtype=bool)
        planes = [own, other, state.legal_action_mask & mine, zeros, zeros, zeros, zeros]
        planes += [index < reserve_own, index < reserve_other]
        return jnp.stack(planes, axis=-1).reshape(BOARD_SIZE, BOARD_SIZE, -1).astype(jnp.int8)


def from_engine(state) -> State:
    """A batched State from an ``engine.State`` (the converter of issue 28, for the agent's positions)."""
    return State(
        me=jnp.asarray(bitboards_to_array(state.me)),
        opp=jnp.asarray(bitboards_to_array(state.opp)),
        reserve_me=jnp.asarray(state.reserve_me, dtype=jnp.int32),
        reserve_opp=jnp.asarray(state.reserve_opp, dtype=jnp.int32),
        current_player=jnp.asarray(state.to_move, dtype=jnp.int32),
        ply=jnp.asarray(state.ply, dtype=jnp.int32),
        legal_action_mask=jnp.asarray(bitboards_to_array(state.legal)),
        rewards=jnp.zeros((state.batch_size, 2), dtype=jnp.float32),
        terminated=jnp.asarray(state.winner != NO_PLAYER),
        truncated=jnp.asarray(state.truncated),
    )


def winner(state: State) -> jax.Array:
    """The winner's colour, or NO_PLAYER (for the tests' comparison with the engine)."""
    return jnp.where(state.terminated, jnp.argmax(state.rewards, axis=-1).astype(jnp.int32), NO_PLAYER)
