"""Agents: legal actions everywhere, greedy and expectimax values checked against the reference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from strategic_reserve_env import models
from strategic_reserve_env.agents import KNOWN_AGENTS, expectimax, load_agent
from strategic_reserve_env.agents.expectimax import ExpectimaxAgent, win_probability
from strategic_reserve_env.agents.greedy import expected_losses
from strategic_reserve_env.agents.luck_values import load_luck_value
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import BIT, ECHO_LIMIT, bitboards_to_array, board_string, squares_of
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import mover_planes
from strategic_reserve_env.core.oracle import ReferenceGame
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.evaluation.benchmark_protocol import PROTOCOLS

from conftest import REPO

SHIPPED_MODEL = Path(__file__).resolve().parents[1] / "models" / "ppo_baseline.safetensors"
SHIPPED_ZIP = SHIPPED_MODEL.with_suffix(".zip")  # the SB3 model it was converted from
AGENT_SPECS = ["random", "greedy", "expectimax:depth=1", "expectimax:depth=2", "expectimax:depth=2,width=2"]


def random_positions(games: int, seed: int, reserve: int = 7) -> engine.State:
    """Positions after 0..59 random plies each, rolled and awaiting a placement."""
    rng = np.random.default_rng(seed)
    config = Config(reserve=reserve, ply_limit=10_000)
    state = engine.roll(engine.init(config, games), engine.draw_rolls(rng, games))
    stop_at = rng.integers(0, 60, games)
    for ply in range(60):
        moving = (ply < stop_at) & ~state.done
        state = engine.place(state, uniform_square(state.legal, rng.random(games)), config, active=moving)
        state = engine.roll(state, engine.draw_rolls(rng, games), active=moving)
    return state[~state.done]


@pytest.fixture(scope="module")
def positions() -> engine.State:
    return engine.concatenate([random_positions(1500, seed=1), random_positions(500, seed=2, reserve=3)])


@pytest.mark.slow
@pytest.mark.parametrize("spec", AGENT_SPECS)
def test_every_agent_plays_legal_squares(spec, positions):
    agent = load_agent(spec)
    observations = mover_planes(positions)
    masks = bitboards_to_array(positions.legal)
    actions = np.asarray(agent.act(observations, masks, np.random.default_rng(0)))
    assert actions.shape == (positions.batch_size,)
    assert masks[np.arange(len(actions)), actions].all()


def _reference_loss(me: int, opp: int, placed: int) -> int:
    """Sum over the opponent's 36 rolls of the mover's checkers captured, by the reference rules."""
    total = 0
    board = board_string(me | BIT[placed], opp)  # the mover is "R" here
    for roll in range(36):
        game = ReferenceGame(board, {"red": 5, "blue": 5}, "blue")  # the opponent rolls
        game.roll(roll)
        total += len(game.captured)
    return total


def test_greedy_losses_match_the_reference(positions):
    sample = positions[np.arange(0, positions.batch_size, 97)]
    losses = expected_losses(sample.me, sample.opp)
    for i in range(sample.batch_size):
        me, opp = int(sample.me[i]), int(sample.opp[i])
        for placed in squares_of(int(sample.legal[i])):
            assert losses[i, placed] == _reference_loss(me, opp, placed)


def test_greedy_picks_a_minimum_and_breaks_ties_at_random(positions):
    agent = load_agent("greedy")
    observations, masks = mover_planes(positions), bitboards_to_array(positions.legal)
    losses = np.where(masks, expected_losses(positions.me, positions.opp), 10**6)
    chosen = {}
    for seed in range(4):
        actions = agent.act(observations, masks, np.random.default_rng(seed))
        assert np.array_equal(losses[np.arange(len(actions)), actions], losses.min(axis=1))
        chosen[seed] = actions
    assert any(not np.array_equal(chosen[0], chosen[s]) for s in (1, 2, 3))  # ties do vary


def test_win_probability():
    assert win_probability(1, 9) == 1.0 and win_probability(3, 1) == 0.0
    grid = win_probability(np.arange(2, 12)[:, None], np.arange(2, 12)[None, :])
    assert np.all(np.diff(grid, axis=0) < 0) and np.all(np.diff(grid, axis=1) > 0)  # fewer left is better
    assert 0.5 < win_probability(5, 5) < 0.6  # the mover's edge at equal reserves


def test_expectimax_depth2_values_match_brute_force():
    """With width 36 the depth-2 choice is the exact argmax of the documented value."""
    state = random_positions(40, seed=5)
    i = int(np.argmax(bitboards_to_array(state.legal).sum(axis=1) < 8))  # a position with few legal squares
    one = state[i]
    me, opp = int(one.me[0]), int(one.opp[0])
    m, o = int(one.reserve_me[0]), int(one.reserve_opp[0])
    values = {}
    for placed in squares_of(int(one.legal[0])):
        total = 0.0
        for r1 in range(36):
            first = ReferenceGame(board_string(me | BIT[placed], opp), {"red": 9, "blue": 9}, "blue")
            first.roll(r1)
            lost = len(first.captured)
            for r2 in range(36):
                second = ReferenceGame(first.board_string(), {"red": 9, "blue": 9}, "red")
                second.roll(r2)
                total += float(win_probability(m - 1 + lost, o - 1 + len(second.captured))) if o > 1 else 0.0
        values[placed] = total / 36**2
    agent = ExpectimaxAgent(depth=2, width=36)
    picks = {
        int(agent.act(mover_planes(one), bitboards_to_array(one.legal), np.random.default_rng(s))[0]) for s in range(5)
    }
    best = max(values.values())
    assert all(abs(values[p] - best) < 1e-9 for p in picks)


@pytest.mark.parametrize("depth", [1, 2])
def test_expectimax_searches_in_chunks_with_the_same_result(depth, monkeypatch):
    """Searching a batch a few games at a time (SEARCH_CHUNK) gives every game the values and the move of
    searching it in one piece."""
    state = random_positions(60, seed=8)
    observations, masks = mover_planes(state), bitboards_to_array(state.legal)
    agent = ExpectimaxAgent(depth=depth)
    whole_values = agent.move_values(observations, masks)
    whole_moves = agent.act(observations, masks, np.random.default_rng(3))
    monkeypatch.setattr(expectimax, "SEARCH_CHUNK", 7)  # 60 games: 8 full chunks and one of 4
    np.testing.assert_array_equal(agent.move_values(observations, masks), whole_values)
    np.testing.assert_array_equal(agent.act(observations, masks, np.random.default_rng(3)), whole_moves)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("alphazero", "unknown agent 'alphazero'; known agents: random, greedy"),
        ("expectimax:depth=3", r"expectimax depth must be one of \(1, 2\), got 3"),
        ("expectimax:depth=two", "depth must be int, got 'two'"),
        ("expectimax:breadth=2", "unknown option 'breadth'; options: depth, width"),
        ("expectimax:depth", "option 'depth' is not key=value"),
        ("expectimax:depth=true", "depth must be int, got True"),
        ("expectimax:depth=1,depth=2", "agent spec 'expectimax:depth=1,depth=2': option 'depth' given twice"),
        (
            "ppo:models/ppo_baseline.safetensors,deterministic=false,deterministic=true",
            "option 'deterministic' given twice",
        ),
        ("ppo:models/ppo_baseline.safetensors,deterministic=1", "deterministic must be bool, got 1"),
        ("rllib:runs/x,deterministic=false,deterministic=false", "option 'deterministic' given twice"),
        ("greedy:depth=2", "agent spec 'greedy:depth=2': greedy takes no options"),
        ("ppo:missing/model.safetensors", "ppo model not found: missing/model.safetensors"),
        (
            "ppo:models/ppo_baseline.zip",
            "is an SB3 .zip: loading it unpickles .* ppo:models/ppo_baseline.zip,trust=pickle",
        ),
        ("ppo:models/ppo_baseline.safetensors,trust=yes", "trust must be 'pickle'"),
        (
            "ppo:models/ppo_baseline.safetensors,trust=pickle",
            (
                "trust=pickle is only for an SB3 .zip; models/ppo_baseline.safetensors is a policy file, which loads "
                r"without it \(drop ,trust=pickle\)"
            ),
        ),
        ("ppo:models/ppo_baseline.md", "not a safetensors file"),
        ("", "an agent spec must be a non-empty string"),
    ],
)
def test_bad_agent_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec)
    assert "expectimax" in KNOWN_AGENTS


@pytest.mark.slow
@pytest.mark.parametrize("features", ["mlp", "cnn"])
def test_ppo_agent_loads_a_policy_file_and_plays_legally(tmp_path, positions, features):
    from sb3_contrib import MaskablePPO

    from strategic_reserve_env.agents.networks import BoardCNN
    from strategic_reserve_env.agents.ppo_file import save_policy
    from strategic_reserve_env.envs.gym_env import StrategicReserveEnv

    kwargs = {"net_arch": [16]}
    if features == "cnn":
        kwargs |= {"features_extractor_class": BoardCNN, "features_extractor_kwargs": {"channels": 4}}
    model = MaskablePPO(
        "MlpPolicy", StrategicReserveEnv(), n_steps=32, batch_size=32, seed=0, device="cpu", policy_kwargs=kwargs
    )
    model.save(tmp_path / "tiny.zip")
    save_policy(model.policy, tmp_path / "tiny.safetensors")
    observations, masks = mover_planes(positions[:300]), bitboards_to_array(positions[:300].legal)
    agents = {}
    for spec in (
        f"ppo:{tmp_path / 'tiny.safetensors'}",
        f"ppo:{tmp_path / 'tiny.safetensors'},deterministic=false",
        f"ppo:{tmp_path / 'tiny.zip'},trust=pickle",
    ):
        agents[spec] = agent = load_agent(spec)
        assert agent.name == spec
        first = agent.act(observations, masks, np.random.default_rng(3))
        assert masks[np.arange(300), first].all()
        assert np.array_equal(first, agent.act(observations, masks, np.random.default_rng(3)))
        assert agent.values(observations).shape == (300,)
    safe, pickled = agents[f"ppo:{tmp_path / 'tiny.safetensors'}"], agents[f"ppo:{tmp_path / 'tiny.zip'},trust=pickle"]
    assert np.array_equal(safe.probabilities(observations, masks), pickled.probabilities(observations, masks))


def test_ppo_probabilities_are_sb3_contribs_masked_distribution(positions):
    import torch

    observations, masks = mover_planes(positions[:300]), bitboards_to_array(positions[:300].legal)
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(SHIPPED_ZIP, device="cpu")
    agent = load_agent(f"ppo:{SHIPPED_MODEL}")
    with torch.no_grad():
        tensor, _ = agent.policy.obs_to_tensor(observations)
        expected = agent.policy.get_distribution(tensor, action_masks=masks).distribution.probs.numpy()
    probabilities = agent.probabilities(observations, masks)
    np.testing.assert_allclose(probabilities, expected, atol=1e-6)
    assert np.all(probabilities[~masks] < 1e-12)
    predicted, _ = model.predict(observations, action_masks=masks, deterministic=True)
    assert np.array_equal(agent.act(observations, masks, np.random.default_rng(0)), predicted)


def test_ppo_without_a_path_is_the_shipped_model_found_as_package_data():
    """`ppo` (and `ppo:` with options only) load the installed package's model file, named `ppo`."""
    shipped, by_path = load_agent("ppo"), load_agent(f"ppo:{SHIPPED_MODEL}")
    assert shipped.name == "ppo" and load_agent("ppo:deterministic=false").name == "ppo:deterministic=false"
    assert models.path(models.SHIPPED_POLICY).resolve() == SHIPPED_MODEL
    positions = random_positions(200, seed=5)
    observations, masks = mover_planes(positions), bitboards_to_array(positions.legal)
    np.testing.assert_array_equal(
        shipped.probabilities(observations, masks), by_path.probabilities(observations, masks)
    )


