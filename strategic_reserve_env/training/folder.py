"""The run folder (`--out`): who owns it, what `--restart` removes, the settings `--resume` reads.

A run owns its folder: it writes a run id (`run.json`, with the run's status: running, interrupted,
complete or failed) and its settings (`settings.json`) when it starts, and holds the folder's lock
(`strategic_reserve_env.outputs`) while it runs, so a second process on the same folder is refused. A
folder that holds another run is refused unless `--resume` (go on with it) or `--restart` (start over:
its results go first, then its settings, checkpoints and run file, each moved whole into a trash folder
inside `--out` and deleted from there without following a link, so a kill mid-way leaves no old result
under its name and nothing half-cleared; `strategic_reserve_env.outputs.remove`).
"""

from __future__ import annotations

import hashlib
import json
import os
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


def claim(out: Path, settings, command: str = "train", results: tuple = RESULTS, state: tuple = RUN_STATE) -> str:
    """The run id of this run in `out` (whose lock the caller holds): the folder's own with --resume (nothing
    written); else a new one, written to run.json, after --restart removed another run's results and
    state. `ValueError` (one line, nothing written) if the folder holds another run and neither option is
    given, a run of another command (run.json's `command`) whatever the options, or on --resume a link
    among its `results` and `state` (a run never writes through a link)."""
    run = outputs.read_run(out)
    check_command(out, run, command)
    if settings.resume:
        refuse_links(out, results + state)
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


#: run.json's `command` as 0.3.0 wrote it (the script's name) -> the command's name it writes now
FORMER_COMMANDS = {"train.py": "train"}


def check_command(out: Path, run: dict | None, command: str) -> None:
    """`ValueError` if `run` (the run file of `out`) is a run of another command than `command` (a run file
    of 0.3.0 naming the script, `FORMER_COMMANDS`, is its command's)."""
    made_by = None if run is None else run.get("command")
    if isinstance(made_by, str):
        made_by = FORMER_COMMANDS.get(made_by, made_by)
    if run is not None and made_by != command:
        raise ValueError(
            f"--out {out} holds run {run['run_id']} of {str(run.get('command'))[:40]}, not of {command}; this "
            "command neither resumes nor replaces another command's run: choose another folder"
        )


def refuse_links(out: Path, names: tuple) -> None:
    """`ValueError` naming the first of `names` in `out` that is a symbolic link (a resumed run would
    read or write through it, outside its folder)."""
    for name in names:
        if (out / name).is_symlink():
            raise ValueError(
                f"--out {out}: its {name} is a symbolic link; a run never reads or writes through a link: "
                "replace it with the folder's own, or --restart (removes the link, not what it points to)"
            )


def settings_hash(settings, may_change: tuple = MAY_CHANGE) -> str:
    """A digest of the settings that define the run (all but `may_change` and how this process runs): each
    file of a run (a checkpoint, a chunk of labels, the fit's state) carries it with the run id, and a file
    whose digest is not the run's is refused."""
    defining = {name: value for name, value in asdict(settings).items() if name not in may_change + NOT_SETTINGS}
    return hashlib.sha256(json.dumps(defining, sort_keys=True).encode()).hexdigest()


def start(out: Path, settings) -> None:
    """Write the run's settings (those it goes on with after --resume) and mark it running."""
    outputs.write_text(out / SETTINGS_FILE, json.dumps(asdict(settings), indent=1) + "\n")
    set_status(out, "running")


def set_status(out: Path, status: str, **details) -> None:
    """Record the run's `status` (running, interrupted, complete, failed) and its `details` in run.json."""
    run = outputs.read_run(out) or {}
    for stale in ("stopped", "error"):
        run.pop(stale, None)
    run |= {"status": status, "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **details}
    outputs.write_text(out / outputs.RUN_FILE, json.dumps(run, indent=1) + "\n")


def saved_settings(out: Path, cls=TrainSettings, command: str | None = None) -> dict:
    """The settings a run in `out` was started with (its settings.json, a regular file of a bounded size,
    read as untrusted JSON); `ValueError` if there is none, it is not a settings file of the dataclass
    `cls`, or (`command` given) the run is another command's."""
    run = outputs.read_run(out)
    if run is None:
        raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
    if command is not None:
        check_command(out, run, command)
    path = out / SETTINGS_FILE
    if not os.path.lexists(path):  # anything else there (a FIFO, a link) is refused by the read, in its words
        raise ValueError(f"--resume: {out} holds no {SETTINGS_FILE} (the run's settings)")
    saved = safe_json.loads(outputs.read_regular(path, outputs.MAX_RUN_FILE_BYTES), str(path))
    names = {field.name for field in fields(cls)}
    if not isinstance(saved, dict) or set(saved) != names:
        raise ValueError(f"--resume: {path} is not a settings file of this command")
    return saved


def resumed_settings(
    out: Path, given: dict, cls=TrainSettings, may_change: tuple = MAY_CHANGE, command: str | None = None
):
    """The settings of the run in `out` (`saved_settings`), with those of `given` (the options on the
    command line, by field name) that may change mid-run; `ValueError` naming an option given that may not,
    or a --total-steps below the saved one; a run of another command than `command` (when given)."""
    saved = saved_settings(out, cls, command)
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
