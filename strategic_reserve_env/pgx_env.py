"""Strategic Reserve as a pgx environment (``pgx.Env``), in JAX, with an explicit chance API.

:class:`StrategicReserve` follows pgx 2.6's API: ``init(key)``, ``step(state,
action, key)``, ``observe(state, player_id)`` on one game, ``jit``- and
``vmap``-able, and its illegal-action rule (the mover loses: rewards -1 and +1,
``terminated``). The rules are :mod:`strategic_reserve_env.jax_rules`, the
project's rules on pairs of uint32 bitboards, bit for bit the numpy engine's.

A turn is a roll, then a placement. pgx's ``step`` takes both at once and
draws the roll from a key; the chance API takes them apart, for a search
that controls chance (a chance node per roll, with :attr:`chance_probs`):

- :meth:`StrategicReserve.new_game`: the start position, its first roll not yet made;
- :meth:`StrategicReserve.roll`: the chance half (a square 0..35, ``6 * rank + file``);
- :meth:`StrategicReserve.place`: the decision half (the game ends, or waits for the next roll).

``step(state, action, key) == roll(place(state, action), draw_square(key))`` and
``init(key) == roll(new_game(), draw_square(key))``. Both halves take any input
without error or NaN (a search evaluates branches it throws away): a roll on a
square outside 0..35, on a finished game or while a placement is due changes
nothing; a placement that is not a legal square, or made while a roll is due,
is an illegal action (pgx's rule); a finished game stays as it is, with zero
rewards (no transition from it earns anything, as in pgx).

Player ids are the colours: player 0 is Red, player 1 Blue (``RED``, ``BLUE``);
``current_player`` is the mover's. The observation is the project's
``(6, 6, 9)`` planes (:mod:`strategic_reserve_env.observation`) as bool, from
``current_player``'s side (``observe`` gives either side's); the action mask is
the 36 squares, all True once the game is over (pgx's convention, so that a
policy's probabilities can be normalised). Rewards (2,) float32, indexed by
player id, are +1 and -1 on the winning placement and 0 otherwise, also at the
ply limit's truncation.

:func:`to_engine` and :func:`from_engine` convert to and from the numpy
engine's :class:`~strategic_reserve_env.engine.State`, so the project's tools
(records, analysis, rendering, the luck terms) read and continue JAX games.

Needs the optional extra ``jax`` (``pip install "strategic-reserve-env[jax]"``:
jax's CPU build and the pgx version tested).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core as core
from pgx._src.struct import dataclass

from . import engine, jax_rules
from .board import BOARD_SIZE, DEFAULT_RESERVE, FULL, NO_PLAYER, NUM_SQUARES, RED
from .config import DEFAULT_PLY_LIMIT, Config, StartPosition, make_config
from .jax_rules import Bits
from .observation import NUM_PLANES, OBSERVATION_SHAPE
from .rules import HIT_EMPTY, HIT_ENEMY, HIT_FRIENDLY

ENV_ID = "strategic_reserve"
NUM_PLAYERS = 2


@dataclass
class State(core.State):
    """One game (``vmap`` for a batch: every field gains the batch axes in front).

    The position is held from the mover's side, as :class:`strategic_reserve_env.engine.State`
    holds it (the fields of the same names without the underscore), with each bitboard as a
    (low, high) pair of uint32 words (:mod:`strategic_reserve_env.jax_rules`).
    """

    current_player: jax.Array  # () int32 the mover's colour, RED=0 / BLUE=1 (its player id); engine's to_move
    observation: jax.Array  # (6, 6, 9) bool planes from current_player's side (observation.py)
    rewards: jax.Array  # (2,) float32 reward of the latest transition, by player id
    terminated: jax.Array  # () bool: a player has won (or the other lost by an illegal action)
    truncated: jax.Array  # () bool: the ply limit ended the game without a winner
    legal_action_mask: jax.Array  # (36,) bool legal placements; all True once the game is over
    _step_count: jax.Array  # () int32 steps (placements, illegal ones included) since new_game
    _me: jax.Array  # (2,) uint32 bitboard pair: checkers of the player to move
    _opp: jax.Array  # (2,) uint32 bitboard pair: checkers of the other player
    _reserve_me: jax.Array  # () int32 checkers off the board, player to move
    _reserve_opp: jax.Array  # () int32 checkers off the board, other player
    _ply: jax.Array  # () int32 placements made so far
    _winner: jax.Array  # () int32 RED, BLUE, or NO_PLAYER=-1 while nobody has won
    _rolled: jax.Array  # () int32 square of the latest roll, -1 before the first roll
    _hit: jax.Array  # () int32 kind of the latest roll: HIT_EMPTY / HIT_ENEMY / HIT_FRIENDLY
    _captured: jax.Array  # (2,) uint32 bitboard pair: squares the latest roll emptied
    _legal: jax.Array  # (2,) uint32 bitboard pair: legal placements; 0 when no placement is due

    @property
    def env_id(self) -> str:  # type: ignore[override]  # not one of pgx's own ids
        return ENV_ID


#: the engine's fields and the State's that hold them (bitboards as pairs; to_move is current_player)
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


def draw_square(key: jax.Array) -> jax.Array:
    """() int32: the square a roll lands on, uniform over 0..35, drawn from ``key`` (what ``step`` and
    ``init`` roll)."""
    return jax.random.randint(key, (), 0, NUM_SQUARES, dtype=jnp.int32)


def uniform_action(state: State, uniform: jax.Array) -> jax.Array:
    """() int32: the legal square that ``sampling.uniform_square`` picks for ``uniform`` in [0, 1): the
    ``int(uniform * count)``-th legal square in index order, a uniformly random legal placement for a
    uniform ``uniform``; some square where no placement is due. On bitboards, cheaper than a choice
    over the (36,) mask."""
    legal = _bits(state, "_legal")
    k = (jnp.asarray(uniform, dtype=jnp.float32) * jax_rules.count(legal)).astype(jnp.int32)
    return jax_rules.nth_square(legal, k)


def _in_range(value: jax.Array) -> jax.Array:
    """bool: an integer ``value`` (any dtype) is a square index 0..35; compared before any cast, so a
    wide integer cannot wrap into range. ``TypeError`` (when traced) for a value that is not an integer."""
    value = jnp.asarray(value)
    if not jnp.issubdtype(value.dtype, jnp.integer):  # floats and bools: 6.9 is not square 6
        raise TypeError(f"squares and actions must be integer square indices 0..35, got dtype {value.dtype}")
    if jnp.issubdtype(value.dtype, jnp.unsignedinteger):
        return value < NUM_SQUARES
    return (value >= 0) & (value < NUM_SQUARES)


def _square_index(value: jax.Array, valid: jax.Array) -> jax.Array:
    """() int32: ``value`` where ``valid``, else 0 (a safe index)."""
    return jnp.where(valid, jnp.asarray(value), 0).astype(jnp.int32)


def _bits(state: State, name: str) -> Bits:
    return jax_rules.unpack(getattr(state, name))


def _done(state: State) -> jax.Array:
    return state.terminated | state.truncated


def _select(condition: jax.Array, if_true: State, if_false: State, names: tuple[str, ...]) -> State:
    """``if_false`` with the fields ``names`` taken from ``if_true`` where ``condition`` (a scalar per
    game); the other fields are ``if_false``'s (selecting only what changed keeps the observation out)."""
    chosen = {name: jnp.where(condition, getattr(if_true, name), getattr(if_false, name)) for name in names}
    return if_false.replace(**chosen)  # type: ignore[attr-defined]