@pytest.mark.slow
def test_shipped_policy_file_is_bit_identical_to_the_shipped_zip():
    """Same probabilities and values on thousands of random positions: the format changes nothing."""
    safe, pickled = load_agent(f"ppo:{SHIPPED_MODEL}"), load_agent(f"ppo:{SHIPPED_ZIP},trust=pickle")
    positions = engine.concatenate([random_positions(8000, seed=11), random_positions(2000, seed=12, reserve=3)])
    observations, masks = mover_planes(positions), bitboards_to_array(positions.legal)
    assert positions.batch_size > 3000
    assert np.array_equal(safe.probabilities(observations, masks), pickled.probabilities(observations, masks))
    assert np.array_equal(safe.values(observations), pickled.values(observations))
    safe.deterministic = pickled.deterministic = False
    assert np.array_equal(
        safe.act(observations, masks, np.random.default_rng(1)),
        pickled.act(observations, masks, np.random.default_rng(1)),
    )


@pytest.mark.slow
def test_shipped_policy_file_replays_the_published_tournament():
    """greedy against the policy file, 2,000 games with the tournament's seed: the same games, pair by pair,
    as results/tournament."""
    import json

    from strategic_reserve_env.evaluation.tournament import Settings, play_pairing

    published = json.loads((SHIPPED_MODEL.parents[1] / "results" / "tournament" / "results.json").read_text())
    settings = published["settings"]
    row = next(p for p in published["pairings"] if p["a"] == "greedy" and p["b"] == "ppo")
    pairing = play_pairing(
        "greedy",
        load_agent(f"ppo:{SHIPPED_MODEL}"),
        Settings(agents=[], games=settings["games"], seed=settings["seed"], batch=settings["batch"], progress=False),
    )
    assert pairing.pair_scores == row["pair_scores"]
    assert (pairing.wins_as_red, pairing.wins_as_blue) == (row["wins_as_red"], row["wins_as_blue"])
    assert pairing.score_adjusted == pytest.approx(row["score_adjusted"], abs=1e-12)


