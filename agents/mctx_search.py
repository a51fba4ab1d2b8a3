"""The game's true model as mctx's recurrent functions: Stochastic MuZero search with chance nodes, inside `jit`.

mctx's `mctx.stochastic_muzero_policy` alternates two kinds of node: a *decision* node (a position just
after a roll, a placement due) and a *chance* node (an *afterstate*: the position just after a placement, the
next roll not yet made). `TrueModel` gives it the game itself rather than a learned model:

- the decision edge (`TrueModel.decision_fn`) is the env's `place`; it returns the afterstate, its
  value for the placer and the 36 chance logits (`chance_probs`, plus a small random jitter per node);
- the chance edge (`TrueModel.chance_fn`) is the env's `roll`; it returns the next decision position,
  its value and prior logits for the player to move, and the edge's reward and discount.

**Rewards and discounts.** mctx pays rewards on chance edges only, so a placement's result rides in the
afterstate (`Afterstate`: `reward`, `final`) and is paid on the chance edge after it, to the placer:
`+1` for the winning placement, `-1` for an illegal placement (mctx expands actions the mask forbids
below the root; they lose, so search never prefers them), `0` otherwise; the discount is `0` when the
game ended (a win, the ply limit, or a game already over) and `-1` otherwise, as the next decision belongs to
the other player. Values are rewards' scale (-1 .. +1 for the player at the node), twice a win probability
minus one.

**Chance tie-breaking.** mctx picks a chance node's next outcome deterministically (`argmax p / (n + 1)`),
which with 36 equal logits always visits the lowest squares first. Each afterstate gets its own jitter of its
logits, uniform in `[0, CHANCE_JITTER)` (`exp(CHANCE_JITTER) < 2`: every roll is visited once before any
twice), so the rolls a node visits are a random ordering of the 36 squares.

**Leaf evaluation** (`Evaluation`): `evaluate(params, states) -> (prior_logits, value)` at decision
positions, the value for the mover. The afterstate's value is the exact expectation over the 36 rolls of
minus the next mover's value (one `roll` and one evaluation per square). Without a network it is
`race_evaluation`: the reserve-race model of `strategic_reserve_env.core.luck` (`2 p - 1`) and uniform
priors over the legal placements, so that one simulation of a placement sees the risk of the opponent's next
roll exactly, as expectimax at depth 1 does.

The env is `strategic_reserve_env.envs.pgx_env.StrategicReserve` (or any object with its chance API:
`place`, `roll`, `chance_probs`, `observe`, and pgx's State fields `current_player`, `observation`,
`legal_action_mask`, `rewards`, `terminated`, `truncated`). On an env made with `observation=False`
(what the mctx agent searches) no `place` or `roll` of the search builds an observation: only the leaf
evaluation's states get one, and only for an evaluation that reads it (the race model does not).
Its illegal-action rule already makes an illegal placement lose; the adapter does not rely on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from strategic_reserve_env.core.board import NUM_SQUARES
from strategic_reserve_env.core.luck import race_win_probability
from strategic_reserve_env.envs import pgx_env

CHANCE_JITTER = 0.01
"""Width of the uniform jitter added to each chance node's logits (see the module docstring)."""
ILLEGAL_REWARD = -1.0
"""What an illegal placement below the root pays its placer: a loss."""


class Afterstate(NamedTuple):
    """A chance node's embedding: the position after a placement and what the placement earned."""

    state: Any  # the env's State after the placement (its roll due); batched (B, ...) in the search
    reward: jax.Array  # (B,) float32: paid to the placer on the next chance edge: +1 won, -1 illegal, else 0
    final: jax.Array  # (B,) bool: the game is over (the placement won or hit the ply limit, or it was over)


Evaluation = Callable[[Any, Any], tuple[jax.Array, jax.Array]]
"""`evaluate(params, states) -> (prior_logits (B, 36) float32, value (B,) float32)` at decision positions:
priors over the placements (the legal mask is applied after) and the value for the player to move (-1 .. 1).
The states' `observation` is built for it (also on an env made with `observation=False`) unless the
function has an attribute `reads_observation = False`."""


