"""The JAX game (strategic_reserve_env.envs.pgx_env, the optional extra `jax`) against the numpy engine.

Compiles are kept few (each costs seconds): one jitted, vmapped roll and place per env of CONFIGS
(module-scoped), shared by every test here; batch shapes are fixed per test.
"""

from __future__ import annotations

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from strategic_reserve_env.core import engine, observation
from strategic_reserve_env.core.board import NUM_SQUARES
from strategic_reserve_env.core.config import Config, StartPosition
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.envs.pgx_env import (
    StrategicReserve,
    _check_state,
    api_test,
    draw_square,
    from_engine,
    planes,
    random_action,
    to_engine,
    uniform_action,
)

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
        """`size` copies of new_game() (a batch)."""
        return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (size, *x.shape)), self.env.new_game())


@pytest.fixture(scope="module")
def compiled() -> dict[str, Compiled]:
    return {name: Compiled(config) for name, config in CONFIGS.items()}


#: uniform_action of every game (the bench's choice), checked against sampling.uniform_square
choose = jax.jit(jax.vmap(uniform_action))
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
    """Games where `done` replaced by `fresh`'s (host-side: no compile)."""

    def pick(new, old):
        new, old = np.asarray(new), np.asarray(old)
        return np.where(done.reshape((-1,) + (1,) * (old.ndim - 1)), new, old)

    return jax.tree_util.tree_map(pick, fresh, state)


@pytest.mark.slow
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
        uniforms = rng.integers(0, 1 << 16, BATCH) / (1 << 16)  # exact in float32 and float64
        actions = uniform_square(expected.legal, uniforms)
        assert np.array_equal(np.asarray(choose(state, jnp.asarray(uniforms, dtype=jnp.float32))), actions)
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


@pytest.mark.slow
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


def random_plies(config: Config, size: int, plies: int, rng: np.random.Generator, last_roll: bool = False):
    """Engine games of `config` after `plies` random plies (and one more roll if `last_roll`)."""
    state = engine.init(config, size)
    for _ in range(plies):
        state = engine.roll(state, engine.draw_rolls(rng, size))
        state = engine.place(state, uniform_square(state.legal, rng.random(size)), config)
    return engine.roll(state, engine.draw_rolls(rng, size)) if last_roll else state


def mixed_batch(seed: int):
    """BATCH games in every phase, as (awaiting a roll, placement due): 64 won, 64 truncated, 32 lost
    by an illegal action (the same in both), 96 live ones before and after their roll."""
    rng = np.random.default_rng(seed)
    won = random_plies(Config(reserve=1), 64, 1, rng)
    truncated = random_plies(Config(reserve=12, ply_limit=4), 64, 4, rng)
    forfeited = engine.forfeit(random_plies(Config(), 32, 3, rng, last_roll=True), np.ones(32, dtype=bool))
    waiting = random_plies(Config(), 96, 5, rng)
    due = engine.roll(waiting, engine.draw_rolls(rng, 96))
    over = [won, truncated, forfeited]
    assert all(part.done.all() for part in over) and not due.done.any()
    return from_engine(engine.concatenate([*over, waiting])), from_engine(engine.concatenate([*over, due]))


BAD_SQUARES = [-1, -(2**31), 36, 37, 2**31 - 1]


def test_any_input_is_safe_and_finished_games_stay(compiled):
    """What a search feeds both halves whatever the phase: squares and actions out of range, a roll
    while a placement is due, a placement while a roll is due, finished games. No error, no NaN; a
    bad roll changes nothing; a bad placement is pgx's illegal action (the mover loses, nothing
    moves); a finished game stays as it is, with zero rewards."""
    game = compiled["reserve-7"]
    waiting, due = mixed_batch(seed=11)
    finished = np.asarray(waiting.terminated | waiting.truncated)
    assert finished.sum() == 160
    rng = np.random.default_rng(12)
    for bad in BAD_SQUARES:
        squares = jnp.full(BATCH, bad, dtype=jnp.int32)
        assert_trees_equal(game.roll(waiting, squares), waiting)  # out of range: nothing happens
        assert_trees_equal(game.roll(due, squares), due)
        forfeited = game.place(due, squares)  # out of range: illegal
        check_forfeit(forfeited, due, np.asarray(due.terminated | due.truncated))
    any_square = jnp.asarray(rng.integers(0, NUM_SQUARES, BATCH), dtype=jnp.int32)
    assert_trees_equal(game.roll(due, any_square), due)  # rolled again before placing: nothing happens
    check_forfeit(game.place(waiting, any_square), waiting, finished)  # no placement due: illegal
    # a legal square that is not legal here
    occupied = to_engine(due).me | to_engine(due).opp  # never a legal placement
    not_legal = uniform_square(occupied, rng.random(BATCH))
    check_forfeit(game.place(due, jnp.asarray(not_legal, dtype=jnp.int32)), due, finished)
    # finished games: a legal-looking roll and placement change nothing
    rolled_finished = game.roll(waiting, any_square)
    kept = restart(rolled_finished, waiting, finished)  # the finished games as they were
    assert_trees_equal(kept, rolled_finished)


