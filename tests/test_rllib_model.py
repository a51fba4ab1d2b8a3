"""The RLlib module's network and file format, and the `rllib:PATH` agent: torch only, no ray needed.

Training with Ray RLlib itself is tested in tests/integration/test_rllib.py.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys

import numpy as np
import pytest
import tomllib
import torch
from test_agents import random_positions

from strategic_reserve_env.agents import load_agent, rllib_model
from strategic_reserve_env.agents.rllib_agent import RLlibAgent
from strategic_reserve_env.agents.rllib_model import BoardNet, NetworkConfig
from strategic_reserve_env.core.board import bitboards_to_array
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import mover_planes
from strategic_reserve_env.envs import arena
from strategic_reserve_env.extras import EXIT_MISSING_EXTRA

from conftest import REPO

SMALL = NetworkConfig(channels=4, conv_layers=2, hidden=16)


def saved_module(directory, seed: int = 0, config: NetworkConfig = SMALL):
    """A randomly initialised network written to `directory`; returns the network."""
    torch.manual_seed(seed)
    net = BoardNet(config).eval()
    rllib_model.save(
        directory, {key: value.numpy() for key, value in net.state_dict().items()}, config, notes={"test": True}
    )
    return net


def test_save_and_load_give_the_same_network(tmp_path):
    net = saved_module(tmp_path)
    loaded, description = rllib_model.load(tmp_path)
    assert description["network"] == {"channels": 4, "conv_layers": 2, "hidden": 16}
    assert description["notes"] == {"test": True}
    state = random_positions(300, seed=1)
    planes = torch.as_tensor(mover_planes(state))
    masks = torch.as_tensor(bitboards_to_array(state.legal))
    with torch.no_grad():
        for expected, actual in zip(net(planes, masks), loaded(planes, masks), strict=True):
            torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_masked_logits_give_illegal_squares_no_probability():
    logits = torch.randn(5, 36) * 50
    masks = torch.zeros(5, 36, dtype=torch.int8)
    masks[:4, ::7] = 1  # rows 0..3 legal on squares 0, 7, 14, 21, 28, 35; row 4 on none (a finished game)
    probabilities = torch.softmax(rllib_model.masked_logits(logits, masks), dim=-1)
    assert torch.all(probabilities[:4][masks[:4] == 0] == 0)
    torch.testing.assert_close(probabilities.sum(-1), torch.ones(5))
    torch.testing.assert_close(probabilities[4], torch.full((36,), 1 / 36))  # finite and uniform, never NaN


def test_the_agent_plays_legal_squares_deterministic_and_sampled(tmp_path):
    net = saved_module(tmp_path)
    state = random_positions(500, seed=2)
    observations, masks = mover_planes(state), bitboards_to_array(state.legal)
    greedy = load_agent(f"rllib:{tmp_path}")
    sampled = load_agent(f"rllib:{tmp_path},deterministic=false")
    assert isinstance(greedy, RLlibAgent) and greedy.name == f"rllib:{tmp_path}" and greedy.uses_observation
    assert sampled.name == f"rllib:{tmp_path},deterministic=false"
    rows = np.arange(len(masks))
    actions = greedy.act(observations, masks, np.random.default_rng(0))
    assert masks[rows, actions].all()
    with torch.no_grad():
        logits, values = net(torch.as_tensor(observations), torch.as_tensor(masks))
    np.testing.assert_array_equal(actions, logits.argmax(-1).numpy())
    np.testing.assert_allclose(greedy.values(observations), values.numpy(), rtol=1e-6)
    draws = [sampled.act(observations, masks, np.random.default_rng(seed)) for seed in (5, 5, 6)]
    assert all(masks[rows, d].all() for d in draws)
    np.testing.assert_array_equal(draws[0], draws[1])  # same generator seed, same squares
    assert (draws[0] != draws[2]).any()


def test_the_agent_plays_whole_games_through_the_arena(tmp_path):
    saved_module(tmp_path)
    agents = [load_agent(f"rllib:{tmp_path}"), load_agent("random")]
    games = arena.play(
        agents,
        np.arange(20) % 2,
        np.repeat(np.arange(10), 2),
        Config(),
        [np.random.default_rng(seed) for seed in (0, 1)],
    )
    assert not games.truncated.any() and (games.winner >= 0).all()  # every game played to its end with legal moves


def _write(directory, description=None, arrays=None):
    """Overwrite the files of a saved module with a modified description and/or arrays."""
    if description is not None:
        (directory / rllib_model.MODEL_FILE).write_text(json.dumps(description))
    if arrays is not None:
        np.savez(directory / rllib_model.WEIGHTS_FILE, **arrays)


def _first(arrays: dict) -> str:
    return next(iter(arrays))


# fault: (change(directory, description, arrays) applied to a saved module, part of the error message)
FAULTS = {
    "no model.json": (lambda d, desc, arr: (d / rllib_model.MODEL_FILE).unlink(), "model.json not found"),
    "no weights": (lambda d, desc, arr: (d / rllib_model.WEIGHTS_FILE).unlink(), "weights.npz not found"),
    "bad JSON": (lambda d, desc, arr: (d / rllib_model.MODEL_FILE).write_text("{not json"), "not valid JSON"),
    "other format": (
        lambda d, desc, arr: _write(d, {**desc, "format": "other"}),
        "not a strategic-reserve-rllib-module",
    ),
    "other version": (lambda d, desc, arr: _write(d, {**desc, "version": 99}), "format version 99"),
    "other actions": (lambda d, desc, arr: _write(d, {**desc, "actions": 37}), "37 actions"),
    "bad setting": (
        lambda d, desc, arr: _write(d, {**desc, "network": {"channels": 0}}),
        "channels must be in 1..",
    ),
    "unknown setting": (lambda d, desc, arr: _write(d, {**desc, "network": {"width": 4}}), "unknown network settings"),
    "other network": (
        lambda d, desc, arr: _write(d, {**desc, "network": {**desc["network"], "hidden": 17}}),
        "the described network has",
    ),
    "extra array": (
        lambda d, desc, arr: _write(d, arrays={**arr, "extra": np.zeros(3, np.float32)}),
        "unexpected ['extra']",
    ),
    "missing array": (
        lambda d, desc, arr: _write(d, arrays={k: v for k, v in arr.items() if k != _first(arr)}),
        "missing ['",
    ),
    "wrong array shape": (
        lambda d, desc, arr: _write(d, arrays={**arr, _first(arr): np.zeros(1, np.float32)}),
        "the described network has",
    ),
    "NaN values": (
        lambda d, desc, arr: _write(d, arrays={k: np.full_like(v, np.nan) for k, v in arr.items()}),
        "finite",
    ),
    "object array": (
        lambda d, desc, arr: _write(d, arrays={**arr, _first(arr): np.array([{}], dtype=object)}),
        "only numbers are read",
    ),
    "not an archive": (
        lambda d, desc, arr: (d / rllib_model.WEIGHTS_FILE).write_bytes(b"\x80\x04junk"),
        "not a readable",
    ),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_malformed_modules_give_clear_errors(tmp_path, fault):
    saved_module(tmp_path)
    description = json.loads((tmp_path / rllib_model.MODEL_FILE).read_text())
    with np.load(tmp_path / rllib_model.WEIGHTS_FILE) as archive:
        arrays = {key: archive[key] for key in archive.files}
    change, message = FAULTS[fault]
    change(tmp_path, description, arrays)
    with pytest.raises(ValueError) as error:
        load_agent(f"rllib:{tmp_path}")
    assert message in str(error.value)


def test_an_empty_rllib_spec_asks_for_the_directory():
    with pytest.raises(ValueError, match="give the directory"):
        load_agent("rllib:")


def test_a_pickled_weights_file_is_never_unpickled(tmp_path):
    """An archive member holding a pickle that would run code is refused, and the code does not run."""
    saved_module(tmp_path)
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (marker.write_text, ("ran",))

    with np.load(tmp_path / rllib_model.WEIGHTS_FILE) as archive:
        arrays = {key: archive[key] for key in archive.files}
    first = next(iter(arrays))
    payload = np.empty(1, dtype=object)
    payload[0] = Exploit()
    np.savez(tmp_path / rllib_model.WEIGHTS_FILE, **{**arrays, first: payload})
    with pytest.raises(ValueError, match="only numbers are read"):
        load_agent(f"rllib:{tmp_path}")
    assert not marker.exists()


def test_saving_checks_the_weights_against_the_network(tmp_path):
    weights = {key: value.numpy() for key, value in BoardNet(SMALL).state_dict().items()}
    with pytest.raises(ValueError, match="weights to save: the tensors do not fit the described network"):
        rllib_model.save(tmp_path, weights, NetworkConfig(channels=4, conv_layers=3, hidden=16))
    assert not (tmp_path / rllib_model.MODEL_FILE).exists()


@pytest.mark.slow
def test_train_rllib_explains_itself_and_checks_its_settings_without_ray():
    run = [sys.executable, "train_rllib.py"]
    shown = subprocess.run([*run, "--help"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert shown.returncode == 0, shown.stderr
    for option in ("--num-env-runners", "--address", "--iterations", "--out"):
        assert option in shown.stdout
    bad = subprocess.run([*run, "--minibatch-size", "5000"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert bad.returncode == 2
    assert "--minibatch-size (5000) exceeds --train-batch-size (4000)" in bad.stderr


@pytest.mark.slow
def test_the_clone_script_without_ray_names_the_extra_and_writes_nothing(tmp_path):
    """`python train_rllib.py` passes no registry: its own check of the `rllib` extra comes before the folder is
    locked or claimed (0.3.0 wrote run.json and settings.json first, so the rerun was refused)."""
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("ray is installed here")
    out = tmp_path / "run"
    run = subprocess.run(
        [sys.executable, "train_rllib.py", "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert run.returncode == EXIT_MISSING_EXTRA and run.stderr.count("\n") == 1, run.stderr
    assert "strategic-reserve-env[rllib]" in run.stderr and not out.exists()


def test_train_rllib_checks_its_out_directory_first(tmp_path, unwritable_directory, capsys):
    """A file, a path under a file, or a directory it cannot write in: one line and exit 2, before ray starts."""
    from strategic_reserve_env.commands import train_rllib

    file = tmp_path / "file"
    file.write_text("keep me")
    for out, message in [
        (file, "is a file, not a directory"),
        (file / "run", f"lies under the file {file}"),
        (unwritable_directory, f"cannot write in {unwritable_directory} ("),
    ]:
        assert train_rllib.main(["--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {out}: {message}") and err.count("\n") == 1, err
    assert file.read_text() == "keep me"


def third_party_imports(path) -> set[str]:
    """The top-level names of the modules `path` imports that are neither the standard library nor this project."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.partition(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__", "strategic_reserve_env", "agents", "evaluation"}


