"""The value-search agent and its value network: legal play, the features, the file format, a differential test."""

from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest
from test_agents import random_positions

from strategic_reserve_env import models
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.expectimax import ExpectimaxAgent, win_probability
from strategic_reserve_env.agents.position import captures_by_roll
from strategic_reserve_env.agents.value_network import (
    METADATA_KEY,
    NUM_FEATURES,
    SQUARE_FEATURES,
    ValueFileError,
    ValueNet,
    decided,
    features,
    fit,
    load_value_net,
    play_positions,
    square_features,
    symmetries,
    td_targets,
)
from strategic_reserve_env.agents.value_search import ValueSearchAgent, exact_backup
from strategic_reserve_env.core.board import array_to_bitboards, bitboards_to_array, bits_of, board_string
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import mover_planes
from strategic_reserve_env.core.oracle import ReferenceGame
from strategic_reserve_env.envs import arena

SHIPPED = models.path(models.VALUE_NET)
N_BACKUP = 200  # positions of the backup's differential test


@pytest.fixture(scope="module")
def positions():
    return random_positions(600, seed=5)


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    """A small untrained network written as a value file."""
    import torch

    torch.manual_seed(0)
    return ValueNet([8], {"note": "untrained"}).save(tmp_path_factory.mktemp("value") / "tiny.safetensors")


class RaceLeaf:
    """A stand-in value: the expectimax race model averaged over the roller's 36 rolls (what an untrained
    network computes, exactly)."""

    def value(self, me, opp, reserve_me, reserve_opp):
        _, lost = captures_by_roll(me, opp)  # the other player's checkers the roller captures, per roll
        race = win_probability(np.asarray(reserve_me)[:, None], np.asarray(reserve_opp)[:, None] + lost).mean(-1)
        known, exact = decided(reserve_me, reserve_opp)  # as the network's value does
        return np.where(known, exact, race)


def test_search_with_the_race_leaf_chooses_like_expectimax_depth_1(positions):
    """Differential: the one-ply value search over a leaf that is expectimax's depth-1 evaluation picks the
    placements expectimax:depth=1 picks (the same set of best squares, whatever the tie-breaks)."""
    observations, masks = mover_planes(positions), bitboards_to_array(positions.legal)
    values = ValueSearchAgent(RaceLeaf(), depth=1).placement_values(observations, masks)
    best = values >= values.max(axis=1, keepdims=True) - 1e-9
    expectimax = ExpectimaxAgent(depth=1)
    for seed in range(5):
        chosen = expectimax.act(observations, masks, np.random.default_rng(seed))
        assert best[np.arange(len(chosen)), chosen].all()
    mine = ValueSearchAgent(RaceLeaf(), depth=1).act(observations, masks, np.random.default_rng(0))
    assert best[np.arange(len(mine)), mine].all() and masks[np.arange(len(mine)), mine].all()
    assert best.sum(axis=1).mean() < masks.sum(axis=1).mean()  # the test has choices to get wrong


@pytest.mark.slow
def test_depth_2_with_the_race_leaf_chooses_like_expectimax_depth_2(positions):
    """Differential: through the opponent's roll, with the race leaf (averaged over the agent's next roll),
    the search is expectimax:depth=2: the same candidates and the same best placements among them."""
    observations, masks = mover_planes(positions), bitboards_to_array(positions.legal)
    agent = ValueSearchAgent(RaceLeaf(), depth=2)
    values = agent.placement_values(observations, masks)
    candidates = np.argsort(-values, axis=-1, kind="stable")[:, : agent.width]
    rows = np.arange(len(candidates))[:, None]
    deep = np.where(masks[rows, candidates], agent.candidate_values(observations, masks, candidates), -np.inf)
    best_squares = np.zeros(masks.shape, dtype=bool)
    best_squares[rows, candidates] = deep >= deep.max(axis=1, keepdims=True) - 1e-9
    expectimax = ExpectimaxAgent(depth=2)
    for seed in range(3):
        chosen = expectimax.act(observations, masks, np.random.default_rng(seed))
        assert best_squares[np.arange(len(chosen)), chosen].all()
    mine = agent.act(observations, masks, np.random.default_rng(0))
    assert best_squares[np.arange(len(mine)), mine].all()
    assert best_squares.sum(axis=1).mean() < masks.sum(axis=1).mean()