def check_forfeit(after, before, finished: np.ndarray) -> None:
    """Live games: the mover lost (rewards -1 for it and +1 for the other, terminated, no checker
    moved, mask all True); finished games: unchanged, zero rewards."""
    for field in dataclasses.fields(after):
        a, b = np.asarray(getattr(after, field.name)), np.asarray(getattr(before, field.name))
        if field.name == "rewards":
            assert not np.isnan(a).any()
            assert np.array_equal(a[finished], np.zeros_like(a[finished]))
            mover = np.asarray(before.current_player)[~finished]
            expected = np.where(np.arange(2) == mover[:, None], -1.0, 1.0).astype(np.float32)
            assert np.array_equal(a[~finished], expected)
        elif field.name in ("_winner", "terminated", "_legal", "legal_action_mask", "observation", "_step_count"):
            assert np.array_equal(a[finished], b[finished]), field.name
        else:
            assert np.array_equal(a, b), field.name
    converted, old = to_engine(after), to_engine(before)
    live = ~finished
    assert np.array_equal(converted.winner[live], old.to_move[live] ^ 1)
    assert np.asarray(after.terminated)[live].all() and np.asarray(after.legal_action_mask)[live].all()
    assert np.array_equal(np.asarray(after._step_count)[live], np.asarray(before._step_count)[live] + 1)


def test_inputs_of_other_integer_types():
    """Unsigned and narrow integers: the range check is made before any cast (one compile for all)."""
    env = StrategicReserve()
    state = env.init(jax.random.PRNGKey(0))
    legal = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    bad = (jnp.uint32(2**32 - 1), jnp.uint8(200), jnp.int8(-1), jnp.int16(36))
    good = (jnp.uint8(legal), jnp.int8(legal), jnp.uint32(legal), jnp.int32(legal))

    @jax.jit
    def outcomes(state):
        placed = [env.place(state, value) for value in bad + good]
        return placed, env.roll(placed[-1], jnp.uint32(2**32 - 1))

    placed, rolled = outcomes(state)
    for value, after in zip(bad, placed[: len(bad)], strict=True):
        assert bool(after.terminated) and int(after._winner) == int(state.current_player) ^ 1, value.dtype
    for after in placed[len(bad) :]:
        assert_trees_equal(after, placed[-1])
    assert not bool(placed[-1].terminated) and int(placed[-1]._ply) == 1
    assert_trees_equal(rolled, placed[-1])  # 2**32 - 1 is not a square (as int32 it would be -1)
    for value in (jnp.float32(3.0), jnp.bool_(True)):
        with pytest.raises(TypeError, match=f"integer square indices 0..35, got dtype {value.dtype}"):
            env.place(state, value)
        with pytest.raises(TypeError, match="integer square indices"):
            env.roll(state, value)


FIELD_TYPES = {
    "current_player": ((), jnp.int32),
    "observation": ((6, 6, 9), jnp.bool_),
    "rewards": ((2,), jnp.float32),
    "terminated": ((), jnp.bool_),
    "truncated": ((), jnp.bool_),
    "legal_action_mask": ((36,), jnp.bool_),
    "_step_count": ((), jnp.int32),
    "_me": ((2,), jnp.uint32),
    "_opp": ((2,), jnp.uint32),
    "_reserve_me": ((), jnp.int32),
    "_reserve_opp": ((), jnp.int32),
    "_ply": ((), jnp.int32),
    "_winner": ((), jnp.int32),
    "_rolled": ((), jnp.int32),
    "_hit": ((), jnp.int32),
    "_captured": ((2,), jnp.uint32),
    "_legal": ((2,), jnp.uint32),
}


