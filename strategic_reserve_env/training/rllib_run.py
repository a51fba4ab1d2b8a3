"""The RLlib self-play run behind `train-rllib` on the run lifecycle (`run`): `Settings`, `Trainer`.

Both seats play one shared RLModule (strategic_reserve_env/envs/rllib_env.py). After each iteration the module
is written to `checkpoints/iteration_N/` (pickle-free). RLlib keeps the rest of its state only as pickles,
which this project never loads: a resumed run starts with fresh Adam moments, new games and RLlib's counters
from zero.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from strategic_reserve_env import extras
from strategic_reserve_env.agents.rllib_model import NetworkConfig
from strategic_reserve_env.core.board import DEFAULT_RESERVE
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, make_config
from strategic_reserve_env.files import outputs
from strategic_reserve_env.interrupts import Signals

from . import run as lifecycle
from .folder import check_belongs, identity
from .run import Checkpoints, Run, RunKind, say
from .settings import PPOSettings, changeable, process_field, setting

PACKAGE = Path(__file__).resolve().parents[1]  # strategic_reserve_env, sent to the workers
PROGRESS = "progress.jsonl"
RESULTS = ("model.json", "weights.npz", PROGRESS)  # what --restart removes first
KIND = RunKind(
    command="train_rllib.py",
    results=RESULTS,
    state=("checkpoints",),
    folders=("checkpoints",),
    length="iterations",
    unit="iterations",
    model="rllib:{out}",
    progress=PROGRESS,
    stopped_key="checkpoint_iteration",
)
COMMAND = KIND.command  # what run.json says made the folder
EXTRAS = ("rllib",)  # what it needs installed (the registry declares the same for `strategic-reserve train-rllib`)
# the settings' names -> RLlib's
RLLIB_NAMES = {
    "envs_per_runner": "num_envs_per_env_runner",
    "n_epochs": "num_epochs",
    "learning_rate": "lr",
    "gae_lambda": "lambda_",
    "clip_range": "clip_param",
    "ent_coef": "entropy_coeff",
    "vf_coef": "vf_loss_coeff",
}
RLLIB_SAME = ("num_env_runners", "train_batch_size", "minibatch_size", "gamma", "seed")


@dataclass(frozen=True)
class Settings(PPOSettings):
    """Settings of an RLlib self-play run (every field is a command-line option)."""

    iterations: int = changeable(100, 1)
    """Training iterations; each samples --train-batch-size env steps, then runs the PPO update on them."""
    num_env_runners: int = changeable(2, 0)
    """Sampling processes (Ray actors, one CPU each); 0 samples in the driver process."""
    envs_per_runner: int = setting(8, 1)
    """Games each env runner plays at once (one batched forward pass of the module for all of them)."""
    address: str | None = changeable(None)
    """Ray cluster to join: "auto" (the one `ray start` runs on this node) or the head's HOST:PORT.
    Default: start a local Ray for this run."""
    num_cpus: int | None = changeable(None, 1)
    """CPUs of the local Ray (default: all of the machine's); not used with --address."""
    train_batch_size: int = setting(4000, 1)
    """Env steps (placements, both seats together) per iteration."""
    minibatch_size: int = setting(500, 1)
    """Minibatch size of the PPO update."""
    vf_coef: float = setting(0.5, 0)
    """Weight of the value loss (>= 0; policy and value heads share the network)."""
    channels: int = 32
    """Channels of the 3x3 convolutions."""
    conv_layers: int = 3
    """Number of 3x3 convolutions."""
    hidden: int = 256
    """Width of the layer both heads read."""
    reserve: int = DEFAULT_RESERVE
    """Reserve size of the games."""
    ply_limit: int = DEFAULT_PLY_LIMIT
    """Games are truncated after this many placements."""
    seed: int = 0
    """Seed of the env runners' dice and of the network. With --num-env-runners 0 a run repeats exactly;
    remote env runners get new weights without RLlib waiting for them, so runs part after the first iteration."""
    threads: int = changeable(1, 1)
    """Torch CPU threads of this (driver) process, which runs the PPO update (and the sampling with
    --num-env-runners 0). Env runners use one thread each; more threads here pay only on idle cores."""
    out: str = process_field("runs/rllib")
    """Output directory: model.json, weights.npz, progress.jsonl, the run's settings and checkpoints."""

    def network(self) -> NetworkConfig:
        return NetworkConfig(channels=self.channels, conv_layers=self.conv_layers, hidden=self.hidden)

    def __post_init__(self) -> None:
        """`ValueError` naming the first bad setting (nothing read from disk)."""
        super().__post_init__()
        if self.minibatch_size > self.train_batch_size:
            raise ValueError(
                f"--minibatch-size ({self.minibatch_size}) exceeds --train-batch-size ({self.train_batch_size})"
            )
        self.network()
        make_config(reserve=self.reserve, ply_limit=self.ply_limit)


def progress(iteration: int, result: dict, seconds: float, env_runners: int) -> dict:
    """The numbers of one iteration, from RLlib's result dict, the iteration's wall time and the number
    of healthy remote env runners."""
    from ray.rllib.utils.metrics import (
        ENV_RUNNER_RESULTS,
        EPISODE_LEN_MEAN,
        NUM_ENV_STEPS_SAMPLED,
        NUM_ENV_STEPS_SAMPLED_LIFETIME,
        NUM_EPISODES,
    )

    from strategic_reserve_env.envs.rllib_env import ILLEGAL_ACTIONS, ILLEGAL_ACTIONS_LIFETIME

    runners = result.get(ENV_RUNNER_RESULTS, {})
    steps = int(runners.get(NUM_ENV_STEPS_SAMPLED, 0))
    red = runners.get("agent_episode_returns_mean", {}).get("player_0", float("nan"))
    return {
        "iteration": iteration,
        "env_runners": env_runners,
        "env_steps": steps,
        "env_steps_total": int(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)),
        "seconds": seconds,
        "env_steps_per_s": steps / seconds,
        "episodes": int(runners.get(NUM_EPISODES, 0)),
        "return_red": float(red),
        "length": float(runners.get(EPISODE_LEN_MEAN, float("nan"))),
        "illegal_actions": int(runners.get(ILLEGAL_ACTIONS, 0)),
        "illegal_actions_total": int(runners.get(ILLEGAL_ACTIONS_LIFETIME, 0)),
    }


