"""Strategic Reserve as a pgx environment (`pgx.Env`), in JAX, with an explicit chance API.

`StrategicReserve` follows pgx 2.6's API: `init(key)`, ``step(state,
action, key)``, `observe(state, player_id)` on one game, `jit`- and
`vmap`-able, and its illegal-action rule (the mover loses: rewards -1 and +1,
`terminated`). The rules are `strategic_reserve_env.envs.jax_rules`, the
project's rules on pairs of uint32 bitboards, bit for bit the numpy engine's.

A turn is a roll, then a placement. pgx's `step` takes both at once and
draws the roll from a key; the chance API takes them apart, for a search
that controls chance (a chance node per roll, with `chance_probs`):

- `StrategicReserve.new_game`: the start position, its first roll not yet made;
- `StrategicReserve.roll`: the chance half (a square 0..35, `6 * rank + file`);
- `StrategicReserve.place`: the decision half (the game ends, or waits for the next roll).

`step(state, action, key) == roll(place(state, action), draw_square(key))` and
`init(key) == roll(new_game(), draw_square(key))`. Both halves take any input
without error or NaN (a search evaluates branches it throws away): a roll on a
square outside 0..35, on a finished game or while a placement is due changes
nothing; a placement that is not a legal square, or made while a roll is due,
is an illegal action (pgx's rule); a finished game stays as it is, with zero
rewards (no transition from it earns anything, as in pgx).

**At a chance node** (after `new_game` or `place`, the game not over: `state.chance_due` is True) the
public fields read: `current_player` the player whose roll is due (and who places next),
`legal_action_mask` all False (no placement is legal: `place` there is an illegal action and loses the
game), `observation` the position from that player's side with an empty legal plane, `rewards` what the
placement just made earned, `terminated` and `truncated` False. pgx's `step` never stops at a chance
node (it rolls right after the placement); only the chance API does.

Player ids are the colours: player 0 is Red, player 1 Blue (`RED`, `BLUE`);
`current_player` is the mover's. The observation is the project's
`(6, 6, 9)` planes (`strategic_reserve_env.core.observation`) as bool, from
`current_player`'s side (`observe` gives either side's); the action mask is
the 36 squares, all True once the game is over (pgx's convention, so that a
policy's probabilities can be normalised). Rewards (2,) float32, indexed by
player id, are +1 and -1 on the winning placement and 0 otherwise, also at the
ply limit's truncation.

**Stepping without the observation.** `StrategicReserve(observation=False)` never builds it: every
method leaves `state.observation` all False, and `env.observe(state)` builds it when it is wanted
(pgx's own envs build it in every `step`). A loop that reads only the mask and the rewards runs faster.

**Compiles.** The methods are compiled functions, shared by every env of the same ply limit: the first call
of each (per batch shape under `vmap`) compiles it, seconds on a CPU, and later calls reuse it. Squares,
actions and player ids are made int32 before the compiled function sees them, so Python ints, numpy
integers and jax arrays of any integer dtype share one compile. `new_game` and `from_engine`
compile nothing (they are built with numpy).

**pgx's own tools.** `pgx.make("strategic_reserve")` raises `ValueError` (pgx makes its own games only:
construct `StrategicReserve`), and `pgx.api_test(env)` fails on `state.env_id` not being one of
pgx's ids; `api_test(env)` (`strategic_reserve_env.envs.pgx_checks`) runs pgx's checks on this env. States draw
themselves (`state.to_svg()`, `state.save_svg(path)`, and in a notebook `_repr_html_`) with the project's SVG
board (`strategic_reserve_env.envs.pgx_svg`); pgx's functions `pgx.save_svg` and `pgx.save_svg_animation` know
only pgx's games and fail on these States with a bare `AssertionError`.

**pgx's traps.** The roll of `step` and `init` is a function of the key alone: the same keys passed every ply
give the same roll every ply, silently; split a fresh key for every step. `step`, `auto_reset_step`,
`observe`, `roll` and `place` work on one game: a batched State or an action of any shape but a scalar is
refused with a one-line `ValueError` (`jax.vmap` the method for a batch); the check is on shapes, static
under `jit`.

`to_engine` and `from_engine` (`strategic_reserve_env.envs.pgx_state`, beside the `State` they convert) convert to
and from the numpy engine's `State`, so the project's tools (records, analysis, rendering, the luck terms) read
and continue JAX games.

Needs the optional extra `jax` (`pip install "strategic-reserve-env[jax]"`:
jax's CPU build and the pgx version tested).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core as core

from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import BOARD_SIZE, DEFAULT_RESERVE, FULL, NO_PLAYER, NUM_SQUARES
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, Config, StartPosition, make_config
from strategic_reserve_env.core.observation import NUM_PLANES, OBSERVATION_SHAPE
from strategic_reserve_env.core.rules import HIT_ENEMY, HIT_FRIENDLY

from . import jax_rules
from .jax_rules import Bits
from .pgx_checks import api_test
from .pgx_checks import check_state as _check_state  # noqa: F401  # the name tests/test_pgx_env.py imports
from .pgx_state import ENV_ID, NUM_PLAYERS, State, from_engine, one_game, to_engine
from .pgx_svg import HTML_GAMES


def _below(bits: jax.Array, n: jax.Array | int) -> jax.Array:
    """int32 `floor(bits * n / 2**32)` for uint32 `bits` and `0 <= n < 2**16`, exactly, in 32-bit
    words: `bits` scaled to 0..n-1, each value taken by `2**32 / n` (rounded down or up) of the words."""
    n = jnp.asarray(n).astype(jnp.uint32)
    high, low = (bits >> 16) * n, (bits & jnp.uint32(0xFFFF)) * n
    return ((high + (low >> 16)) >> 16).astype(jnp.int32)


def _two_squares(key: jax.Array) -> jax.Array:
    """(2,) int32: two independent rolls from `key`, one threefry block (its two 32-bit words, each scaled
    to 0..35: each square's probability 1/36 to within 2**-32)."""
    return _below(jax.random.bits(key, (2,), dtype=jnp.uint32), NUM_SQUARES)


def draw_square(key: jax.Array) -> jax.Array:
    """() int32: the square a roll lands on, 0..35, drawn from `key` (what `step` and `init` roll):
    a 32-bit word scaled to 0..35, each square's probability 1/36 to within 2**-32."""
    return _two_squares(key)[0]


def uniform_action(state: State, uniform: jax.Array) -> jax.Array:
    """() int32: the legal square that `sampling.uniform_square` picks for `uniform` in [0, 1): the
    `int(uniform * count)`-th legal square in index order, a uniformly random legal placement for a
    uniform `uniform`; some square where no placement is due. On bitboards, cheaper than a choice
    over the (36,) mask."""
    legal = state._legal
    k = (jnp.asarray(uniform, dtype=jnp.float32) * jax_rules.count(legal)).astype(jnp.int32)
    return jax_rules.nth_square(legal, k)


def random_action(state: State, key: jax.Array) -> jax.Array:
    """() int32: a uniformly random legal placement drawn from `key` (each legal square's probability
    `1 / count` to within 2**-32), some square where no placement is due (a finished game ignores it).
    One 32-bit draw and a search of the legal bitboard: the cheap sampler for random play, a small
    fraction of `jax.random.categorical` over 36 logits (which draws 36 Gumbel numbers)."""
    legal = state._legal
    return jax_rules.nth_square(legal, _below(jax.random.bits(key, (), dtype=jnp.uint32), jax_rules.count(legal)))


def reserves(state: State) -> tuple[jax.Array, jax.Array]:
    """int32 reserves `(the player to move's, the other's)`, of one game or of a batch."""
    return state._reserve_me, state._reserve_opp


_NOT_INTEGER = "squares and actions must be integer square indices 0..35, got dtype {}"


def _in_range(value: jax.Array) -> jax.Array:
    """bool: an integer `value` (any dtype) is a square index 0..35; compared before any cast, so a
    wide integer cannot wrap into range. `TypeError` for a value that is not an integer."""
    value = jnp.asarray(value)
    if not jnp.issubdtype(value.dtype, jnp.integer):  # floats and bools: 6.9 is not square 6
        raise TypeError(_NOT_INTEGER.format(value.dtype))
    if jnp.issubdtype(value.dtype, jnp.unsignedinteger):
        return value < NUM_SQUARES
    return (value >= 0) & (value < NUM_SQUARES)


def square_index(value) -> jax.Array:
    """int32: `value` where it is a square index 0..35, else -1 (out of range: not a square), for an
    integer of any type (Python, numpy, jax, traced or not); `TypeError` for floats and bools. Concrete
    values are checked on the host, so what a compiled method receives is always int32 (one compile)."""
    if isinstance(value, jax.core.Tracer):
        return jnp.where(_in_range(value), value.astype(jnp.int32), jnp.int32(-1))
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise TypeError(_NOT_INTEGER.format(array.dtype))
    return jnp.asarray(np.where((array >= 0) & (array < NUM_SQUARES), array, -1).astype(np.int32))


def _one_square(state: State, value, what: str) -> jax.Array:
    """`square_index(value)` for `what` (a method's name) on one game: `ValueError` in one line where
    `state` holds a batch or `value` is not a scalar (an action of shape (1,) is not one game's action).
    Checks of shapes, static under `jit`: nothing at run time."""
    one_game(state, what)
    if np.ndim(value) != 0:
        raise ValueError(
            f"{what} takes one square index 0..35 (a scalar) for one game, got an array of shape "
            f"{np.shape(value)}: jax.vmap it for a batch"
        )
    return square_index(value)


def _player_index(value) -> jax.Array:
    """int32 player id (0 or 1), from any integer type (one compile for all)."""
    if isinstance(value, jax.core.Tracer):
        return value.astype(jnp.int32)
    return jnp.asarray(np.asarray(value).astype(np.int32))


def _done(state: State) -> jax.Array:
    return state.terminated | state.truncated


def _select(condition: jax.Array, if_true: State, if_false: State, names: tuple[str, ...]) -> State:
    """`if_false` with the fields `names` taken from `if_true` where `condition` (a scalar per
    game); the other fields are `if_false`'s (selecting only what changed keeps the observation out)."""
    chosen = {
        name: jax.tree.map(lambda a, b: jnp.where(condition, a, b), getattr(if_true, name), getattr(if_false, name))
        for name in names
    }
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
#: the fields a new game sets before its first roll (the roll sets the rest)
_RESET_FIELDS = ("_me", "_opp", "_reserve_me", "_reserve_opp", "current_player", "_ply", "_winner", "_step_count")


def planes(state: State, player_id: jax.Array) -> jax.Array:
    """(6, 6, 9) bool: the planes of `observation.planes` from `player_id`'s side (RED / BLUE);
    the legal plane is empty where `player_id` is not to move. Each plane is a bitboard pair first
    (as observation.encode builds them), then all nine are unpacked at once."""
    player_id = jnp.asarray(player_id, dtype=jnp.int32)
    to_move = state.current_player
    own, other = jax_rules.from_side(state._me, state._opp, to_move, player_id)
    own_reserve, other_reserve = jax_rules.from_side(state._reserve_me, state._reserve_opp, to_move, player_id)
    none = jax_rules.constant(0)
    legal = jax_rules.select(player_id == to_move, state._legal, none)
    rolled = jax_rules.select(state._rolled >= 0, jax_rules.square_bits(jnp.maximum(state._rolled, 0)), none)
    full = jax_rules.constant(FULL)
    bitboards = [
        own,
        other,
        legal,
        rolled,
        state._captured,
        jax_rules.select(state._hit == HIT_ENEMY, full, none),
        jax_rules.select(state._hit == HIT_FRIENDLY, full, none),
        jax_rules.first_squares(own_reserve),
        jax_rules.first_squares(other_reserve),
    ]
    words = Bits(jnp.stack([b.low for b in bitboards], -1), jnp.stack([b.high for b in bitboards], -1))  # (9,)
    return jax_rules.planes_of(words).reshape(OBSERVATION_SHAPE)  # (36, 9) -> (6, 6, 9)


def _finished(state: State, observe: bool) -> State:
    """`state` with its derived fields set from its position: the action mask, and the observation
    (current_player's side) if `observe` (else it stays as it is: all False)."""
    mask = jax_rules.squares(state._legal) | _done(state)
    if not observe:
        return state.replace(legal_action_mask=mask)  # type: ignore[attr-defined]
    observed = planes(state, state.current_player)
    return state.replace(observation=observed, legal_action_mask=mask)  # type: ignore[attr-defined]


def _roll(state: State, square: jax.Array) -> State:
    """`StrategicReserve.roll` without the derived fields, for an int32 `square` (-1: not a square)."""
    valid = (square >= 0) & state.chance_due
    index = jnp.where(valid, square, 0)
    opp, reserve_opp, captured, legal, hit = jax_rules.roll(
        state._me, state._opp, state._reserve_opp, jax_rules.square_bits(index)
    )
    rolled = state.replace(  # type: ignore[attr-defined]
        _opp=opp,
        _reserve_opp=reserve_opp,
        _rolled=index,
        _hit=hit,
        _captured=captured,
        _legal=legal,
    )
    return _select(valid, rolled, state, _ROLL_CHANGES)


def _rewards(winner: jax.Array) -> jax.Array:
    """(2,) float32: +1 for `winner`, -1 for the other player; zeros for NO_PLAYER."""
    player = jnp.arange(NUM_PLAYERS, dtype=jnp.int32)
    signs = jnp.where(player == winner, 1.0, -1.0).astype(jnp.float32)
    return jnp.where(winner == NO_PLAYER, jnp.float32(0.0), signs)


def _place(state: State, action: jax.Array, ply_limit: int, penalty: float) -> State:
    """`StrategicReserve.place` without the derived fields, for an int32 `action` (-1: not a square)."""
    placed = jax_rules.square_bits(jnp.maximum(action, 0))
    legal = (action >= 0) & ~jax_rules.is_zero(jax_rules.and_(placed, state._legal))
    after = jax_rules.place(
        state._me,
        state._opp,
        state._reserve_me,
        state._reserve_opp,
        state.current_player,
        state._ply,
        placed,
        ply_limit,
    )
    steps = state._step_count + 1
    moved = state.replace(  # type: ignore[attr-defined]
        _me=after.me,
        _opp=after.opp,
        _reserve_me=after.reserve_me,
        _reserve_opp=after.reserve_opp,
        current_player=after.to_move,
        _ply=after.ply,
        _winner=after.winner,
        terminated=after.winner != NO_PLAYER,
        truncated=after.truncated,
        _legal=after.legal,
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
        _legal=jax.tree.map(jnp.zeros_like, state._legal),
        rewards=punished,
        _step_count=steps,
    )
    unchanged = state.replace(rewards=jnp.zeros_like(state.rewards))  # type: ignore[attr-defined]
    played = _select(legal, moved, forfeited, _PLACE_CHANGES)
    return _select(_done(state), unchanged, played, _PLACE_CHANGES)


# -- the compiled methods: one compile per (ply limit, penalty, observation) and argument shapes, shared by envs


@functools.partial(jax.jit, static_argnames=("observe",))
def _roll_compiled(state: State, square: jax.Array, observe: bool) -> State:
    return _finished(_roll(state, square), observe)


@functools.partial(jax.jit, static_argnames=("ply_limit", "penalty", "observe"))
def _place_compiled(state: State, action: jax.Array, ply_limit: int, penalty: float, observe: bool) -> State:
    return _finished(_place(state, action, ply_limit, penalty), observe)


@functools.partial(jax.jit, static_argnames=("ply_limit", "penalty", "observe"))
def _step_compiled(
    state: State, action: jax.Array, key: jax.Array, ply_limit: int, penalty: float, observe: bool
) -> State:
    return _finished(_roll(_place(state, action, ply_limit, penalty), draw_square(key)), observe)


@functools.partial(jax.jit, static_argnames=("ply_limit", "penalty", "observe"))
def _auto_reset_compiled(
    state: State, action: jax.Array, key: jax.Array, start: State, ply_limit: int, penalty: float, observe: bool
) -> State:
    """`StrategicReserve.auto_reset_step`: a finished game's flags are cleared before the placement (it
    is a new game already), a game the placement ends gets `start`'s position, and one roll follows: the
    first word of `key`'s block (`step`'s roll) or, for a new game, the second."""
    cleared = state.replace(  # type: ignore[attr-defined]
        terminated=jnp.asarray(False), truncated=jnp.asarray(False), rewards=jnp.zeros_like(state.rewards)
    )
    placed = _place(
        _select(_done(state), cleared, state, ("terminated", "truncated", "rewards")), action, ply_limit, penalty
    )
    over = _done(placed)
    restarted = _select(over, start, placed, _RESET_FIELDS + ("_legal",))
    restarted = restarted.replace(  # type: ignore[attr-defined]
        terminated=jnp.asarray(False), truncated=jnp.asarray(False)
    )
    step_square, reset_square = _two_squares(key)
    rolled = _finished(_roll(restarted, jnp.where(over, reset_square, step_square)), observe)
    return rolled.replace(terminated=placed.terminated, truncated=placed.truncated)  # type: ignore[attr-defined]


@functools.partial(jax.jit, static_argnames=("observe",))
def _init_compiled(start: State, key: jax.Array, observe: bool) -> State:
    return _finished(_roll(start, draw_square(key)), observe)


_planes_compiled = jax.jit(planes)


def _start(config: Config, observe: bool) -> State:
    """The start position of `config` before its first roll, derived fields set (built with numpy)."""
    one = from_engine(engine.init(config, 1), observe)
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x[0]), one)