#: the fields a roll and a placement change (the derived observation and mask are set after them)
_ROLL_CHANGES = ("_opp", "_reserve_opp", "_rolled", "_hit", "_captured", "_legal")
_PLACE_CHANGES = (
    "_me",
    "_opp",
    "_reserve_me",
    "_reserve_opp",
    "current_player",
    "_ply",
    "_winner",
    "terminated",
    "truncated",
    "_legal",
    "rewards",
    "_step_count",
)


def planes(state: State, player_id: jax.Array) -> jax.Array:
    """(6, 6, 9) bool: the planes of ``observation.planes`` from ``player_id``'s side (RED / BLUE);
    the legal plane is empty where ``player_id`` is not to move. Each plane is a bitboard pair first
    (as observation.encode builds them), then all nine are unpacked at once."""
    player_id = jnp.asarray(player_id, dtype=jnp.int32)
    to_move = state.current_player
    own, other = jax_rules.from_side(_bits(state, "_me"), _bits(state, "_opp"), to_move, player_id)
    own_reserve, other_reserve = jax_rules.from_side(state._reserve_me, state._reserve_opp, to_move, player_id)
    none = jax_rules.constant(0)
    legal = jax_rules.select(player_id == to_move, _bits(state, "_legal"), none)
    rolled = jax_rules.select(state._rolled >= 0, jax_rules.square_bits(jnp.maximum(state._rolled, 0)), none)
    full = jax_rules.constant(FULL)
    bitboards = [
        own,
        other,
        legal,
        rolled,
        _bits(state, "_captured"),
        jax_rules.select(state._hit == HIT_ENEMY, full, none),
        jax_rules.select(state._hit == HIT_FRIENDLY, full, none),
        jax_rules.first_squares(own_reserve),
        jax_rules.first_squares(other_reserve),
    ]
    words = Bits(jnp.stack([b.low for b in bitboards]), jnp.stack([b.high for b in bitboards]))  # (9,) each
    return jax_rules.squares(words).T.reshape(OBSERVATION_SHAPE)  # (9, 36) -> (36, 9) -> (6, 6, 9)