def start_ray(settings: Settings) -> bool:
    """Start a local Ray or join the cluster at --address (unless Ray is up); True if this call did. The package
    goes to every worker (`runtime_env`): cluster nodes need the `rllib` extra but run the driver's code."""
    import ray

    if ray.is_initialized():
        return False
    runtime_env = {"py_modules": [str(PACKAGE)]}
    if settings.address is None:
        # "local": a new instance even when `ray start` runs on this machine (that one takes --address auto)
        ray.init(address="local", num_cpus=settings.num_cpus, include_dashboard=False, runtime_env=runtime_env)
    else:
        ray.init(address=settings.address, runtime_env=runtime_env)
    return True


def checkpoints(out: Path) -> Checkpoints:
    """The run's checkpoints: `checkpoints/iteration_NNNNNN/` folders."""
    return Checkpoints(out / "checkpoints", "iteration_", width=6, folders=True)


def latest_checkpoint(out: Path, belongs: tuple[str, str]) -> tuple[int, dict] | None:
    """The iteration and the module's weights of the newest checkpoint that loads (`Checkpoints.newest`);
    `ValueError` if none loads, or if it belongs to another run or other settings (its notes)."""
    from strategic_reserve_env.agents import rllib_model

    def load(path: Path):
        net, description = rllib_model.load(path)
        notes = description.get("notes", {})
        if notes.get("iteration") != int(path.name.removeprefix("iteration_")):
            raise ValueError(f"{path}: its model.json does not say iteration {path.name}")
        return {name: tensor.numpy() for name, tensor in net.state_dict().items()}, notes

    found = checkpoints(out).newest(load)
    if found is None:
        return None
    iteration, (weights, notes) = found
    check_belongs(checkpoints(out).path(iteration), notes, belongs)
    return iteration, weights