def test_the_features_follow_the_board_symmetries(positions):
    """Rotating or mirroring a position permutes its per-square features the same way (what training's
    augmentation relies on), and leaves the reserves alone."""
    me, opp = positions.me[:200], positions.opp[:200]
    base = square_features(me, opp)
    own, other = bitboards_to_array(me), bitboards_to_array(opp)
    for perm in symmetries():
        moved_me, moved_opp = np.zeros_like(own), np.zeros_like(other)
        moved_me[:, perm], moved_opp[:, perm] = own, other
        moved = square_features(array_to_bitboards(moved_me), array_to_bitboards(moved_opp))
        np.testing.assert_array_equal(moved[:, perm], base)
    assert features(me, opp, positions.reserve_me[:200], positions.reserve_opp[:200]).shape == (200, NUM_FEATURES)
    assert len(SQUARE_FEATURES) * 36 < NUM_FEATURES


def test_decided_positions_never_reach_the_network():
    known, value = decided(np.array([1, 1, 5, 5, 2]), np.array([4, 0, 1, 6, 0]))
    assert known.tolist() == [True, True, False, False, True]  # 5 against 1: the roll may capture first
    assert value[known].tolist() == [1.0, 0.0, 0.0]


def test_the_agent_plays_legal_full_games(tiny_file):
    agent = load_agent(f"value:{tiny_file}")
    assert agent.name == f"value:{tiny_file}"
    result = arena.play(
        [agent, load_agent("greedy")], np.arange(40) % 2, np.arange(40), Config(), [np.random.default_rng(1)] * 2
    )
    assert not result.truncated.any() and set(result.winning_agent.tolist()) <= {0, 1}


def test_placing_the_last_checker_is_always_chosen(positions, tiny_file):
    agent = load_agent(f"value:{tiny_file}")
    last = positions[positions.reserve_me == 1]
    assert last.batch_size > 0
    values = agent.placement_values(mover_planes(last), bitboards_to_array(last.legal))
    assert np.all(values[bitboards_to_array(last.legal)] == 1.0)


def test_a_value_file_round_trips_and_values_are_probabilities(tiny_file, positions):
    net = load_value_net(tiny_file)
    value = net.value(positions.me, positions.opp, positions.reserve_me, positions.reserve_opp)
    assert value.shape == (positions.batch_size,) and np.all((value >= 0) & (value <= 1))
    assert net.about == {"note": "untrained"} and net.hidden == [8]


def test_fitting_lowers_the_held_out_loss_below_the_constant():
    """A short fit on a few hundred greedy games predicts outcomes better than their mean does."""
    greedy = load_agent("greedy")
    data = play_positions([greedy, greedy], 400, seed=3, config=Config())
    assert set(np.unique(data["won"])) == {False, True}
    net, figures = fit(data, [32], epochs=3, seed=0, holdout=0.2, log=lambda _: None)
    assert figures["held_out_log_loss"] < figures["constant_log_loss"]


def _edited(tmp_path, source, tensors=None, **changes):
    from safetensors import safe_open
    from safetensors.torch import load, save

    with safe_open(str(source), framework="pt") as file:
        description = json.loads(file.metadata()[METADATA_KEY]) | changes
    path = tmp_path / "edited.safetensors"
    path.write_bytes(save(tensors or load(source.read_bytes()), metadata={METADATA_KEY: json.dumps(description)}))
    return path


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"format": "pickle"}, "not a strategic-reserve-value-net description"),
        ({"version": 2}, "format version 2; this code reads 1"),
        ({"features": ["own"]}, r"the network reads features \['own'\]"),
        ({"hidden": "__import__('os')"}, "hidden must be a list of at most 16 layer sizes"),
        ({"hidden": [16]}, r"tensor 0.weight is \[8, 257\] F32, the described network has \[16, 257\] F32"),
        ({"hidden": [8, 8]}, r"missing \['4.bias', '4.weight'\]"),
    ],
)
def test_a_value_file_must_describe_the_network_it_holds(tiny_file, tmp_path, changes, message):
    with pytest.raises(ValueFileError, match=message):
        load_value_net(_edited(tmp_path, tiny_file, **changes))


