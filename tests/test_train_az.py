"""train-az end to end on a tiny configuration: it trains, resumes to the same network, and its file loads
safely and plays (agents/az_net.py, strategic_reserve_env/commands/train_az.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("mctx")
pytest.importorskip("optax")
pytest.importorskip("pgx")

from strategic_reserve_env import engine  # noqa: E402
from strategic_reserve_env.agents import az_net, load_agent  # noqa: E402
from strategic_reserve_env.board import bitboards_to_array  # noqa: E402
from strategic_reserve_env.commands import train_az  # noqa: E402
from strategic_reserve_env.config import Config  # noqa: E402
from strategic_reserve_env.observation import planes  # noqa: E402

TINY = dict(iterations=2, games=4, steps=6, simulations=2, hidden=(8,), updates=2, seed=3)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same tiny run twice: straight through, and stopped after one iteration then resumed."""
    root = tmp_path_factory.mktemp("az")
    whole = train_az.train(train_az.Settings(out=str(root / "whole"), **TINY), log=lambda line: None)
    first = train_az.Settings(out=str(root / "resumed"), **(TINY | {"iterations": 1}))
    train_az.train(first, log=lambda line: None)
    lines = []
    resumed = train_az.train(train_az.Settings(out=str(root / "resumed"), resume=True, **TINY), log=lines.append)
    return whole, resumed, lines


def test_a_resumed_run_gives_the_same_network(runs):
    whole, resumed, lines = runs
    assert lines[0] == "resumed at iteration 1"
    a, about = az_net.load(whole)
    b, _ = az_net.load(resumed)
    assert a.keys() == b.keys() and all(np.array_equal(a[name], b[name]) for name in a)
    assert about["about"]["iteration"] == 2 and about["hidden"] == [8]
    progress = [json.loads(line) for line in (whole.parent / train_az.PROGRESS).read_text().splitlines()]
    assert [p["iteration"] for p in progress] == [1, 2] and all(np.isfinite(p["policy_loss"]) for p in progress)
    assert any(path.name.startswith("events") for path in (whole.parent / "tb").iterdir())
    fresh = az_net.init(__import__("jax").random.key(0), [8])
    assert not np.array_equal(a["policy.weight"], fresh["policy.weight"])


def test_a_finished_folder_is_not_overwritten_without_resume(runs):
    whole, _, _ = runs
    with pytest.raises(ValueError, match="holds a checkpoint"):
        train_az.train(train_az.Settings(out=str(whole.parent), **TINY))


def test_the_model_plays_with_search_and_alone(runs):
    whole, _, _ = runs
    config = Config()
    state = engine.roll(engine.init(config, 3), np.array([0, 7, 20]))
    observations, masks = planes(state, state.to_move), bitboards_to_array(state.legal)
    for simulations in (0, 2):
        agent = load_agent(f"mctx:net={whole},simulations={simulations}")
        actions = agent.act(observations, masks, np.random.default_rng(0))
        assert masks[np.arange(3), actions].all()
        assert agent.name.endswith(f"simulations={simulations}")


def test_bad_model_files_are_refused_before_their_tensors_load(runs, tmp_path):
    whole, _, _ = runs
    data = whole.read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(data[:-10])
    with pytest.raises(az_net.NetFileError, match="byte ranges"):
        az_net.load(truncated)
    # a description claiming a huge network: refused from the header, nothing of that size allocated
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    description = json.loads(header["__metadata__"][az_net.METADATA_KEY])
    description["hidden"] = [4096, 4096]
    header["__metadata__"][az_net.METADATA_KEY] = json.dumps(description)
    text = json.dumps(header).encode()
    huge = tmp_path / "huge.safetensors"
    huge.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + length :])
    with pytest.raises(az_net.NetFileError, match="do not fit the described network"):
        az_net.load(huge)
    with pytest.raises(ValueError, match="no such network file"):
        load_agent(f"mctx:net={tmp_path / 'missing.safetensors'}")


def test_an_interrupted_run_says_so_in_its_progress_and_resumes(runs, tmp_path):
    """Ctrl-C after the first iteration (raised from the progress line): the progress file records it, and
    --resume continues from the checkpoint of that iteration."""

    def interrupt(line):
        raise KeyboardInterrupt

    settings = train_az.Settings(out=str(tmp_path / "stopped"), **TINY)
    with pytest.raises(KeyboardInterrupt):
        train_az.train(settings, log=interrupt)
    lines = [json.loads(line) for line in (tmp_path / "stopped" / train_az.PROGRESS).read_text().splitlines()]
    assert lines == [lines[0], {"stopped": "interrupted (SIGINT)", "iteration": 1}] and lines[0]["iteration"] == 1
    done = train_az.train(train_az.Settings(out=str(tmp_path / "stopped"), resume=True, **TINY), log=lambda line: None)
    a, _ = az_net.load(done)
    b, _ = az_net.load(runs[0])
    assert all(np.array_equal(a[name], b[name]) for name in a)
