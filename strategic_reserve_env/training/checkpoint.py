"""train's checkpoints: `checkpoints/checkpoint_STEPS-RUNID.pt` in the run folder, taken after a PPO update.

A checkpoint holds tensors, numbers and strings only (`contents`), read with `torch.load(weights_only=True)`
(no code from the file runs) and checked (`check_contents`) before `load_into` makes the run go on exactly as
one that never stopped. SB3 keeps part of its state in private fields with no public setter: `learner_state`
and `set_learner_state` are the one place that reads and writes them.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from strategic_reserve_env.agents.ppo_file import architecture_of
from strategic_reserve_env.core.board import is_integer
from strategic_reserve_env.files import outputs, safe_json

from .run import Checkpoints

CHECKPOINT_FORMAT = "strategic-reserve-train-checkpoint"
CHECKPOINT_VERSION = 1
SCHEDULE = ("snapshot", "eval", "checkpoint")  # the steps at which each falls due next


def _mapped(tree, kind: type, convert):
    """`tree` (dicts of leaves) with each leaf of type `kind` converted."""
    if isinstance(tree, dict):
        return {key: _mapped(value, kind, convert) for key, value in tree.items()}
    return convert(tree) if isinstance(tree, kind) else tree


def generator_states() -> dict:
    """The global generators of torch, numpy and Python (SB3 samples actions and minibatches from them)."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "numpy": [kind, torch.from_numpy(keys.copy()), position, has_gauss, gauss],
        "python": random.getstate(),
    }


def set_generator_states(states: dict) -> None:
    """Set the generators to `generator_states`."""
    torch.set_rng_state(states["torch"])
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy(), position, has_gauss, gauss))
    version, internal, gauss_next = states["python"]
    random.setstate((version, tuple(internal), gauss_next))


def learner_state(model) -> dict:
    """What SB3's learner keeps between rollouts beyond its network and optimizer (private fields)."""
    return {
        "n_updates": model._n_updates,
        "episode_num": model._episode_num,
        "last_episode_starts": torch.from_numpy(np.array(model._last_episode_starts, dtype=bool)),
    }


def set_learner_state(model, state: dict, steps: int, last_observations: np.ndarray) -> None:
    """Set `learner_state` at `steps`, with `last_observations` (what the env's last step returned)."""
    model.num_timesteps, model._n_updates = steps, state["n_updates"]
    model._episode_num = state["episode_num"]
    model._last_obs = last_observations
    model._last_episode_starts = state["last_episode_starts"].numpy()


def contents(model, env, pool, schedule: dict[str, float], settings, run_id: str) -> dict:
    """What a checkpoint holds: the network and its optimizer, the snapshot pool, the games with their dice
    streams, the generators, SB3's learner counters, the schedule and the step count."""
    return {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "steps": model.num_timesteps,
        "run_id": run_id,
        "settings": json.dumps(asdict(settings)),
        "architecture": json.dumps(architecture_of(model.policy)),
        "policy": model.policy.state_dict(),
        "optimizer": model.policy.optimizer.state_dict(),
        "snapshots": pool.get_state(),
        "learner": learner_state(model),
        "schedule": dict(schedule),
        "env": _mapped(env.get_state(), np.ndarray, lambda a: torch.from_numpy(a.copy())),
        "generators": generator_states(),
    }


def _count(value) -> bool:
    return is_integer(value) and value >= 0


def check_contents(payload) -> dict:
    """A loaded checkpoint `payload`, checked: `ValueError` naming its first entry that is not what `contents`
    writes, or if it is not a checkpoint of this format."""
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"not a {CHECKPOINT_FORMAT} file")
    if payload.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint version {payload.get('version')!r:.20}, this train.py reads {CHECKPOINT_VERSION}")
    steps = payload.get("steps")
    if not _count(steps):
        raise ValueError(f"its steps are not a non-negative integer: {steps!r:.40}")
    for name in ("run_id", "settings", "architecture"):
        if not isinstance(payload.get(name), str):
            raise ValueError(f"its {name} is not a string")
    try:
        json.loads(payload["settings"])
    except ValueError:
        raise ValueError("its settings are not JSON") from None
    schedule = payload.get("schedule")
    if not isinstance(schedule, dict) or set(schedule) != set(SCHEDULE):
        raise ValueError(f"its schedule is not a dict of {', '.join(SCHEDULE)}")
    for name, value in schedule.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value) or value < 0:
            raise ValueError(f"its schedule's {name} is not a number of steps: {value!r:.40}")
        if math.isinf(value) and name != "eval":
            raise ValueError(f"its schedule's {name} is infinite")
    learner = payload.get("learner")
    if not isinstance(learner, dict):
        raise ValueError("its learner state is not a dict")
    for name in ("n_updates", "episode_num"):
        if not _count(learner.get(name)):
            raise ValueError(f"its learner's {name} is not a non-negative integer: {learner.get(name)!r:.40}")
    starts = learner.get("last_episode_starts")
    if not isinstance(starts, torch.Tensor) or starts.dtype != torch.bool or starts.dim() != 1:
        raise ValueError("its learner's last_episode_starts is not a bool vector")
    snapshots = payload.get("snapshots")
    if not isinstance(snapshots, list) or not all(
        isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("policy"), dict) for s in snapshots
    ):
        raise ValueError("its snapshots are not a list of named weights")
    for name in ("policy", "optimizer", "env", "generators"):
        if not isinstance(payload.get(name), dict):
            raise ValueError(f"its {name} is not a dict")
    if not all(
        isinstance(tensor, torch.Tensor) and tensor.is_floating_point() for tensor in payload["policy"].values()
    ):
        raise ValueError("its policy is not a dict of float tensors")
    settings = json.loads(payload["settings"])
    if not isinstance(settings, dict) or starts.shape[0] != settings.get("n_envs"):
        raise ValueError(f"its learner's last_episode_starts has {starts.shape[0]} games, not its settings' n_envs")
    for name in ("policy", "optimizer", "snapshots"):
        if not all_finite(payload[name]):
            raise ValueError(f"its {name} holds NaN or infinite numbers (damaged?); it is not used")
    return payload


