"""The run lifecycle, written once for `train`, `train-az` and `train-rllib` (and the distillation inside `train`).

A run lives in its folder (`--out`) and moves through these states, each entered by one atomic write
(`strategic_reserve_env.files.outputs.atomic`: a temporary file renamed over its name), so a kill at any instant
leaves the folder in one of them:

| state | run.json | the folder also holds | `--resume` alone |
|---|---|---|---|
| new | none | nothing of a run | refused: no run |
| claimed | run id, command, `claimed` | nothing of it | refused: start it again (nothing trained) |
| settings written | `claimed` | settings.json | goes on from the start |
| running | `running` | settings.json, partial results | goes on from the start (train: its distillation) |
| checkpointed | `running`, `checkpoint` N | a checkpoint of N | goes on from the newest checkpoint that loads |
| interrupted | `interrupted`, `stopped` | as checkpointed | goes on from the newest checkpoint that loads |
| failed | `failed`, `error` | as checkpointed | goes on from the newest checkpoint that loads |
| complete | `complete`, the length done | the results | says it is complete, writes nothing (unless asked for more) |

A fresh run claims a new folder and takes over a claimed one; it refuses any other run, and a folder holding
the run's file names but no run.json (files of no run are never replaced). `--restart` removes the entries of
this command's run in the folder (results first, run.json last) and starts over; it removes nothing else.

The transitions: `claim` (new -> claimed, under the folder's lock), `Run.start` (claimed -> settings written
-> running; on resume: the `.partial` files of a killed write cleaned, the progress file trimmed to the
checkpoint), `Run.checkpointed` (running -> checkpointed, after the checkpoint file is whole), `Run.supervise`
(running -> interrupted on a signal, failed on an error, complete at the end). A resume reads and checks
everything it will use (run.json, settings.json, every checkpoint it tries, the distillation's files, the
progress file) before the first write; a refusal writes no byte (`.lock` included, `outputs.lock`).
One rule says a resumed run is already complete (`Run.complete_already`), one the run's length
(`check_length`), one finds the newest checkpoint that loads (`newest_loadable`), one trims a progress
file (`trim_progress`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strategic_reserve_env.files import outputs, safe_json
from strategic_reserve_env.interrupts import StopNow, Stopped

from .folder import SETTINGS_FILE, check_command, refuse_links, settings_hash

STATUSES = ("claimed", "running", "interrupted", "failed", "complete")
PARTIAL = re.compile(r"\.(.+)\.[^./]+\.partial")  # what outputs.atomic leaves behind when killed mid-write
CHECKPOINTS_KEPT = 2  # the last one and the one before it (the fallback if the last is damaged), every trainer
MAX_PROGRESS_LINE = 1 << 16  # bytes of one progress line (a few hundred); a longer line is no progress line


@dataclass(frozen=True)
class RunKind:
    """What a training command's run folder holds: `command` (run.json's), `results` (what `--restart`
    removes first), `state` (the run's own files beyond settings.json and run.json: checkpoints, the
    distillation), `files` (regular files it writes in `--out`, checked before anything runs), `length`
    (the settings field giving the run's length), `unit` (what it counts: steps, iterations), `model` (the
    agent spec of its model, `{out}` for the folder), `progress` (its progress file, if any), `stopped_key`
    (run.json's `stopped` name for the checkpoint kept) and `early` (a state folder kept before any checkpoint,
    and how the stop line calls it)."""

    command: str
    results: tuple[str, ...]
    state: tuple[str, ...]
    files: tuple[str, ...]
    length: str
    unit: str
    model: str
    progress: str | None = None
    stopped_key: str = "checkpoint"
    early: tuple[str, str] | None = None

    @property
    def one(self) -> str:
        """What one unit of the run's length is called: step, iteration."""
        return self.unit.removesuffix("s")

    @property
    def names(self) -> tuple[str, ...]:
        """Every entry of `--out` the run makes, results first, run.json last (the order `--restart` removes)."""
        return (*self.results, SETTINGS_FILE, *self.state, outputs.RUN_FILE)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def read_record(out: Path) -> dict | None:
    """run.json of `out` (`outputs.read_run`), its lifecycle fields checked: `ValueError` naming the file for
    a status that is no state, or a `checkpoint` that is not a count."""
    run = outputs.read_run(out)
    if run is None:
        return None
    status, checkpoint = run.get("status", "running"), run.get("checkpoint", 0)
    if status not in STATUSES:
        raise ValueError(f"{out / outputs.RUN_FILE}: status {status!r:.40} is none of {', '.join(STATUSES)}")
    if not isinstance(checkpoint, int) or isinstance(checkpoint, bool) or checkpoint < 0:
        raise ValueError(f"{out / outputs.RUN_FILE}: checkpoint {checkpoint!r:.40} is not a count")
    return run


