"""The rollout agent (agents/rollout.py): its spec, legal and deterministic choices, greedy's candidates,
exact values where the game is decided, and luck-adjusted rollouts that keep the mean and cut the noise."""

from __future__ import annotations

import numpy as np
import pytest
from test_agents import random_positions

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.distill import collect_positions, expert_targets
from strategic_reserve_env.agents.greedy import expected_losses
from strategic_reserve_env.agents.rollout import RolloutAgent
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import bitboards_to_array
from strategic_reserve_env.core.config import Config, StartPosition
from strategic_reserve_env.core.observation import mover_planes


def inputs(state: engine.State) -> tuple[np.ndarray, np.ndarray]:
    return mover_planes(state), bitboards_to_array(state.legal)


@pytest.fixture(scope="module")
def positions() -> engine.State:
    return random_positions(24, seed=5)


def test_spec_and_options():
    assert load_agent("rollout").name == "rollout:rollouts=64,width=6"
    assert load_agent("rollout:rollouts=8,width=3,luck=false").name == "rollout:rollouts=8,width=3,luck=false"
    assert load_agent("rollout:horizon=6").name == "rollout:rollouts=64,width=6,horizon=6"
    for bad, message in (
        ("rollout:rollouts=0", "rollouts must be in 1..4096, got 0"),
        ("rollout:width=37", "width must be in 1..36, got 37"),
        ("rollout:depth=2", "unknown option 'depth'"),
        ("rollout:luck=1", "luck must be bool"),
        ("rollout:horizon=-1", "horizon must be in 0..1000, got -1"),
    ):
        with pytest.raises(ValueError, match=message):
            load_agent(bad)


def test_legal_and_deterministic_given_the_generator(positions):
    agent = RolloutAgent(rollouts=8, width=3)
    observations, masks = inputs(positions)
    first = agent.act(observations, masks, np.random.default_rng(1))
    assert masks[np.arange(len(first)), first].all()
    np.testing.assert_array_equal(first, agent.act(observations, masks, np.random.default_rng(1)))


def test_candidates_are_greedys_best_and_width_one_plays_greedy(positions):
    agent = RolloutAgent(rollouts=2, width=4)
    observations, masks = inputs(positions)
    losses = expected_losses(positions.me, positions.opp, masks)
    squares, valid = agent.candidates(positions.me, positions.opp, masks)
    rows = np.arange(len(squares))[:, None]
    chosen = np.where(valid, losses[rows, squares], np.inf)
    assert (np.diff(chosen, axis=-1) >= 0).all()  # best first
    worst_kept = np.max(np.where(valid, losses[rows, squares], -1), axis=-1)
    left_out = np.where(masks, losses, np.inf)
    left_out[rows, squares] = np.inf
    assert (left_out.min(axis=-1) >= worst_kept).all()  # nothing better was left out
    np.testing.assert_array_equal(valid.sum(-1), np.minimum(masks.sum(-1), 4))
    greedy_first = np.argmin(np.where(masks, losses, np.iinfo(np.int64).max), axis=-1)
    single = RolloutAgent(rollouts=2, width=1).act(observations, masks, np.random.default_rng(0))
    np.testing.assert_array_equal(single, greedy_first)


def decided_position(reserves: tuple[int, int]) -> engine.State:
    """A position with the given (red, blue) reserves, Red rolled and to place."""
    config = Config(start=StartPosition(reserves=reserves))
    return engine.roll(engine.init(config, 1), np.array([14]))


@pytest.mark.parametrize("horizon", [0, 1, 4])
def test_exact_values_where_the_game_is_decided(horizon):
    agent = RolloutAgent(rollouts=16, width=6, horizon=horizon)
    for reserves, expected in (((1, 5), 1.0), ((4, 1), 0.0)):  # the decider places its last checker / the
        # opponent places its last on its next turn (the race model gives every roll of it luck 0)
        _, valid, values = agent.candidate_values(*inputs(decided_position(reserves)), np.random.default_rng(0))
        np.testing.assert_array_equal(values[valid], expected)


@pytest.mark.slow
def test_luck_adjusted_rollouts_keep_the_mean_and_cut_the_noise(positions):
    """Over 12 generators, one decision's candidate values with and without the luck adjustment: the means
    agree within 4 standard errors of the raw estimate, and the adjusted values vary less than half as much."""
    observations, masks = inputs(positions[:1])
    runs = {luck: [] for luck in (True, False)}
    for seed in range(12):
        for luck, values in runs.items():
            agent = RolloutAgent(rollouts=64, width=2, luck=luck)
            values.append(agent.candidate_values(observations, masks, np.random.default_rng(seed))[2][0])
    adjusted, raw = (np.array(runs[luck]) for luck in (True, False))
    standard_error = raw.std(axis=0, ddof=1) / np.sqrt(len(raw))
    assert (np.abs(adjusted.mean(axis=0) - raw.mean(axis=0)) < 4 * standard_error).all()
    assert (adjusted.std(axis=0) < 0.5 * raw.std(axis=0)).all()


