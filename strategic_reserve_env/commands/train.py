"""Train a MaskablePPO agent for Strategic Reserve against a pool of opponents, then evaluate it.

    python train.py                       # the default run (what `make train` does): distillation
    python train.py --distill-games 1000 --out runs/quick
    python train.py --distill-games 0 --total-steps 6000000 --out runs/ppo   # PPO alone, from scratch
    python train.py --distill-games 0 --total-steps 6000000 --out runs/ppo --resume   # continue a killed PPO run

Two phases. First, distillation (``--distill-*``, agents/distill.py): the
expert (expectimax:depth=2) plays ``distill_games`` games against each of
``distill_opponents``; each of its decisions is labelled with its choice, and
the network is fitted to those labels (masked cross-entropy on the action
head, squared error of the value head against the game's outcome).
``--distill-games 0`` skips it. Then PPO continues from the fitted network:
the learner plays ``n_envs`` games in one engine batch
(:class:`strategic_reserve_env.sb3_env.StrategicReserveVecEnv`). Each game draws
its opponent when it starts, from a weighted mixture of baseline agents and
frozen snapshots of the learner ("self"). Periodic and final evaluations use
evaluation/tournament.py's paired-dice matches. Everything goes to ``--out``: TensorBoard
logs (``tb/``), checkpoints, the network after the distillation
(``distilled.safetensors``), the policy file ``model.safetensors`` (the agent
spec ``ppo:OUT/model.safetensors``; it cannot run code when loaded), SB3's
``model.zip`` (pickles: for SB3 users, loaded only with ``,trust=pickle``),
``evaluation.json`` / ``.md``.

Checkpoints (``checkpoints/checkpoint_STEPS-RUNID.pt``, the last two kept) are
taken after a PPO update and at the end of a run; they hold tensors, numbers
and strings only (``torch.load(weights_only=True)``, which runs no code from
the file): the network and its optimizer, the snapshot pool, the games in
progress with their dice streams, the generators of numpy, torch and Python,
and the step counters. ``--resume`` continues exactly where a checkpoint was
taken: a run resumed from step S makes the same games, updates and weights as
one that never stopped. A checkpoint that does not load (cut short by a kill,
or not a checkpoint) is skipped with a warning for the one before it.
Checkpoints start with PPO: a run killed during the distillation starts anew
(with ``--restart``), and makes the same network again (same seed, same games).

A run owns its ``--out``: it writes a run id (``run.json``) when it starts and
holds the folder's lock (``strategic_reserve_env.outputs``) while it runs, so a
second process on the same folder is refused. A folder that holds another run
is refused unless ``--resume`` (continue it) or ``--restart`` (start over: its
run file, checkpoints and settings go first). ``--resume`` refuses a run whose
training-defining settings differ (every setting but those of
``MAY_CHANGE``: a larger ``--total-steps``, ``--threads``, ``--progress``,
``--device``, the evaluation and checkpoint cadence), naming the setting.
Checkpoint names carry the run id, and pruning only touches this run's.
"""

from __future__ import annotations

import copy
import json
import random
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import tyro
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

from strategic_reserve_env import outputs
from strategic_reserve_env.agents import distill, load_agent
from strategic_reserve_env.agents.networks import BoardCNN
from strategic_reserve_env.agents.policy_file import architecture_of, save_policy
from strategic_reserve_env.agents.ppo import PPOAgent
from strategic_reserve_env.commands import named
from strategic_reserve_env.config import Config
from strategic_reserve_env.evaluation import tournament
from strategic_reserve_env.outcome import REWARDS
from strategic_reserve_env.progress import Progress
from strategic_reserve_env.sb3_env import StrategicReserveVecEnv

FEATURES = ("mlp", "cnn")
MAX_SEED = 2**32 - 1  # SB3 seeds numpy's global generator, which takes 32-bit seeds


