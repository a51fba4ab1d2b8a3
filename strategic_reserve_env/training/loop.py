"""The `train` run on the lifecycle (`run`): `Trainer`.

MaskablePPO (sb3-contrib) plays `n_envs` games in one engine batch against opponents drawn from `pool`; a
callback adds snapshots, runs the periodic evaluations and writes checkpoints (`checkpoint`) after an update,
where a signal stops the run. At the end: the model (`model.safetensors`, SB3's `model.zip`) and the final
evaluation.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

from strategic_reserve_env.agents.networks import BoardCNN
from strategic_reserve_env.agents.ppo import PPOAgent
from strategic_reserve_env.agents.ppo_file import save_policy
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.envs.sb3_env import StrategicReserveVecEnv
from strategic_reserve_env.evaluation import tournament
from strategic_reserve_env.files import outputs
from strategic_reserve_env.files.progress import Progress
from strategic_reserve_env.interrupts import Signals

from . import checkpoint, distillation
from . import run as lifecycle
from .distillation import distill_agents
from .pool import OpponentPool
from .run import Run, RunKind, safe_points, say
from .settings import TrainSettings, defining, max_file_bytes, option

BASELINES = ("random", "greedy")  # the opponents of the periodic and final evaluations
RESULTS = ("evaluation.json", "evaluation.md", "model.safetensors", "model.zip", "distilled.safetensors")
KIND = RunKind(
    command="train",  # 0.3.0 wrote train.py: folder.FORMER_COMMANDS
    results=(*RESULTS, "tb"),
    state=(distillation.FOLDER, "checkpoints"),
    folders=("tb", distillation.FOLDER, "checkpoints"),
    length="total_steps",
    unit="steps",
    model="ppo:{out}/model.safetensors",
    stopped_key="checkpoint_steps",
    early=(distillation.FOLDER, "the distillation's labels and fit so far kept"),
)


class TimedVecEnv(StrategicReserveVecEnv):
    """The VecEnv, counting the seconds spent inside it (for the env / update split)."""

    seconds = 0.0

    def _timed(self, call):
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds += time.perf_counter() - start

    def reset(self):
        return self._timed(super().reset)

    def step_wait(self):
        return self._timed(super().step_wait)


class TrainingCallback(BaseCallback):
    """Progress, win rates per opponent, snapshots, periodic evaluation, checkpoints and stops on a signal.

    `schedule` holds the steps of the next snapshot, evaluation and checkpoint (a resumed run keeps its
    checkpoint's). A checkpoint due during a rollout, or asked for by a signal, is written at the start of the
    next one, after the PPO update; a signal then raises `Stopped`.
    """

    def __init__(self, trainer: Trainer, run: Run, signals: Signals) -> None:
        super().__init__()
        self.settings, self.pool, self.env, self.run = run.settings, trainer.pool, trainer.env, run
        self.signals = signals
        self.schedule = dict(trainer.schedule or {})
        self.outcomes: dict[str, list[int]] = {}
        self.progress: Progress | None = None
        self.checkpoint_due = False
        self.collecting_since = 0.0
        self.seconds = {"collecting": 0.0, "evaluating and checkpointing": 0.0}  # wall time split

    def _on_training_start(self) -> None:
        s, steps = self.settings, self.model.num_timesteps
        self.progress = Progress(s.total_steps, "step", description="train", initial=steps, enabled=s.progress)
        first = {"snapshot": s.snapshot_every, "eval": s.eval_every, "checkpoint": s.checkpoint_every}
        self.schedule = {name: steps + every for name, every in first.items()} | self.schedule
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
        stop = self.signals.requested
        if self.checkpoint_due or stop is not None:  # the update on the last rollout is done: a run goes on here
            self.checkpoint_due = False
            save_checkpoint(self.run, self.model, self.env, self.pool, self.schedule, self.signals)
            self.seconds["evaluating and checkpointing"] += time.perf_counter() - self.collecting_since

    def _on_rollout_end(self) -> None:
        self.seconds["collecting"] += time.perf_counter() - self.collecting_since
        for kind, (wins, games) in self.outcomes.items():
            self.logger.record(f"win_rate/{kind}", wins / games)
        self.outcomes = {}
        self.logger.record("env/seconds_in_env", self.env.seconds)

    def _evaluate(self, steps: int) -> None:
        _, pairings = play_baselines(self.model, "ppo", self.settings.eval_games, self.settings.seed + 1)
        for opponent, pairing in zip(BASELINES, pairings, strict=True):
            self.logger.record(f"eval/score_vs_{opponent}", pairing.score)
            interval = tournament.format_interval(pairing.interval())
            self.progress.write(f"[{steps:,} steps] vs {opponent}: {pairing.score:.3f} {interval}", sys.stdout)


def build_model(settings: TrainSettings, env, out: Path) -> MaskablePPO:
    """A fresh MaskablePPO learner (the settings' PPO names are SB3's own)."""
    policy_kwargs: dict = {"net_arch": list(settings.net_arch)}
    if settings.features == "cnn":
        policy_kwargs |= {
            "features_extractor_class": BoardCNN,
            "features_extractor_kwargs": {"channels": settings.cnn_channels},
        }
    ppo = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef")
    return MaskablePPO(
        "MlpPolicy",
        env,
        **{name: getattr(settings, name) for name in (*ppo, "seed", "device")},
        policy_kwargs=policy_kwargs,
        tensorboard_log=str(out / "tb"),
        verbose=0,
    )


def save_checkpoint(run: Run, model, env, pool, schedule: dict[str, float], signals=None) -> None:
    """The checkpoint of `run` at the learner's steps, then run.json says so (`Run.checkpointed`)."""
    checkpoint.save(model, env, pool, schedule, run.settings, run.out, run.run_id)
    run.checkpointed(model.num_timesteps, signals)


def check_resumable(saved: dict, settings: TrainSettings) -> None:
    """`ValueError` naming the first setting defining the run in which `settings` differ from a checkpoint's."""
    for name, now in defining(settings).items():
        if saved.get(name) != now:
            raise ValueError(
                f"--resume: the checkpoint was trained with {option(name)} {saved.get(name)}, not {now} "
                f"(the run's settings.json was changed)"
            )


def play_baselines(model, name: str, games: int, seed: int) -> tuple[tournament.Settings, list[tournament.Pairing]]:
    """The learner of `model` (deterministic, named `name`) against each of `BASELINES`, with paired dice."""
    learner = PPOAgent(model.policy, name, deterministic=True)
    settings = tournament.Settings(agents=[name, *BASELINES], games=games, seed=seed, progress=False)
    return settings, [tournament.play_pairing(learner, opponent, settings) for opponent in BASELINES]


def final_evaluation(model: MaskablePPO, settings: TrainSettings, out: Path) -> list[tournament.Pairing]:
    """Paired-dice evaluation against `BASELINES`, written beside the model."""
    name = f"ppo:{out / 'model.safetensors'}"
    eval_settings, pairings = play_baselines(model, name, settings.final_eval_games, settings.seed + 2)
    ratings = tournament.bradley_terry(eval_settings.agents, pairings)
    tournament.write_outputs(
        out, eval_settings, pairings, ratings, stem="evaluation", plot=False, extra={"training": asdict(settings)}
    )
    return pairings


def time_split(total: float, in_env: float, measured: dict[str, float]) -> str:
    """One line: the shares of the wall time in the environment, the rollout, the update, evaluations and
    checkpoints."""
    side = measured["evaluating and checkpointing"]
    parts = {
        "environment": in_env,
        "learner forward passes and rollout buffer": measured["collecting"] - in_env - side,
        "PPO update": total - measured["collecting"],
        "evaluations and checkpoints": side,
    }
    return "wall time: " + ", ".join(f"{name} {100 * value / max(total, 1e-9):.1f} %" for name, value in parts.items())


class Trainer(lifecycle.Trainer):
    """train on the run lifecycle: the pool and the distillation's agents loaded first, the distillation, PPO."""

    KIND = KIND

    def __init__(self, settings: TrainSettings) -> None:
        super().__init__(settings)
        self.pool = OpponentPool(settings.opponents, settings.max_snapshots)  # loads the agents, before any write
        self.experts = distill_agents(settings) if settings.distill_games else None
        self.schedule: dict[str, float] | None = None  # of a resumed checkpoint

    def build(self, run: Run) -> tuple[int | None, int | None, str]:
        """The env and the learner; on resume the newest checkpoint that loads put into them, the pool and the
        generators, or without one the distillation's files checked."""
        settings, pool = self.settings, self.pool
        torch.set_num_threads(settings.threads)
        env = TimedVecEnv(settings.n_envs, *pool.members(), seed=settings.seed, config=Config(), reward=settings.reward)
        self.env, self.model = env, build_model(settings, VecMonitor(env), run.out)
        found = checkpoint.latest(run.out, run.run_id, max_file_bytes(settings)) if settings.resume else None
        if found is None:
            if settings.resume:
                distillation.check_saved(run.out, settings, run.belongs)
            return None, None, ""
        done, saved = found
        check_resumable(saved_settings := json.loads(saved["settings"]), settings)
        try:
            self.schedule = checkpoint.load_into(saved, self.model, env, pool)
        except (KeyError, TypeError, AttributeError, RuntimeError, ValueError, IndexError) as error:
            raise ValueError(
                f"--resume: the checkpoint of step {done} is malformed "
                f"({type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''})"
            ) from None
        return done, saved_settings.get("total_steps"), f" with {len(pool.snapshots)} snapshot(s)"

    def train(self, run: Run, signals: Signals) -> dict:
        """The distillation (fresh runs), PPO to `total_steps`, the model and the final evaluation."""
        settings, out, pool, model, env = self.settings, run.out, self.pool, self.model, self.env
        resumed = self.schedule is not None
        if not resumed:
            if settings.distill_games:
                distillation.distill_policy(model.policy, settings, out, run.belongs, self.experts)
                save_policy(model.policy, out / "distilled.safetensors", about={"training": asdict(settings)})
            if pool.self_weight > 0:
                pool.add_snapshot(model.policy, "self@0")  # the first "self" is the initial (or distilled) network
        env.games.set_opponents(*pool.members())

        start, steps_before = time.perf_counter(), model.num_timesteps
        remaining = settings.total_steps - model.num_timesteps
        callback = TrainingCallback(self, run, signals)
        if remaining > 0:
            try:  # SB3's TensorBoard writer on a full disk: one line naming it
                with safe_points(signals), outputs.naming(out / "tb"):
                    model.learn(remaining, callback=callback, reset_num_timesteps=not resumed, tb_log_name="ppo")
            finally:
                if callback.progress is not None:
                    callback.progress.close()
        seconds = time.perf_counter() - start
        steps_done = model.num_timesteps - steps_before
        if steps_done:  # a signal during the last update stops the run here: trained, not evaluated
            save_checkpoint(run, model, env, pool, callback.schedule, signals)
        with outputs.atomic(out / "model.zip") as handle:  # SB3's own save, through the same atomic path
            model.save(handle)
        save_policy(model.policy, out / "model.safetensors", about={"training": asdict(settings)})
        if steps_done:
            say(
                f"trained {steps_done:,} steps in {seconds:.0f} s: {steps_done / max(seconds, 1e-9):,.0f} env "
                f"steps/s, {100 * env.seconds / max(seconds, 1e-9):.1f} % of the time in the environment"
            )
            say(time_split(seconds, env.seconds, callback.seconds))

        pairings = final_evaluation(model, settings, out)
        print(tournament.text_table(tournament.PAIRING_HEADER, tournament.pairing_rows(pairings)))
        print(
            f"wrote {out / 'model.safetensors'} (agent spec ppo:{out / 'model.safetensors'}), {out / 'model.zip'} "
            f"(SB3), {out / 'evaluation.json'}, {out / 'evaluation.md'}"
        )
        return {"steps": model.num_timesteps}