def is_claimed_only(out: Path, run: dict | None, kind: RunKind) -> bool:
    """Whether `run` (run.json of `out`) was stopped after it claimed the folder, before its settings were
    written: nothing of it but run.json is there."""
    return run is not None and not any(os.path.lexists(out / name) for name in kind.names[:-1])


def prepare(settings, kind: RunKind) -> Path:
    """`--out` of `settings` made absolute and checked before anything is loaded or written: a folder that can
    be written, each of `kind.files` absent or a regular file (`outputs.check_out`), each of the run's
    folders absent or a folder (one line naming it)."""
    out = outputs.check_out(settings.out, kind.files)
    for name in set(kind.names) - set(kind.files):
        path = out / name
        if os.path.lexists(path) and not path.is_symlink() and not path.is_dir():
            raise ValueError(f"--out {out}: {path} exists and is not a folder, so the run cannot write in it")
    return out


def claim(out: Path, settings, kind: RunKind, held: outputs.Lock | None = None) -> Run:
    """The run of `settings` in `out` (whose lock the caller holds: `held`): with --resume the folder's own (nothing
    written); else a new one, written to run.json (state claimed), after `--restart` removed the entries
    the folder's run of this command made. `ValueError` (one line, nothing written) for another command's
    run whatever the options, a run held without --resume or --restart, files of no run where the run
    writes (never replaced, --restart or not), and a link among the run's entries (a run never reads or
    writes through one; --restart removes the links of its own run)."""
    run = read_record(out)
    check_command(out, run, kind.command)
    if settings.resume:
        refuse_links(out, kind.names)
        if run is None:
            raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
        return Run(out, kind, settings, run["run_id"], run, held)
    ours = run is not None and not is_claimed_only(out, run, kind)
    if run is not None and ours and not settings.restart:
        held = [name for name in (SETTINGS_FILE, *kind.state) if os.path.lexists(out / name)]
        raise ValueError(
            f"--out {out} holds run {run['run_id']} ({run.get('command', '')}, started {run.get('started')}): "
            f"--resume to continue it, --restart to start over (removes its {', '.join(held + [outputs.RUN_FILE])} "
            "and results), or choose another folder"
        )
    foreign = [name for name in kind.names if run is None and os.path.lexists(out / name)]
    if foreign:
        raise ValueError(
            f"--out {out} holds {', '.join(foreign)} but no run ({outputs.RUN_FILE}): files of no run are "
            "never replaced or removed, --restart or not; move them away or choose another folder"
        )
    outputs.remove(out, kind.names if ours else [])  # and the trash of a removal a kill cut short
    refuse_links(out, kind.names)
    record = outputs.write_run(out, outputs.new_run_id(), kind.command, status="claimed")
    return Run(out, kind, settings, record["run_id"], record, held)


def error_status(error: BaseException) -> int:
    """Print a training command's refusal or failure `error` as its one line; its exit status: 1 for a file
    that could not be written (`outputs.OutputLost`: a full disk), 2 for a refusal (bad settings, a folder
    that is not the run's)."""
    print(f"error: {error}", file=sys.stderr)
    return 1 if isinstance(error, outputs.OutputLost) else 2


def check_length(kind: RunKind, asked: int, done: int, saved: int | None) -> None:
    """`ValueError` if a resumed run is asked for fewer `asked` steps (iterations) than the `done` ones,
    unless `asked` is the run's own length `saved` (a run whose last update went past it is trained)."""
    if asked < done and asked != saved:
        raise ValueError(
            f"--resume: --{kind.length.replace('_', '-')} {asked} is below the {done:,} {kind.unit} already done"
        )


