"""Checkpoints: `checkpoints/checkpoint_STEPS-RUNID.pt` in the run folder, the last two kept.

A checkpoint is taken after a PPO update (never mid-rollout), at the end of a run and when a signal stops
it. It holds tensors, numbers and strings only, read with `torch.load(weights_only=True)` (which runs no
code from the file), and its contents are checked before any of it is used (`check_contents`): the
network and its optimizer, the snapshot pool, the games in progress with their dice streams, the
generators of numpy, torch and Python, SB3's learner counters, the schedule of the next snapshot,
evaluation and checkpoint, and the step count. Loading it (`load_into`) makes a run go on exactly:
the same games, updates and weights as one that never stopped.

SB3 keeps part of a learner's state in private fields (`_n_updates`, `_episode_num`, `_last_obs`,
`_last_episode_starts`) and offers no public way to set them, yet a run that goes on exactly needs them:
`learner_state` and `set_learner_state` are the one place that reads and writes them.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from strategic_reserve_env.agents.ppo_file import architecture_of
from strategic_reserve_env.files import outputs, safe_json

from .run import CHECKPOINTS_KEPT, newest_loadable

CHECKPOINT = re.compile(r"checkpoint_(\d+)-([0-9a-f]{32})\.pt")  # steps, run id
CHECKPOINT_FORMAT = "strategic-reserve-train-checkpoint"
CHECKPOINT_VERSION = 1
SCHEDULE = ("snapshot", "eval", "checkpoint")  # the steps at which each falls due next


def _tensors(tree):
    """`tree` with its numpy arrays as torch tensors (what `torch.load(weights_only=True)` reads back)."""
    if isinstance(tree, np.ndarray):
        return torch.from_numpy(tree.copy())
    if isinstance(tree, dict):
        return {key: _tensors(value) for key, value in tree.items()}
    return tree


def _arrays(tree):
    """The inverse of `_tensors`."""
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
    """Set the generators to `generator_states`."""
    torch.set_rng_state(states["torch"])
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy(), position, has_gauss, gauss))
    version, internal, gauss_next = states["python"]
    random.setstate((version, tuple(internal), gauss_next))


def learner_state(model) -> dict:
    """What SB3's learner keeps between rollouts beyond its network and optimizer (private fields of
    `MaskablePPO`; see the module docstring)."""
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
    """What a checkpoint holds (see the module docstring), as tensors, numbers and strings."""
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
        "env": _tensors(env.get_state()),
        "generators": generator_states(),
    }


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_contents(payload: dict) -> None:
    """`ValueError` naming the first entry of a loaded checkpoint that is not what `contents` writes:
    the counters non-negative integers, the schedule steps (`inf` for no evaluation), the
    settings JSON, the snapshots named weights, the tensors of their types."""
    steps = payload.get("steps")
    if not _integer(steps) or steps < 0:
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
        if not _integer(learner.get(name)) or learner[name] < 0:
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


def all_finite(tree) -> bool:
    """Whether every floating-point tensor anywhere in `tree` (dicts, lists and tuples of them) is finite."""
    return all(bool(torch.isfinite(tensor).all()) for tensor in _float_tensors(tree))


def _float_tensors(tree):
    if isinstance(tree, torch.Tensor):
        if tree.is_floating_point():
            yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from _float_tensors(value)
    elif isinstance(tree, (list, tuple)):
        for value in tree:
            yield from _float_tensors(value)


def load_into(checkpoint: dict, model, env, pool) -> dict[str, float]:
    """Put the learner, its snapshot pool, the games and the generators where `contents` found them;
    returns the schedule of the next snapshot, evaluation and checkpoint."""
    model.policy.load_state_dict(checkpoint["policy"])
    model.policy.optimizer.load_state_dict(checkpoint["optimizer"])
    pool.set_state(checkpoint["snapshots"], model.policy)
    env.games.set_opponents(*pool.members())
    env.set_state(_arrays(checkpoint["env"]))
    set_learner_state(model, checkpoint["learner"], checkpoint["steps"], env.games.observations().copy())
    set_generator_states(checkpoint["generators"])
    return dict(checkpoint["schedule"])


def save(model, env, pool, schedule: dict[str, float], settings, out: Path, run_id: str) -> Path:
    """Write the `contents` as `checkpoints/checkpoint_{steps}-{run_id}.pt` (atomically: a kill
    mid-write leaves no half-written checkpoint under a checkpoint's name); this run's older ones but the
    previous go."""
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    path = checkpoint_path(out, model.num_timesteps, run_id)
    with outputs.atomic(path) as handle:
        torch.save(contents(model, env, pool, schedule, settings, run_id), handle)
    for old in checkpoint_steps(out, run_id)[:-CHECKPOINTS_KEPT]:
        checkpoint_path(out, old, run_id).unlink(missing_ok=True)
    return path


def checkpoint_path(out: Path, steps: int, run_id: str | None = None) -> Path:
    """The checkpoint of run `run_id` (default: the run of `out`'s run file) after `steps` steps."""
    return out / "checkpoints" / f"checkpoint_{steps}-{run_id or _run_of(out)}.pt"


def _run_of(out: Path) -> str | None:
    run = outputs.read_run(out)
    return None if run is None else run["run_id"]


def checkpoint_steps(out: Path, run_id: str | None = None) -> list[int]:
    """Steps of run `run_id`'s checkpoints (default: the run of `out`'s run file) in `out`, in increasing
    order."""
    directory = out / "checkpoints"
    run_id = run_id or _run_of(out)
    if directory.is_symlink() or not directory.is_dir() or run_id is None:
        return []
    found = (CHECKPOINT.fullmatch(p.name) for p in directory.iterdir())
    return sorted(int(m.group(1)) for m in found if m and m.group(2) == run_id)


def read(path: Path, limit: int) -> dict:
    """A checkpoint's contents, loaded with `weights_only=True` (no code from the file runs) and checked
    (`check_contents`); `ValueError` if the file is not a regular file of at most `limit` bytes
    (checked before a byte is read), does not load or is not a checkpoint of this format."""
    try:
        with safe_json.open_regular(path, limit) as handle:
            payload = torch.load(handle, map_location="cpu", weights_only=True)
    except ValueError:
        raise
    except Exception as error:  # torch raises several types for damaged or crafted files
        raise ValueError(f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"not a {CHECKPOINT_FORMAT} file")
    if payload.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint version {payload.get('version')!r:.20}, this train.py reads {CHECKPOINT_VERSION}")
    check_contents(payload)
    return payload


def latest(out: Path, run_id: str, limit: int) -> tuple[int, dict]:
    """The steps and contents of the newest checkpoint of run `run_id` in `out` that loads (`read`;
    `run.newest_loadable`); `ValueError` when none loads, or when the newest that loads holds another run
    (a file renamed into this run's name is refused, not used)."""
    steps = checkpoint_steps(out, run_id)
    if not steps:
        raise ValueError(
            f"--resume: no checkpoint of run {run_id} (checkpoint_STEPS-{run_id}.pt) in {out / 'checkpoints'}"
        )
    candidates = [(step, checkpoint_path(out, step, run_id)) for step in steps]
    done, payload = newest_loadable(candidates, lambda path: read(path, limit), out / "checkpoints")
    if payload["run_id"] != run_id:
        path = checkpoint_path(out, done, run_id)
        raise ValueError(f"--resume: {path} holds run {payload['run_id']:.32}, not run {run_id} of this folder")
    return done, payload