@dataclass(frozen=True)
class TrainSettings:
    """Settings of a training run (every field is a command-line option)."""

    total_steps: int = 0
    """PPO: learner decisions to train on (environment steps, summed over the games); 0: no PPO, the
    distilled network is the model. PPO after the distillation lost strength in our measurements (see
    models/README.md), so it is off by default; from scratch (--distill-games 0) give it millions."""
    n_envs: int = 512
    """Games played at once in one engine batch."""
    n_steps: int = 32
    """Steps per game between two PPO updates (the rollout is n_envs * n_steps)."""
    batch_size: int = 4096
    """Minibatch size of the PPO update."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.995
    """Discount; games end with +1 or -1 after about 15 learner decisions."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layers of the policy and value networks."""
    features: str = "mlp"
    """Input network: "mlp" (flattened planes) or "cnn" (3x3 convolutions, agents/networks.py)."""
    cnn_channels: int = 32
    """Channels of the convolutions when --features cnn."""
    opponents: str = "random:1,greedy:3,self:1"
    """Opponent mixture, name:weight; names are agent specs or "self" (snapshots of the learner)."""
    snapshot_every: int = 500_000
    """Steps between two snapshots of the learner added to the pool."""
    max_snapshots: int = 4
    """Snapshots kept in the pool (the oldest leave first); at least 1 (no self-play: give "self" weight 0)."""
    eval_every: int = 1_000_000
    """Steps between evaluations against random and greedy (0: none)."""
    eval_games: int = 400
    """Games per opponent in a periodic evaluation (paired dice)."""
    final_eval_games: int = 2000
    """Games per opponent in the final evaluation (paired dice)."""
    checkpoint_every: int = 500_000
    """Steps between checkpoints (a resumed run loses at most this much)."""
    reward: str = "outcome"
    """The learner's reward: "outcome" (+1 win, -1 loss) or "luck_adjusted" (the outcome minus the learner's
    luck in the rolls since its decision, under the reserve-race model: the same expected return, less variance;
    strategic_reserve_env.outcome)."""
    seed: int = 0
    """Seed of the dice, the opponents, the seats and the network."""
    out: str = "runs/ppo"
    """Output directory."""
    device: str = "cpu"
    """Torch device."""
    threads: int = 1
    """Torch CPU threads (on shared cores a second thread waits more than it computes)."""
    resume: bool = False
    """Continue from the last checkpoint in --out (exactly: same games and updates as an uninterrupted run)."""
    restart: bool = False
    """Start over in an --out that holds another run: its run file, checkpoints and settings are removed first."""
    progress: bool = True
    """Show progress: a bar on a terminal, a plain line every 30 s when stderr is a file or a pipe."""
    distill_games: int = 10_000
    """Distillation before PPO: games (even) the expert plays against each of --distill-opponents, its
    decisions labelled with its move values for a supervised fit of the network (0: none, PPO from scratch)."""
    distill_expert: str = "expectimax:depth=2"
    """The agent imitated; it must offer move_values(observations, masks, rng) (expectimax does; the rollout
    agent too, for expert iteration: rollout:rollouts=64,width=6)."""
    distill_opponents: str = "greedy,expectimax:depth=2"
    """Comma-separated agent specs the expert plays against while its decisions are labelled."""
    distill_explore: float = 0.1
    """Probability that the expert plays a random legal square instead (labels stay its own choice)."""
    distill_temperature: float = 0.0
    """0: the target is the expert's choice; > 0: softmax of its move values at this temperature."""
    distill_epochs: int = 10
    """Passes of the supervised fit over the labelled decisions."""
    distill_batch_size: int = 1024
    """Decisions per gradient step of the supervised fit."""
    distill_learning_rate: float = 1e-3
    """Adam learning rate of the supervised fit (decayed linearly to 0)."""
    distill_value_weight: float = 0.5
    """Weight of the value head's squared error (against the game's outcome) in the supervised loss."""


def _at_least(settings: TrainSettings, name: str, low: float) -> None:
    value = getattr(settings, name)
    if not value >= low:
        raise ValueError(f"--{name.replace('_', '-')} must be >= {low}, got {value}")


