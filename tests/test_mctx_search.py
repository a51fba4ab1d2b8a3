"""The mctx adapter (agents/mctx_search.py) on forced positions over pgx_env, its search, and the mctx agent.

Compile time dominates: tiny batches, few simulations, module-scoped jitted functions.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("mctx")
pytest.importorskip("pgx")

import jax.numpy as jnp  # noqa: E402

from strategic_reserve_env.agents.mctx_search import CHANCE_JITTER, TrueModel  # noqa: E402
from strategic_reserve_env.core import engine, luck  # noqa: E402
from strategic_reserve_env.core.board import NUM_SQUARES, bitboards_to_array  # noqa: E402
from strategic_reserve_env.core.config import Config, StartPosition  # noqa: E402
from strategic_reserve_env.envs import pgx_env  # noqa: E402

# the plus-shaped hole: Blue everywhere but c2, b3, c3, d3, c4; Red (2 in reserve, none on the board) rolls c2
# and may place on any of the five. Blue has 2 in reserve: after Red's placement (Red 1 left), Blue's roll
# captures Red's checker on c3 only by rolling c3 itself (1/36); on any other square it touches Blue's one group
# of 31, whose rolls (31/36) capture it. Uncaptured, Red places its last checker next turn and wins.
PLUS = "".join("." if s in (8, 13, 14, 15, 20) else "B" for s in range(NUM_SQUARES))
SAFE_SQUARE = 14  # c3


def decisions(config: Config, rolls: list[int]):
    """engine.State of len(rolls) games at `config`'s start, each having rolled its square."""
    state = engine.init(config, len(rolls))
    return engine.roll(state, np.asarray(rolls))


def played(config: Config, batch: int, plies: int, seed: int):
    """engine.State of `batch` games after `plies` random plies, each then rolled (a placement due)."""
    rng = np.random.default_rng(seed)
    state = engine.init(config, batch)
    for _ in range(plies):
        state = engine.roll(state, rng.integers(0, NUM_SQUARES, batch), active=~state.done)
        legal = bitboards_to_array(state.legal)
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        state = engine.place(state, actions, config, active=~state.done)
    state = engine.reset(state, state.done, config)
    return engine.roll(state, rng.integers(0, NUM_SQUARES, batch))


def same(a, b) -> bool:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b) > 0
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(leaves_a, leaves_b, strict=True))


@pytest.fixture(scope="module")
def env():
    return pgx_env.StrategicReserve()


@pytest.fixture(scope="module")
def model(env):
    return TrueModel(env)


@pytest.fixture(scope="module")
def edges(model):
    return jax.jit(model.decision_fn), jax.jit(model.chance_fn)


@pytest.mark.slow
def test_decision_edge_is_place_and_chance_edge_is_roll(env, edges):
    decision, chance = edges
    positions = played(Config(), 8, 10, seed=1)
    states = pgx_env.from_engine(positions)
    legal = bitboards_to_array(positions.legal)
    actions = jnp.asarray([np.flatnonzero(row)[-1] for row in legal], dtype=jnp.int32)
    output, after = decision(None, jax.random.key(0), actions, states)
    assert same(after.state, jax.vmap(env.place)(states, actions))
    assert not np.asarray(after.final).any() and np.array_equal(after.reward, np.zeros(8))
    outcomes = jnp.arange(8, dtype=jnp.int32) * 5
    result, rolled = chance(None, jax.random.key(1), outcomes, after)
    assert same(rolled, jax.vmap(env.roll)(after.state, outcomes))
    assert np.array_equal(result.reward, np.zeros(8)) and np.array_equal(result.discount, -np.ones(8))
    # the chance logits: log(1/36) plus a jitter below CHANCE_JITTER, different per node
    jitter = np.asarray(output.chance_logits) - np.log(1 / 36)
    assert (jitter >= -1e-6).all() and (jitter < CHANCE_JITTER).all() and len({tuple(r) for r in jitter}) == 8


