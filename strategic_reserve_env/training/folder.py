"""The run folder's own files as a resume reads them: run.json's command, links, settings.json (read back as
untrusted JSON by `resumed_settings`), and the run's identity every file of it carries (`identity`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import fields
from pathlib import Path

import numpy as np

from strategic_reserve_env.files import outputs, safe_json

from .settings import MAY_CHANGE, PROCESS, TrainSettings, defining, option, with_role

SETTINGS_FILE = "settings.json"
IDENTITY = ("run_id", "settings_hash")  # what each file of a run carries (`identity`)
#: run.json's `command` as 0.3.0 wrote it (the script's name) -> the command's name it writes now
FORMER_COMMANDS = {"train.py": "train"}


def check_command(out: Path, run: dict | None, command: str) -> None:
    """`ValueError` if `run` (the run file of `out`) is another command's than `command` (`FORMER_COMMANDS`
    counted as theirs)."""
    made_by = None if run is None else run.get("command")
    if isinstance(made_by, str):
        made_by = FORMER_COMMANDS.get(made_by, made_by)
    if run is not None and made_by != command:
        raise ValueError(
            f"--out {out} holds run {run['run_id']} of {str(run.get('command'))[:40]}, not of {command}; this "
            "command neither resumes nor replaces another command's run: choose another folder"
        )


def refuse_links(out: Path, names: tuple) -> None:
    """`ValueError` naming the first of `names` in `out` that is a symbolic link."""
    for name in names:
        if (out / name).is_symlink():
            raise ValueError(
                f"--out {out}: its {name} is a symbolic link; a run never reads or writes through a link: "
                "replace it with the folder's own, or --restart (removes the link, not what it points to)"
            )


def settings_hash(settings) -> str:
    """A digest of the settings that define the run (`settings.defining`)."""
    return hashlib.sha256(json.dumps(defining(settings), sort_keys=True).encode()).hexdigest()


def identity(belongs: tuple[str, str], arrays: bool = False) -> dict:
    """The run id and settings digest `belongs` as a file's entries (uint8 arrays of ASCII when `arrays`)."""
    return {
        name: np.frombuffer(value.encode("ascii"), dtype=np.uint8) if arrays else value
        for name, value in zip(IDENTITY, belongs, strict=True)
    }


def check_belongs(path: Path, found: dict, belongs: tuple[str, str]) -> None:
    """`ValueError` naming `path` unless the `identity` among its entries `found` is `belongs`."""
    run_id, digest = (
        value.tobytes().decode("ascii", "replace") if isinstance(value, np.ndarray) else str(value)
        for value in (found.get(name) for name in IDENTITY)
    )
    if run_id != belongs[0]:
        raise ValueError(f"{path} belongs to run {run_id:.32}, not to run {belongs[0]} of this folder")
    if digest != belongs[1]:
        raise ValueError(f"{path} was made with other settings than this run's (settings.json changed?)")


def resumed_settings(out: Path, given: dict, cls=TrainSettings, command: str | None = None):
    """The settings.json of the run in `out` (untrusted JSON) with those options `given` that may change;
    `ValueError` if there is none (saying what to type if the run stopped before writing it), it is not one of
    the dataclass `cls`, the run is not `command`'s, for an option given that may not change, or a bad field
    of the file (named as the file's)."""
    run = outputs.read_run(out)
    if run is None:
        raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
    if command is not None:
        check_command(out, run, command)
    path = out / SETTINGS_FILE
    if not os.path.lexists(path):  # anything else there (a FIFO, a link) is refused by the read, in its words
        if run.get("status") == "claimed":
            raise ValueError(
                f"--resume: run {run['run_id']} in {out} was stopped before its settings were written, so nothing "
                f"was trained: start it again without --resume (--out {out} and the options you meant)"
            )
        raise ValueError(f"--resume: {out} holds no {SETTINGS_FILE} (the run's settings)")
    saved = safe_json.load(path, outputs.MAX_RUN_FILE_BYTES)
    names = {field.name for field in fields(cls)}
    if not isinstance(saved, dict) or set(saved) != names:
        raise ValueError(f"--resume: {path} is not a settings file of this command")
    may_change, process = with_role(cls, MAY_CHANGE), with_role(cls, PROCESS)
    for name, value in given.items():
        now = list(value) if isinstance(value, tuple) else value
        if name not in may_change + process and now != saved[name]:
            raise ValueError(
                f"--resume: {option(name)} defines the run, which was started with {option(name)} "
                f"{_shown(saved[name])}, not {_shown(now)}; leave it out (or --restart to start over)"
            )
    tuples = {field.name for field in fields(cls) if str(field.type).startswith("tuple")}
    stored = {
        name: tuple(value) if name in tuples and isinstance(value, list) else value for name, value in saved.items()
    }
    given = {name: value for name, value in given.items() if name in may_change}
    place = {"out": str(out), "resume": True, "restart": False}
    try:
        return cls(**stored | given | place)
    except ValueError as error:
        try:  # the file's own fault, or an option given again?
            cls(**stored | place)
        except ValueError as fault:  # named as the fields of the file, not as options
            words = re.sub(r"--([a-z][a-z-]*)", lambda m: f'"{m.group(1).replace("-", "_")}"', str(fault))
            raise ValueError(f"--resume: {out / SETTINGS_FILE}: {words}") from None
        raise error from None


def _shown(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else f"{value}"
