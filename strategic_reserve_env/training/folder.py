"""The run folder (``--out``): who owns it, what ``--restart`` removes, the settings ``--resume`` reads.

A run owns its folder: it writes a run id (``run.json``, with the run's status: running, interrupted,
complete or failed) and its settings (``settings.json``) when it starts, and holds the folder's lock
(:mod:`strategic_reserve_env.outputs`) while it runs, so a second process on the same folder is refused. A
folder that holds another run is refused unless ``--resume`` (go on with it) or ``--restart`` (start over:
its results go first, then its settings, checkpoints and run file, each moved whole into a trash folder
inside ``--out`` and deleted from there without following a link, so a kill mid-way leaves no old result
under its name and nothing half-cleared; :func:`strategic_reserve_env.outputs.remove`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, fields
from pathlib import Path

from strategic_reserve_env import outputs, safe_json

from .settings import TrainSettings, option

SETTINGS_FILE = "settings.json"
# what --restart removes, in this order: the results first (a kill mid-way leaves none of the old run's
# results looking current), the run file last (until it goes, the folder still holds the old run)
RESULTS = ("evaluation.json", "evaluation.md", "model.safetensors", "model.zip", "distilled.safetensors", "tb")
RUN_STATE = (SETTINGS_FILE, "distillation", "checkpoints", outputs.RUN_FILE)  # what says a folder holds a run
MAY_CHANGE = (  # settings a resumed run may change; every other one defines the training and must stay
    "total_steps",  # larger: train on
    "eval_every",
    "eval_games",
    "final_eval_games",
    "checkpoint_every",
    "progress",
    "threads",
    "device",
)
NOT_SETTINGS = ("out", "resume", "restart")  # how this process runs, not what the run is


def claim(out: Path, settings, command: str = "train.py", results: tuple = RESULTS, state: tuple = RUN_STATE) -> str:
    """The run id of this run in ``out`` (whose lock the caller holds): the folder's own with --resume;
    else a new one, written to run.json, after --restart removed another run's results and
    state. ``ValueError`` if the folder holds another run and neither option is given."""
    run = outputs.read_run(out)
    if settings.resume:
        if run is None:
            raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
        return run["run_id"]
    held = [name for name in state if (out / name).exists() or (out / name).is_symlink()]
    if held and not settings.restart:
        owner = f"run {run['run_id']} ({run.get('command', '')}, started {run.get('started')})" if run else "a run"
        raise ValueError(
            f"--out {out} holds {owner}: --resume to continue it, --restart to start over (removes its "
            f"{', '.join(held)} and results), or choose another folder"
        )
    if settings.restart:
        outputs.remove(out, results + state)
    return outputs.write_run(out, outputs.new_run_id(), command)["run_id"]


def start(out: Path, settings) -> None:
    """Write the run's settings (those it goes on with after --resume) and mark it running."""
    outputs.write_text(out / SETTINGS_FILE, json.dumps(asdict(settings), indent=1) + "\n")
    set_status(out, "running")


def set_status(out: Path, status: str, **details) -> None:
    """Record the run's ``status`` (running, interrupted, complete, failed) and its ``details`` in run.json."""
    run = outputs.read_run(out) or {}
    for stale in ("stopped", "error"):
        run.pop(stale, None)
    run |= {"status": status, "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **details}
    outputs.write_text(out / outputs.RUN_FILE, json.dumps(run, indent=1) + "\n")


def saved_settings(out: Path, cls=TrainSettings) -> dict:
    """The settings a run in ``out`` was started with (its settings.json, read as untrusted JSON);
    ``ValueError`` if there is none or it is not a settings file of the dataclass ``cls``."""
    if outputs.read_run(out) is None:
        raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
    path = out / SETTINGS_FILE
    if not path.is_file():
        raise ValueError(f"--resume: {out} holds no {SETTINGS_FILE} (the run's settings)")
    saved = safe_json.loads(path.read_bytes(), str(path))
    names = {field.name for field in fields(cls)}
    if not isinstance(saved, dict) or set(saved) != names:
        raise ValueError(f"--resume: {path} is not a settings file of this command")
    return saved


def resumed_settings(out: Path, given: dict, cls=TrainSettings, may_change: tuple = MAY_CHANGE):
    """The settings of the run in ``out`` (:func:`saved_settings`), with those of ``given`` (the options on the
    command line, by field name) that may change mid-run; ``ValueError`` naming an option given that may not,
    or a --total-steps below the saved one."""
    saved = saved_settings(out, cls)
    for name, value in given.items():
        now = list(value) if isinstance(value, tuple) else value
        if name not in may_change + NOT_SETTINGS and now != saved[name]:
            raise ValueError(
                f"--resume: {option(name)} defines the run, which was started with {option(name)} "
                f"{_shown(saved[name])}, not {_shown(now)}; leave it out (or --restart to start over)"
            )
    merged = saved | {name: value for name, value in given.items() if name in may_change}
    merged |= {"out": str(out), "resume": True, "restart": False}
    tuples = {field.name for field in fields(cls) if str(field.type).startswith("tuple")}
    return cls(**{name: tuple(value) if name in tuples else value for name, value in merged.items()})


def _shown(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else f"{value}"