@pytest.mark.slow
def test_afterstate_value_is_the_exact_mean_over_the_36_rolls(env, edges):
    """The race evaluation's afterstate value against luck.py's numpy race model over every roll."""
    decision, _ = edges
    positions = played(Config(), 6, 12, seed=2)
    states = pgx_env.from_engine(positions)
    actions = np.array([np.flatnonzero(row)[0] for row in bitboards_to_array(positions.legal)])
    output, _ = decision(None, jax.random.key(0), jnp.asarray(actions, dtype=jnp.int32), states)
    after = engine.place(positions, actions, Config())
    values = luck.roll_values(luck.DEFAULT_VALUE, after.me, after.opp, after.reserve_me, after.reserve_opp)
    expected = -(2 * values - 1).mean(axis=-1)
    np.testing.assert_allclose(output.afterstate_value, expected, atol=1e-5)


@pytest.mark.slow
def test_a_win_pays_the_placer_plus_one_on_the_next_chance_edge_with_discount_zero(edges):
    decision, chance = edges
    config = Config(start=StartPosition(reserves=(3, 1), to_move="blue"))  # Blue places its last checker
    positions = decisions(config, [0, 17])
    states = pgx_env.from_engine(positions)
    actions = jnp.asarray([np.flatnonzero(row)[0] for row in bitboards_to_array(positions.legal)], dtype=jnp.int32)
    output, after = decision(None, jax.random.key(0), actions, states)
    assert np.asarray(after.final).all() and np.array_equal(after.reward, [1.0, 1.0])
    assert np.array_equal(output.afterstate_value, [1.0, 1.0])
    result, _ = chance(None, jax.random.key(1), jnp.asarray([3, 30]), after)
    assert np.array_equal(result.reward, [1.0, 1.0]) and np.array_equal(result.discount, [0.0, 0.0])
    assert np.array_equal(result.value, [0.0, 0.0])


@pytest.mark.slow
def test_junk_actions_and_outcomes_give_no_nan_and_illegal_placements_lose(edges):
    decision, chance = edges
    positions = played(Config(), 6, 8, seed=3)
    positions = dataclasses.replace(positions, winner=np.array([-1, -1, -1, -1, -1, 0]))  # game 5 is over
    states = pgx_env.from_engine(positions)
    legal = bitboards_to_array(positions.legal)
    illegal = np.flatnonzero(~legal[3])[0]
    actions = jnp.asarray([-7, 36, 2**20, illegal, -1, 35], dtype=jnp.int32)
    output, after = decision(None, jax.random.key(0), actions, states)
    assert np.isfinite(output.afterstate_value).all() and np.isfinite(output.chance_logits).all()
    assert np.array_equal(after.reward, [-1, -1, -1, -1, -1, 0]) and np.asarray(after.final).all()
    result, rolled = chance(None, jax.random.key(1), jnp.asarray([-3, 36, 999, 5, 2**30, 0]), after)
    for leaf in (result.reward, result.discount, result.value, result.action_logits):
        assert np.isfinite(leaf).all()
    assert np.array_equal(result.discount, np.zeros(6))
    assert same(jax.tree.map(lambda x: x[5], rolled), jax.tree.map(lambda x: x[5], states))  # over: unchanged


@pytest.fixture(scope="module")
def plus_search(model):
    """Search (200 simulations) on the plus-shaped hole, two games."""
    config = Config(start=StartPosition(board=PLUS, reserves=(2, 2)))
    states = pgx_env.from_engine(decisions(config, [8, 8]))
    search = jax.jit(lambda key, states: model.search(None, key, states, 200, dirichlet_fraction=0.0))
    return search(jax.random.key(0), states)


@pytest.mark.slow
def test_the_rolls_a_search_visits_spread_over_the_board(plus_search):
    """Each chance node's visits go to distinct rolls until all 36 are seen: visits - 1 children (its first
    visit expands it), at most 36; without the jitter, a node's first visits all went to a1, b1, ..."""
    tree = plus_search.search_tree
    parents, node_visits = np.asarray(tree.parents), np.asarray(tree.node_visits)
    is_chance = ~np.asarray(tree.embeddings.is_decision_node)
    checked = 0
    for game in range(parents.shape[0]):
        for node in np.flatnonzero(is_chance[game] & (node_visits[game] > 0)):
            children = np.flatnonzero(parents[game] == node)
            assert len(children) == min(node_visits[game, node] - 1, NUM_SQUARES)
            checked += node_visits[game, node] > NUM_SQUARES
    assert checked >= 2  # nodes with 37+ visits, all 36 rolls seen