def newest_loadable(candidates: list[tuple[int, Path]], load: Callable[[Path], object], where: Path):
    """The (count, contents) of the newest of `candidates` ((count, path), oldest first) that `load` reads
    (a `ValueError` if it does not), warning on stderr about each newer one skipped; `ValueError` if none
    loads."""
    for count, path in reversed(candidates):
        try:
            return count, load(path)
        except ValueError as error:
            print(f"warning: --resume: skipping {path}: it does not load ({error})", file=sys.stderr)
    raise ValueError(f"--resume: none of the {len(candidates)} checkpoint(s) in {where} loads")


def progress_lines(path: Path, last: int):
    """The lines of the progress file `path` about iterations up to `last`, read a line at a time (a large
    file costs no more memory than `MAX_PROGRESS_LINE` bytes a line); and whether a line went (a line of a
    later iteration, one longer than that, or one that is not a JSON object naming its iteration)."""
    kept, dropped, inside_long = [], False, False
    with safe_json.open_regular(path, sys.maxsize) as handle:
        for line in iter(lambda: handle.readline(MAX_PROGRESS_LINE + 1), b""):
            whole, long = line.endswith(b"\n"), inside_long  # a line with no end: longer than the limit, or cut
            inside_long = not whole
            iteration = None
            if whole and not long:
                with contextlib.suppress(ValueError):
                    record = safe_json.loads(line, str(path))
                    iteration = record.get("iteration") if isinstance(record, dict) else None
            if isinstance(iteration, int) and not isinstance(iteration, bool) and 0 <= iteration <= last:
                kept.append(line)
            else:
                dropped = True
    return kept, dropped


def trim_progress(path: Path, last: int) -> None:
    """Keep the lines of the progress file `path` up to iteration `last` (a run stopped after logging an
    iteration but before its checkpoint does it again): rewritten atomically, only when a line goes."""
    if not os.path.lexists(path):
        return
    kept, dropped = progress_lines(path, last)
    if dropped:
        with outputs.atomic(path) as handle:
            handle.writelines(kept)


def clean_partials(out: Path, kind: RunKind, run_id: str) -> None:
    """Remove the `.partial` files a killed write of this run left in `out` and its state folders: those of
    the names the run writes, and in its state folders those naming no other run."""
    own = set(kind.names) | set(kind.files)
    other_run = re.compile(r"[0-9a-f]{32}")
    for folder in (out, *(out / name for name in kind.state)):
        if folder.is_symlink() or not folder.is_dir():
            continue
        partials = []
        for entry in folder.iterdir():
            match = PARTIAL.fullmatch(entry.name)
            if match is None:
                continue
            ids = other_run.findall(match.group(1))
            if (folder == out and match.group(1) in own) or (folder != out and all(i == run_id for i in ids)):
                partials.append(entry.name)
        if partials:
            outputs.remove(folder, partials)


