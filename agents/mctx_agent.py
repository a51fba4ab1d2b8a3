"""The `mctx` agent: Stochastic MuZero search on the true model of the game (`mctx_search`), in `jit`.

`mctx:simulations=N` searches every game of a call at once with `N` simulations from the position after
the roll, on `StrategicReserve`, and plays the most visited placement
(ties at random). Its root priors are a softmax (at `PRIOR_TEMPERATURE`) of the exact one-ply values of
every placement (each averaged over the 36 rolls that follow it, the reserve-race model of
`strategic_reserve_env.core.luck` after them), and the other decision nodes are evaluated by the race model
alone. `lookahead=true` evaluates every decision node by that one ply (`mctx_search.TrueModel` with
`lookahead`: its value is its best placement's), five times the CPU time of the same games and no stronger as
measured (README, "Search and AlphaZero training"). Its randomness (the chance nodes'
jitter, the ties) comes from the generator `act` is given, so an evaluation's `--seed` governs it.

Batches are padded to a power of two (at least `MIN_BATCH`), and never below the largest size already
compiled, so that `jit` compiles once per size class, not as an evaluation's batch shrinks. The first call of
each size pays the compile (seconds to tens of seconds on a CPU: tracing mctx's search, and XLA compiling it;
nothing is compiled when the agent loads). `MIN_BATCH` (32) covers both the check an evaluation makes
before its games (a few test positions) and its plays of up to 32 games at a time: one compile for both.
The search runs on `StrategicReserve(observation=False)`: its `place` and `roll` build no observation
(a network's leaf evaluation gets one, built for the states it evaluates).

`mctx:net=PATH[,simulations=N]` searches with a network trained by `strategic-reserve train-az`
(`az_net`) as the leaf evaluation and its priors; `simulations=0` plays the network alone (its most
probable legal placement). Needs the `mctx` extra (jax, pgx, mctx).
"""

from __future__ import annotations

import functools

import numpy as np

from strategic_reserve_env.core import engine, rules
from strategic_reserve_env.core.board import NO_PLAYER, checked_int
from strategic_reserve_env.core.dice import DRAWN_SEEDS

from .position import read_position

MAX_SIMULATIONS = 100_000  # the largest search a spec may ask for
MIN_BATCH = 32
"""The smallest batch the search compiles for (a call with fewer games is padded to it): an evaluation's
check positions and its plays share one compile."""
PRIOR_TEMPERATURE = 0.02
"""The priors' temperature on the one-ply values (-1 .. 1) of the placements: a placement 0.05 better
(a 2.5 % higher win probability) gets e^2.5 = 12 times the prior."""
TIE_NOISE = 1e-6
"""Below the smallest difference of two visit fractions of a search (1 / simulations), so it only breaks ties."""


def _padded_size(batch: int) -> int:
    size = MIN_BATCH
    while size < batch:
        size *= 2
    return size