def _check_extras() -> None:
    missing = extras.missing_extra(EXTRAS, COMMAND)
    if missing is not None:
        raise missing


class Trainer(lifecycle.Trainer):
    """train-rllib on the run lifecycle; without the `rllib` extra its one line (`MissingExtraError`) before
    anything is written (on resume after the resume's own refusals, which need no library)."""

    KIND = KIND

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        if not settings.resume:
            _check_extras()  # before the lock and the run file
        self.saved: tuple[int, dict] | None = None

    def build(self, run: Run) -> tuple[int | None, int | None, str]:
        """On resume the newest checkpoint's weights (`latest_checkpoint`): Ray starts after the checks."""
        self.saved = latest_checkpoint(run.out, run.belongs) if self.settings.resume else None
        return self.saved[0] if self.saved else None, None, ""

    def ready(self) -> None:
        _check_extras()

    def train(self, run: Run, signals: Signals) -> dict:
        """Start Ray, build the algorithm, iterate (`run.iterate`), write the module."""
        import ray
        import torch

        from strategic_reserve_env.envs.rllib_env import ppo_config, save_module, set_module_weights

        settings, out = self.settings, run.out
        torch.set_num_threads(settings.threads)
        config = ppo_config(
            network=settings.network(),
            env_config={"reserve": settings.reserve, "ply_limit": settings.ply_limit},
            **{RLLIB_NAMES.get(name, name): getattr(settings, name) for name in (*RLLIB_NAMES, *RLLIB_SAME)},
        )
        started = start_ray(settings)
        last: dict = {}
        try:
            algorithm = config.build_algo()
            signals.hold()  # ray.init installed its own SIGTERM handler (one that aborts the process)
            try:
                addresses = algorithm.env_runner_group.foreach_env_runner(
                    lambda _: ray.util.get_node_ip_address(), local_env_runner=False
                )
                nodes = dict(sorted(Counter(addresses).items()))  # the remote env runners per node
                if nodes:
                    say("env runners: " + ", ".join(f"{n} on {address}" for address, n in nodes.items()))
                if self.saved is not None:
                    set_module_weights(algorithm, self.saved[1])

                def step(iteration: int) -> dict:
                    clock = time.perf_counter()
                    result = algorithm.train()
                    seconds = time.perf_counter() - clock
                    last.update(
                        progress(iteration, result, seconds, algorithm.env_runner_group.num_healthy_remote_workers())
                    )
                    return dict(last)

                def save(iteration: int) -> None:  # whole under a temporary name, then renamed
                    found = checkpoints(out)
                    found.folder.mkdir(exist_ok=True)
                    partial = Path(tempfile.mkdtemp(dir=found.folder, prefix=outputs.TRASH_PREFIX))
                    notes = {"iteration": iteration} | identity(run.belongs)
                    save_module(algorithm, partial, settings.network(), notes)
                    os.rename(partial, found.path(iteration))
                    found.prune()

                lifecycle.iterate(run, signals, step, save, self.line)
                notes = {
                    "trained_by": "train_rllib.py",
                    "ray": ray.__version__,
                    "settings": asdict(settings),
                    "env_steps": last.get("env_steps_total", 0),  # since the last start (RLlib's count)
                    "env_runner_nodes": nodes,
                }
                save_module(algorithm, out, settings.network(), notes)
            finally:
                algorithm.stop()
        finally:
            if started:
                ray.shutdown()
        say(f"wrote {out}/model.json and weights.npz; play it: strategic-reserve evaluate rllib:{out} random greedy")
        return {}

    def line(self, row: dict) -> str:
        """What an iteration did."""
        return (
            f"iteration {row['iteration']}/{self.settings.iterations}: {row['env_steps']:,} env steps in "
            f"{row['seconds']:.1f} s = {row['env_steps_per_s']:,.0f} env steps/s ({row['env_steps_total']:,} "
            f"total); {row['episodes']} games, Red's return {row['return_red']:+.3f}, length {row['length']:.1f} "
            f"plies; illegal actions {row['illegal_actions']} ({row['illegal_actions_total']} total)"
        )