def test_a_value_file_with_non_finite_weights_does_not_load(tiny_file, tmp_path):
    from safetensors.torch import load

    tensors = load(tiny_file.read_bytes())
    tensors["0.bias"][2] = float("nan")
    path = _edited(tmp_path, tiny_file, tensors)
    with pytest.raises(ValueFileError, match=re.escape(f"{path}: tensor 0.bias holds NaN or infinite values")):
        load_agent(f"value:{path}")


class Payload:
    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"import pathlib; pathlib.Path({self.marker!r}).write_text('payload ran')",)


@pytest.mark.parametrize("content", ["pickle", "garbage", "header only", "missing"])
def test_files_that_are_no_value_files_are_refused_without_running_code(tmp_path, content):
    marker, path = tmp_path / "PAYLOAD_RAN", tmp_path / "model.safetensors"
    if content == "pickle":
        path.write_bytes(pickle.dumps(Payload(marker)))
    elif content == "garbage":
        path.write_bytes(b"\x00" * 64)
    elif content == "header only":
        import torch
        from safetensors.torch import save

        path.write_bytes(save({"x": torch.zeros(1)}))
    expected = {
        "missing": "no such value-network file",
        "header only": "no 'strategic_reserve_value' description in the header",
    }.get(content, "not a safetensors file")
    with pytest.raises(ValueError, match=re.escape(f"{path}: {expected}")):
        load_agent(f"value:{path}")
    assert not marker.exists()


@pytest.mark.parametrize(
    "spec, message",
    [
        ("value:x.safetensors,depth=3", r"value depth must be one of \(1, 2\), got 3"),
        ("value:depth=2,width=0", "value width must be in 1..36, got 0"),
        ("value:x.safetensors,breadth=2", "unknown option 'breadth'; options: depth, width"),
    ],
)
def test_value_spec_errors(tiny_file, spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec.replace("x.safetensors", str(tiny_file)) if "x.safetensors" in spec else spec)


def test_value_spec_names(tiny_file):
    assert load_agent(f"value:{tiny_file},depth=1").name == f"value:{tiny_file},depth=1"
    assert load_agent(f"value:{tiny_file},depth=2,width=6").name == f"value:{tiny_file}"


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped value network")
def test_the_shipped_network_plays_by_its_default_spec():
    agent = load_agent("value")
    assert agent.name == "value" and load_agent("value:depth=1").name == "value:depth=1"
    about = agent.value_net.about
    assert about["held_out_log_loss"] < about["constant_log_loss"]
    result = arena.play(
        [agent, load_agent("greedy")], np.arange(20) % 2, np.arange(20), Config(), [np.random.default_rng(2)] * 2
    )
    assert not result.truncated.any()


def test_td_targets_are_lambda_returns_along_each_game():
    game = np.array([7, 3, 7, 3, 7])  # game 7: positions 0, 2, 4 in order; game 3: positions 1, 3
    won = np.array([True, False, False, True, True])  # the rollers alternate; the last roller of a game won
    value = np.array([0.5, 0.4, 0.2, 0.9, 1.0])
    np.testing.assert_array_equal(td_targets(game, won, value, 1.0), won.astype(float))
    bootstrapped = td_targets(game, won, value, 0.0)
    np.testing.assert_allclose(bootstrapped, [1 - 0.2, 1 - 0.9, 1 - 1.0, 1.0, 1.0])
    half = td_targets(game, won, value, 0.5)
    assert half[4] == 1.0 and half[2] == 0.5 * (1 - 1.0) + 0.5 * (1 - 1.0)
    assert half[0] == 0.5 * (1 - 0.2) + 0.5 * (1 - half[2])