def _finished(state: State) -> State:
    """``state`` with its derived fields set from its position: the observation (current_player's
    side) and the action mask."""
    mask = jax_rules.squares(_bits(state, "_legal")) | _done(state)
    observed = planes(state, state.current_player)
    return state.replace(observation=observed, legal_action_mask=mask)  # type: ignore[attr-defined]


_finished_batch = jax.jit(jax.vmap(_finished))  # compiled once per batch size


def _roll(state: State, square: jax.Array) -> State:
    """:meth:`StrategicReserve.roll` without the derived fields."""
    valid = _in_range(square) & ~_done(state) & jax_rules.is_zero(_bits(state, "_legal"))
    index = _square_index(square, valid)
    opp, reserve_opp, captured, legal, hit = jax_rules.roll(
        _bits(state, "_me"), _bits(state, "_opp"), state._reserve_opp, jax_rules.square_bits(index)
    )
    rolled = state.replace(  # type: ignore[attr-defined]
        _opp=jax_rules.pack(opp),
        _reserve_opp=reserve_opp,
        _rolled=index,
        _hit=hit,
        _captured=jax_rules.pack(captured),
        _legal=jax_rules.pack(legal),
    )
    return _select(valid, rolled, state, _ROLL_CHANGES)


def _rewards(winner: jax.Array) -> jax.Array:
    """(2,) float32: +1 for ``winner``, -1 for the other player; zeros for NO_PLAYER."""
    player = jnp.arange(NUM_PLAYERS, dtype=jnp.int32)
    signs = jnp.where(player == winner, 1.0, -1.0).astype(jnp.float32)
    return jnp.where(winner == NO_PLAYER, jnp.float32(0.0), signs)


def _place(state: State, action: jax.Array, ply_limit: int, penalty: float) -> State:
    """:meth:`StrategicReserve.place` without the derived fields."""
    in_range = _in_range(action)
    placed = jax_rules.square_bits(_square_index(action, in_range))
    legal = in_range & ~jax_rules.is_zero(jax_rules.and_(placed, _bits(state, "_legal")))
    after = jax_rules.place(
        _bits(state, "_me"),
        _bits(state, "_opp"),
        state._reserve_me,
        state._reserve_opp,
        state.current_player,
        state._ply,
        placed,
        ply_limit,
    )
    steps = state._step_count + 1
    moved = state.replace(  # type: ignore[attr-defined]
        _me=jax_rules.pack(after.me),
        _opp=jax_rules.pack(after.opp),
        _reserve_me=after.reserve_me,
        _reserve_opp=after.reserve_opp,
        current_player=after.to_move,
        _ply=after.ply,
        _winner=after.winner,
        terminated=after.winner != NO_PLAYER,
        truncated=after.truncated,
        _legal=jax_rules.pack(after.legal),
        rewards=_rewards(after.winner),
        _step_count=steps,
    )
    # pgx's illegal-action rule (engine.forfeit): no checker moves, the mover loses
    loser = state.current_player
    player = jnp.arange(NUM_PLAYERS, dtype=jnp.int32)
    punished = jnp.where(player == loser, jnp.float32(penalty), jnp.float32(-penalty))
    forfeited = state.replace(  # type: ignore[attr-defined]
        _winner=loser ^ 1,
        terminated=jnp.asarray(True),
        _legal=jnp.zeros_like(state._legal),
        rewards=punished,
        _step_count=steps,
    )
    unchanged = state.replace(rewards=jnp.zeros_like(state.rewards))  # type: ignore[attr-defined]
    played = _select(legal, moved, forfeited, _PLACE_CHANGES)
    return _select(_done(state), unchanged, played, _PLACE_CHANGES)


