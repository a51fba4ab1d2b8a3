"""Train a MaskablePPO agent for Strategic Reserve against a pool of opponents, then evaluate it.

    python train.py                       # the default run (what `make train` does)
    python train.py --total-steps 20000 --out runs/quick
    python train.py --out runs/ppo --resume   # continue a killed run from its last checkpoint

The learner plays ``n_envs`` games in one engine batch
(:class:`strategic_reserve_env.sb3_env.StrategicReserveVecEnv`). Each game draws
its opponent when it starts, from a weighted mixture of baseline agents and
frozen snapshots of the learner ("self"). Periodic and final evaluations use
evaluation/tournament.py's paired-dice matches. Everything goes to ``--out``: TensorBoard
logs (``tb/``), checkpoints, ``model.zip``, ``evaluation.json`` / ``.md``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import tyro
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor
from tqdm import tqdm

from agents import load_agent
from agents.networks import BoardCNN
from agents.ppo import PPOAgent
from evaluation import tournament
from strategic_reserve_env.config import Config
from strategic_reserve_env.sb3_env import StrategicReserveVecEnv


@dataclass
class TrainSettings:
    """Settings of a training run (every field is a command-line option)."""

    total_steps: int = 6_000_000
    """Learner decisions to train on (environment steps, summed over the games)."""
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
    """Snapshots kept in the pool (the oldest leave first)."""
    eval_every: int = 1_000_000
    """Steps between evaluations against random and greedy (0: none)."""
    eval_games: int = 400
    """Games per opponent in a periodic evaluation (paired dice)."""
    final_eval_games: int = 2000
    """Games per opponent in the final evaluation (paired dice)."""
    checkpoint_every: int = 500_000
    """Steps between checkpoints (a resumed run loses at most this much)."""
    seed: int = 0
    """Seed of the dice, the opponents, the seats and the network."""
    out: str = "runs/ppo"
    """Output directory."""
    device: str = "cpu"
    """Torch device."""
    threads: int = 2
    """Torch CPU threads."""
    resume: bool = False
    """Continue from the last checkpoint in --out."""
    progress: bool = True
    """Show a progress bar."""


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


class OpponentPool:
    """The opponent mixture: baseline agents plus frozen snapshots of the learner sharing the "self" weight."""

    def __init__(self, mixture: list[tuple[str, float]], max_snapshots: int) -> None:
        self.baselines = [(load_agent(name), weight) for name, weight in mixture if name != "self"]
        self.self_weight = sum(weight for name, weight in mixture if name == "self")
        self.max_snapshots = max_snapshots
        self.snapshots: list[PPOAgent] = []

    def add_snapshot(self, policy, steps: int) -> None:
        """Freeze a copy of ``policy`` into the pool."""
        frozen = copy.deepcopy(policy).eval()
        self.snapshots = (self.snapshots + [PPOAgent(frozen, f"self@{steps}", deterministic=False)])[-self.max_snapshots:]

    def members(self) -> tuple[list, list[float]]:
        """Opponents and their weights for the environment."""
        agents = [agent for agent, _ in self.baselines]
        weights = [weight for _, weight in self.baselines]
        for snapshot in self.snapshots:
            agents.append(snapshot)
            weights.append(self.self_weight / len(self.snapshots))
        return agents, weights


class TrainingCallback(BaseCallback):
    """Progress bar, win rates per opponent, snapshots, periodic evaluation and checkpoints."""

    def __init__(self, settings: TrainSettings, pool: OpponentPool, env: StrategicReserveVecEnv, out: Path) -> None:
        super().__init__()
        self.settings, self.pool, self.env, self.out = settings, pool, env, out
        self.outcomes: dict[str, list[int]] = {}
        self.bar: tqdm | None = None
        self.next_snapshot = self.next_eval = self.next_checkpoint = 0
        self.collecting_since = 0.0
        self.seconds = {"collecting": 0.0, "evaluating and checkpointing": 0.0}  # wall time split

    def _on_training_start(self) -> None:
        s, steps = self.settings, self.num_timesteps
        self.bar = tqdm(total=s.total_steps, initial=steps, unit="step", disable=not s.progress, file=sys.stderr)
        self.next_snapshot = steps + s.snapshot_every
        self.next_eval = steps + s.eval_every if s.eval_every else float("inf")
        self.next_checkpoint = steps + s.checkpoint_every

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "opponent" in info:
                kind = info["opponent"].split("@")[0]
                self.outcomes.setdefault(kind, [0, 0])[0] += int(info["learner_won"])
                self.outcomes[kind][1] += 1
        self.bar.update(self.training_env.num_envs)
        steps = self.num_timesteps
        if steps >= self.next_snapshot and self.pool.self_weight > 0:
            self.pool.add_snapshot(self.model.policy, steps)
            self.env.games.set_opponents(*self.pool.members())
            self.next_snapshot += self.settings.snapshot_every
        start = time.perf_counter()
        if steps >= self.next_eval:
            self._evaluate(steps)
            self.next_eval += self.settings.eval_every
        if steps >= self.next_checkpoint:
            save_checkpoint(self.model, self.pool, self.out, steps)
            self.next_checkpoint += self.settings.checkpoint_every
        self.seconds["evaluating and checkpointing"] += time.perf_counter() - start
        return True

    def _on_rollout_start(self) -> None:
        self.collecting_since = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.seconds["collecting"] += time.perf_counter() - self.collecting_since
        for kind, (wins, games) in self.outcomes.items():
            self.logger.record(f"win_rate/{kind}", wins / games)
        self.outcomes = {}
        self.logger.record("env/seconds_in_env", self.env.seconds)

    def _evaluate(self, steps: int) -> None:
        learner = PPOAgent(self.model.policy, "ppo", deterministic=True)
        settings = tournament.Settings(agents=[], games=self.settings.eval_games, seed=self.settings.seed + 1,
                                     progress=False)
        for opponent in ("random", "greedy"):
            pairing = tournament.play_pairing(learner, opponent, settings)
            low, high = pairing.interval()
            self.logger.record(f"eval/score_vs_{opponent}", pairing.score)
            tqdm.write(f"[{steps:,} steps] vs {opponent}: {pairing.score:.3f} [{low:.3f}, {high:.3f}]", file=sys.stderr)

    def _on_training_end(self) -> None:
        self.bar.close()


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


CHECKPOINT = re.compile(r"model_(\d+)\.zip")


def save_checkpoint(model: MaskablePPO, pool: OpponentPool, out: Path, steps: int) -> None:
    """Model and snapshot weights at ``steps``; older checkpoints but the previous one are removed."""
    directory = out / "checkpoints"
    directory.mkdir(parents=True, exist_ok=True)
    # each file is written under a temporary name and renamed, so a kill mid-write leaves no broken
    # checkpoint; the model goes last: its presence marks a complete checkpoint
    torch.save([(s.name, s.policy.state_dict()) for s in pool.snapshots], directory / "partial.pt")
    os.replace(directory / "partial.pt", directory / f"snapshots_{steps}.pt")
    model.save(directory / "partial.zip")
    os.replace(directory / "partial.zip", directory / f"model_{steps}.zip")
    for old in sorted(checkpoint_steps(out))[:-2]:
        (directory / f"model_{old}.zip").unlink(missing_ok=True)
        (directory / f"snapshots_{old}.pt").unlink(missing_ok=True)


def checkpoint_steps(out: Path) -> list[int]:
    """Steps of the complete checkpoints in ``out``."""
    directory = out / "checkpoints"
    if not directory.is_dir():
        return []
    return sorted(int(m.group(1)) for p in directory.iterdir() if (m := CHECKPOINT.fullmatch(p.name)))


def build_model(settings: TrainSettings, env, out: Path) -> MaskablePPO:
    """A fresh MaskablePPO learner."""
    policy_kwargs: dict = {"net_arch": list(settings.net_arch)}
    if settings.features == "cnn":
        policy_kwargs |= {"features_extractor_class": BoardCNN,
                          "features_extractor_kwargs": {"channels": settings.cnn_channels}}
    elif settings.features != "mlp":
        raise ValueError(f"--features must be 'mlp' or 'cnn', got {settings.features!r}")
    return MaskablePPO(
        "MlpPolicy", env, learning_rate=settings.learning_rate, n_steps=settings.n_steps,
        batch_size=settings.batch_size, n_epochs=settings.n_epochs, gamma=settings.gamma,
        gae_lambda=settings.gae_lambda, clip_range=settings.clip_range, ent_coef=settings.ent_coef,
        policy_kwargs=policy_kwargs, tensorboard_log=str(out / "tb"),
        seed=settings.seed, device=settings.device, verbose=0,
    )


def resume_model(settings: TrainSettings, env, out: Path, pool: OpponentPool) -> MaskablePPO:
    """The learner and snapshot pool of the last checkpoint in ``out``."""
    steps = checkpoint_steps(out)
    if not steps:
        raise SystemExit(f"error: --resume: no checkpoint in {out / 'checkpoints'}")
    last = steps[-1]
    model = MaskablePPO.load(out / "checkpoints" / f"model_{last}.zip", env=env, device=settings.device,
                             tensorboard_log=str(out / "tb"))
    for name, weights in torch.load(out / "checkpoints" / f"snapshots_{last}.pt", weights_only=False):
        frozen = copy.deepcopy(model.policy)
        frozen.load_state_dict(weights)
        pool.snapshots.append(PPOAgent(frozen.eval(), name, deterministic=False))
    print(f"resuming from {last:,} steps with {len(pool.snapshots)} snapshot(s)", file=sys.stderr)
    return model


def final_evaluation(model: MaskablePPO, settings: TrainSettings, out: Path) -> list[tournament.Pairing]:
    """Paired-dice evaluation against random and greedy, written beside the model."""
    learner = PPOAgent(model.policy, f"ppo:{out / 'model.zip'}", deterministic=True)
    eval_settings = tournament.Settings(agents=[learner.name, "random", "greedy"], games=settings.final_eval_games,
                                      seed=settings.seed + 2, progress=False)
    pairings = [tournament.play_pairing(learner, opponent, eval_settings) for opponent in ("random", "greedy")]
    ratings = tournament.bradley_terry(eval_settings.agents, pairings)
    tournament.write_outputs(out, eval_settings, pairings, ratings, stem="evaluation", plot=False,
                           extra={"training": asdict(settings)})
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
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(settings.threads)
    try:
        pool = OpponentPool(parse_opponents(settings.opponents), settings.max_snapshots)
        if settings.features not in ("mlp", "cnn"):
            raise ValueError(f"--features must be 'mlp' or 'cnn', got {settings.features!r}")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    opponents, weights = pool.members() if pool.baselines else ([load_agent("random")], [1.0])
    env = TimedVecEnv(settings.n_envs, opponents, weights, seed=settings.seed, config=Config())
    monitored = VecMonitor(env)
    if settings.resume:
        model = resume_model(settings, monitored, out, pool)
    else:
        model = build_model(settings, monitored, out)
    if pool.self_weight > 0 and not pool.snapshots:
        pool.add_snapshot(model.policy, model.num_timesteps)  # the first "self" is the initial network
    env.games.set_opponents(*pool.members())
    (out / "settings.json").write_text(json.dumps(asdict(settings), indent=1) + "\n")

    start = time.perf_counter()
    remaining = settings.total_steps - model.num_timesteps
    callback = TrainingCallback(settings, pool, env, out)
    if remaining > 0:
        model.learn(remaining, callback=callback, reset_num_timesteps=not settings.resume, tb_log_name="ppo")
    seconds = time.perf_counter() - start
    model.save(out / "model.zip")
    steps_done = max(remaining, 0)
    print(f"trained {steps_done:,} steps in {seconds:.0f} s: {steps_done / max(seconds, 1e-9):,.0f} env steps/s, "
          f"{100 * env.seconds / max(seconds, 1e-9):.1f} % of the time in the environment", flush=True)
    print(time_split(seconds, env.seconds, callback.seconds), flush=True)

    pairings = final_evaluation(model, settings, out)
    print(tournament.text_table(tournament.PAIRING_HEADER, tournament.pairing_rows(pairings)))
    print(f"wrote {out / 'model.zip'}, {out / 'evaluation.json'}, {out / 'evaluation.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(TrainSettings)))