def _scalar_backups(net, positions) -> list[float]:
    """The exact backups of pre-roll positions `(me, opp, reserve_me, reserve_opp)` (ints), slowly: the
    reference rules (the roller is red) roll each of the 36 squares and place on each legal square; a placement
    that empties the roller's reserve wins. The leaves of all positions go through `net` in one call."""
    leaves: list[tuple[int, int, int, int]] = []  # the other player's pre-roll positions, from its side
    searched = []  # per position: its decided value, or per roll the leaf row (None: a win) of each placement
    for me, opp, reserve_me, reserve_opp in positions:
        known, value = decided(np.array([reserve_me]), np.array([reserve_opp]))
        if known[0]:
            searched.append(float(value[0]))
            continue
        board, rolls = board_string(me, opp), []
        for rolled in range(36):
            game = ReferenceGame(board, {"red": reserve_me, "blue": reserve_opp}, "red")
            choices = []
            for square in game.roll(rolled):
                after = ReferenceGame(
                    game.board_string(), {"red": game.reserves["R"], "blue": game.reserves["B"]}, "red"
                )
                after.legal = [square]  # the roll's placement, due now
                after.place(square)
                cells = after.board_string()
                choices.append(None if after.winner == "R" else len(leaves))
                leaves.append(
                    (
                        bits_of([i for i, c in enumerate(cells) if c == "B"]),
                        bits_of([i for i, c in enumerate(cells) if c == "R"]),
                        after.reserves["B"],
                        after.reserves["R"],
                    )
                )
            rolls.append(choices)
        searched.append(rolls)
    v = net.value(*(np.array(column, dtype=np.int64) for column in zip(*leaves, strict=True)))
    return [
        found
        if isinstance(found, float)
        else sum(max(1.0 if row is None else 1.0 - v[row] for row in choices) for choices in found) / 36
        for found in searched
    ]


@pytest.mark.slow
def test_exact_backup_matches_a_scalar_search_over_rolls_and_placements(positions):
    """The vectorised backup against the reference rules' roll-by-roll, placement-by-placement search, with the
    shipped network, on positions of random games (some decided) and with the opponent's reserve made small."""
    net = load_value_net(SHIPPED)
    sample = positions[np.arange(N_BACKUP)]
    rng = np.random.default_rng(4)
    reserve_me = np.where(rng.random(N_BACKUP) < 0.2, rng.integers(1, 3, N_BACKUP), sample.reserve_me)
    reserve_opp = np.where(rng.random(N_BACKUP) < 0.2, rng.integers(0, 3, N_BACKUP), sample.reserve_opp)
    fast = exact_backup(net, sample.me, sample.opp, reserve_me, reserve_opp, chunk=64)
    slow = _scalar_backups(
        net, zip(*(column.tolist() for column in (sample.me, sample.opp, reserve_me, reserve_opp)), strict=True)
    )
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-6)
    known, _ = decided(reserve_me, reserve_opp)
    assert (
        20 < known.sum() < N_BACKUP - 20 and len(np.unique(np.round(fast[~known], 6))) > N_BACKUP // 3
    )  # both kinds, varied


def test_exact_backup_of_forced_wins_and_losses_is_exact():
    """Forced results come out as 1 or 0 through the backup: a roller with one checker left wins after any
    roll; an opponent with one checker left and none on the board cannot be stopped (no roll captures), so
    every placement leaves it a decided win; with one checker of it on the board, only that roll helps."""
    net = load_value_net(SHIPPED)
    me, opp = bits_of([0, 1, 7]), bits_of([20])
    lone = exact_backup(net, [me, me, me, me], [opp, 0, 0, opp], [1, 3, 9, 3], [5, 1, 1, 1])
    assert lone[:3].tolist() == [1.0, 0.0, 0.0]
    assert 0 < lone[3] <= 1 / 36  # the roll on square 20 captures the opponent's checker; the 35 others lose


def test_a_fit_can_start_from_a_net_and_fit_given_targets(tiny_file):
    """`start` is copied, not changed (0 epochs give its values back), and `targets` replace the outcomes."""
    data = play_positions([load_agent("greedy")] * 2, 40, 3, Config())
    start = load_value_net(tiny_file)
    state = {name: tensor.clone() for name, tensor in start.module.state_dict().items()}
    rows = ~decided(data["reserve_me"], data["reserve_opp"])[0]
    x = features(*(data[k][rows] for k in ("me", "opp", "reserve_me", "reserve_opp")))
    copied, _ = fit(data, [8], 0, 0, start=start, targets=np.full(len(data["me"]), 0.5), log=lambda *a: None)
    np.testing.assert_array_equal(copied.logits(x), start.logits(x))
    high, _ = fit(
        data, [8], 5, 0, start=start, targets=np.full(len(data["me"]), 0.97), batch=64, lr=1e-2, log=lambda *a: None
    )
    assert all((start.module.state_dict()[name] == tensor).all() for name, tensor in state.items())
    assert (1 / (1 + np.exp(-high.logits(x)))).mean() > 0.8 > (1 / (1 + np.exp(-start.logits(x)))).mean()
