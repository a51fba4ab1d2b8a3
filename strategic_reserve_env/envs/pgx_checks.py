"""pgx's checks of an env (`pgx.api_test`) run on the JAX env, whose `env_id` pgx's own test rejects.

`pgx.api_test(env)` fails on `state.env_id` not being one of pgx's ids; `api_test(env)` here runs the
same checks with the env id compared to the env's own. Needs the optional extra `jax`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core as core

from .pgx_state import State

PUBLIC_FIELDS = frozenset({"current_player", "observation", "rewards", "terminated", "truncated", "legal_action_mask"})
"""The public fields of a pgx State: any other field of this env's State is private (starts with `_`)."""
SINGLE_SEED = 849020
"""The key of the games played one by one (the key of `pgx.api_test`'s)."""
BATCH_SEED = 9999
"""The key of the batched games (the key of `pgx.api_test`'s)."""


def check_state(state: State, env: core.Env) -> None:
    """pgx's per-state checks (`pgx._src.api_test`), the env id checked against `env`'s.
    `AssertionError` on the first that fails."""
    assert state.env_id == env.id, state.env_id
    assert state.current_player.dtype == jnp.int32, state.current_player.dtype
    assert state.terminated.dtype == jnp.bool_, state.terminated.dtype
    assert state.rewards.dtype == jnp.float32, state.rewards.dtype
    assert state.legal_action_mask.dtype == jnp.bool_, state.legal_action_mask.dtype
    public = {name for name in vars(state) if not name.startswith("_")}
    assert public <= PUBLIC_FIELDS, f"public fields beyond pgx's: {sorted(public - PUBLIC_FIELDS)}"
    assert bool(jnp.all(state.current_player >= 0)), "current_player must be >= 0"
    over = np.asarray(state.terminated | state.truncated)
    assert np.asarray(state.legal_action_mask)[over].all(), "the mask of a finished game must be all True"


def api_test(env: core.Env, num: int = 10, batch_size: int = 4) -> None:
    """`pgx.api_test`'s checks on `env` (a `StrategicReserve`; pgx's own rejects it only because `env_id`
    is not one of pgx's ids): `num` games played one by one with pgx's `act_randomly` (after `init`: a
    non-empty mask, `_step_count` 0, zero rewards; after every step: `current_player` int32 and >= 0,
    `terminated` bool, `rewards` float32, the mask bool, no public field beyond pgx's six,
    `_step_count` up by one, the mask all True once over), the last state drawn as SVG; then `num`
    batches of `batch_size` games under `vmap` until every game is over. `AssertionError` on the
    first check that fails."""
    from pgx.experimental.utils import act_randomly

    init, step, act = jax.jit(env.init), jax.jit(env.step), jax.jit(act_randomly)
    rng = jax.random.PRNGKey(SINGLE_SEED)
    for _ in range(num):
        rng, key = jax.random.split(rng)
        state = init(key)
        assert bool(state.legal_action_mask.any()), "legal_action_mask at init state cannot be zero"
        assert int(state._step_count) == 0 and not np.asarray(state.rewards).any()
        check_state(state, env)
        steps = 0
        while not bool(state.terminated | state.truncated):
            rng, key, roll_key = jax.random.split(rng, 3)
            state = step(state, act(key, state.legal_action_mask[None])[0], roll_key)  # act_randomly: batched
            steps += 1
            assert int(state._step_count) == steps, (int(state._step_count), steps)
            check_state(state, env)
    assert state.to_svg().startswith("<svg")
    batch_init, batch_step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    rng = jax.random.PRNGKey(BATCH_SEED)
    for _ in range(num):
        rng, key = jax.random.split(rng)
        state = batch_init(jax.random.split(key, batch_size))
        while not bool((state.terminated | state.truncated).all()):
            rng, key, roll_key = jax.random.split(rng, 3)
            state = batch_step(state, act(key, state.legal_action_mask), jax.random.split(roll_key, batch_size))
        check_state(state, env)


__all__ = ["BATCH_SEED", "PUBLIC_FIELDS", "SINGLE_SEED", "api_test", "check_state"]
