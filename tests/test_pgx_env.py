"""The JAX game (strategic_reserve_env.pgx_env, the optional extra ``jax``) against the numpy engine.

Compiles are kept few (each costs seconds): one jitted, vmapped roll and place per env of CONFIGS
(module-scoped), shared by every test here; batch shapes are fixed per test.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from strategic_reserve_env import engine, observation
from strategic_reserve_env.board import NUM_SQUARES
from strategic_reserve_env.config import Config, StartPosition
from strategic_reserve_env.pgx_env import StrategicReserve, draw_square, from_engine, planes, to_engine
from strategic_reserve_env.sampling import uniform_square

BATCH = 256
PLIES = 160  # plies per config of the differential test, finished games restarting
#: the envs of the differential test: reserves 1, 7 and 12, a short ply limit (truncations, beside wins at
#: reserve 12), a custom start with Blue to move
CONFIGS = {
    "reserve-1": Config(reserve=1),
    "reserve-7": Config(reserve=7),
    "reserve-12-limit-30": Config(reserve=12, ply_limit=30),
    "blue-starts": Config(ply_limit=200, start=StartPosition(".R..B..RRB...B.R..BB.R...R.B.B...R..", (4, 6), "blue")),
}
ENGINE_FIELDS = [f.name for f in dataclasses.fields(engine.State)]


class Compiled:
    """One env and its jitted, vmapped halves of a turn (compiled once per batch shape)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.env = StrategicReserve(config=config)
        self.roll = jax.jit(jax.vmap(self.env.roll))
        self.place = jax.jit(jax.vmap(self.env.place))

    def new_games(self, size: int):
        """``size`` copies of new_game() (a batch)."""
        return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (size, *x.shape)), self.env.new_game())


@pytest.fixture(scope="module")
def compiled() -> dict[str, Compiled]:
    return {name: Compiled(config) for name, config in CONFIGS.items()}


#: observe for both observers, every game: compiled once for the module
observe_both = jax.jit(jax.vmap(jax.vmap(planes, in_axes=(None, 0)), in_axes=(0, None)))


def assert_same_games(state, expected: engine.State, where: str) -> None:
    """Every engine field of the JAX games equals the engine's, and so do the derived ones: the
    observation from both sides, the mask (all True once over), terminated."""
    converted = to_engine(state)
    for name in ENGINE_FIELDS:
        got, want = getattr(converted, name), getattr(expected, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), f"{where}: field {name}"
    both = np.asarray(observe_both(state, jnp.arange(2, dtype=jnp.int32)))  # (B, 2, 6, 6, 9)
    for observer in (0, 1):
        want = observation.planes(expected, np.full(expected.batch_size, observer))
        assert np.array_equal(both[:, observer].astype(np.int8), want), f"{where}: observation of {observer}"
    assert np.array_equal(np.asarray(state.observation), both[np.arange(expected.batch_size), expected.to_move])
    mask = np.asarray(state.legal_action_mask)
    assert np.array_equal(mask, expected.legal_mask() | expected.done[:, None]), f"{where}: mask"
    assert np.array_equal(np.asarray(state.terminated), expected.winner >= 0), f"{where}: terminated"
    assert np.array_equal(np.asarray(state.truncated), expected.truncated), f"{where}: truncated"
    assert np.array_equal(np.asarray(state.current_player), expected.to_move), f"{where}: current_player"


def restart(state, fresh, done: np.ndarray):
    """Games where ``done`` replaced by ``fresh``'s (host-side: no compile)."""

    def pick(new, old):
        new, old = np.asarray(new), np.asarray(old)
        return np.where(done.reshape((-1,) + (1,) * (old.ndim - 1)), new, old)

    return jax.tree_util.tree_map(pick, fresh, state)


