"""Throughput of the JAX env in the loop a pgx user writes: `strategic-reserve bench --jax`.

Every loop is the one pgx's README drives its games with: B games, one key per game per step,
`jax.vmap(env.step)(state, action, keys)`, finished games replaced by a new game, `PLIES` plies in a
`lax.fori_loop` under one `jit`, timed beside the numpy engine's batched random play
(`strategic_reserve_env.speed.engine_speed.batched`) in the same process. The loops differ in what a user may choose:

- the action: `jax.random.categorical` over the legal mask (pgx's examples), or the env's cheap sampler
  `random_action` (one 32-bit draw a game);
- the observation: built by every step (`StrategicReserve()`), or not (`StrategicReserve(observation=False)`;
  `env.observe(state)` builds it when wanted);
- the reset: `pgx.experimental.auto_reset(env.step, env.init)` (a step, an `init` and a selection over every
  field), or the env's `auto_reset_step` (one roll).

pgx's `connect_four` and `backgammon` run in the same loop (categorical, auto-reset by `init`) for scale.
Compile times are printed apart. At each batch size where both were measured, a `guard` line gives the ratio of
`GUARD` (the env's sampler, the observation, the env's reset) to pgx's connect_four (`GUARD_PEER`) in the same
run, against its goal `GUARD_GOAL`. Needs the extra `jax`; this module imports jax only when it measures.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import NamedTuple

from strategic_reserve_env.core.config import Config

from .engine_speed import _timed, batched, row

PLIES = 64
"""Plies of every game per compiled call (one `fori_loop`)."""
BATCH_SIZES = (256, 4096, 65536)
"""`bench --jax`'s default batch sizes."""
MAX_BATCH = 1 << 20
"""The largest batch `bench --jax` measures (the numpy engine's line stops at `bench.MAX_BATCH`)."""
DEVICES = ("cpu", "gpu")


class Loop(NamedTuple):
    """One user's loop: which game, how actions are drawn, whether steps observe, how games restart."""

    label: str  # what the report line says
    game: str  # "strategic_reserve" or a pgx env id
    sampler: str  # "categorical" or "random_action"
    observe: bool
    reset: str  # "pgx" (auto_reset by init) or "env" (auto_reset_step)
    max_batch: int = MAX_BATCH  # larger batches are not measured (a call would take minutes on a CPU)


LOOPS = (
    Loop("categorical, obs, pgx reset", "strategic_reserve", "categorical", True, "pgx"),
    Loop("categorical, no obs, pgx reset", "strategic_reserve", "categorical", False, "pgx"),
    Loop("random_action, obs, pgx reset", "strategic_reserve", "random_action", True, "pgx"),
    Loop("random_action, obs, env reset", "strategic_reserve", "random_action", True, "env"),
    Loop("random_action, no obs, env reset", "strategic_reserve", "random_action", False, "env"),
    Loop("connect_four, categorical", "connect_four", "categorical", True, "pgx"),
    Loop("backgammon, categorical", "backgammon", "categorical", True, "pgx", max_batch=4096),
)
"""The loops of `bench --jax`, in report order."""
GUARD = LOOPS[3]
"""The guarded loop: the JAX env with its own sampler, the observation and its own auto-reset."""
GUARD_PEER = LOOPS[5]
"""What the guarded loop is held against: pgx's connect_four in pgx's loop."""
GUARD_GOAL = 1.0
"""The guard (issue 42): `GUARD`'s plies/s at least this many times `GUARD_PEER`'s in the same run."""


def user_loop(loop: Loop, config: Config, batch_size: int, plies: int, seed: int = 0):
    """`(run, carry)`: `run(carry)` plays `plies` plies of `batch_size` games of `loop` (jitted) and
    returns the next carry `(state, key)`."""
    import jax
    import jax.numpy as jnp
    import pgx
    from pgx.experimental import auto_reset

    from strategic_reserve_env.envs.pgx_env import StrategicReserve, random_action

    if loop.game == "strategic_reserve":
        env = StrategicReserve(config=config, observation=loop.observe)
    else:
        env = pgx.make(loop.game)
    step = env.auto_reset_step if loop.reset == "env" else auto_reset(env.step, env.init)
    batch_step = jax.vmap(step)

    def choose(state, key):
        if loop.sampler == "random_action":
            return jax.vmap(random_action)(state, jax.random.split(key, batch_size))
        logits = jnp.where(state.legal_action_mask, jnp.float32(0.0), jnp.float32(-jnp.inf))
        return jax.random.categorical(key, logits, axis=-1)

    def ply(_, carry):
        state, key = carry
        key, act_key, step_key = jax.random.split(key, 3)
        actions = choose(state, act_key)
        return batch_step(state, actions, jax.random.split(step_key, batch_size)), key

    def run(carry):
        return jax.lax.fori_loop(0, plies, ply, carry)

    key, init_key = jax.random.split(jax.random.PRNGKey(seed))
    state = jax.vmap(env.init)(jax.random.split(init_key, batch_size))
    return jax.jit(run), (state, key)


def loop_rate(loop: Loop, config: Config, batch_size: int, seconds: float, seed: int = 0) -> tuple[float, float]:
    """`(plies/s, compile seconds)` of `user_loop`; the compile is timed apart."""
    import jax

    plies = PLIES
    run, carry = user_loop(loop, config, batch_size, plies, seed)
    began = time.perf_counter()
    compiled = run.lower(carry).compile()
    compile_seconds = time.perf_counter() - began

    def run_block() -> int:
        nonlocal carry
        carry = jax.block_until_ready(compiled(carry))
        return plies * batch_size

    return _timed(run_block, seconds), compile_seconds


