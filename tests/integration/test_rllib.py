"""Ray RLlib 2.60 (new API stack), unchanged, trains on the env: masked shared-policy self-play with PPO.

`train_rllib.py` runs two iterations with two env runners on a local Ray
(2 CPUs) and must report zero illegal actions; the module it writes loads
through `strategic_reserve_env.agents.load_agent("rllib:PATH")` and plays whole games through
`arena.play` and `evaluate.py`. RLlib's own env runner (built in this
process, no Ray cluster) shows that the count of illegal actions is real: a
policy that ignores the mask makes them, the module never does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import ray
import torch
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.pre_checks.env import check_multiagent_environments

from strategic_reserve_env.agents import load_agent, rllib_model
from strategic_reserve_env.agents.rllib_model import NetworkConfig
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import bitboards_to_array
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import mover_planes
from strategic_reserve_env.envs import arena
from strategic_reserve_env.envs.rllib_env import (
    ILLEGAL_ACTIONS,
    POLICY,
    MaskedBoardModule,
    StrategicReserveMultiAgentEnv,
    ppo_config,
)

from conftest import REPO

SMALL = NetworkConfig(channels=8, conv_layers=2, hidden=32)
ITERATIONS, ENV_RUNNERS, BATCH = 2, 2, 400
TRAIN = [
    "train_rllib.py",
    "--iterations",
    str(ITERATIONS),
    "--num-env-runners",
    str(ENV_RUNNERS),
    "--num-cpus",
    "2",
    "--envs-per-runner",
    "2",
    "--train-batch-size",
    str(BATCH),
    "--minibatch-size",
    "200",
    "--n-epochs",
    "1",
    "--channels",
    str(SMALL.channels),
    "--conv-layers",
    str(SMALL.conv_layers),
    "--hidden",
    str(SMALL.hidden),
]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Small forward passes on busy cores: one thread is many times faster (as train_rllib.py --threads 1)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def run(arguments: list[str], timeout: float) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}  # torch: one thread, as above
    return subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, cwd=REPO, env=environment, timeout=timeout
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(directory written by train_rllib.py, its progress rows, its stdout)."""
    out = tmp_path_factory.mktemp("rllib")
    result = run([*TRAIN, "--out", str(out)], timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    rows = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    return out, rows, result.stdout


def test_two_iterations_with_two_env_runners_take_no_illegal_action(trained):
    out, rows, stdout = trained
    assert [row["iteration"] for row in rows] == list(range(1, ITERATIONS + 1))
    assert all(row["env_runners"] == ENV_RUNNERS for row in rows)
    assert all(row["env_steps"] >= BATCH for row in rows)
    assert rows[-1]["env_steps_total"] == sum(row["env_steps"] for row in rows)
    assert sum(row["episodes"] for row in rows) > 0  # games ended, so the count below covers whole games
    assert [row["illegal_actions"] for row in rows] == [0] * ITERATIONS
    assert rows[-1]["illegal_actions_total"] == 0
    lines = [line for line in stdout.splitlines() if line.startswith("iteration ")]
    assert len(lines) == ITERATIONS and all(
        "env steps/s" in line and "illegal actions 0 (0 total)" in line for line in lines
    )
    description = json.loads((out / rllib_model.MODEL_FILE).read_text())
    assert description["network"] == {"channels": 8, "conv_layers": 2, "hidden": 32}
    assert description["notes"]["env_steps"] == rows[-1]["env_steps_total"]


class LegalityChecked:
    """Passes an agent's moves through, asserting each is legal."""

    def __init__(self, agent) -> None:
        self.agent, self.moves = agent, 0

    def act(self, observations, masks, rng):
        actions = np.asarray(self.agent.act(observations, masks, rng))
        assert masks[np.arange(len(actions)), actions].all()
        self.moves += len(actions)
        return actions


@pytest.mark.parametrize("options", ["", ",deterministic=false"])
def test_the_trained_module_plays_whole_games_through_the_agent_interface(trained, options):
    out, _, _ = trained
    agent = LegalityChecked(load_agent(f"rllib:{out}{options}"))
    games = arena.play(
        [agent, load_agent("random")],
        np.arange(20) % 2,
        np.repeat(np.arange(10), 2),
        Config(),
        [np.random.default_rng(0), np.random.default_rng(1)],
    )
    assert (games.winner >= 0).all() and not games.truncated.any()
    assert agent.moves > 20


def test_evaluate_py_plays_the_trained_module(trained):
    out, _, _ = trained
    result = run(["evaluate.py", f"rllib:{out}", "random", "--games", "20", "--no-progress"], timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"rllib:{out}" in result.stdout and "random" in result.stdout


def positions(games: int, seed: int) -> engine.State:
    """Every position of `games` games of random play, each awaiting a placement."""
    seen = []
    random = load_agent("random")
    arena.play(
        [random, random],
        np.arange(games) % 2,
        seed + np.arange(games),
        Config(),
        [np.random.default_rng(seed)] * 2,
        on_ply=lambda state: seen.append(state[~state.done]),
    )
    return engine.concatenate([state for state in seen if state.batch_size])


def module_batch(state: engine.State) -> tuple[dict, np.ndarray]:
    """RLlib's input batch (the env's observation dict, batched as torch tensors) and the (B, 36) bool masks."""
    masks = bitboards_to_array(state.legal)
    observations = {
        "observation": torch.as_tensor(mover_planes(state)),
        "action_mask": torch.as_tensor(masks.astype(np.int8)),
    }
    return {"obs": observations}, masks


def build_module(trained_dir=None) -> MaskedBoardModule:
    """The RLModule as RLlib builds it for the env's spaces; with the weights train_rllib.py saved, if given."""
    env = StrategicReserveMultiAgentEnv()
    module = MaskedBoardModule(
        observation_space=env.observation_spaces["player_0"],
        action_space=env.action_spaces["player_0"],
        model_config=dataclasses.asdict(SMALL),
    )
    if trained_dir is not None:
        with np.load(trained_dir / rllib_model.WEIGHTS_FILE, allow_pickle=False) as archive:
            module.set_state({f"net.{key}": archive[key] for key in archive.files})
    return module


def test_the_module_honours_the_mask_in_exploration_and_inference(trained):
    module = build_module(trained[0])
    state = positions(8, seed=3)
    batch, masks = module_batch(state)
    rows = np.arange(len(masks))
    with torch.no_grad():
        logits = module.forward_exploration(batch)["action_dist_inputs"]
        explore = module.get_exploration_action_dist_cls().from_logits(logits)
        for _ in range(50):
            assert masks[rows, explore.sample().numpy()].all()
        batch, _ = module_batch(state)  # the forward passes may consume the batch's dict
        logits = module.forward_inference(batch)["action_dist_inputs"]
        greedy = module.get_inference_action_dist_cls().from_logits(logits).to_deterministic().sample().numpy()
    assert masks[rows, greedy].all()
    # the saved module is the RLModule: the agent's greedy squares are the module's
    agent = load_agent(f"rllib:{trained[0]}")
    np.testing.assert_array_equal(agent.act(mover_planes(state), masks, np.random.default_rng(0)), greedy)


def test_values_and_training_outputs_are_finite_even_for_finished_games():
    module = build_module()
    state = positions(2, seed=4)
    batch, _ = module_batch(state)
    batch["obs"]["action_mask"][:8] = 0  # observations of finished games: no legal square
    with torch.no_grad():
        out = module.forward_train(batch)
        values = module.compute_values(batch, embeddings=out["embeddings"])
        recomputed = module.compute_values(module_batch(state)[0])
    logp = torch.log_softmax(out["action_dist_inputs"], dim=-1)
    assert values.shape == (state.batch_size,) and torch.isfinite(values).all() and torch.isfinite(logp).all()
    torch.testing.assert_close(values, recomputed)  # the value head reads the planes only, never the mask


def test_the_module_rejects_other_spaces():
    import gymnasium

    with pytest.raises(ValueError, match="needs the observation space"):
        MaskedBoardModule(
            observation_space=gymnasium.spaces.Box(0, 1, (6, 6, 9)), action_space=gymnasium.spaces.Discrete(36)
        )


def test_rllibs_env_checker_accepts_the_env():
    check_multiagent_environments(StrategicReserveMultiAgentEnv({"reserve": 5}))


def rllibs_env_runner(seed: int = 1) -> MultiAgentEnvRunner:
    """RLlib's own MultiAgentEnvRunner, built in this process (no Ray cluster)."""
    return MultiAgentEnvRunner(
        config=ppo_config(
            network=SMALL,
            num_env_runners=0,
            num_envs_per_env_runner=2,
            train_batch_size=64,
            minibatch_size=32,
            seed=seed,
        )
    )


def sample(runner: MultiAgentEnvRunner, random_actions: bool, steps: int = 600) -> tuple[dict, list]:
    """`steps` env steps: the runner's metrics of them and each episode's actions per agent."""
    # fresh games: RLlib cannot continue an episode begun by the module with random actions (or vice versa)
    episodes = runner.sample(num_timesteps=steps, random_actions=random_actions, force_reset=True)
    assert sum(episode.env_steps() for episode in episodes) >= steps
    metrics = runner.get_metrics()
    actions = [
        (agent, single.get_actions().tolist())
        for episode in episodes
        for agent, single in sorted(episode.agent_episodes.items())
    ]
    return {key: metrics[key].peek() for key in ("num_episodes", ILLEGAL_ACTIONS)}, actions


def test_illegal_actions_are_counted_and_the_masked_module_makes_none():
    runners = [rllibs_env_runner()]
    try:
        masked, actions = sample(runners[0], random_actions=False)
        assert masked["num_episodes"] > 0 and masked[ILLEGAL_ACTIONS] == 0
        runners.append(rllibs_env_runner())  # RLlib seeds the process's global generators when it builds one
        assert sample(runners[1], random_actions=False)[1] == actions  # same seed, same games
        ignoring_the_mask, _ = sample(runners[0], random_actions=True)  # RLlib samples the action space
        assert ignoring_the_mask[ILLEGAL_ACTIONS] > 0  # the symptom: games end after a few illegal moves
        assert ignoring_the_mask[ILLEGAL_ACTIONS] <= ignoring_the_mask["num_episodes"]  # each ends its game
    finally:
        for runner in runners:
            runner.stop()


def test_both_seats_share_one_module():
    config = ppo_config(network=SMALL, num_env_runners=0)
    assert set(config.policies) == {POLICY}
    assert {config.policy_mapping_fn(agent, None) for agent in ("player_0", "player_1")} == {POLICY}


def test_the_core_package_does_not_import_ray():
    code = (
        "import sys, strategic_reserve_env, strategic_reserve_env.agents.rllib_agent, "
        "strategic_reserve_env.agents.rllib_model; "
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    result = run(["-c", code], timeout=120)
    assert result.returncode == 0, result.stderr
    assert ray.__version__ == "2.60.0"


def test_the_run_keeps_a_checkpoint_per_iteration(trained):
    out, rows, _ = trained
    assert sorted(path.name for path in (out / "checkpoints").iterdir()) == [
        f"iteration_{n:06d}" for n in range(1, ITERATIONS + 1)
    ]
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    saved = rllib_model.load(out / "checkpoints" / f"iteration_{ITERATIONS:06d}")[0].state_dict()
    final = rllib_model.load(out)[0].state_dict()
    assert all(torch.equal(saved[name], final[name]) for name in final)  # the last checkpoint is the module


@pytest.mark.parametrize("signum, status", [(2, 130), (15, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_after_the_iteration_and_resume_by_folder_goes_on(tmp_path, signum, status):
    """SIGINT or SIGTERM after the first checkpoint: the run stops after its current iteration with a
    checkpoint, one line and exit 130 / 143; `--out DIR --resume` alone trains the remaining iterations of
    the run's own --iterations from the checkpoint's weights (with nothing left to train, they are the module
    it writes; RLlib's optimizer state and counters are not kept: see train_rllib.py); a complete run resumed
    stays as it is. The resumes follow the SIGINT stop; the SIGTERM one leaves the same folder but the
    signal's name."""
    import signal
    import time

    out = tmp_path / "rllib"
    total = 6
    arguments = [*TRAIN, "--iterations", str(total), "--num-env-runners", "0", "--out", str(out)]
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, *arguments],
        cwd=REPO,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 400
    first = out / "checkpoints" / "iteration_000001"
    while time.time() < deadline and not first.exists() and process.poll() is None:
        time.sleep(0.2)
    assert first.exists(), process.communicate()[1][-3000:]
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == status, stderr[-3000:]
    stopped = json.loads((out / "run.json").read_text())["stopped"]["checkpoint_iteration"]
    assert 1 <= stopped < total
    assert stderr.strip().splitlines()[-1] == (
        f"{signal.Signals(signum).name} stopped the run after iteration {stopped} (checkpoint of iteration "
        f"{stopped} kept); "
        f"go on with: python train_rllib.py --out {out} --resume"
    )
    if signum != signal.SIGINT:
        return  # the same stop (the folder differs only in the signal's name): one resume is enough
    resumed = run(["train_rllib.py", "--out", str(out), "--resume"], timeout=400)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from iteration {stopped}" in resumed.stdout
    rows = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == list(range(1, total + 1))
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    assert (out / rllib_model.MODEL_FILE).exists()
    again = run(["train_rllib.py", "--out", str(out), "--resume"], timeout=400)
    assert again.returncode == 0, again.stderr[-3000:]  # nothing left to train: the module is the checkpoint's
    assert f"is complete ({total} iterations" in again.stderr
    saved = rllib_model.load(out / "checkpoints" / f"iteration_{total:06d}")[0].state_dict()
    written = rllib_model.load(out)[0].state_dict()
    assert all(torch.equal(saved[name], written[name]) for name in saved)
