"""Distillation (agents/distill.py, train.py --distill-*): labels, the supervised fit, and the pipeline end to end."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.distill import FitSettings, agreement, collect_positions, expert_targets, fit
from strategic_reserve_env.agents.ppo_file import build_policy
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.envs import arena

from conftest import REPO

EXPERT = "expectimax:depth=2"


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Torch on one thread: two threads on two shared cores wait for each other (20x slower here)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def positions():
    return collect_positions(load_agent(EXPERT), [load_agent("greedy"), load_agent("random")], 40, seed=3)


@pytest.mark.slow
def test_labels_are_the_experts_choices(positions):
    expert = load_agent(EXPERT)
    assert len(positions) > 500 and positions.observations.dtype == np.int8
    assert set(np.unique(positions.outcomes)) <= {-1.0, 0.0, 1.0} and (positions.outcomes == 1).any()
    sample = positions.take(np.arange(50))
    np.testing.assert_array_equal(sample.values, expert.move_values(sample.observations, sample.masks))
    hard = expert_targets(positions)
    assert np.allclose(hard.sum(axis=1), 1) and not (hard[~positions.masks] > 0).any()
    # the expert's own act only ever picks a square its hard target has
    picks = expert.act(sample.observations, sample.masks, np.random.default_rng(0))
    assert (hard[np.arange(50), picks] > 0).all()
    soft = expert_targets(positions, temperature=0.05)
    assert np.allclose(soft.sum(axis=1), 1) and (soft.argmax(axis=1) == hard.argmax(axis=1)).mean() > 0.9
    assert ((soft > 0) & (hard == 0)).any()  # a temperature spreads the target over the searched squares


@pytest.mark.slow
def test_the_fitted_network_agrees_with_the_expert_on_held_out_positions(positions):
    torch.manual_seed(0)
    description = {
        "format": "strategic-reserve-ppo-policy",
        "version": 1,
        "observation_shape": [6, 6, 9],
        "observation_dtype": "int8",
        "actions": 36,
        "net_arch": [64, 64],
        "activation": "Tanh",
        "features": {"kind": "mlp"},
        "share_features_extractor": True,
        "normalize_images": True,
    }
    policy = build_policy(description)
    rows = np.random.default_rng(0).permutation(len(positions))
    held_out, train = positions.take(rows[:200]), positions.take(rows[200:])
    targets = expert_targets(held_out)
    chance = float(np.mean(targets.astype(bool).sum(axis=1) / held_out.masks.sum(axis=1)))
    before = agreement(policy, held_out, targets)
    history = fit(policy, train, expert_targets(train), FitSettings(epochs=15, batch_size=64))
    after = agreement(policy, held_out, targets)
    assert history[-1]["cross_entropy"] < history[0]["cross_entropy"]
    assert after > max(1.5 * chance, before + 0.1), (chance, before, after)


def test_the_fit_reports_each_epoch_on_stdout_not_stderr(positions, capsys):
    """An epoch's line is progress, not an error: on stdout, as train's and train-az's progress lines, so that
    a fault's one line is alone on stderr (the probe: "fit epoch" lines beside a full disk's error line)."""
    policy, part = copy.deepcopy(load_agent("ppo").policy), positions.take(np.arange(64))
    fit(policy, part, expert_targets(part), FitSettings(epochs=2), progress=False)
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith("fit epoch 2/2: cross-entropy ") and err == ""


@pytest.mark.slow
def test_train_distills_then_continues_with_ppo(tmp_path, positions):
    out = tmp_path / "run"
    tiny = "--n-envs 32 --n-steps 16 --batch-size 256 --n-epochs 1 --eval-games 20 --final-eval-games 20 --threads 1"
    result = subprocess.run(
        [sys.executable, "train.py", *tiny.split(), "--total-steps", "512", "--eval-every", "0"]
        + [
            "--distill-games",
            "20",
            "--distill-opponents",
            "greedy",
            "--distill-epochs",
            "3",
            "--no-progress",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "distillation: " in result.stdout
        and "of expectimax:depth=2 in 20 games against each of greedy" in result.stdout
    )
    share = float(result.stdout.split("the network plays the expert's choice in ")[1].split(" %")[0])
    assert 10 < share <= 100
    assert json.loads((out / "settings.json").read_text())["distill_games"] == 20
    distilled, agent = (load_agent(f"ppo:{out / name}") for name in ("distilled.safetensors", "model.safetensors"))
    sample = positions.take(np.arange(200))
    before, after = (a.probabilities(sample.observations, sample.masks) for a in (distilled, agent))
    assert not np.allclose(before, after, atol=1e-4)  # PPO went on from the distilled network
    games = arena.play(
        [agent, load_agent("greedy")],
        np.tile([0, 1], 10),
        np.arange(20).repeat(1),
        Config(),
        [np.random.default_rng(0), np.random.default_rng(1)],
    )
    assert not games.truncated.any() and (games.winner >= 0).all()  # legal play to the end (checked by arena)