reserves = pgx_env.reserves  # (B,) reserves of the mover and the other player, read from the position (public)


def race_evaluation(params, states) -> tuple[jax.Array, jax.Array]:
    """The cheap `Evaluation`: uniform priors, and `2 * race_win_probability(reserves) - 1` for the
    mover (`params` unused). It reads no observation."""
    mine, theirs = reserves(states)
    value = 2.0 * race_win_probability(mine, theirs, xp=jnp) - 1.0
    return jnp.zeros((mine.shape[0], NUM_SQUARES), jnp.float32), value.astype(jnp.float32)


race_evaluation.reads_observation = False  # type: ignore[attr-defined]


def masked_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    """Logits with the illegal entries at the dtype's minimum (all kept where no entry is legal: no NaN)."""
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    keep = legal | ~jnp.any(legal, axis=-1, keepdims=True)
    return jnp.where(keep, logits, jnp.finfo(logits.dtype).min)


def _over(states) -> jax.Array:
    return states.terminated | states.truncated


class TrueModel:
    """mctx's decision and chance functions over `env` with the leaf evaluation `evaluate`.

    `prior_temperature`: when given, the root's priors are `softmax(q / prior_temperature)` of the exact
    one-ply values `q` of every placement (`placement_values`: 36 afterstates, each averaged over its
    36 rolls of `evaluate`), instead of the evaluation's priors; a search of few simulations then spends them
    on the placements that look best at depth 1 (without a network, the priors are uniform).

    `lookahead`: every decision node, not only the root, is evaluated by that one ply: priors from `q` as
    above, and value `max q` (the player to move answers with its best one-ply placement). It costs 36 x 36
    rolls per node instead of one evaluation, and turns each of the root's chance children into an exact
    expectimax of depth 2 with the opponent's placement chosen."""

    def __init__(
        self,
        env,
        evaluate: Evaluation | None = None,
        prior_temperature: float | None = None,
        lookahead: bool = False,
    ) -> None:
        if lookahead and prior_temperature is None:
            raise ValueError("lookahead needs a prior_temperature")
        self.env = env
        self.evaluate = evaluate or race_evaluation
        self.prior_temperature = prior_temperature
        self.lookahead = lookahead
        self.log_probs = jnp.log(jnp.asarray(env.chance_probs, dtype=jnp.float32))

    def _leaf(self, states, params):
        """Prior logits (legal mask applied) and values of decision positions from `evaluate`; 0 for a
        finished game."""
        if getattr(self.evaluate, "reads_observation", True) and not getattr(self.env, "observes", True):
            states = states.replace(observation=jax.vmap(self.env.observe)(states))
        logits, value = self.evaluate(params, states)
        return masked_logits(logits, states.legal_action_mask), jnp.where(_over(states), 0.0, value)

    def _decision(self, states, params):
        """Prior logits and values of decision positions: `_leaf`, or one ply of lookahead."""
        if not self.lookahead:
            return self._leaf(states, params)
        legal = states.legal_action_mask
        values = self.placement_values(params, states)
        best = jnp.max(jnp.where(legal, values, ILLEGAL_REWARD), axis=-1)
        return masked_logits(values / self.prior_temperature, legal), jnp.where(_over(states), 0.0, best)

    def afterstate_value(self, params, states) -> jax.Array:
        """(B,) the placer's value of positions after its placement: minus the next mover's value (the leaf
        evaluation), averaged exactly over the 36 rolls."""
        batch = states.current_player.shape[0]
        squares = jnp.arange(NUM_SQUARES, dtype=jnp.int32)
        rolled = jax.vmap(lambda state: jax.vmap(self.env.roll, in_axes=(None, 0))(state, squares))(states)
        flat = jax.tree.map(lambda x: x.reshape((batch * NUM_SQUARES,) + x.shape[2:]), rolled)
        _, value = self._leaf(flat, params)
        return -jnp.mean(value.reshape(batch, NUM_SQUARES), axis=-1)

    def _placed(self, params, action, states):
        """`place` and what it earns: (afterstates, reward, final, the placer's value of the afterstate)."""
        square = jnp.clip(action, 0, NUM_SQUARES - 1).astype(jnp.int32)
        legal = (action >= 0) & (action < NUM_SQUARES)
        legal &= jnp.take_along_axis(states.legal_action_mask, square[:, None], axis=-1)[:, 0]
        over = _over(states)
        after = jax.vmap(self.env.place)(states, square)
        won = jnp.take_along_axis(after.rewards, states.current_player[:, None].astype(jnp.int32), axis=-1)[:, 0]
        reward = jnp.where(over, 0.0, jnp.where(legal, won, ILLEGAL_REWARD)).astype(jnp.float32)
        final = over | ~legal | _over(after)
        return after, reward, final, jnp.where(final, reward, self.afterstate_value(params, after))

    def placement_values(self, params, states) -> jax.Array:
        """(B, 36) the placer's value of each placement (the afterstate values of `decision_fn`; -1 for
        an illegal one)."""
        batch = states.current_player.shape[0]

        def value_of(square):
            return self._placed(params, jnp.full((batch,), square, dtype=jnp.int32), states)[3]

        return jax.vmap(value_of, out_axes=1)(jnp.arange(NUM_SQUARES, dtype=jnp.int32))

    def decision_fn(self, params, rng, action, states):
        """The decision edge: `place`; junk actions (out of range, illegal, on a finished game) are safe."""
        after, reward, final, value = self._placed(params, action, states)
        jitter = jax.random.uniform(rng, (action.shape[0], NUM_SQUARES), maxval=CHANCE_JITTER)
        output = mctx.DecisionRecurrentFnOutput(chance_logits=self.log_probs + jitter, afterstate_value=value)
        return output, Afterstate(state=after, reward=reward, final=final)

    def chance_fn(self, params, rng, outcome, afterstate: Afterstate):
        """The chance edge: `roll`; pays the afterstate's reward to the placer, discount 0 once the game is
        over, else -1 (the next decision is the other player's). Junk outcomes are clipped to a square."""
        del rng
        square = jnp.clip(outcome, 0, NUM_SQUARES - 1).astype(jnp.int32)
        states = jax.vmap(self.env.roll)(afterstate.state, square)
        logits, value = self._decision(states, params)
        output = mctx.ChanceRecurrentFnOutput(
            action_logits=logits,
            value=jnp.where(afterstate.final, 0.0, value),
            reward=afterstate.reward,
            discount=jnp.where(afterstate.final, 0.0, -1.0).astype(jnp.float32),
        )
        return output, states

    def root(self, params, states) -> mctx.RootFnOutput:
        """The search's root at decision positions."""
        logits, value = self._decision(states, params)
        if self.prior_temperature is not None and not self.lookahead:
            values = self.placement_values(params, states)
            logits = masked_logits(values / self.prior_temperature, states.legal_action_mask)
        return mctx.RootFnOutput(prior_logits=logits, value=value, embedding=states)

    def search(self, params, rng, states, num_simulations: int, **options) -> mctx.PolicyOutput:
        """`mctx.stochastic_muzero_policy` from decision positions `states` (batched); `options` go to
        it (`dirichlet_fraction`, `temperature`, ...)."""
        return mctx.stochastic_muzero_policy(
            params,
            rng,
            self.root(params, states),
            self.decision_fn,
            self.chance_fn,
            num_simulations=num_simulations,
            invalid_actions=~states.legal_action_mask,
            **options,
        )


__all__ = [
    "CHANCE_JITTER",
    "ILLEGAL_REWARD",
    "Afterstate",
    "Evaluation",
    "TrueModel",
    "masked_logits",
    "race_evaluation",
    "reserves",
]