@pytest.mark.parametrize("name", CONFIGS)
def test_lockstep_with_the_engine_every_field_every_ply(compiled, name):
    """Forced rolls and random legal actions through roll and place, and through engine.roll and
    engine.place; every field compared after each half, finished games restarting in both."""
    game = compiled[name]
    config = game.config
    rng = np.random.default_rng(sorted(CONFIGS).index(name))
    fresh = game.new_games(BATCH)
    state, expected = fresh, engine.init(config, BATCH)
    assert_same_games(state, expected, f"{name} new_game")
    wins = truncations = compared = 0
    for ply in range(PLIES):
        squares = engine.draw_rolls(rng, BATCH)
        state = game.roll(state, jnp.asarray(squares, dtype=jnp.int32))
        expected = engine.roll(expected, squares)
        assert_same_games(state, expected, f"{name} ply {ply} roll")
        actions = uniform_square(expected.legal, rng.random(BATCH))
        state = game.place(state, jnp.asarray(actions, dtype=jnp.int32))
        before = expected
        expected = engine.place(expected, actions, config)
        assert_same_games(state, expected, f"{name} ply {ply} place")
        rewards = np.asarray(state.rewards)
        won = expected.winner >= 0
        sign = np.where(np.arange(2) == expected.winner[:, None], 1.0, -1.0) * won[:, None]
        assert np.array_equal(rewards, sign.astype(np.float32)), f"{name} ply {ply}: rewards"
        assert np.array_equal(np.asarray(state._step_count), expected.ply)
        compared += 2 * BATCH
        wins += int(won.sum())
        truncations += int(expected.truncated.sum())
        assert not (before.done).any()
        done = expected.done
        state, expected = restart(state, fresh, done), engine.reset(expected, done, config)
    assert wins > 0
    if config.ply_limit < 100:
        assert truncations > 0
    print(
        f"{name}: {PLIES * BATCH:,} game-plies ({compared:,} halves) compared, {wins} wins, {truncations} truncations"
    )


def test_converters_both_ways(compiled):
    """engine -> JAX -> engine is the identity on every field, for positions in every phase (before a
    roll, placement due, won, truncated); JAX -> engine -> JAX keeps everything but the rewards."""
    rng = np.random.default_rng(7)
    game = compiled["reserve-12-limit-30"]
    config = game.config
    expected = engine.init(config, BATCH)
    state = game.new_games(BATCH)
    seen_done = False
    for _ in range(40):
        squares = engine.draw_rolls(rng, BATCH)
        expected = engine.roll(expected, squares)
        state = game.roll(state, jnp.asarray(squares, dtype=jnp.int32))
        for source in (expected,):
            back = to_engine(from_engine(source))
            for name in ENGINE_FIELDS:
                assert np.array_equal(getattr(back, name), getattr(source, name)), name
        again = from_engine(to_engine(state))
        for field in dataclasses.fields(state):
            if field.name != "rewards":
                assert np.array_equal(np.asarray(getattr(again, field.name)), np.asarray(getattr(state, field.name)))
        actions = uniform_square(expected.legal, rng.random(BATCH))
        expected = engine.place(expected, actions, config)
        state = game.place(state, jnp.asarray(actions, dtype=jnp.int32))
        seen_done |= bool(expected.done.any())
    assert seen_done
    # leading batch axes are flattened; one game is B = 1
    grid = jax.tree_util.tree_map(lambda x: x.reshape((16, 16, *x.shape[1:])), state)
    flat = to_engine(grid)
    assert flat.batch_size == BATCH and np.array_equal(flat.me, to_engine(state).me)
    single = to_engine(game.env.new_game())
    assert single.batch_size == 1 and single.board_strings() == engine.init(config, 1).board_strings()


def test_step_is_place_then_roll_and_init_is_a_roll_of_new_game(compiled):
    game = compiled["reserve-7"]
    env = game.env
    keys = jax.random.split(jax.random.PRNGKey(3), BATCH)
    init = jax.jit(jax.vmap(env.init))(keys)
    squares = jax.vmap(draw_square)(keys)
    assert_trees_equal(init, game.roll(game.new_games(BATCH), squares))
    step = jax.jit(jax.vmap(env.step))
    state = init
    for ply in range(30):
        keys = jax.random.split(jax.random.PRNGKey(100 + ply), BATCH)
        actions = jnp.argmax(state.legal_action_mask, axis=-1).astype(jnp.int32)
        stepped = step(state, actions, keys)
        assert_trees_equal(stepped, game.roll(game.place(state, actions), jax.vmap(draw_square)(keys)))
        state = stepped
    assert bool(state.terminated.any())  # finished games were stepped too (and stay as they are)


def assert_trees_equal(a, b) -> None:
    for field in dataclasses.fields(a):
        x, y = np.asarray(getattr(a, field.name)), np.asarray(getattr(b, field.name))
        assert x.dtype == y.dtype and np.array_equal(x, y), field.name


def test_chance_probs():
    probs = StrategicReserve().chance_probs
    assert probs.shape == (NUM_SQUARES,) and probs.dtype == jnp.float32
    assert np.allclose(np.asarray(probs), 1 / 36) and abs(float(probs.sum()) - 1) < 1e-6