def test_the_rllib_extra_installs_every_module_the_rllib_code_imports():
    """`pip install -e '.[rllib]'` then `python train_rllib.py --help` works: ray's own rllib extra pulls in
    no torch, so the project's extra names it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    installed = {
        re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower()
        for requirement in project["dependencies"] + project["optional-dependencies"]["rllib"]
    }
    for path in (
        "train_rllib.py",
        "strategic_reserve_env/envs/rllib_env.py",
        "agents/rllib_model.py",
        "agents/rllib_agent.py",
    ):
        missing = third_party_imports(REPO / path) - installed
        assert not missing, f"{path} imports {sorted(missing)}, which the [rllib] extra does not install"


def _rllib_run(out, iterations: int = 2, status: str = "complete"):
    """A train-rllib folder as a run of `iterations` leaves it (its settings, a checkpoint per iteration
    naming its run and settings), made without Ray: what --resume reads before it starts Ray."""
    import dataclasses

    import torch

    from strategic_reserve_env.files import outputs
    from strategic_reserve_env.training import folder
    from strategic_reserve_env.training.rllib_run import COMMAND, Settings

    settings = Settings(iterations=iterations, channels=4, conv_layers=1, hidden=8, out=str(out))
    out.mkdir()
    run_id = outputs.write_run(out, outputs.new_run_id(), COMMAND)["run_id"]
    (out / "settings.json").write_text(json.dumps(dataclasses.asdict(settings)))
    (out / "run.json").write_text(json.dumps(outputs.read_run(out) | {"status": status, "checkpoint": iterations}))
    digest = folder.settings_hash(settings)
    weights = {k: v.numpy() for k, v in rllib_model.BoardNet(settings.network()).state_dict().items()}
    for iteration in range(1, iterations + 1):
        notes = {"iteration": iteration, "run_id": run_id, "settings_hash": digest}
        rllib_model.save(out / "checkpoints" / f"iteration_{iteration:06d}", weights, settings.network(), notes)
    torch.manual_seed(0)
    return dataclasses.replace(settings, resume=True), run_id


def _files(out) -> dict:
    """Every file of `out` but its lock file (which names the last holder) and its bytes."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_train_rllib_resume_refusals_write_nothing_and_a_finished_run_stays_complete(tmp_path, capsys, monkeypatch):
    """On the run kit, before Ray starts: --resume alone on a complete run says so and writes nothing;
    fewer --iterations than done, another --seed, a checkpoint of another run, a link for checkpoints/,
    another command's folder: each one line, exit 2, the folder byte for byte (0.3.0 marked it failed)."""
    import json

    from strategic_reserve_env.commands import train_rllib
    from strategic_reserve_env.files import outputs

    out = tmp_path / "rllib"
    _, run_id = _rllib_run(out)
    before = _files(out)
    assert train_rllib.main(["--out", str(out), "--resume"]) == 0
    assert "is complete (2 iterations" in capsys.readouterr().err and _files(out) == before
    for args, message in (
        (["--iterations", "1"], "--iterations 1 is below the 2 iterations already done"),
        (["--seed", "5"], "--seed defines the run, which was started with --seed 0, not 5"),
    ):
        assert train_rllib.main(["--out", str(out), "--resume", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert _files(out) == before
    model = out / "checkpoints" / "iteration_000002" / rllib_model.MODEL_FILE
    description = json.loads(model.read_text())
    description["notes"]["run_id"] = "0" * 32
    model.write_text(json.dumps(description))
    assert train_rllib.main(["--out", str(out), "--resume", "--iterations", "3"]) == 2
    assert f"belongs to run {'0' * 32}, not to run {run_id}" in capsys.readouterr().err
    assert outputs.read_run(out)["status"] == "complete"

    linked = tmp_path / "linked"
    _rllib_run(linked)
    (linked / "checkpoints").rename(tmp_path / "elsewhere")
    (linked / "checkpoints").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert train_rllib.main(["--out", str(linked), "--resume", "--iterations", "3"]) == 2
    assert "its checkpoints is a symbolic link" in capsys.readouterr().err

    other = tmp_path / "train"
    other.mkdir()
    outputs.write_run(other, outputs.new_run_id(), "train.py")
    from strategic_reserve_env.training import rllib_run as training_rllib

    monkeypatch.setattr(training_rllib, "_check_extras", lambda: None)  # as if ray were installed: the folder's turn
    for options in ([], ["--restart"], ["--resume"]):
        assert train_rllib.main(["--out", str(other), *options]) == 2
        assert "not of train_rllib.py" in capsys.readouterr().err