# -- every name an agent gives loads back as that agent; a huge spec is echoed shortened ------------------------------


SPECS = [
    "random",
    "greedy",
    "expectimax",
    "expectimax:depth=1",
    "expectimax:depth=1,width=3",
    "rollout:rollouts=4,width=2",
    "rollout:rollouts=4,luck=false,horizon=3",
    "rollout:rollouts=4,base=ppo",
    "ppo",
    "ppo:deterministic=false",
    "ppo:deterministic=true",
    "value",
    "value:depth=1",
    "value:width=3,depth=1",
    f"ppo:{models.path(models.SHIPPED_POLICY)},deterministic=false",
    f"value:{models.path(models.VALUE_NET)},depth=1",
]


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
def test_every_canonical_name_loads_as_the_same_agent(spec):
    name = load_agent(spec).name
    assert load_agent(name).name == name


@pytest.mark.slow
def test_the_benchmark_panels_names_load():
    for protocol in PROTOCOLS.values():
        for member in protocol.panel:
            name = load_agent(member.spec).name
            assert load_agent(name).name == name


def test_a_user_agents_name_with_options_loads(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from strategic_reserve_env.agents import ExpectimaxAgent\ndef make(depth=2):\n"
                    "    return ExpectimaxAgent(depth=depth)\n")  # fmt: skip
    name = load_agent(f"{path}:make:depth=1").name
    assert load_agent(name).name == name