def check_settings(settings: TrainSettings) -> list[tuple[str, float]]:
    """``ValueError`` (one line naming the option) for the first bad setting; else the parsed opponent mixture.

    Nothing is written and nothing trains before every setting has passed.
    """
    _at_least(settings, "total_steps", 0)
    for name in (
        "n_envs",
        "n_steps",
        "n_epochs",
        "snapshot_every",
        "max_snapshots",
        "checkpoint_every",
        "threads",
        "cnn_channels",
        "distill_epochs",
        "distill_batch_size",
    ):
        _at_least(settings, name, 1)
    _at_least(settings, "distill_games", 0)
    _at_least(settings, "distill_temperature", 0)
    _at_least(settings, "distill_value_weight", 0)
    if settings.distill_games % 2:
        raise ValueError(
            f"--distill-games must be even (each opponent is met as Red and as Blue), got {settings.distill_games}"
        )
    if not 0 <= settings.distill_explore <= 1:
        raise ValueError(f"--distill-explore must be in [0, 1], got {settings.distill_explore}")
    if not settings.distill_learning_rate > 0:
        raise ValueError(f"--distill-learning-rate must be > 0, got {settings.distill_learning_rate}")
    _at_least(settings, "batch_size", 2)  # PPO normalises advantages over each minibatch
    _at_least(settings, "eval_every", 0)
    if settings.reward not in REWARDS:
        raise ValueError(f"--reward must be one of {', '.join(REWARDS)}, got {settings.reward!r}")
    _at_least(settings, "ent_coef", 0)
    if settings.n_envs * settings.n_steps < 2:
        raise ValueError(
            f"--n-envs times --n-steps must be >= 2 (a rollout of one step has no advantage spread), "
            f"got {settings.n_envs} x {settings.n_steps}"
        )
    for name in ("eval_games", "final_eval_games"):
        games = getattr(settings, name)
        if games < 2 or games % 2:
            raise ValueError(f"--{name.replace('_', '-')} must be an even number >= 2 (paired dice), got {games}")
    for name in ("learning_rate", "clip_range"):
        if not getattr(settings, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(settings, name)}")
    if not 0 < settings.gamma <= 1:
        raise ValueError(f"--gamma must be in (0, 1], got {settings.gamma}")
    if not 0 <= settings.gae_lambda <= 1:
        raise ValueError(f"--gae-lambda must be in [0, 1], got {settings.gae_lambda}")
    if any(size < 1 for size in settings.net_arch):
        raise ValueError(f"--net-arch sizes must be >= 1, got {list(settings.net_arch)}")
    if settings.features not in FEATURES:
        raise ValueError(f"--features must be one of {', '.join(FEATURES)}, got {settings.features!r}")
    if not 0 <= settings.seed <= MAX_SEED:
        raise ValueError(f"--seed must be in [0, {MAX_SEED}], got {settings.seed}")
    try:
        device = torch.device(settings.device)
    except RuntimeError:
        raise ValueError(f"--device {settings.device!r} is not a torch device (e.g. cpu, cuda)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {settings.device}: this torch build or machine has no CUDA device")
    if settings.distill_games:
        distill_agents(settings)
    elif not settings.total_steps:
        raise ValueError("--total-steps 0 and --distill-games 0: nothing to train")
    if settings.resume and settings.restart:
        raise ValueError("--resume and --restart exclude each other: continue the run in --out, or start over")
    outputs.check_out(settings.out)  # a directory we can write in (or can create), before anything is built
    return parse_opponents(settings.opponents)


def parse_opponents(text: str) -> list[tuple[str, float]]:
    """'random:1,greedy:2,self:1' -> [(name, weight), ...]; agent specs are checked."""
    mixture = []
    for item in filter(None, text.split(",")):
        name, _, weight = item.rpartition(":")
        try:
            value = float(weight)
        except ValueError:
            raise ValueError(f"--opponents: {item!r} is not name:weight") from None
        if value < 0:
            raise ValueError(f"--opponents: the weight of {name!r} is negative")
        if name != "self":
            load_agent(name)
        mixture.append((name, value))
    if not mixture or sum(w for _, w in mixture) <= 0:
        raise ValueError(f"--opponents needs at least one positive weight, got {text!r}")
    return mixture


def distill_agents(settings: TrainSettings) -> tuple[object, list]:
    """The expert and the opponents of the distillation; ``ValueError`` if a spec does not load or the
    expert has no ``move_values``."""
    expert = load_agent(settings.distill_expert)
    if not callable(getattr(expert, "move_values", None)):
        raise ValueError(f"--distill-expert {settings.distill_expert!r} has no move_values(observations, masks, rng)")
    opponents = [load_agent(spec) for spec in filter(None, settings.distill_opponents.split(","))]
    if not opponents:
        raise ValueError(f"--distill-opponents needs at least one agent spec, got {settings.distill_opponents!r}")
    return expert, opponents


def distill_policy(model: MaskablePPO, settings: TrainSettings) -> None:
    """The supervised phase (agents/distill.py): the expert's labelled decisions, then the fit of
    ``model.policy`` on them; prints what it did and how often the network now agrees with the expert."""
    expert, opponents = distill_agents(settings)
    start = time.perf_counter()
    positions = distill.collect_positions(
        expert, opponents, settings.distill_games, settings.seed, settings.distill_explore, progress=settings.progress
    )
    labelled = time.perf_counter()
    print(
        f"distillation: {len(positions):,} decisions of {expert.name} in {settings.distill_games} games against each "
        f"of {', '.join(o.name for o in opponents)} ({labelled - start:.0f} s)",
        flush=True,
    )
    targets = distill.expert_targets(positions, settings.distill_temperature)
    fit_settings = distill.FitSettings(
        epochs=settings.distill_epochs,
        batch_size=settings.distill_batch_size,
        learning_rate=settings.distill_learning_rate,
        value_weight=settings.distill_value_weight,
        seed=settings.seed,
    )
    history = distill.fit(model.policy, positions, targets, fit_settings, progress=settings.progress)
    agreement = distill.agreement(model.policy, positions, distill.expert_targets(positions))
    print(
        f"distillation: fit in {time.perf_counter() - labelled:.0f} s, cross-entropy "
        f"{history[-1]['cross_entropy']:.3f}, the network plays the expert's choice in {100 * agreement:.1f} % of "
        f"its decisions",
        flush=True,
    )