def check_types(state, batch: tuple[int, ...] = ()) -> None:
    assert {f.name for f in dataclasses.fields(state)} == set(FIELD_TYPES)
    for name, (shape, dtype) in FIELD_TYPES.items():
        value = getattr(state, name)
        assert value.shape == batch + shape and value.dtype == dtype, (name, value.shape, value.dtype)


@pytest.mark.slow
def test_fixed_dtypes_and_shapes(compiled):
    game = compiled["reserve-7"]
    env = game.env
    check_types(env.new_game())
    check_types(env.init(jax.random.PRNGKey(0)))
    state = env.init(jax.random.PRNGKey(0))
    check_types(env.step(state, jnp.argmax(state.legal_action_mask), jax.random.PRNGKey(1)))
    check_types(from_engine(engine.init(game.config, 3)), (3,))
    waiting, due = mixed_batch(seed=3)
    check_types(waiting, (BATCH,))
    check_types(due, (BATCH,))
    assert env.observe(state, 1).dtype == jnp.bool_ and env.observe(state).shape == (6, 6, 9)


@pytest.mark.slow
def test_conformance_records_through_the_chance_api(compiled):
    """Every conformance record replayed through new_game (of the record's own env), roll and place
    reproduces its trace, read back with to_engine and the project's trace code. The records share one
    batch (padded to BATCH with copies of the first): roll and place depend on the env only through
    the ply limit, which no record reaches."""
    from strategic_reserve_env.core.board import parse_square
    from strategic_reserve_env.files import records

    from conftest import conformance_records, expected_trace

    paths = conformance_records()
    parsed = [records.load_record(path) for path in paths]
    game = compiled["reserve-7"]
    assert all(len(record.plies) < game.config.ply_limit for record in parsed)
    starts = [StrategicReserve(config=record.config).new_game() for record in parsed]
    starts += [starts[0]] * (BATCH - len(starts))
    state = jax.tree_util.tree_map(lambda *games: jnp.stack(games), *starts)
    plies = [[(parse_square(a), parse_square(b)) for a, b in record.plies] for record in parsed]
    traces: list[list[str]] = [[] for _ in parsed]
    for ply in range(max(len(p) for p in plies)):
        playing = [i for i, p in enumerate(plies) if ply < len(p)]
        squares = np.zeros(BATCH, dtype=np.int32)
        actions = np.zeros(BATCH, dtype=np.int32)
        for i in playing:
            squares[i], actions[i] = plies[i][ply]
        rolled = game.roll(state, jnp.asarray(squares))
        state = game.place(rolled, jnp.asarray(actions))
        before, after = to_engine(rolled), to_engine(state)
        reserves, red, blue = after.reserves(), after.red(), after.blue()
        for i in playing:
            entry = records.trace_entry(
                ply + 1,
                int(before.to_move[i]),
                int(before.rolled[i]),
                int(before.hit[i]),
                int(before.captured[i]),
                int(before.legal[i]),
                int(actions[i]),
                int(red[i]),
                int(blue[i]),
                tuple(int(x) for x in reserves[i]),
                int(after.winner[i]),
            )
            traces[i].append(records.trace_line(entry))
    for path, lines in zip(paths, traces, strict=True):
        assert "".join(line + "\n" for line in lines) == expected_trace(path), path.stem


#: the fill's worst shape found (a hill climb over masks, every seed square tried): 24 passes from its
#: seed square c6 (34) until the set stops growing
WORST_BOARD = "XXX.XX" + "X.XX.X" + "XX.X.X" + ".X.X.X" + ".X.X.X" + "XX.XXX"  # ranks 6 .. 1, files a .. f
WORST_SEED = 34


def worst_mask() -> int:
    from strategic_reserve_env.core.board import BIT

    rows = [WORST_BOARD[i : i + 6] for i in range(0, 36, 6)][::-1]  # rank 1 first
    return sum(BIT[6 * rank + file] for rank, row in enumerate(rows) for file, c in enumerate(row) if c == "X")