def _start(config: Config) -> State:
    """The start position of ``config`` before its first roll, without the derived fields."""
    start = config.start_position
    red, blue = start.bitboards
    mover = start.mover
    me, opp = (red, blue) if mover == RED else (blue, red)
    reserve_me, reserve_opp = start.reserves if mover == RED else start.reserves[::-1]

    def pair(bits: int) -> jax.Array:
        return jnp.asarray(jax_rules.split(bits), dtype=jnp.uint32)

    def int32(value: int) -> jax.Array:
        return jnp.asarray(value, dtype=jnp.int32)

    return State(
        current_player=int32(mover),
        observation=jnp.zeros(OBSERVATION_SHAPE, dtype=jnp.bool_),
        rewards=jnp.zeros(NUM_PLAYERS, dtype=jnp.float32),
        terminated=jnp.asarray(False),
        truncated=jnp.asarray(False),
        legal_action_mask=jnp.zeros(NUM_SQUARES, dtype=jnp.bool_),
        _step_count=int32(0),
        _me=pair(me),
        _opp=pair(opp),
        _reserve_me=int32(reserve_me),
        _reserve_opp=int32(reserve_opp),
        _ply=int32(0),
        _winner=int32(NO_PLAYER),
        _rolled=int32(-1),
        _hit=int32(HIT_EMPTY),
        _captured=pair(0),
        _legal=pair(0),
    )


class StrategicReserve(core.Env):
    """Strategic Reserve as a ``pgx.Env``, constructed like the project's other envs.

    ``StrategicReserve(reserve=7, ply_limit=1000, start=None)`` (``start``: a
    :class:`~strategic_reserve_env.config.StartPosition` or a mapping of its
    fields), or ``StrategicReserve(config=Config(...))``. Every method works on
    one game; ``jax.vmap`` them for a batch.
    """

    def __init__(
        self,
        reserve: int = DEFAULT_RESERVE,
        ply_limit: int = DEFAULT_PLY_LIMIT,
        start: StartPosition | Mapping | None = None,
        *,
        config: Config | None = None,
    ) -> None:
        super().__init__()
        if config is not None and not isinstance(config, Config):
            raise ValueError(f"config must be a Config, got {type(config).__name__}")
        self.config = config if config is not None else make_config(reserve, ply_limit, start)
        self._start = _start(self.config)

    # -- the chance API ------------------------------------------------------------------------------------

    @property
    def chance_probs(self) -> jax.Array:
        """(36,) float32: the probability of each rolled square, all 1/36 (two fair dice)."""
        return jnp.full(NUM_SQUARES, 1.0 / NUM_SQUARES, dtype=jnp.float32)

    def new_game(self) -> State:
        """The start position, its first roll not yet made (no placement is due: the mask is all False)."""
        return _finished(self._start)

    def roll(self, state: State, square: jax.Array) -> State:
        """The chance half of a turn: the roll on ``square`` (0..35) resolves its captures and sets the
        legal placements. A square outside 0..35, a finished game, or a game whose placement is due
        leaves ``state`` unchanged."""
        return _finished(_roll(state, square))

    def place(self, state: State, action: jax.Array) -> State:
        """The decision half: the mover places on ``action`` (0..35); the game ends (rewards +1 and -1
        on a win, 0 at the ply limit) or waits for the next roll. An action that is not a legal
        placement (out of range, not legal, or no placement due) loses the game for the mover (pgx's
        illegal-action rule); a finished game stays as it is, with zero rewards."""
        return _finished(_place(state, action, self.config.ply_limit, self._illegal_action_penalty))

    # -- pgx's API ------------------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> State:
        """The start position after its first roll, drawn from ``key``: ``roll(new_game(), draw_square(key))``."""
        return _finished(self._init(key))

    def step(self, state: State, action: jax.Array, key: jax.Array | None = None) -> State:  # type: ignore[override]
        """``place(state, action)``, then the next roll drawn from ``key``: ``roll(place(state, action),
        draw_square(key))``. ``key`` is required (the game has dice)."""
        if key is None:
            raise ValueError("StrategicReserve.step needs a key: the next roll is drawn from it")
        placed = _place(state, action, self.config.ply_limit, self._illegal_action_penalty)
        return _finished(_roll(placed, draw_square(key)))

    def observe(self, state: State, player_id: jax.Array | None = None) -> jax.Array:  # type: ignore[override]
        """(6, 6, 9) bool planes from ``player_id``'s side (default: the current player's)."""
        if player_id is None:
            player_id = state.current_player
        return jax.lax.stop_gradient(self._observe(state, player_id))

    def _init(self, key: jax.Array) -> State:
        return _roll(self._start, draw_square(key))

    def _step(self, state: core.State, action: jax.Array, key: jax.Array) -> State:
        assert isinstance(state, State)
        return _roll(_place(state, action, self.config.ply_limit, self._illegal_action_penalty), draw_square(key))

    def _observe(self, state: core.State, player_id: jax.Array) -> jax.Array:
        assert isinstance(state, State)
        return planes(state, player_id)

    @property
    def id(self) -> str:  # type: ignore[override]  # not one of pgx's own ids
        return ENV_ID

    @property
    def version(self) -> str:
        return "v0"

    @property
    def num_players(self) -> int:
        return NUM_PLAYERS

    @property
    def num_actions(self) -> int:
        return NUM_SQUARES

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return OBSERVATION_SHAPE