class MctxAgent:
    """Stochastic MuZero search with `simulations` simulations per decision (see the module docstring)."""

    uses_observation = True
    values_every_placement = True
    """move_values values every legal placement (the analysis of a game may use it)."""

    def __init__(self, simulations: int = 64, lookahead: bool = False, net: str = "") -> None:
        low = 0 if net else 1
        simulations = checked_int("mctx simulations", simulations, low, MAX_SIMULATIONS)
        if not isinstance(lookahead, bool):
            raise ValueError(f"mctx lookahead must be true or false, got {lookahead!r}")
        import jax  # the extra's error message, at load time rather than at the first move

        from strategic_reserve_env.envs import pgx_env

        from .mctx_search import TrueModel

        self.simulations, self.lookahead, self.net = simulations, lookahead and not net, net
        env = pgx_env.StrategicReserve(observation=False)
        self._from_engine = functools.partial(pgx_env.from_engine, observe=False)
        if net:
            from . import az_net

            self.params, _ = az_net.load(net)
            self.model = TrueModel(env, evaluate=az_net.evaluation)
            self.name = f"mctx:net={net},simulations={simulations}"
        else:
            self.params = None
            self.model = TrueModel(env, prior_temperature=PRIOR_TEMPERATURE, lookahead=lookahead)
            self.name = f"mctx:simulations={simulations}" + (",lookahead=true" if lookahead else "")
        self._largest = 0
        self._search = jax.jit(functools.partial(self._choose, simulations))

    def _choose(self, simulations, params, key, states):
        import jax
        import jax.numpy as jnp

        search_key, tie_key = jax.random.split(key)
        if simulations == 0:  # the network alone: its most probable legal placement, its values from one ply
            logits, _ = self.model.evaluate(params, states)
            noisy = logits + jax.random.uniform(tie_key, logits.shape) * TIE_NOISE
            actions = jnp.argmax(jnp.where(states.legal_action_mask, noisy, -jnp.inf), axis=-1)
            return actions, (self.model.placement_values(params, states) + 1.0) / 2.0
        output = self.model.search(params, search_key, states, simulations, dirichlet_fraction=0.0)
        weights = output.action_weights + jax.random.uniform(tie_key, output.action_weights.shape) * TIE_NOISE
        actions = jnp.argmax(jnp.where(states.legal_action_mask, weights, -1.0), axis=-1)
        tree = output.search_tree
        root = jnp.full(actions.shape, tree.ROOT_INDEX)
        searched = tree.children_visits[:, tree.ROOT_INDEX] > 0
        values = jnp.where(searched, tree.qvalues(root), self.model.placement_values(params, states))
        return actions, (values + 1.0) / 2.0  # values -1 .. 1 -> win probabilities

    def _run(self, observations, masks, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(actions (B,) int64, win probabilities (B, 36) float64) of the search from `act`'s inputs."""
        import jax

        observations, masks = np.asarray(observations), np.asarray(masks, dtype=bool)
        batch = masks.shape[0]
        if batch == 0:
            return np.zeros(0, dtype=np.int64), np.zeros((0, masks.shape[-1]))
        self._largest = max(self._largest, _padded_size(batch))
        rows = np.arange(self._largest) % batch  # padding repeats the first games
        key = jax.random.key(int(rng.integers(DRAWN_SEEDS)))
        actions, values = self._search(self.params, key, self.states(observations[rows], masks[rows]))
        return np.asarray(actions, dtype=np.int64)[:batch], np.asarray(values, dtype=np.float64)[:batch]

    def states(self, observations: np.ndarray, masks: np.ndarray):
        """The env's batched States of the decisions in `observations` and `masks` (colour and ply are not
        in an observation: the mover is called Red at ply 0; the rules treat both colours alike)."""
        position = read_position(observations, masks)
        batch = len(position.me)
        zeros = np.zeros(batch, dtype=np.int64)
        state = engine.State(
            me=position.me,
            opp=position.opp,
            reserve_me=position.reserve_me,
            reserve_opp=position.reserve_opp,
            to_move=zeros,
            ply=zeros,
            winner=np.full(batch, NO_PLAYER, dtype=np.int64),
            truncated=np.zeros(batch, dtype=bool),
            rolled=np.full(batch, -1, dtype=np.int64),
            hit=np.full(batch, rules.HIT_EMPTY, dtype=np.int64),
            captured=zeros,
            legal=position.legal,
        )
        return self._from_engine(state)

    def act(self, observations, masks, rng: np.random.Generator) -> np.ndarray:
        return self._run(observations, masks, rng)[0]

    def move_values(self, observations, masks, rng: np.random.Generator | None = None) -> np.ndarray:
        """(B, 36) float64: the mover's win probability (0..1) after each placement, from a search: a searched
        placement's value at the root (the mean of its simulations), an unsearched one's one-ply value; NaN on
        the illegal squares. `rng` defaults to a fixed seed, so that an analysis is reproducible."""
        rng = np.random.default_rng(0) if rng is None else rng
        values = self._run(observations, masks, rng)[1]
        return np.where(np.asarray(masks, dtype=bool), values, np.nan)

    def __repr__(self) -> str:
        return f"MctxAgent(simulations={self.simulations}, lookahead={self.lookahead}, net={self.net!r})"
