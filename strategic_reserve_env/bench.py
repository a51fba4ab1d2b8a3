"""Throughput of uniformly random legal play: ``python -m strategic_reserve_env bench``.

Every ply is counted; the time includes the roll, captures, the random choice
of a legal square, the placement, win detection and auto-reset of finished
games. Dice and choices come from a seeded generator drawn in blocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import engine, turns
from .board import NUM_SQUARES, brief
from .config import Config
from .game import Game
from .reference import ReferenceGame
from .sampling import uniform_square

BLOCK = 256  # plies of dice and uniforms drawn per generator call
MAX_BATCH = 262_144
"""The largest batch measured: each game draws :data:`BLOCK` dice and uniforms at a time (4 KiB a game, 1 GiB
at this size), and the vector env plays as many games as the largest batch."""


def _timed(run_block: Callable[[], int], seconds: float) -> float:
    """Plies per second of ``run_block`` (returns plies played) repeated for about ``seconds``."""
    run_block()  # warm-up
    plies, start = 0, time.perf_counter()
    while True:
        plies += run_block()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return plies / elapsed


class _BlockDice:
    """Rolled squares for every game at every roll, served row by row from a (plies, B) block."""

    def __init__(self, rolls: np.ndarray) -> None:
        self.rolls = rolls  # (plies, B) int64 rolled squares
        self.row = 0

    def next(self, mask: np.ndarray) -> np.ndarray:
        """The next row (every game of the benchmark rolls at every turn, so ``mask`` is all True)."""
        self.row += 1
        return self.rolls[self.row - 1]


def batched(batch_size: int, seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of the batched engine with B games in lockstep, through the turn loop
    (:func:`~strategic_reserve_env.turns.turn`), finished games reset after each ply."""
    rng = np.random.default_rng(seed)
    state = engine.init(config, batch_size)
    everyone = np.ones(batch_size, dtype=bool)

    def run_block() -> int:
        nonlocal state
        dice, uniforms = _BlockDice(engine.draw_rolls(rng, batch_size, BLOCK)), rng.random((BLOCK, batch_size))
        for i in range(BLOCK):
            state = turns.turn(
                state, everyone, dice, lambda position, _, i=i: uniform_square(position.legal, uniforms[i]), config
            )
            state = engine.reset(state, state.done, config)
        return BLOCK * batch_size

    return _timed(run_block, seconds)