@pytest.mark.slow
def test_search_finds_the_placement_that_wins_unless_the_roll_hits_it(plus_search):
    """c3 wins unless Blue rolls c3 (35/36); the four others are captured after 31 of Blue's 36 rolls."""
    weights = np.asarray(plus_search.action_weights)
    assert np.array_equal(weights.argmax(axis=-1), [SAFE_SQUARE, SAFE_SQUARE])
    assert (weights[:, SAFE_SQUARE] > 0.5).all()


@pytest.mark.slow
def test_root_priors_follow_the_one_ply_values(model):
    """placement_values is the afterstate value of every placement (-1 where illegal): on the plus-shaped hole,
    c3 is worth 35/36 * 1 + 1/36 * v(captured) and the others far less."""
    config = Config(start=StartPosition(board=PLUS, reserves=(2, 2)))
    states = pgx_env.from_engine(decisions(config, [8]))
    values = np.asarray(jax.jit(model.placement_values)(None, states))[0]
    legal = np.asarray(states.legal_action_mask)[0]
    assert np.array_equal(np.flatnonzero(legal), [8, 13, 14, 15, 20])
    assert (values[~legal] == -1).all() and values.argmax() == SAFE_SQUARE
    captured = 2 * luck.race_win_probability(2, 2) - 1  # Red's value at Red's next decision, both reserves 2
    np.testing.assert_allclose(values[SAFE_SQUARE], 35 / 36 - captured / 36, atol=1e-5)


@pytest.mark.slow
def test_lookahead_values_a_decision_by_its_best_placement(env):
    """With lookahead, a decision node's value is its best one-ply placement value and its priors follow
    those values (the placement_values of the leaf model, checked above against luck.py)."""
    config = Config(start=StartPosition(board=PLUS, reserves=(2, 2)))
    states = pgx_env.from_engine(decisions(config, [8]))
    ahead = TrueModel(env, prior_temperature=0.02, lookahead=True)
    logits, value = jax.jit(ahead._decision)(states, None)
    values = np.asarray(jax.jit(ahead.placement_values)(None, states))[0]
    np.testing.assert_allclose(value, [values[SAFE_SQUARE]], atol=1e-6)
    legal = np.asarray(states.legal_action_mask)[0]
    np.testing.assert_allclose(
        jax.nn.log_softmax(logits[0])[legal], jax.nn.log_softmax(values[legal] / 0.02), atol=1e-4
    )
    with pytest.raises(ValueError, match="prior_temperature"):
        TrueModel(env, lookahead=True)


@pytest.fixture(scope="module")
def agent():
    from strategic_reserve_env.agents import load_agent

    return load_agent("mctx:simulations=4")  # lookahead is tested above, on the model


@pytest.mark.slow
def test_the_agent_plays_legal_placements_and_its_generator_decides(agent):
    from strategic_reserve_env.core.observation import planes

    positions = played(Config(), 5, 6, seed=4)
    observations, masks = planes(positions, positions.to_move), bitboards_to_array(positions.legal)
    first = agent.act(observations, masks, np.random.default_rng(7))
    assert first.shape == (5,) and masks[np.arange(5), first].all()
    assert np.array_equal(agent.act(observations, masks, np.random.default_rng(7)), first)
    runs = {tuple(agent.act(observations, masks, np.random.default_rng(seed))) for seed in range(6)}
    assert len(runs) > 1  # ties and jitter come from the generator
    assert agent.name == "mctx:simulations=4"
    values = agent.move_values(observations, masks)  # what the analysis of a game reads
    assert np.array_equal(np.isnan(values), ~masks) and ((values[masks] >= 0) & (values[masks] <= 1)).all()
    assert np.array_equal(values, agent.move_values(observations, masks), equal_nan=True)
    # an evaluation checks the agent on a few positions, then plays batches of up to 32: one compile for all
    more = played(Config(), 20, 4, seed=5)
    more_masks = bitboards_to_array(more.legal)
    chosen = agent.act(planes(more, more.to_move), more_masks, np.random.default_rng(1))
    assert more_masks[np.arange(20), chosen].all()
    assert agent._search._cache_size() == 1


@pytest.mark.parametrize("spec", ["mctx:simulations=0", "mctx:simulations=2.5", "mctx:depth=2"])
def test_bad_mctx_specs_are_refused(spec):
    from strategic_reserve_env.agents import load_agent

    with pytest.raises(ValueError, match="mctx"):
        load_agent(spec)