def mctx_rate(agent, batch_size: int, seconds: float, seed: int = 0) -> tuple[float, float]:
    """`(decisions/s, first call's seconds)` of `agent` (the command loads it: `mctx:simulations=N`) on
    `batch_size` positions after a few random plies (the first call compiles; its time is given apart)."""
    import numpy as np

    from strategic_reserve_env.core import engine
    from strategic_reserve_env.core.board import bitboards_to_array
    from strategic_reserve_env.core.observation import planes
    from strategic_reserve_env.core.sampling import uniform_square

    rng = np.random.default_rng(seed)
    state = engine.init(Config(), batch_size)
    for _ in range(6):
        state = engine.roll(state, engine.draw_rolls(rng, batch_size))
        state = engine.place(state, uniform_square(state.legal, rng.random(batch_size)), Config())
    state = engine.roll(state, engine.draw_rolls(rng, batch_size))
    observations, masks = planes(state, state.to_move), bitboards_to_array(state.legal)
    began = time.perf_counter()
    agent.act(observations, masks, rng)
    first = time.perf_counter() - began
    return _timed(lambda: len(agent.act(observations, masks, rng)), seconds), first


def guard_line(batch_size: int, ratio: float) -> str:
    """The guard's report line: `ratio` (`GUARD`'s plies/s over `GUARD_PEER`'s, same run) against
    `GUARD_GOAL`, and whether it holds."""
    verdict = "holds" if ratio >= GUARD_GOAL else "FAILS"
    return (
        f"{'guard':<12}B={batch_size:<6}pgx_env {GUARD.label} x{ratio:.2f} pgx {GUARD_PEER.game} "
        f"(goal >= x{GUARD_GOAL:.0f}: {verdict})"
    )


def check_device(device: str):
    """The jax device `device` ("cpu" or "gpu") names; `ValueError` in one line when jax has none (or the
    extra `jax` is missing: `MissingExtraError`)."""
    from strategic_reserve_env.extras import needs_extra

    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    try:
        import jax
        import pgx  # noqa: F401  # the loops need both
    except ModuleNotFoundError as error:
        missing = needs_extra(error, "bench --jax")
        if missing is None:
            raise
        raise missing from error
    try:
        return jax.devices(device)[0]
    except RuntimeError as error:
        raise ValueError(f"jax sees no {device} device ({error})") from error


def run(
    seconds: float = 2.0,
    batch_sizes: tuple[int, ...] = BATCH_SIZES,
    config: Config | None = None,
    device: str = "cpu",
    loops: tuple[Loop, ...] | None = None,
    mctx_batch: int | None = None,
    mctx_agent=None,
) -> Iterator[str]:
    """The report lines, yielded as they are measured: at each batch size the numpy engine's line (up to
    `bench.MAX_BATCH`), then each of `loops` on `device` with its ratio to the engine and its compile
    time (`loops` default: `LOOPS`), and the `guard` line where `GUARD` and `GUARD_PEER` both ran; then,
    given `mctx_batch`, the decisions/s of `mctx_agent` (a loaded agent: this layer loads none)."""
    import jax

    from .engine_speed import MAX_BATCH as NUMPY_MAX_BATCH

    config = config if config is not None else Config()
    loops = loops if loops is not None else LOOPS
    target = check_device(device)
    yield f"jax {jax.__version__} on {target.platform} ({target.device_kind}); numpy engine on the CPU"
    yield f"each jax line: {PLIES} plies of B games in one jit (fori_loop), a key per game per step"
    with jax.default_device(target):
        for batch_size in batch_sizes:
            numpy_rate = batched(batch_size, seconds, config) if batch_size <= NUMPY_MAX_BATCH else None
            if numpy_rate is not None:
                yield row("engine", f"B={batch_size}", "batched numpy arrays", numpy_rate)
            rates = {}
            for loop in loops:
                interface = "pgx_env" if loop.game == "strategic_reserve" else "pgx"
                if batch_size > loop.max_batch:
                    yield f"{interface:<12}B={batch_size:<6}{loop.label}: not measured above B={loop.max_batch}"
                    continue
                rate, compiled = loop_rate(loop, config, batch_size, seconds)
                rates[loop] = rate
                ratio = f"x{rate / numpy_rate:.2f} numpy, " if numpy_rate else ""
                yield row(interface, f"B={batch_size}", loop.label, rate) + f"  {ratio}compile {compiled:.1f} s"
            if GUARD in rates and GUARD_PEER in rates:
                yield guard_line(batch_size, rates[GUARD] / rates[GUARD_PEER])
        if mctx_batch is not None and mctx_agent is not None:
            rate, first = mctx_rate(mctx_agent, mctx_batch, seconds)
            line = row("mctx agent", f"B={mctx_batch}", getattr(mctx_agent, "name", "mctx"), rate)
            yield line.replace("plies/s", "decisions/s") + f"  first call {first:.1f} s"


__all__ = [
    "BATCH_SIZES",
    "GUARD",
    "GUARD_GOAL",
    "GUARD_PEER",
    "LOOPS",
    "Loop",
    "MAX_BATCH",
    "PLIES",
    "check_device",
    "guard_line",
    "loop_rate",
    "mctx_rate",
    "run",
    "user_loop",
]