@dataclass
class Run:
    """A run claimed in its folder: its transitions (`start`, `checkpointed`, `supervise`) and its rules."""

    out: Path
    kind: RunKind
    settings: Any  # the command's RunSettings
    run_id: str
    record: dict
    held: outputs.Lock | None = None  # the folder's lock
    checkpoint: int = field(init=False)

    def __post_init__(self) -> None:
        self.checkpoint = self.record.get("checkpoint", 0)

    @property
    def belongs(self) -> tuple[str, str]:
        """The run id and settings digest each file of the run carries."""
        return self.run_id, settings_hash(self.settings)

    def expected_checkpoint(self) -> int:
        """The newest checkpoint run.json says was written (0: none): a resume that finds none refuses."""
        complete = self.record.get("status") == "complete"
        done = self.record.get(self.kind.unit, 0) if complete else 0
        return max(self.checkpoint, done if isinstance(done, int) and not isinstance(done, bool) else 0)

    def resume_from(self, found: int | None) -> None:
        """The resumed run goes on from its checkpoint of `found` steps (iterations; None: none of it was
        found); `ValueError` if run.json says one was written but none was found (the run would start over
        and replace its results)."""
        expected = self.expected_checkpoint()
        if expected and found is None:
            raise ValueError(
                f"--resume: {self.out / outputs.RUN_FILE} says run {self.run_id} wrote a checkpoint of "
                f"{self.kind.one} {expected:,}, but none of it is in {self.out}; nothing was changed: --restart "
                "to start over, or put its checkpoint back"
            )
        self.checkpoint = found or 0

    def complete_already(self, done: int) -> bool:
        """The one rule: a resumed run is complete (nothing to do, nothing written) when run.json says so
        and the length asked is at most the `done` steps (iterations); says so on stderr."""
        asked = getattr(self.settings, self.kind.length)
        if not self.settings.resume or self.record.get("status") != "complete" or asked > done:
            return False
        print(
            f"the run in {self.out} is complete ({done:,} {self.kind.unit}; its model: "
            f"{self.kind.model.format(out=self.out)}); --resume --{self.kind.length.replace('_', '-')} N trains "
            "it further",
            file=sys.stderr,
        )
        if self.held is not None:
            self.held.untouched = True  # nothing written: the lock file too as it was
        return True

    def set_status(self, status: str, **details) -> None:
        """Enter `status` (one of `STATUSES`) with its `details`, one atomic write of run.json."""
        for stale in ("stopped", "error"):
            self.record.pop(stale, None)
        self.record |= {"status": status, "updated": now(), "checkpoint": self.checkpoint, **details}
        outputs.write_text(self.out / outputs.RUN_FILE, json.dumps(self.record, indent=1) + "\n")

    def start(self) -> None:
        """The first write of a run (every check done): on resume the `.partial` files of a killed write go
        and the progress file keeps the lines up to the checkpoint; the settings are written (settings
        written) and the run marked running."""
        if self.settings.resume:
            clean_partials(self.out, self.kind, self.run_id)
            if self.kind.progress is not None:
                trim_progress(self.out / self.kind.progress, self.checkpoint)
        outputs.write_text(self.out / SETTINGS_FILE, json.dumps(asdict(self.settings), indent=1) + "\n")
        self.set_status("running")

    def checkpointed(self, count: int) -> None:
        """The checkpoint of `count` steps (iterations) is whole on disk: run.json says so."""
        self.checkpoint = count
        self.set_status("running")

    def supervise(
        self, signals, body: Callable[[], dict], again: str, on_stop: Callable[[BaseException], None] | None = None
    ):
        """Run `body` (returning run.json's details of a complete run) under `signals`: complete at its end
        (exit status 0); interrupted on a signal (the line saying where it stopped, what is kept and
        `again`, the command that goes on; 128 + the signal's number; `on_stop(stop)` run first); failed on an
        error, which is raised again (run.json written if the disk lets it). A write that fails in a library's
        own thread (TensorBoard's event writer on a full disk) fails the run in one line naming the folder, not
        with the thread's traceback."""
        failed_in_thread: list[OSError] = []
        excepthook = threading.excepthook

        def thread_failed(args) -> None:
            if isinstance(args.exc_value, OSError):
                failed_in_thread.append(args.exc_value)
            else:
                excepthook(args)

        threading.excepthook = thread_failed
        try:
            details = body()
            if failed_in_thread:
                with outputs.naming(self.out):
                    raise failed_in_thread[0]
        except (Stopped, StopNow) as stop:
            signals.shutting_down = True  # a further signal changes nothing now: the files say how it ended
            unit = self.kind.one
            if self.checkpoint:
                kept = f"checkpoint of {unit} {self.checkpoint:,} kept"
            elif self.kind.early is not None and (self.out / self.kind.early[0]).is_dir():
                kept = self.kind.early[1]
            else:
                kept = "no checkpoint yet"
            where = (
                f"{'at' if unit == 'step' else 'after'} {unit} {stop.steps:,}"
                if isinstance(stop, Stopped)
                else "at once"
            )
            if on_stop is not None:
                on_stop(stop)
            self.set_status("interrupted", stopped={"signal": str(stop), self.kind.stopped_key: self.checkpoint})
            print(f"\n{stop} stopped the run {where} ({kept}); go on with: {again}", file=sys.stderr, flush=True)
            return 128 + stop.signum
        except BaseException as error:
            signals.shutting_down = True
            with contextlib.suppress(OSError):  # on a full disk the status is written if it can be
                self.set_status("failed", error=f"{type(error).__name__}: {str(error)[:200]}")
            raise
        finally:
            threading.excepthook = excepthook
        self.set_status("complete", **details)
        return 0