@pytest.mark.slow
def test_rollout_results_take_the_luck_on_the_scores_scale(positions):
    """A rollout's result is a score (1, 1/2, 0) and a roll's luck a difference of win probabilities: taken
    once (outcome.SCORE_SCALE), they remove most of the variance of four decisions' values over 30 generators
    (pooled ratio at most 0.15; measured 0.065, and 0.26 with the luck at half that scale, 1.33 at twice)."""
    observations, masks = inputs(positions[:4])
    runs = {luck: [] for luck in (True, False)}
    for seed in range(30):
        for luck, values in runs.items():
            agent = RolloutAgent(rollouts=32, width=1, luck=luck)
            values.append(agent.candidate_values(observations, masks, np.random.default_rng(seed))[2][:, 0])
    adjusted, raw = (np.array(runs[luck]) for luck in (True, False))
    assert adjusted.var(axis=0).sum() <= 0.15 * raw.var(axis=0).sum()


@pytest.mark.slow
def test_horizon_values_estimate_the_full_rollouts(positions):
    """Rollouts stopped after 4 turns and scored by the race model's expectation estimate the same win
    probabilities as full rollouts, to within 0.1 on every candidate (the model's error at the horizon;
    measured: up to about 0.05), with many rollouts on the first decisions."""
    observations, masks = inputs(positions[:3])
    full = RolloutAgent(rollouts=512, width=3).candidate_values(observations, masks, np.random.default_rng(0))
    short = RolloutAgent(rollouts=512, width=3, horizon=4).candidate_values(
        observations, masks, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(full[0], short[0])
    valid = full[1]
    assert np.abs(full[2][valid] - short[2][valid]).max() < 0.1


@pytest.mark.slow
def test_move_values_are_the_candidates_values_on_the_board_and_label_an_expert_iteration(positions):
    """move_values puts each candidate's value on its square (NaN elsewhere), as expectimax's does, so the
    distillation pipeline labels the rollout agent's decisions (expert iteration) as it labels expectimax's."""
    agent = RolloutAgent(rollouts=8, width=3)
    observations, masks = inputs(positions[:6])
    squares, valid, values = agent.candidate_values(observations, masks, np.random.default_rng(4))
    board = agent.move_values(observations, masks, np.random.default_rng(4))
    assert board.shape == (6, 36) and (~np.isnan(board)).sum(axis=1).tolist() == valid.sum(axis=1).tolist()
    for row in range(6):
        np.testing.assert_array_equal(board[row, squares[row][valid[row]]], values[row][valid[row]])
    labelled = collect_positions(agent, [load_agent("greedy")], 2, seed=9)
    searched = ~np.isnan(labelled.values)
    assert len(labelled) > 5 and (searched.sum(axis=1) >= 1).all() and (searched.sum(axis=1) <= 3).all()
    assert not (searched & ~labelled.masks).any()  # only legal squares are valued
    hard = expert_targets(labelled)
    np.testing.assert_array_equal(hard.argmax(axis=1), np.nanargmax(labelled.values, axis=1))
    again = collect_positions(agent, [load_agent("greedy")], 2, seed=9)  # same seed, same labels
    np.testing.assert_array_equal(again.values, labelled.values)


@pytest.mark.slow
def test_base_ppo_takes_the_networks_candidates_and_plays_its_rollouts(positions):
    """base=ppo: the candidates are the shipped network's most probable legal squares, and the rollouts are
    played by the network; the choice is legal and the same for the same generator."""
    agent = load_agent("rollout:rollouts=4,width=3,base=ppo")
    assert agent.name == "rollout:rollouts=4,width=3,base=ppo"
    observations, masks = inputs(positions[:8])
    probabilities = load_agent("ppo").probabilities(observations, masks)
    squares, valid = agent.candidates(positions[:8].me, positions[:8].opp, masks, observations)
    for row in range(8):
        order = sorted(np.flatnonzero(masks[row]), key=lambda s: (-probabilities[row, s], s))[:3]
        assert squares[row][valid[row]].tolist() == order
    moves = agent.act(observations, masks, np.random.default_rng(1))
    assert masks[np.arange(8), moves].all()
    np.testing.assert_array_equal(agent.act(observations, masks, np.random.default_rng(1)), moves)
    with pytest.raises(ValueError, match="rollout base must be one of greedy, ppo"):
        load_agent("rollout:base=expectimax")