class OpponentPool:
    """The opponent mixture: baseline agents plus frozen snapshots of the learner sharing the "self" weight."""

    def __init__(self, mixture: list[tuple[str, float]], max_snapshots: int) -> None:
        self.baselines = [(load_agent(name), weight) for name, weight in mixture if name != "self"]
        self.self_weight = sum(weight for name, weight in mixture if name == "self")
        self.max_snapshots = max_snapshots
        self.snapshots: list[PPOAgent] = []

    def add_snapshot(self, policy, name: str, weights: dict | None = None) -> None:
        """Freeze a copy of ``policy`` (with ``weights``, a state_dict, if given) into the pool as ``name``."""
        frozen = copy.deepcopy(policy)
        if weights is not None:
            frozen.load_state_dict(weights)
        self.snapshots = (self.snapshots + [PPOAgent(frozen.eval(), name, deterministic=False)])[-self.max_snapshots :]

    def state(self) -> list[dict]:
        """The snapshots as tensors and names (for a checkpoint; :meth:`restore` reads it back)."""
        return [{"name": snapshot.name, "policy": snapshot.policy.state_dict()} for snapshot in self.snapshots]

    def restore(self, state: list[dict], policy) -> None:
        """The snapshots of :meth:`state`, each a copy of ``policy`` with its saved weights."""
        self.snapshots = []
        for snapshot in state:
            self.add_snapshot(policy, snapshot["name"], snapshot["policy"])

    def members(self) -> tuple[list, list[float]]:
        """Opponents and their weights for the environment."""
        agents = [agent for agent, _ in self.baselines]
        weights = [weight for _, weight in self.baselines]
        for snapshot in self.snapshots:
            agents.append(snapshot)
            weights.append(self.self_weight / len(self.snapshots))
        return agents, weights


class TrainingCallback(BaseCallback):
    """Progress, win rates per opponent, snapshots, periodic evaluation and checkpoints.

    ``schedule`` holds the steps of the next snapshot, evaluation and checkpoint
    (restored from a checkpoint on resume, so a resumed run keeps the same schedule).
    A checkpoint falls due during a rollout and is written at the start of the next
    one, after the PPO update on the rollout.
    """

    def __init__(
        self,
        settings: TrainSettings,
        pool: OpponentPool,
        env: StrategicReserveVecEnv,
        out: Path,
        run_id: str,
        schedule: dict[str, float] | None = None,
    ) -> None:
        super().__init__()
        self.settings, self.pool, self.env, self.out, self.run_id = settings, pool, env, out, run_id
        self.schedule = dict(schedule) if schedule else {}
        self.outcomes: dict[str, list[int]] = {}
        self.progress: Progress | None = None
        self.checkpoint_due = False
        self.collecting_since = 0.0
        self.seconds = {"collecting": 0.0, "evaluating and checkpointing": 0.0}  # wall time split

    def _on_training_start(self) -> None:
        s, steps = self.settings, self.model.num_timesteps
        self.progress = Progress(s.total_steps, "step", description="train", initial=steps, enabled=s.progress)
        self.schedule = initial_schedule(s, steps) | self.schedule
        if not s.eval_every:
            self.schedule["eval"] = float("inf")

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "opponent" in info:
                kind = info["opponent"].split("@")[0]
                self.outcomes.setdefault(kind, [0, 0])[0] += int(info["learner_won"])
                self.outcomes[kind][1] += 1
        self.progress.update(self.training_env.num_envs)
        steps, schedule = self.num_timesteps, self.schedule
        if steps >= schedule["snapshot"] and self.pool.self_weight > 0:
            self.pool.add_snapshot(self.model.policy, f"self@{steps}")
            self.env.games.set_opponents(*self.pool.members())
            schedule["snapshot"] += self.settings.snapshot_every
        start = time.perf_counter()
        if steps >= schedule["eval"]:
            self._evaluate(steps)
            schedule["eval"] += self.settings.eval_every
        if steps >= schedule["checkpoint"]:
            self.checkpoint_due = True
            schedule["checkpoint"] += self.settings.checkpoint_every
        self.seconds["evaluating and checkpointing"] += time.perf_counter() - start
        return True

    def _on_rollout_start(self) -> None:
        self.collecting_since = time.perf_counter()
        if self.checkpoint_due:  # the update on the last rollout is done: a resumed run goes on from here
            save_checkpoint(self.model, self.env, self.pool, self.schedule, self.settings, self.out, self.run_id)
            self.checkpoint_due = False
            self.seconds["evaluating and checkpointing"] += time.perf_counter() - self.collecting_since

    def _on_rollout_end(self) -> None:
        self.seconds["collecting"] += time.perf_counter() - self.collecting_since
        for kind, (wins, games) in self.outcomes.items():
            self.logger.record(f"win_rate/{kind}", wins / games)
        self.outcomes = {}
        self.logger.record("env/seconds_in_env", self.env.seconds)

    def _evaluate(self, steps: int) -> None:
        learner = PPOAgent(self.model.policy, "ppo", deterministic=True)
        settings = tournament.Settings(
            agents=[], games=self.settings.eval_games, seed=self.settings.seed + 1, progress=False
        )
        for opponent in ("random", "greedy"):
            pairing = tournament.play_pairing(learner, opponent, settings)
            self.logger.record(f"eval/score_vs_{opponent}", pairing.score)
            interval = tournament.format_interval(pairing.interval())
            self.progress.write(f"[{steps:,} steps] vs {opponent}: {pairing.score:.3f} {interval}")

    def _on_training_end(self) -> None:
        self.progress.close()