def single(seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of one game on the Python-int path (:class:`Game`)."""
    rng = np.random.default_rng(seed)
    game = Game(config)

    def run_block() -> int:
        rolls = engine.draw_rolls(rng, BLOCK).tolist()
        uniforms = rng.random(BLOCK).tolist()
        for rolled, uniform in zip(rolls, uniforms, strict=True):
            game.roll(rolled)
            game.place(uniform_square(game.legal, uniform))
            if game.done:
                game.reset()
        return BLOCK

    return _timed(run_block, seconds)


def aec(seconds: float, config: Config, seed: int = 0, wrapped: bool = True, reward: str = "outcome") -> float:
    """Plies/s of the PettingZoo env (``env()``, or ``raw_env`` if not ``wrapped``) with the reward
    ``reward`` under random masked play through the public API (``last``/``step``)."""
    from .aec_env import env as make_env
    from .aec_env import raw_env

    make = make_env if wrapped else raw_env
    environment = make(reserve=config.reserve, ply_limit=config.ply_limit, start=config.start, reward=reward)
    environment.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def run_block() -> int:
        uniforms = iter(rng.random(BLOCK).tolist())
        plies = 0
        while plies < BLOCK:
            if not environment.agents:
                environment.reset()
            observation, _, terminated, truncated, _ = environment.last()
            if terminated or truncated:
                environment.step(None)
                continue
            legal = observation["action_mask"].nonzero()[0]
            environment.step(int(legal[int(next(uniforms) * len(legal))]))
            plies += 1
        return plies

    return _timed(run_block, seconds)


def vector(num_envs: int, seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s (both sides' placements) of the Gymnasium vector env, learner and opponent random."""
    from .gym_env import StrategicReserveVectorEnv
    from .policies import UniformRandomPolicy

    environment = StrategicReserveVectorEnv(
        num_envs, reserve=config.reserve, ply_limit=config.ply_limit, start=config.start
    )
    environment.reset(seed=seed)
    learner, rng = UniformRandomPolicy(), np.random.default_rng(seed)

    def run_block() -> int:
        before = int(environment.games.state.ply.sum())
        finished = 0
        for _ in range(BLOCK // 8):
            actions = learner.act(None, environment.action_masks(), rng)
            _, _, terminated, truncated, _ = environment.step(actions)
            ended = terminated | truncated
            finished += int(environment.games.state.ply[ended].sum())  # plies of games about to restart
        return int(environment.games.state.ply.sum()) - before + finished

    return _timed(run_block, seconds)


def reference(seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of the plain scalar reference (:mod:`strategic_reserve_env.reference`)."""
    rng = np.random.default_rng(seed)
    game = ReferenceGame.from_config(config)

    def run_block() -> int:
        nonlocal game
        rolls = engine.draw_rolls(rng, BLOCK).tolist()
        uniforms = rng.random(BLOCK).tolist()
        for rolled, uniform in zip(rolls, uniforms, strict=True):
            legal = game.roll(rolled)
            game.place(legal[int(uniform * len(legal))])
            if game.winner is not None:
                game = ReferenceGame.from_config(config)
        return BLOCK

    return _timed(run_block, seconds)


COLUMNS = (12, 8, 32, 12)  # widths of a report row's interface, size, what and rate


def row(interface: str, size: str, what: str, rate: float) -> str:
    """One report line, its columns aligned with every other's (:data:`COLUMNS`)."""
    first, second, third, fourth = COLUMNS
    return f"{interface:<{first}}{size:<{second}}{what:<{third}}{rate:>{fourth},.0f} plies/s"


def run(seconds: float = 2.0, batch_sizes: tuple[int, ...] = (1, 64, 4096), config: Config | None = None) -> list[str]:
    """Measure and return the report lines; ``ValueError`` before any work for a batch size outside
    1..:data:`MAX_BATCH`."""
    for batch_size in batch_sizes:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch sizes must be integers in 1..{MAX_BATCH:,}, got {brief(batch_size)}")
    config = config if config is not None else Config()
    lines = []
    rates = {}
    rates["single"] = single(seconds, config)
    lines.append(row("engine", "B=1", "single-game path (Python ints)", rates["single"]))
    for batch_size in batch_sizes:
        rates[batch_size] = batched(batch_size, seconds, config)
        lines.append(row("engine", f"B={batch_size}", "batched numpy arrays", rates[batch_size]))
    rates["env"] = aec(seconds, config)
    lines.append(row("aec env()", "1 game", "random masked play, public API", rates["env"]))
    rates["raw"] = aec(seconds, config, wrapped=False)
    lines.append(row("aec raw_env", "1 game", "random masked play, public API", rates["raw"]))
    luck_adjusted = aec(seconds, config, wrapped=False, reward="luck_adjusted")
    lines.append(row("aec raw_env", "1 game", "the same, luck_adjusted reward", luck_adjusted))
    vector_envs = max(batch_sizes)
    lines.append(row("vector env", f"{vector_envs}", "random vs random", vector(vector_envs, seconds, config)))
    ref = reference(seconds, config)
    lines.append(row("reference", "B=1", "plain scalar (reference.py)", ref))
    best = max(batch_sizes)
    lines.append(
        f"speed-up vs reference: B={best} x{rates[best] / ref:,.1f}, single-game path x{rates['single'] / ref:,.1f}, "
        f"aec raw_env x{rates['raw'] / ref:.2f}, aec env() x{rates['env'] / ref:.2f}"
    )
    return lines


def jax_random_play(config: Config, batch_size: int, plies: int, observe: bool, seed: int = 0):
    """The JAX path's random play, compiled: ``(run, carry)`` where ``run(carry)`` plays ``plies``
    plies of B games and returns the next carry: each ply :meth:`~strategic_reserve_env.pgx_env.
    StrategicReserve.place` on a uniformly random legal square (:func:`~strategic_reserve_env.pgx_env.
    uniform_action`), a restart of the finished games, and the next ``roll`` (the work of
    :func:`batched`'s turn). The dice and uniforms of a ply are drawn at the end of the ply before
    and carried: XLA's CPU compiler would otherwise compute the draws again inside each use. Without
    ``observe`` the loop never reads the observation, so XLA leaves it out. Needs the extra ``jax``."""
    import jax
    import jax.numpy as jnp

    from .pgx_env import StrategicReserve, uniform_action

    env = StrategicReserve(config=config)
    fresh = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch_size, *x.shape)), env.new_game())
    place, roll = jax.vmap(env.place), jax.vmap(env.roll)

    def draw(state, key):
        """The next ply's actions (a random legal square each) and rolled squares, from two random
        words a game (threefry's cost is most of a ply's; the 16-bit multiply-shift draws are uniform
        to within 36 / 2**16 of each probability)."""
        words = jax.random.bits(key, (2, batch_size), dtype=jnp.uint32) >> 16
        uniforms = words[0].astype(jnp.float32) / (1 << 16)
        squares = ((words[1] * NUM_SQUARES) >> 16).astype(jnp.int32)
        return jax.vmap(uniform_action)(state, uniforms), squares

    def ply(carry, key):
        state, actions, squares = carry
        placed = place(state, actions)
        done = placed.terminated | placed.truncated
        restarted = jax.tree_util.tree_map(
            lambda new, old: jnp.where(done.reshape((-1,) + (1,) * (old.ndim - 1)), new, old), fresh, placed
        )
        rolled = roll(restarted, squares)
        if not observe:
            rolled = rolled.replace(observation=state.observation)
        return (rolled, *draw(rolled, key)), None

    def run(carry):
        state, actions, squares, key = carry
        key, loop = jax.random.split(key)
        (state, actions, squares), _ = jax.lax.scan(ply, (state, actions, squares), jax.random.split(loop, plies))
        return state, actions, squares, key

    key, first, then = jax.random.split(jax.random.PRNGKey(seed), 3)
    state = roll(fresh, jax.random.randint(first, (batch_size,), 0, NUM_SQUARES, dtype=jnp.int32))
    return jax.jit(run), (state, *draw(state, then), key)