class StrategicReserve(core.Env):
    """Strategic Reserve as a `pgx.Env`, constructed like the project's other envs.

    `StrategicReserve(reserve=7, ply_limit=1000, start=None, observation=True)` (`start`: a
    `StartPosition` or a mapping of its
    fields), or `StrategicReserve(config=Config(...))`. Every method works on
    one game; `jax.vmap` them for a batch. `observation=False`: the methods leave
    `state.observation` all False, and `observe` builds it when wanted (a faster step).
    """

    def __init__(
        self,
        reserve: int = DEFAULT_RESERVE,
        ply_limit: int = DEFAULT_PLY_LIMIT,
        start: StartPosition | Mapping | None = None,
        *,
        config: Config | None = None,
        observation: bool = True,
    ) -> None:
        super().__init__()
        if config is not None and not isinstance(config, Config):
            raise ValueError(f"config must be a Config, got {type(config).__name__}")
        if not isinstance(observation, bool):
            raise ValueError(f"observation must be True or False, got {observation!r}")
        self.config = config if config is not None else make_config(reserve, ply_limit, start)
        self.observes = observation
        self._start = _start(self.config, observation)
        self._static = {
            "ply_limit": self.config.ply_limit,
            "penalty": float(self._illegal_action_penalty),
            "observe": observation,
        }

    # -- the chance API ------------------------------------------------------------------------------------

    @property
    def chance_probs(self) -> jax.Array:
        """(36,) float32: the probability of each rolled square, all 1/36 (two fair dice)."""
        return jnp.full(NUM_SQUARES, 1.0 / NUM_SQUARES, dtype=jnp.float32)

    def new_game(self) -> State:
        """The start position, its first roll not yet made: a chance node (`chance_due`; the mask is all
        False). Built once, with numpy: nothing is compiled."""
        return self._start

    def roll(self, state: State, square: jax.Array) -> State:
        """The chance half of a turn: the roll on `square` (0..35, any integer type) resolves its captures
        and sets the legal placements. A square outside 0..35, a finished game, or a game whose placement
        is due (`chance_due` False) leaves `state` unchanged."""
        return _roll_compiled(state, _one_square(state, square, "roll"), observe=self.observes)

    def place(self, state: State, action: jax.Array) -> State:
        """The decision half: the mover places on `action` (0..35, any integer type); the game ends
        (rewards +1 and -1 on a win, 0 at the ply limit) or waits for the next roll (a chance node). An
        action that is not a legal placement (out of range, not legal, or made at a chance node, where no
        placement is legal) loses the game for the mover (pgx's illegal-action rule: rewards -1 and +1,
        `terminated`); a finished game stays as it is, with zero rewards."""
        return _place_compiled(state, _one_square(state, action, "place"), **self._static)

    # -- pgx's API ------------------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> State:
        """The start position after its first roll, drawn from `key`: `roll(new_game(), draw_square(key))`."""
        return _init_compiled(self._start, key, observe=self.observes)

    def step(self, state: State, action: jax.Array, key: jax.Array | None = None) -> State:  # type: ignore[override]
        """`place(state, action)`, then the next roll drawn from `key`: ``roll(place(state, action),
        draw_square(key))``. `key` is required (the game has dice).

        The roll is a function of `key` alone (pgx's semantics): the same key gives the same roll, so a
        loop that passes the same keys every ply rolls the same square every ply. Split a fresh key for
        every step (`key, step_key = jax.random.split(key)`).

        One game: `state` of one game and a scalar `action` (`ValueError` in one line otherwise);
        `jax.vmap(env.step)` steps a batch."""
        if key is None:
            raise ValueError("StrategicReserve.step needs a key: the next roll is drawn from it")
        return _step_compiled(state, _one_square(state, action, "step"), key, **self._static)

    def auto_reset_step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """`step` with pgx's auto-reset (`pgx.experimental.auto_reset(env.step, env.init)`), for less: a
        game the step does not end is `step(state, action, key)`'s; a game it ends comes back as a new
        game after its first roll (`terminated`, `truncated` and `rewards` kept from the step, as pgx's
        wrapper keeps them; the next call plays it). One roll and one threefry block a step, instead of a
        step, an `init` on a split key and a selection over every field: the same games in distribution as
        pgx's wrapper (whose split key gives other rolls)."""
        return _auto_reset_compiled(
            state, _one_square(state, action, "auto_reset_step"), key, self._start, **self._static
        )

    def observe(self, state: State, player_id: jax.Array | None = None) -> jax.Array:  # type: ignore[override]
        """(6, 6, 9) bool planes from `player_id`'s side (default: the current player's), of one game
        (`ValueError` in one line for a batch: `jax.vmap(env.observe)`)."""
        one_game(state, "observe")
        if player_id is None:
            player_id = state.current_player
        return jax.lax.stop_gradient(_planes_compiled(state, _player_index(player_id)))

    def _init(self, key: jax.Array) -> State:
        return self.init(key)

    def _step(self, state: core.State, action: jax.Array, key: jax.Array) -> State:
        assert isinstance(state, State)
        return self.step(state, action, key)

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


assert OBSERVATION_SHAPE == (BOARD_SIZE, BOARD_SIZE, NUM_PLANES)

__all__ = [
    "ENV_ID",
    "HTML_GAMES",
    "State",
    "StrategicReserve",
    "api_test",
    "draw_square",
    "from_engine",
    "planes",
    "random_action",
    "reserves",
    "square_index",
    "to_engine",
    "uniform_action",
]