def initial_schedule(settings: TrainSettings, steps: int) -> dict[str, float]:
    """Steps of the first snapshot, evaluation and checkpoint of a run starting at ``steps``."""
    return {
        "snapshot": steps + settings.snapshot_every,
        "eval": steps + settings.eval_every if settings.eval_every else float("inf"),
        "checkpoint": steps + settings.checkpoint_every,
    }


class TimedVecEnv(StrategicReserveVecEnv):
    """The VecEnv, counting the seconds spent inside it (for the env / update split)."""

    seconds = 0.0

    def reset(self):
        start = time.perf_counter()
        result = super().reset()
        self.seconds += time.perf_counter() - start
        return result

    def step_wait(self):
        start = time.perf_counter()
        result = super().step_wait()
        self.seconds += time.perf_counter() - start
        return result


CHECKPOINT = re.compile(r"checkpoint_(\d+)-([0-9a-f]{32})\.pt")  # steps, run id
CHECKPOINT_FORMAT = "strategic-reserve-train-checkpoint"
CHECKPOINT_VERSION = 1
CHECKPOINTS_KEPT = 2  # the last one and the one before it (the fallback if the last is damaged)
MAY_CHANGE = (  # settings a resumed run may change; every other one defines the training and must match
    "total_steps",  # larger: train on
    "threads",
    "progress",
    "device",
    "eval_every",
    "eval_games",
    "final_eval_games",
    "checkpoint_every",
    "out",
    "resume",
    "restart",
)
RUN_STATE = ("run.json", "settings.json", "checkpoints")  # what says a folder holds a run (--restart removes it)


def _tensors(tree):
    """``tree`` with its numpy arrays as torch tensors (what ``torch.load(weights_only=True)`` reads back)."""
    if isinstance(tree, np.ndarray):
        return torch.from_numpy(tree.copy())
    if isinstance(tree, dict):
        return {key: _tensors(value) for key, value in tree.items()}
    return tree


def _arrays(tree):
    """The inverse of :func:`_tensors`."""
    if isinstance(tree, torch.Tensor):
        return tree.numpy()
    if isinstance(tree, dict):
        return {key: _arrays(value) for key, value in tree.items()}
    return tree