# -- converters -------------------------------------------------------------------------------------------


def _flat(value: jax.Array, trailing: tuple[int, ...]) -> np.ndarray:
    """A field as numpy, its leading batch axes flattened into one: (B, *trailing)."""
    return np.asarray(value).reshape((-1, *trailing))


def to_engine(state: State) -> engine.State:
    """The numpy engine's State of the same games (any leading batch axes flattened to B; one game is
    B = 1). ``rewards`` and ``_step_count`` have no engine field and are dropped."""
    values = {}
    for name, field in _SCALAR_FIELDS.items():
        values[name] = _flat(getattr(state, field), ()).astype(np.int64)
    for name, field in _BITBOARD_FIELDS.items():
        pair = _flat(getattr(state, field), (2,)).astype(np.int64)
        values[name] = pair[:, 0] | (pair[:, 1] << jax_rules.WORD_BITS)
    values["truncated"] = _flat(state.truncated, ()).astype(bool)
    return engine.State(**values)


def from_engine(state: engine.State) -> State:
    """The games of an engine State as a State with batch axis (B,): the same position, its
    observation and mask derived, zero rewards, and ``_step_count`` taken as the plies made."""

    def int32(name: str) -> jax.Array:
        return jnp.asarray(np.asarray(getattr(state, name), dtype=np.int64).astype(np.int32))

    def pair(name: str) -> jax.Array:
        bits = np.asarray(getattr(state, name), dtype=np.int64)
        words = np.stack([bits & ((1 << jax_rules.WORD_BITS) - 1), bits >> jax_rules.WORD_BITS], axis=-1)
        return jnp.asarray(words.astype(np.uint32))

    size = state.batch_size
    raw = State(
        current_player=int32("to_move"),
        observation=jnp.zeros((size, *OBSERVATION_SHAPE), dtype=jnp.bool_),
        rewards=jnp.zeros((size, NUM_PLAYERS), dtype=jnp.float32),
        terminated=jnp.asarray(np.asarray(state.winner) != NO_PLAYER),
        truncated=jnp.asarray(np.asarray(state.truncated, dtype=bool)),
        legal_action_mask=jnp.zeros((size, NUM_SQUARES), dtype=jnp.bool_),
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
    return _finished_batch(raw)


assert OBSERVATION_SHAPE == (BOARD_SIZE, BOARD_SIZE, NUM_PLANES)

__all__ = [
    "ENV_ID",
    "State",
    "StrategicReserve",
    "draw_square",
    "from_engine",
    "planes",
    "to_engine",
    "uniform_action",
]