HUGE = "x" * 100_000


HUGE_SPECS = [
    HUGE,
    f"{HUGE}.py:act",
    f"pkg.{HUGE}:act",
    f"{REPO}/evaluate.py:{HUGE}",
    f"greedy:{HUGE}",
    f"expectimax:depth={HUGE}",
    f"expectimax:{HUGE}=1",
    f"ppo:{HUGE}.safetensors",
    f"value:{HUGE}.safetensors",
    f"rollout:base={HUGE}",
    f"random:{HUGE}",
]


@pytest.mark.parametrize("spec", HUGE_SPECS, ids=range(len(HUGE_SPECS)))
def test_a_huge_spec_is_echoed_shortened(spec):
    with pytest.raises(ValueError) as caught:
        load_agent(spec)
    message = str(caught.value)
    assert "x" * (ECHO_LIMIT + 1) not in message, message[:200]
    assert len(message) < 2000


def test_a_huge_luck_value_spec_is_echoed_shortened():
    with pytest.raises(ValueError) as caught:
        load_luck_value(HUGE)
    assert "x" * (ECHO_LIMIT + 1) not in str(caught.value)


@pytest.mark.slow
def test_evaluate_echoes_a_huge_spec_shortened():
    result = subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", "evaluate", "random", f"greedy:{HUGE}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2 and len(result.stderr) < 2000, result.stderr[:300]