def generator_states() -> dict:
    """The global generators of torch, numpy and Python (SB3 samples actions and minibatches from them)."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "numpy": [kind, torch.from_numpy(keys.copy()), position, has_gauss, gauss],
        "python": random.getstate(),
    }


def set_generator_states(states: dict) -> None:
    """Restore :func:`generator_states`."""
    torch.set_rng_state(states["torch"])
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy(), position, has_gauss, gauss))
    version, internal, gauss_next = states["python"]
    random.setstate((version, tuple(internal), gauss_next))


def learner_state(model: MaskablePPO) -> dict:
    """What SB3's learner keeps between rollouts beyond its network and optimizer (private fields of
    ``MaskablePPO``: this pair is the one place that reads and writes them)."""
    return {
        "n_updates": model._n_updates,
        "episode_num": model._episode_num,
        "last_episode_starts": torch.from_numpy(np.array(model._last_episode_starts, dtype=bool)),
    }


def set_learner_state(model: MaskablePPO, state: dict, steps: int, last_observations: np.ndarray) -> None:
    """Restore :func:`learner_state` at ``steps``, with ``last_observations`` (what the env's last step returned)."""
    model.num_timesteps, model._n_updates = steps, state["n_updates"]
    model._episode_num = state["episode_num"]
    model._last_obs = last_observations
    model._last_episode_starts = state["last_episode_starts"].numpy()


def snapshot(
    model: MaskablePPO,
    env: StrategicReserveVecEnv,
    pool: OpponentPool,
    schedule: dict[str, float],
    settings: TrainSettings,
    run_id: str,
) -> dict:
    """The contents of a checkpoint (see the module docstring): everything :func:`restore` needs to go on
    exactly, as tensors, numbers and strings."""
    return {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "steps": model.num_timesteps,
        "run_id": run_id,
        "settings": json.dumps(asdict(settings)),
        "architecture": json.dumps(architecture_of(model.policy)),
        "policy": model.policy.state_dict(),
        "optimizer": model.policy.optimizer.state_dict(),
        "snapshots": pool.state(),
        "learner": learner_state(model),
        "schedule": dict(schedule),
        "env": _tensors(env.get_state()),
        "generators": generator_states(),
    }


def restore(checkpoint: dict, model: MaskablePPO, env: StrategicReserveVecEnv, pool: OpponentPool) -> dict[str, float]:
    """Put the learner, its snapshot pool, the games and the generators where :func:`snapshot` found them;
    returns the schedule of the next snapshot, evaluation and checkpoint."""
    model.policy.load_state_dict(checkpoint["policy"])
    model.policy.optimizer.load_state_dict(checkpoint["optimizer"])
    pool.restore(checkpoint["snapshots"], model.policy)
    env.games.set_opponents(*pool.members())
    env.set_state(_arrays(checkpoint["env"]))
    set_learner_state(model, checkpoint["learner"], checkpoint["steps"], env.games.observations().copy())
    set_generator_states(checkpoint["generators"])
    return checkpoint["schedule"]


def save_checkpoint(
    model: MaskablePPO,
    env: StrategicReserveVecEnv,
    pool: OpponentPool,
    schedule: dict[str, float],
    settings: TrainSettings,
    out: Path,
    run_id: str,
) -> Path:
    """Write the :func:`snapshot` as ``checkpoints/checkpoint_{steps}-{run_id}.pt``; this run's older ones but
    the previous go."""
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    path = checkpoint_path(out, model.num_timesteps, run_id)
    # written under a unique temporary name and renamed, so a kill mid-write leaves no half-written checkpoint
    # under a checkpoint's name (a damaged one is skipped by --resume all the same)
    with outputs.atomic(path) as handle:
        torch.save(snapshot(model, env, pool, schedule, settings, run_id), handle)
    for old in checkpoint_steps(out, run_id)[:-CHECKPOINTS_KEPT]:
        checkpoint_path(out, old, run_id).unlink(missing_ok=True)
    return path


def checkpoint_path(out: Path, steps: int, run_id: str | None = None) -> Path:
    """The checkpoint of run ``run_id`` (default: the run of ``out``'s run file) after ``steps`` steps."""
    return out / "checkpoints" / f"checkpoint_{steps}-{run_id or _run_of(out)}.pt"


def _run_of(out: Path) -> str | None:
    run = outputs.read_run(out)
    return None if run is None else run["run_id"]


def checkpoint_steps(out: Path, run_id: str | None = None) -> list[int]:
    """Steps of run ``run_id``'s checkpoints (default: the run of ``out``'s run file) in ``out``, in increasing
    order."""
    directory = out / "checkpoints"
    run_id = run_id or _run_of(out)
    if not directory.is_dir() or run_id is None:
        return []
    found = (CHECKPOINT.fullmatch(p.name) for p in directory.iterdir())
    return sorted(int(m.group(1)) for m in found if m and m.group(2) == run_id)


def read_checkpoint(path: Path) -> dict:
    """A checkpoint's contents, loaded with ``weights_only=True`` (no code from the file runs);
    ``ValueError`` if the file does not load or is not a checkpoint of this format."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for damaged or crafted files
        raise ValueError(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"not a {CHECKPOINT_FORMAT} file")
    if payload.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint version {payload.get('version')!r}, this train.py reads {CHECKPOINT_VERSION}")
    return payload


def latest_checkpoint(out: Path, run_id: str) -> dict:
    """The newest checkpoint of run ``run_id`` in ``out`` that loads, warning on stderr about each newer one
    that does not; ``ValueError`` when none loads."""
    steps = checkpoint_steps(out, run_id)
    if not steps:
        raise ValueError(
            f"--resume: no checkpoint of run {run_id} (checkpoint_STEPS-{run_id}.pt) in {out / 'checkpoints'}"
        )
    for last in reversed(steps):
        path = checkpoint_path(out, last, run_id)
        try:
            return read_checkpoint(path)
        except ValueError as error:
            print(f"warning: --resume: skipping {path}: it does not load ({error})", file=sys.stderr)
    raise ValueError(f"--resume: none of the {len(steps)} checkpoint(s) in {out / 'checkpoints'} loads")


def resume(
    checkpoint: dict, settings: TrainSettings, model: MaskablePPO, env: StrategicReserveVecEnv, pool: OpponentPool
) -> dict[str, float]:
    """:func:`restore` ``checkpoint`` after :func:`check_resumable` (``ValueError`` naming a setting that
    differs); returns the schedule of the next snapshot, evaluation and checkpoint."""
    check_resumable(json.loads(checkpoint["settings"]), settings, checkpoint["steps"])
    return restore(checkpoint, model, env, pool)


def check_resumable(saved: dict, settings: TrainSettings, steps: int) -> None:
    """``ValueError`` naming the first training-defining setting (all but :data:`MAY_CHANGE`) in which
    ``settings`` differ from the ``saved`` ones, or a --total-steps below the ``steps`` already trained."""
    for name, value in asdict(settings).items():
        now = list(value) if isinstance(value, tuple) else value
        if name not in MAY_CHANGE and saved.get(name) != now:
            raise ValueError(
                f"--resume: the run was trained with --{name.replace('_', '-')} {saved.get(name)}, not {now}; "
                f"resume with the same setting (or --restart to start over)"
            )
    if settings.total_steps < steps:
        raise ValueError(f"--resume: --total-steps {settings.total_steps} is below the {steps:,} steps already trained")


def claim(out: Path, settings: TrainSettings) -> str:
    """The run id of this run in ``out`` (whose lock the caller holds): the folder's own with --resume;
    else a new one, written to run.json, after --restart removed another run's state. ``ValueError`` if the
    folder holds another run and neither option is given."""
    run = outputs.read_run(out)
    held = [name for name in RUN_STATE if (out / name).exists()]
    if settings.resume:
        if run is None:
            raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
        return run["run_id"]
    if held and not settings.restart:
        owner = f"run {run['run_id']} ({run.get('command', '')}, started {run.get('started')})" if run else "a run"
        raise ValueError(
            f"--out {out} holds {owner}: --resume to continue it, --restart to start over (removes its "
            f"{', '.join(held)}), or choose another folder"
        )
    for name in held:
        path = out / name
        if path.is_dir():
            for checkpoint in path.iterdir():
                checkpoint.unlink()
            path.rmdir()
        else:
            path.unlink()
    return outputs.write_run(out, outputs.new_run_id(), "train.py")["run_id"]


def build_model(settings: TrainSettings, env, out: Path) -> MaskablePPO:
    """A fresh MaskablePPO learner."""
    policy_kwargs: dict = {"net_arch": list(settings.net_arch)}
    if settings.features == "cnn":
        policy_kwargs |= {
            "features_extractor_class": BoardCNN,
            "features_extractor_kwargs": {"channels": settings.cnn_channels},
        }
    return MaskablePPO(
        "MlpPolicy",
        env,
        learning_rate=settings.learning_rate,
        n_steps=settings.n_steps,
        batch_size=settings.batch_size,
        n_epochs=settings.n_epochs,
        gamma=settings.gamma,
        gae_lambda=settings.gae_lambda,
        clip_range=settings.clip_range,
        ent_coef=settings.ent_coef,
        policy_kwargs=policy_kwargs,
        tensorboard_log=str(out / "tb"),
        seed=settings.seed,
        device=settings.device,
        verbose=0,
    )


def final_evaluation(model: MaskablePPO, settings: TrainSettings, out: Path) -> list[tournament.Pairing]:
    """Paired-dice evaluation against random and greedy, written beside the model."""
    learner = PPOAgent(model.policy, f"ppo:{out / 'model.safetensors'}", deterministic=True)
    eval_settings = tournament.Settings(
        agents=[learner.name, "random", "greedy"],
        games=settings.final_eval_games,
        seed=settings.seed + 2,
        progress=False,
    )
    pairings = [tournament.play_pairing(learner, opponent, eval_settings) for opponent in ("random", "greedy")]
    ratings = tournament.bradley_terry(eval_settings.agents, pairings)
    tournament.write_outputs(
        out, eval_settings, pairings, ratings, stem="evaluation", plot=False, extra={"training": asdict(settings)}
    )
    return pairings


def time_split(total: float, in_env: float, measured: dict[str, float]) -> str:
    """One line: the shares of the wall time spent in the environment, the learner's rollout steps,
    the PPO update, and evaluations and checkpoints (which run during the rollouts)."""
    side = measured["evaluating and checkpointing"]
    parts = {
        "environment": in_env,
        "learner forward passes and rollout buffer": measured["collecting"] - in_env - side,
        "PPO update": total - measured["collecting"],
        "evaluations and checkpoints": side,
    }
    return "wall time: " + ", ".join(f"{name} {100 * value / max(total, 1e-9):.1f} %" for name, value in parts.items())


def main(settings: TrainSettings) -> int:
    out = Path(settings.out)
    try:
        mixture = check_settings(settings)
        with outputs.lock(out):
            run_id = claim(out, settings)
            checkpoint = latest_checkpoint(out, run_id) if settings.resume else None
            return train(settings, mixture, out, run_id, checkpoint)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def train(settings: TrainSettings, mixture, out: Path, run_id: str, checkpoint: dict | None) -> int:
    """The run of :func:`main`, in ``out`` (locked, owned by run ``run_id``), from ``checkpoint`` if given."""
    torch.set_num_threads(settings.threads)
    pool = OpponentPool(mixture, settings.max_snapshots)
    opponents, weights = pool.members() if pool.baselines else ([load_agent("random")], [1.0])
    env = TimedVecEnv(settings.n_envs, opponents, weights, seed=settings.seed, config=Config(), reward=settings.reward)
    model = build_model(settings, VecMonitor(env), out)
    schedule = None
    if checkpoint is not None:
        try:
            schedule = resume(checkpoint, settings, model, env, pool)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except (KeyError, TypeError, AttributeError, RuntimeError) as error:  # it loads, but its contents are wrong
            print(
                f"error: --resume: the checkpoint of step {checkpoint['steps']} in {out / 'checkpoints'} is "
                f"malformed ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})",
                file=sys.stderr,
            )
            return 2
        print(f"resuming from {model.num_timesteps:,} steps with {len(pool.snapshots)} snapshot(s)", file=sys.stderr)
    else:
        if settings.distill_games:
            distill_policy(model, settings)
            save_policy(model.policy, out / "distilled.safetensors", about={"training": asdict(settings)})
        if pool.self_weight > 0:
            pool.add_snapshot(model.policy, "self@0")  # the first "self" is the initial (or distilled) network
    env.games.set_opponents(*pool.members())
    outputs.write_text(out / "settings.json", json.dumps(asdict(settings), indent=1) + "\n")

    start, steps_before = time.perf_counter(), model.num_timesteps
    remaining = settings.total_steps - model.num_timesteps
    callback = TrainingCallback(settings, pool, env, out, run_id, schedule)
    if remaining > 0:
        model.learn(remaining, callback=callback, reset_num_timesteps=checkpoint is None, tb_log_name="ppo")
    seconds = time.perf_counter() - start
    steps_done = model.num_timesteps - steps_before
    if steps_done:
        save_checkpoint(model, env, pool, callback.schedule, settings, out, run_id)
    model.save(out / "model.zip")
    save_policy(model.policy, out / "model.safetensors", about={"training": asdict(settings)})
    if steps_done:
        print(
            f"trained {steps_done:,} steps in {seconds:.0f} s: {steps_done / max(seconds, 1e-9):,.0f} env steps/s, "
            f"{100 * env.seconds / max(seconds, 1e-9):.1f} % of the time in the environment",
            flush=True,
        )
        print(time_split(seconds, env.seconds, callback.seconds), flush=True)

    pairings = final_evaluation(model, settings, out)
    print(tournament.text_table(tournament.PAIRING_HEADER, tournament.pairing_rows(pairings)))
    print(
        f"wrote {out / 'model.safetensors'} (agent spec ppo:{out / 'model.safetensors'}), {out / 'model.zip'} "
        f"(SB3), {out / 'evaluation.json'}, {out / 'evaluation.md'}"
    )
    return 0


def cli(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line: the settings from ``argv`` (default ``sys.argv[1:]``), then :func:`main`; ``prog``: the
    name ``--help`` shows (default the script's)."""
    return main(tyro.cli(TrainSettings, args=argv, prog=prog, description=named(__doc__, "train.py", prog)))


if __name__ == "__main__":
    sys.exit(cli())