def fill_passes(seed: int, mask: int) -> int:
    """Passes of rules.group's pass until the set stops growing (the last pass adds nothing)."""
    from strategic_reserve_env.core.board import STRIDE

    passes = 0
    while True:
        grown = (seed | ((seed + mask) ^ mask) | (seed >> 1) | (seed << STRIDE) | (seed >> STRIDE)) & mask
        passes += 1
        if grown == seed:
            return passes
        seed = grown


@pytest.mark.slow
def test_resolve_roll_on_dense_positions_and_the_worst_fills():
    """jax_rules.resolve_roll equals rules.resolve_roll on random positions of every density and on
    the fill's worst shapes, as the mover's group (a friendly hit) and as the opponent's (an enemy
    hit, and enemy checkers touching a friendly group)."""
    from strategic_reserve_env.core import rules
    from strategic_reserve_env.core.board import BIT, BIT_ARRAY, FULL
    from strategic_reserve_env.envs import jax_rules

    mask = worst_mask()
    assert mask & BIT[WORST_SEED] and fill_passes(BIT[WORST_SEED], mask) == 24
    assert fill_passes(BIT[WORST_SEED], mask) > jax_rules.UNROLLED_PASSES  # the while_loop runs
    rng = np.random.default_rng(5)
    size = 4096
    density = rng.uniform(0.3, 1.0, size)[:, None]
    cells = rng.random((size, 36)) < density
    red = rng.random((size, 36)) < 0.5
    me = (np.where(cells & red, BIT_ARRAY, 0)).sum(axis=1)
    opp = (np.where(cells & ~red, BIT_ARRAY, 0)).sum(axis=1)
    squares = rng.integers(0, 36, size)
    # the worst shape: the mover's whole board rolled at its far end, the opponent's rolled, and the
    # opponent's touching a one-checker friendly group at c6's neighbour
    worst = [(mask, FULL ^ mask, WORST_SEED), (FULL ^ mask, mask, WORST_SEED), (BIT[35], mask ^ BIT[34], 35)]
    for i, (m, o, s) in enumerate(worst):
        me[i], opp[i], squares[i] = m, o & ~m, s
    rolled = BIT_ARRAY[squares]
    want = rules.resolve_roll(me, opp, rolled)

    def pair(bits):
        return jax_rules.Bits(jnp.asarray(bits & 0xFFFFFFFF, jnp.uint32), jnp.asarray(bits >> 32, jnp.uint32))

    def joined(bits) -> np.ndarray:
        return np.asarray(bits.low).astype(np.int64) | (np.asarray(bits.high).astype(np.int64) << 32)

    got = jax.jit(jax_rules.resolve_roll)(pair(me), pair(opp), pair(rolled))  # arrays: the fill is elementwise
    assert np.array_equal(joined(got.opp), want[0])
    assert np.array_equal(joined(got.captured), want[1])
    assert np.array_equal(joined(got.legal), want[2])
    assert np.array_equal(np.asarray(got.hit), want[3])
    assert joined(got.captured)[1] == mask  # the whole worst group captured


X64_SCRIPT = """
import hashlib, sys
import jax, jax.numpy as jnp, numpy as np
from strategic_reserve_env.envs.pgx_env import StrategicReserve
assert jax.config.jax_enable_x64 == (sys.argv[1] == "on")
env = StrategicReserve(reserve=5, ply_limit=40)

@jax.jit
def play(key):
    def ply(state, key):
        keys = jax.random.split(key, 33)
        logits = jnp.where(state.legal_action_mask, jnp.float32(0), jnp.float32(-jnp.inf))
        actions = jax.vmap(jax.random.categorical)(keys[1:], logits)
        state = jax.vmap(env.step)(state, actions, jax.random.split(keys[0], 32))
        return state, state
    first = jax.vmap(env.init)(jax.random.split(key, 32))
    return jax.lax.scan(ply, first, jax.random.split(key, 60))

last, states = play(jax.random.PRNGKey(1))
digest = hashlib.sha256()
for leaf in jax.tree_util.tree_leaves(states):
    leaf = np.asarray(leaf)
    digest.update(str(leaf.dtype).encode() + leaf.tobytes())
if jax.config.jax_enable_x64:  # a wide action or square must not wrap into range
    @jax.jit
    def wide(state, legal):
        return env.place(state, legal + 2**32), env.roll(env.place(state, legal), legal + 2**32)
    one = jax.tree_util.tree_map(lambda x: x[0, 0], states)
    legal = jnp.argmax(one.legal_action_mask).astype(jnp.int64)
    illegal, not_rolled = wide(one, legal)
    assert bool(illegal.terminated) and not bool(one.terminated)
    assert int(not_rolled._rolled) == int(one._rolled) and not bool(not_rolled.legal_action_mask.any())
print(digest.hexdigest(), int(states.terminated.sum()), int(states.truncated.sum()))
"""