def all_finite(tree) -> bool:
    """Whether every floating-point tensor anywhere in `tree` (dicts, lists and tuples of them) is finite."""
    if isinstance(tree, torch.Tensor):
        return not tree.is_floating_point() or bool(torch.isfinite(tree).all())
    values = tree.values() if isinstance(tree, dict) else tree if isinstance(tree, (list, tuple)) else ()
    return all(all_finite(value) for value in values)


def load_into(checkpoint: dict, model, env, pool) -> dict[str, float]:
    """Put the learner, its pool, the games and the generators where `contents` found them; returns the
    schedule."""
    model.policy.load_state_dict(checkpoint["policy"])
    model.policy.optimizer.load_state_dict(checkpoint["optimizer"])
    pool.set_state(checkpoint["snapshots"], model.policy)
    env.games.set_opponents(*pool.members())
    env.set_state(_mapped(checkpoint["env"], torch.Tensor, torch.Tensor.numpy))
    set_learner_state(model, checkpoint["learner"], checkpoint["steps"], env.games.observations().copy())
    set_generator_states(checkpoint["generators"])
    return dict(checkpoint["schedule"])


def save(model, env, pool, schedule: dict[str, float], settings, out: Path, run_id: str) -> None:
    """Write the `contents` as this run's checkpoint of its steps, atomically; older ones but the previous go."""
    found = checkpoints(out, run_id)
    found.folder.mkdir(parents=True, exist_ok=True)
    with outputs.atomic(found.path(model.num_timesteps)) as handle:
        torch.save(contents(model, env, pool, schedule, settings, run_id), handle)
    found.prune()


def checkpoints(out: Path, run_id: str | None = None) -> Checkpoints:
    """The checkpoints of run `run_id` (default: the run of `out`'s run file) in `out`."""
    if run_id is None:
        run = outputs.read_run(out)
        run_id = None if run is None else run["run_id"]
    return Checkpoints(out / "checkpoints", "checkpoint_", f"-{run_id}.pt")


def checkpoint_path(out: Path, steps: int, run_id: str | None = None) -> Path:
    """The checkpoint of run `run_id` (default: `out`'s) after `steps` steps."""
    return checkpoints(out, run_id).path(steps)


def checkpoint_steps(out: Path, run_id: str | None = None) -> list[int]:
    """Steps of run `run_id`'s checkpoints (default: `out`'s), in increasing order."""
    return checkpoints(out, run_id).counts()


def load_tensors(path: Path, limit: int):
    """The tensors, numbers and strings of the torch file `path` (`weights_only=True`: no code from it runs);
    `ValueError` if it is not a regular file of at most `limit` bytes or does not load."""
    try:
        with safe_json.open_regular(path, limit) as handle:
            return torch.load(handle, map_location="cpu", weights_only=True)
    except ValueError:
        raise
    except Exception as error:  # torch raises several types for damaged or crafted files
        raise ValueError(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None


def latest(out: Path, run_id: str, limit: int) -> tuple[int, dict] | None:
    """The steps and contents of the newest checkpoint of run `run_id` that loads (`Checkpoints.newest`); a
    `ValueError` when the newest that loads holds another run."""
    found = checkpoints(out, run_id).newest(lambda path: check_contents(load_tensors(path, limit)))
    if found is not None and found[1]["run_id"] != run_id:
        path = checkpoint_path(out, found[0], run_id)
        raise ValueError(f"--resume: {path} holds run {found[1]['run_id']:.32}, not run {run_id} of this folder")
    return found
