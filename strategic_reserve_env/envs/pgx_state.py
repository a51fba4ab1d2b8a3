"""The JAX env's `State` (`strategic_reserve_env.envs.pgx_env.StrategicReserve`), held as `jax_rules` works on it,
and its conversion to and from the numpy engine's State.

The position is held from the mover's side, as `strategic_reserve_env.core.engine.State` holds it (the fields
of the same names without the underscore); each bitboard is a `jax_rules.Bits` pair of uint32 words, the
form every function of `jax_rules` takes and returns, so a step hands the fields to the rules and stores
what they return as it is. `to_engine` and `from_engine` convert to and from the engine's State, so the
project's tools (records, analysis, rendering, the luck terms) read and continue JAX games; States draw
themselves with the project's board (`strategic_reserve_env.envs.pgx_svg`).

Needs the optional extra `jax` (`pip install "strategic-reserve-env[jax]"`).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core as core
from pgx._src.struct import dataclass

from strategic_reserve_env.core import engine, observation
from strategic_reserve_env.core.board import NO_PLAYER
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE

from . import jax_rules, pgx_svg
from .jax_rules import Bits

ENV_ID = "strategic_reserve"
NUM_PLAYERS = 2


def one_game(state: State, what: str, *, drawing: bool = False) -> None:
    """`ValueError` in one line where `state` holds a batch: `what` (a method's name) works on one game
    (`drawing`: it draws one). A check of shapes, static under `jit` (nothing at run time); under `vmap`
    each game is one game."""
    if np.ndim(state.current_player) != 0:
        verb, remedy = ("draws", "index") if drawing else ("works on", "jax.vmap it for a batch, or index")
        raise ValueError(
            f"{what} {verb} one game, this State holds a batch of shape {np.shape(state.current_player)}: "
            f"{remedy} one game first (jax.tree.map(lambda x: x[i], state))"
        )


@dataclass
class State(core.State):
    """One game (`vmap` for a batch: every field gains the batch axes in front).

    The position is held from the mover's side, as `strategic_reserve_env.core.engine.State`
    holds it (the fields of the same names without the underscore), each bitboard a
    `jax_rules.Bits` pair of uint32 words (low, high). Public fields at a
    chance node: see `strategic_reserve_env.envs.pgx_env` and `chance_due`.
    """

    current_player: jax.Array  # () int32 the mover's colour, RED=0 / BLUE=1 (its player id); engine's to_move
    observation: jax.Array  # (6, 6, 9) bool planes from current_player's side; all False if the env does not observe
    rewards: jax.Array  # (2,) float32 reward of the latest transition, by player id
    terminated: jax.Array  # () bool: a player has won (or the other lost by an illegal action)
    truncated: jax.Array  # () bool: the ply limit ended the game without a winner
    legal_action_mask: jax.Array  # (36,) bool legal placements; all False at a chance node, all True once over
    _step_count: jax.Array  # () int32 steps (placements, illegal ones included) since new_game
    _me: Bits  # checkers of the player to move
    _opp: Bits  # checkers of the other player
    _reserve_me: jax.Array  # () int32 checkers off the board, player to move
    _reserve_opp: jax.Array  # () int32 checkers off the board, other player
    _ply: jax.Array  # () int32 placements made so far
    _winner: jax.Array  # () int32 RED, BLUE, or NO_PLAYER=-1 while nobody has won
    _rolled: jax.Array  # () int32 square of the latest roll, -1 before the first roll
    _hit: jax.Array  # () int32 kind of the latest roll: HIT_EMPTY / HIT_ENEMY / HIT_FRIENDLY
    _captured: Bits  # squares the latest roll emptied
    _legal: Bits  # legal placements; 0 when no placement is due

    @property
    def env_id(self) -> str:  # type: ignore[override]  # not one of pgx's own ids
        return ENV_ID

    @property
    def chance_due(self) -> jax.Array:
        """bool (one per game): a roll is due, no placement (a chance node: after `new_game` or `place`,
        the game not over). `roll` is the only move that does anything here; `place` loses the game."""
        return ~(self.terminated | self.truncated) & jax_rules.is_zero(self._legal)

    def to_svg(self, *, color_theme: str | None = None, scale: float | None = None) -> str:  # type: ignore[override]
        """The board as SVG (the project's `svg`: checkers, reserves, the
        rolled and captured squares, the legal placements), for one game; `scale` multiplies its size.
        `color_theme` is accepted for pgx's signature and ignored (the project has one palette).
        `ValueError` for a batch: index one game first (`jax.tree.map(lambda x: x[i], state)`)."""
        del color_theme
        one_game(self, "to_svg", drawing=True)
        return pgx_svg.board_svg(to_engine(self), 0, scale)

    def save_svg(  # type: ignore[override]
        self, filename: str | Path, *, color_theme: str | None = None, scale: float | None = None
    ) -> None:
        """Write `to_svg` to `filename` (atomically). pgx's function `pgx.save_svg(state, filename)` does
        not know this game (a bare `AssertionError`): call this method instead."""
        from strategic_reserve_env.files.outputs import write_text

        write_text(filename, self.to_svg(color_theme=color_theme, scale=scale))

    def _repr_html_(self) -> str:
        """A notebook's view: the board of one game, or the first `pgx_svg.HTML_GAMES` games of a batch
        side by side."""
        return pgx_svg.boards_html(to_engine(self))


#: the engine's fields and the State's that hold them (to_move is current_player)
_SCALAR_FIELDS = {
    "reserve_me": "_reserve_me",
    "reserve_opp": "_reserve_opp",
    "to_move": "current_player",
    "ply": "_ply",
    "winner": "_winner",
    "rolled": "_rolled",
    "hit": "_hit",
}
_BITBOARD_FIELDS = {"me": "_me", "opp": "_opp", "captured": "_captured", "legal": "_legal"}


def _flat(value: jax.Array) -> np.ndarray:
    """A field of scalars per game as numpy int64, its leading batch axes flattened into one: (B,)."""
    return np.asarray(value).reshape(-1).astype(np.int64)


def to_engine(state: State) -> engine.State:
    """The numpy engine's State of the same games (any leading batch axes flattened to B; one game is
    B = 1). `rewards` and `_step_count` have no engine field and are dropped."""
    values = {name: _flat(getattr(state, field)) for name, field in _SCALAR_FIELDS.items()}
    for name, field in _BITBOARD_FIELDS.items():
        bits = getattr(state, field)
        values[name] = _flat(bits.low) | (_flat(bits.high) << jax_rules.WORD_BITS)
    values["truncated"] = np.asarray(state.truncated).reshape(-1).astype(bool)
    return engine.State(**values)


def from_engine(state: engine.State, observe: bool = True) -> State:
    """The games of an engine State as a State with batch axis (B,): the same position, its
    observation (all False unless `observe`: for an env built with `observation=False`) and mask
    derived, zero rewards, and `_step_count` taken as the plies made. Built with numpy (no compile)."""

    def int32(name: str) -> jax.Array:
        return jnp.asarray(np.asarray(getattr(state, name), dtype=np.int64).astype(np.int32))

    def pair(name: str) -> Bits:
        bits = np.asarray(getattr(state, name), dtype=np.int64)
        low, high = jax_rules.split(bits)
        return Bits(jnp.asarray(low.astype(np.uint32)), jnp.asarray(high.astype(np.uint32)))

    size = state.batch_size
    planes = observation.planes(state, state.to_move).astype(bool) if observe else None
    return State(
        current_player=int32("to_move"),
        observation=jnp.asarray(planes) if observe else jnp.zeros((size, *OBSERVATION_SHAPE), dtype=jnp.bool_),
        rewards=jnp.zeros((size, NUM_PLAYERS), dtype=jnp.float32),
        terminated=jnp.asarray(np.asarray(state.winner) != NO_PLAYER),
        truncated=jnp.asarray(np.asarray(state.truncated, dtype=bool)),
        legal_action_mask=jnp.asarray(state.legal_mask() | state.done[:, None]),
        _step_count=int32("ply"),
        _me=pair("me"),
        _opp=pair("opp"),
        _reserve_me=int32("reserve_me"),
        _reserve_opp=int32("reserve_opp"),
        _ply=int32("ply"),
        _winner=int32("winner"),
        _rolled=int32("rolled"),
        _hit=int32("hit"),
        _captured=pair("captured"),
        _legal=pair("legal"),
    )


__all__ = ["ENV_ID", "NUM_PLAYERS", "State", "from_engine", "one_game", "to_engine"]