@pytest.mark.slow
def test_the_same_games_with_x64_on_and_off():
    """The same keys give the same games, field for field and dtype for dtype, whether or not
    jax_enable_x64 is on (each in a fresh interpreter: the flag is global)."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    outputs = []
    for flag in ("on", "off"):
        env = {**os.environ, "JAX_ENABLE_X64": "1" if flag == "on" else "0", "JAX_PLATFORMS": "cpu"}
        done = subprocess.run(
            [sys.executable, "-c", X64_SCRIPT, flag], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
    assert outputs[0] == outputs[1]
    assert int(outputs[0][1]) > 0  # games were won on the way


@pytest.mark.slow
def test_the_projects_api_test_runs_pgx_checks_and_pgx_tools_refuse_the_env():
    """pgx_env.api_test: pgx.api_test's checks on our env (pgx's own fails on the env id alone), including
    the drawing pgx's test ends with; it fails on a state pgx's checks reject. pgx.make refuses the id (the
    README says so)."""
    import pgx

    env = StrategicReserve()
    api_test(env, num=2)
    state = env.init(jax.random.PRNGKey(0))
    over = state.replace(terminated=jnp.asarray(True))  # a finished game whose mask is not all True
    with pytest.raises(AssertionError, match="all True"):
        _check_state(over, env)
    with pytest.raises(AssertionError):
        pgx.api_test(env, num=1)
    with pytest.raises(ValueError):
        pgx.make("strategic_reserve")
    with pytest.raises(ValueError, match="needs a key"):
        env.step(state, 0)


def test_a_public_chance_flag_and_place_at_a_chance_node(compiled):
    """chance_due is True exactly where a roll is due (the mask all False, the game not over); the
    observation's legal plane is empty there; place at a chance node is an illegal action (the mover
    loses), and a roll there is the only move that does anything."""
    game = compiled["reserve-7"]
    waiting, due = mixed_batch(seed=21)
    finished = np.asarray(waiting.terminated | waiting.truncated)
    assert np.array_equal(np.asarray(waiting.chance_due), ~finished)
    assert not np.asarray(due.chance_due).any()
    assert bool(game.env.new_game().chance_due) and not bool(game.env.init(jax.random.PRNGKey(0)).chance_due)
    chance = np.asarray(waiting.chance_due)
    assert not np.asarray(waiting.legal_action_mask)[chance].any()
    legal_plane = observation.PLANE_NAMES.index("legal")
    assert not np.asarray(waiting.observation)[chance][..., legal_plane].any()
    placed = game.place(waiting, jnp.zeros(BATCH, dtype=jnp.int32))  # square 0, what argmax of the mask picks
    check_forfeit(placed, waiting, finished)
    assert not np.asarray(placed.chance_due).any()


def test_states_draw_themselves_with_the_projects_board(tmp_path):
    """to_svg / save_svg / _repr_html_ draw with render.svg: one legal mark per legal square, the
    rolled square marked; a batch draws in HTML and is refused by to_svg with a one-line error."""
    env = StrategicReserve()
    state = env.init(jax.random.PRNGKey(4))
    picture = state.to_svg()
    assert picture.startswith("<svg") and picture.count('class="legal"') == int(state.legal_action_mask.sum())
    assert picture.count('class="rolled"') == 1
    assert state.to_svg(scale=2.0) != picture
    state.save_svg(tmp_path / "board.svg")
    assert (tmp_path / "board.svg").read_text() == picture
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x, x]), state)
    assert batch._repr_html_().count("<svg") == 3 and state._repr_html_().count("<svg") == 1
    with pytest.raises(ValueError, match="to_svg draws one game"):
        batch.to_svg()


def test_integer_types_share_one_compile():
    """Python ints, numpy integers and jax integer arrays of any width give the same result and one
    compile of place (counted by jax's compile events); a ply limit no other test uses makes it fresh."""
    from jax import monitoring

    env = StrategicReserve(ply_limit=77)
    state = env.init(jax.random.PRNGKey(2))
    legal = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    compiles = []

    def count(event: str, duration: float, **_) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    values = (legal, jnp.int32(legal), np.int64(legal), jnp.uint8(legal))
    monitoring.register_event_duration_secs_listener(count)
    try:
        results = [env.place(state, value) for value in values]
    finally:
        monitoring.unregister_event_duration_listener(count)
    assert len(compiles) == 1
    for result in results[1:]:
        assert_trees_equal(result, results[0])
    assert int(results[0]._ply) == 1 and not bool(results[0].terminated)


@pytest.mark.slow
def test_random_action_and_draw_square_are_uniform():
    """random_action picks each legal square with probability 1 / count and draw_square each square with
    1/36 (chi-square over 72,000 keys, p > 1e-4); _below scales a word exactly (against integer arithmetic)."""
    from scipy.stats import chisquare

    from strategic_reserve_env.envs.pgx_env import _below

    env = StrategicReserve()
    state = env.init(jax.random.PRNGKey(9))
    legal = np.flatnonzero(np.asarray(state.legal_action_mask))
    keys = jax.random.split(jax.random.PRNGKey(10), 72_000)
    actions = np.asarray(jax.jit(jax.vmap(random_action, in_axes=(None, 0)))(state, keys))
    assert np.isin(actions, legal).all()
    assert chisquare(np.bincount(actions, minlength=36)[legal]).pvalue > 1e-4
    squares = np.asarray(jax.jit(jax.vmap(draw_square))(keys))
    assert chisquare(np.bincount(squares, minlength=36)).pvalue > 1e-4
    words = np.concatenate([np.random.default_rng(0).integers(0, 2**32, 4096), [0, 1, 2**32 - 1, 2**31]])
    for n in (1, 7, 36):
        got = np.asarray(_below(jnp.asarray(words, dtype=jnp.uint32), n))
        assert np.array_equal(got, (words.astype(object) * n // 2**32).astype(np.int64))


AUTO_RESET_CONFIG = Config(reserve=3, ply_limit=7)  # games end every few plies, by wins and truncations


@pytest.mark.slow
def test_auto_reset_step_is_pgx_auto_reset_and_observation_off_changes_only_the_observation():
    """env.auto_reset_step on an env that does not observe gives the games of pgx.experimental.auto_reset
    (its clearing of flags, its reset, what it keeps) around step and init on an env that does, with the
    rolls of auto_reset_step's key (step's roll, and for a new game the block's second word), field for
    field, the observation aside (all False; observe() builds the same planes), over plies where games end
    by wins and by the ply limit. One jit for both loops."""
    from pgx.experimental import auto_reset

    from strategic_reserve_env.envs.pgx_env import _two_squares

    observing = StrategicReserve(config=AUTO_RESET_CONFIG)
    blind = StrategicReserve(config=AUTO_RESET_CONFIG, observation=False)
    size = 32

    def pgx_wrapper(state, action, key):
        step = auto_reset(
            lambda state, action, _: observing.step(state, action, key),
            lambda _: observing.roll(observing.new_game(), _two_squares(key)[1]),
        )
        return step(state, action, key)

    @jax.jit
    def play(key):
        def ply(carry, key):
            ours, theirs = carry
            act_key, step_key = jax.random.split(key)
            actions = jax.vmap(random_action)(theirs, jax.random.split(act_key, size))
            keys = jax.random.split(step_key, size)
            ours = jax.vmap(blind.auto_reset_step)(ours, actions, keys)
            theirs = jax.vmap(pgx_wrapper)(theirs, actions, keys)
            return (ours, theirs), (ours, theirs, jax.vmap(blind.observe)(ours))

        keys = jax.random.split(key, size)
        first = jax.vmap(blind.init)(keys), jax.vmap(observing.init)(keys)
        return jax.lax.scan(ply, first, jax.random.split(key, 24))[1]

    ours, theirs, observed = play(jax.random.PRNGKey(5))
    assert not np.asarray(ours.observation).any()
    assert np.array_equal(np.asarray(observed), np.asarray(theirs.observation))
    for field in dataclasses.fields(theirs):
        if field.name != "observation":
            got, want = np.asarray(getattr(ours, field.name)), np.asarray(getattr(theirs, field.name))
            assert np.array_equal(got, want), field.name
    assert int(theirs.terminated.sum()) > 0 and int(theirs.truncated.sum()) > 0


@pytest.mark.slow
def test_bench_jax_prints_the_users_loops_beside_numpy(capsys, monkeypatch):
    """`strategic-reserve bench --jax`: the header, the numpy engine's line, then each loop with its ratio
    to the engine and its compile time (two loops here: compiles are slow); a missing extra is one line on
    stderr and no header."""
    from strategic_reserve_env.__main__ import main
    from strategic_reserve_env.speed import jax_speed as bench_jax

    loops = (bench_jax.LOOPS[4], bench_jax.LOOPS[5])  # ours without the observation, pgx's connect_four
    monkeypatch.setattr(bench_jax, "LOOPS", loops)
    monkeypatch.setattr(bench_jax, "PLIES", 4)
    assert main(["bench", "--jax", "--batch-sizes", "16", "--seconds", "0.05"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("random legal play") and lines[1].startswith("jax ")
    assert lines[3].startswith("engine      B=16    batched numpy arrays") and lines[3].endswith("plies/s")
    assert len(lines) == 6
    for line, loop in zip(lines[4:], loops, strict=True):
        assert line.startswith(f"{'pgx_env' if loop.game == 'strategic_reserve' else 'pgx':<12}B=16    {loop.label}")
        assert re.search(r"plies/s  x\d+\.\d\d numpy, compile \d+\.\d s$", line), line
    assert main(["bench", "--batch-sizes", str(2**20)]) == 2  # above the numpy engine's limit without --jax
    captured = capsys.readouterr()
    assert captured.out == "" and "--batch-sizes must be integers in 1..262,144 without --jax" in captured.err
    monkeypatch.setitem(__import__("sys").modules, "pgx", None)  # as if the extra were not installed
    assert main(["bench", "--jax", "--batch-sizes", "16"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "pip install" in captured.err and len(captured.err.splitlines()) == 1


@pytest.mark.slow
def test_a_key_per_step_gives_varied_rolls_and_the_same_keys_every_ply_the_same_roll():
    """pgx's semantics, as the card and `step`'s docstring say: the roll is a function of the step's key, so
    the same keys passed every ply roll each game's same square every ply; a key split for every step gives
    rolls that vary from ply to ply and cover the board."""
    env = StrategicReserve(observation=False)
    size, plies = 32, 12

    def play(key, fresh_keys: bool):
        fixed = jax.random.split(jax.random.fold_in(key, 1), size)

        def ply(state, key):
            act_key, step_key = jax.random.split(key)
            keys = jax.random.split(step_key, size) if fresh_keys else fixed
            state = jax.vmap(env.step)(state, jax.vmap(random_action)(state, jax.random.split(act_key, size)), keys)
            return state, (state._rolled, state.terminated | state.truncated)

        first = jax.vmap(env.init)(jax.random.split(key, size))
        return fixed, jax.lax.scan(ply, first, jax.random.split(key, plies))[1]

    play = jax.jit(play, static_argnames="fresh_keys")
    fixed, (rolled, over) = play(jax.random.PRNGKey(3), False)
    rolled, over = np.asarray(rolled), np.asarray(over)  # (plies, size)
    same = np.asarray(jax.vmap(draw_square)(fixed))
    live = ~over
    assert live.sum() > size  # games went on over several plies
    assert np.array_equal(np.broadcast_to(same, rolled.shape)[live], rolled[live])  # each game: one square, every ply
    _, (varied, _) = play(jax.random.PRNGKey(3), True)
    varied = np.asarray(varied)
    assert all(len(set(varied[:, game])) > 1 for game in range(size))  # every game's rolls vary
    assert len(set(varied.ravel())) == NUM_SQUARES  # and cover the board


@pytest.mark.slow
def test_one_game_methods_refuse_a_batch_and_an_action_that_is_not_a_scalar():
    """Outside `vmap` the methods work on one game: a batched State (`observe`, `step`, `place`, `roll`,
    `auto_reset_step`) and a one-game action of shape (1,) or (1, 1), under `jit` or `vmap` too, are a
    one-line ValueError (a check of shapes at trace time) instead of a state of mixed shapes; the State
    and the env stay usable."""
    env = StrategicReserve(reserve=5, ply_limit=33)
    key = jax.random.PRNGKey(6)
    state = env.init(key)
    batch = jax.vmap(env.init)(jax.random.split(key, 3))
    legal = int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])
    calls = {
        "observe": lambda s, a: env.observe(s),
        "step": lambda s, a: env.step(s, a, key),
        "place": lambda s, a: env.place(s, a),
        "roll": lambda s, a: env.roll(s, a),
        "auto_reset_step": lambda s, a: env.auto_reset_step(s, a, key),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=rf"^{name} works on one game, this State holds a batch of shape \(3,\)"):
            call(batch, legal)
        if name == "observe":
            continue
        for shape in ((1,), (1, 1)):
            action = jnp.full(shape, legal, dtype=jnp.int32)
            message = rf"^{name} takes one square index 0..35 \(a scalar\) for one game, got an array of shape"
            with pytest.raises(ValueError, match=message) as refused:
                call(state, action)
            assert "\n" not in str(refused.value)
            with pytest.raises(ValueError, match=message):
                jax.jit(call)(state, action)
    with pytest.raises(ValueError, match="^step takes one square index"):
        jax.vmap(env.step, in_axes=(0, 0, None))(batch, jnp.full((3, 1), legal, dtype=jnp.int32), key)
    stepped = env.step(state, legal, key)  # the same State and env, a scalar action: one game's step
    assert int(stepped._ply) == 1 and stepped.legal_action_mask.shape == (NUM_SQUARES,)
    assert np.asarray(env.observe(stepped)).shape == observation.OBSERVATION_SHAPE
    batched = jax.vmap(env.step, in_axes=(0, 0, None))(batch, jnp.full(3, legal, dtype=jnp.int32), key)
    assert batched.current_player.shape == (3,) and batched.legal_action_mask.shape == (3, NUM_SQUARES)


def test_pgx_drawing_functions_refuse_our_states_and_the_states_own_save_svg_draws(tmp_path):
    """What the card says of pgx's own drawing: `pgx.save_svg` and `pgx.save_svg_animation` know only pgx's
    games (an AssertionError on our State, nothing written), while `state.save_svg` writes the board."""
    import pgx

    env = StrategicReserve()
    state = env.init(jax.random.PRNGKey(7))
    with pytest.raises(AssertionError):
        pgx.save_svg(state, tmp_path / "pgx.svg")
    with pytest.raises(AssertionError):
        pgx.save_svg_animation([state, state], tmp_path / "pgx_animation.svg")
    assert not list(tmp_path.iterdir())
    state.save_svg(tmp_path / "board.svg")
    assert (tmp_path / "board.svg").read_text() == state.to_svg()


def test_bench_jax_prints_the_guard_ratio_of_the_env_loop_to_connect_four(capsys, monkeypatch):
    """`bench --jax` ends each batch size where both ran with the guard line: the env's own sampler,
    observation and reset over pgx's connect_four in the same run, and whether the goal (x1) holds. The
    rates are given (the loops compile for minutes): the line's arithmetic and verdict are what is held."""
    from strategic_reserve_env.__main__ import main
    from strategic_reserve_env.speed import jax_speed as bench_jax

    for ours, verdict in ((1_370.0, "holds"), (640.0, "FAILS")):
        rates = {bench_jax.GUARD: ours, bench_jax.GUARD_PEER: 1_000.0}
        monkeypatch.setattr(bench_jax, "LOOPS", (bench_jax.GUARD, bench_jax.GUARD_PEER))
        monkeypatch.setattr(bench_jax, "loop_rate", lambda loop, *_, rates=rates, **__: (rates[loop], 0.0))
        assert main(["bench", "--jax", "--batch-sizes", "16", "--seconds", "0.01"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[-1] == (
            f"guard       B=16    pgx_env random_action, obs, env reset x{ours / 1000:.2f} pgx connect_four "
            f"(goal >= x1: {verdict})"
        )
    monkeypatch.setattr(bench_jax, "LOOPS", (bench_jax.GUARD,))  # no peer measured: no guard line
    assert main(["bench", "--jax", "--batch-sizes", "16", "--seconds", "0.01"]) == 0
    assert not any(line.startswith("guard") for line in capsys.readouterr().out.splitlines())