def jax_batched(batch_size: int, seconds: float, config: Config, observe: bool, seed: int = 0) -> tuple[float, float]:
    """``(plies/s, compile seconds)`` of :func:`jax_random_play` with B games, :data:`BLOCK` plies a call;
    the compile is timed apart (``jit(...).lower(...).compile()``)."""
    import jax

    run, carry = jax_random_play(config, batch_size, BLOCK, observe, seed)
    began = time.perf_counter()
    compiled = run.lower(carry).compile()
    compile_seconds = time.perf_counter() - began

    def run_block() -> int:
        nonlocal carry
        carry = jax.block_until_ready(compiled(carry))
        return BLOCK * batch_size

    return _timed(run_block, seconds), compile_seconds


JAX_BATCH_SIZES = (256, 4096, 65536)


def run_jax(seconds: float = 2.0, batch_sizes: tuple[int, ...] = JAX_BATCH_SIZES, config: Config | None = None):
    """The JAX path's random play beside the numpy engine's, at each batch size: the report lines,
    yielded as they are measured."""
    import jax

    config = config if config is not None else Config()
    device = jax.devices()[0]
    yield f"jax {jax.__version__} on {device.platform} ({device.device_kind}); numpy engine on the CPU"
    for batch_size in batch_sizes:
        numpy_rate = batched(batch_size, seconds, config)
        yield row("engine", f"B={batch_size}", "batched numpy arrays", numpy_rate)
        for observe in (False, True):
            rate, compiled = jax_batched(batch_size, seconds, config, observe)
            what = "jax, with observation" if observe else "jax, rules and mask"
            yield (
                row("pgx_env", f"B={batch_size}", what, rate)
                + f"  x{rate / numpy_rate:.2f} numpy, compile {compiled:.1f} s"
            )
