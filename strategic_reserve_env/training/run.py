"""The run lifecycle of `train`, `train-az` and `train-rllib` (and the distillation inside `train`), written once.

A run lives in its folder (`--out`) and moves through these states, each entered by one atomic write
(`outputs.atomic`), so a kill at any instant leaves the folder in one of them:

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

`execute` walks a `Trainer` through them: `prepare` and `claim` (under the folder's lock), the checks of a
resume before its first write (`Run.resume`: the "already complete" rule), `Run.start`, then `Run.supervise`
(status, signals). A trainer supplies only what differs: what it loads, its newest checkpoint, its training
(`iterate`: the loop of the iteration trainers). `--restart` removes this command's run (results first,
run.json last) and nothing else.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from strategic_reserve_env.core.board import is_integer
from strategic_reserve_env.files import outputs, safe_json
from strategic_reserve_env.interrupts import Signals, StopNow, Stopped

from .folder import SETTINGS_FILE, check_command, refuse_links, settings_hash

STATUSES = ("claimed", "running", "interrupted", "failed", "complete")
PARTIAL = re.compile(r"\.(.+)\.[^./]+\.partial")  # what outputs.atomic leaves behind when killed mid-write
CHECKPOINTS_KEPT = 2  # the last one and the one before it (the fallback if the last is damaged), every trainer
MAX_PROGRESS_LINE = 1 << 16  # bytes of one progress line (a few hundred); a longer line is no progress line


@dataclass(frozen=True)
class RunKind:
    """What a command's run folder holds: `results` (removed first by `--restart`), `state` (beyond settings.json
    and run.json), `folders` (those of them that are folders), `length` (the settings field of its length, in
    `unit`), `model` (its agent spec, `{out}` the folder), `progress` (its progress file), `stopped_key`
    (run.json's name for the checkpoint kept on a stop), `early` (a state folder kept before any checkpoint,
    and how the stop line calls it)."""

    command: str
    results: tuple[str, ...]
    state: tuple[str, ...]
    folders: tuple[str, ...]
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

    @property
    def files(self) -> tuple[str, ...]:
        """The entries that are regular files."""
        return tuple(name for name in self.names if name not in self.folders)


def say(line: str, stream=None) -> None:
    """Print one line of a run's progress (stdout unless `stream`) at once: a pipe sees it when it happens."""
    print(line, file=stream or sys.stdout, flush=True)


def read_record(out: Path) -> dict | None:
    """run.json of `out`; `ValueError` naming it for a status that is no state or a checkpoint that is no count."""
    run = outputs.read_run(out)
    if run is None:
        return None
    status, checkpoint = run.get("status", "running"), run.get("checkpoint", 0)
    if status not in STATUSES:
        raise ValueError(f"{out / outputs.RUN_FILE}: status {status!r:.40} is none of {', '.join(STATUSES)}")
    if not is_integer(checkpoint) or checkpoint < 0:
        raise ValueError(f"{out / outputs.RUN_FILE}: checkpoint {checkpoint!r:.40} is not a count")
    return run


def prepare(settings, kind: RunKind) -> Path:
    """`--out` made absolute and checked before anything is loaded or written (`outputs.check_out`): each of
    the run's files absent or a regular file, each of its folders absent or a folder."""
    out = outputs.check_out(settings.out, kind.files)
    for name in kind.folders:
        path = out / name
        if os.path.lexists(path) and not path.is_symlink() and not path.is_dir():
            raise ValueError(f"--out {out}: {path} exists and is not a folder, so the run cannot write in it")
    return out


def claim(out: Path, settings, kind: RunKind, held: outputs.Lock | None = None) -> Run:
    """The run of `settings` in `out` (whose lock `held` the caller holds): with --resume the folder's own
    (nothing written); else a new one in run.json (claimed), after `--restart` removed this command's run.
    `ValueError` (nothing written) for another command's run, a run held without --resume or --restart,
    files of no run where the run writes, and a link among the run's entries."""
    run = read_record(out)
    check_command(out, run, kind.command)
    if settings.resume:
        refuse_links(out, kind.names)
        if run is None:
            raise ValueError(f"--resume: {out} holds no run (no {outputs.RUN_FILE})")
        return Run(out, kind, settings, run["run_id"], run, held)
    # a run stopped after its claim, before its settings were written, holds nothing but run.json: not ours
    ours = run is not None and any(os.path.lexists(out / name) for name in kind.names[:-1])
    if run is not None and ours and not settings.restart:
        present = [name for name in (SETTINGS_FILE, *kind.state) if os.path.lexists(out / name)]
        raise ValueError(
            f"--out {out} holds run {run['run_id']} ({run.get('command', '')}, started {run.get('started')}): "
            f"--resume to continue it, --restart to start over (removes its {', '.join(present + [outputs.RUN_FILE])} "
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
    """Print a training command's refusal or failure as its one line; its exit status: 1 for a file that could
    not be written (`outputs.OutputLost`), 2 for a refusal. A lost standard output is raised again."""
    if isinstance(error, (outputs.StdoutLost, BrokenPipeError)):
        raise error
    print(f"error: {error}", file=sys.stderr)
    return 1 if isinstance(error, outputs.OutputLost) else 2


@dataclass(frozen=True)
class Checkpoints:
    """A run's numbered checkpoints in `folder`, each named `prefix`, its count (`width` digits, 0: any),
    `suffix`; folders if `folders`, else files. The newest `CHECKPOINTS_KEPT` are kept."""

    folder: Path
    prefix: str
    suffix: str = ""
    width: int = 0
    folders: bool = False

    def path(self, count: int) -> Path:
        """The checkpoint of `count` steps (iterations)."""
        return self.folder / f"{self.prefix}{count:0{self.width}d}{self.suffix}"

    def counts(self) -> list[int]:
        """The counts of the checkpoints there, in increasing order (none if `folder` is a link or no folder)."""
        if self.folder.is_symlink() or not self.folder.is_dir():
            return []
        digits = rf"(\d{{{self.width}}})" if self.width else r"(\d+)"
        name = re.compile(re.escape(self.prefix) + digits + re.escape(self.suffix))
        return sorted(int(m.group(1)) for m in (name.fullmatch(p.name) for p in self.folder.iterdir()) if m)

    def prune(self) -> None:
        """Remove all but the newest `CHECKPOINTS_KEPT`."""
        outputs.remove(self.folder, [self.path(count).name for count in self.counts()[:-CHECKPOINTS_KEPT]])

    def newest(self, load: Callable[[Path], Any]) -> tuple[int, Any] | None:
        """The (count, contents) of the newest checkpoint that `load` reads (else a `ValueError`), warning about
        each newer one skipped; None if there is none. `ValueError` if none loads, or for a checkpoint that is
        a link or of the wrong type."""
        counts = self.counts()
        for count in counts:
            path = self.path(count)
            if path.is_symlink() or not (path.is_dir() if self.folders else path.is_file()):
                kind = (
                    "a symbolic link" if path.is_symlink() else f"not a {'folder' if self.folders else 'regular file'}"
                )
                raise ValueError(
                    f"--resume: {path} is {kind}, so the run cannot read or write its checkpoint there; move it away"
                )
        for count in reversed(counts):
            try:
                return count, load(self.path(count))
            except ValueError as error:
                print(f"warning: --resume: skipping {self.path(count)}: it does not load ({error})", file=sys.stderr)
        if counts:
            raise ValueError(f"--resume: none of the {len(counts)} checkpoint(s) in {self.folder} loads")
        return None


@contextlib.contextmanager
def safe_points(signals) -> Iterator[None]:
    """While the block runs, a first signal stops the run at its next safe point (with its checkpoint)."""
    signals.at_once = False
    try:
        yield
    finally:
        signals.at_once = True


def trim_progress(path: Path, last: int) -> None:
    """Keep the lines of the progress file `path` up to iteration `last`, read a line (at most
    `MAX_PROGRESS_LINE` bytes) at a time; rewritten atomically when a line goes (of a later iteration, too
    long, or not a JSON object naming its iteration)."""
    if not os.path.lexists(path):
        return
    kept, dropped, inside_long = [], False, False
    with safe_json.open_regular(path, sys.maxsize) as handle:
        for line in iter(lambda: handle.readline(MAX_PROGRESS_LINE + 1), b""):
            whole, long = line.endswith(b"\n"), inside_long  # a line with no end: longer than the limit, or cut
            inside_long, iteration = not whole, None
            if whole and not long:
                with contextlib.suppress(ValueError):
                    record = safe_json.loads(line, str(path))
                    iteration = record.get("iteration") if isinstance(record, dict) else None
            if is_integer(iteration) and 0 <= iteration <= last:
                kept.append(line)
            else:
                dropped = True
    if dropped:
        with outputs.atomic(path) as handle:
            handle.writelines(kept)


def append_progress(path: Path, record: dict) -> None:
    """Append `record` as a line of the progress file `path`; an OSError (a full disk) names the file."""
    with outputs.naming(path), open(path, "a", encoding="utf-8") as progress:
        progress.write(json.dumps(record) + "\n")


def clean_partials(out: Path, kind: RunKind, run_id: str) -> None:
    """Remove the `.partial` files a killed write of this run left: in `out` those of the run's names, in
    its state folders those naming no other run."""
    own = set(kind.names)
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

    def resume(self, found: int | None, saved: int | None = None, detail: str = "") -> bool:
        """Go on from the checkpoint of `found` steps (iterations; None: none), or say the run is complete
        (nothing written) and return True. `ValueError` (nothing written) when run.json says a checkpoint was
        written but none was found, or for a length asked below the one done unless it is the checkpoint's
        own `saved` one. `detail`: what the line saying where it goes on adds."""
        complete, unit = self.record.get("status") == "complete", self.kind.one
        done = self.record.get(self.kind.unit, 0) if complete else 0
        expected = max(self.checkpoint, done if is_integer(done) else 0)
        if expected and found is None:
            raise ValueError(
                f"--resume: {self.out / outputs.RUN_FILE} says run {self.run_id} wrote a checkpoint of {unit} "
                f"{expected:,}, but none of it is in {self.out}; nothing was changed: --restart to start over, or "
                "put its checkpoint back"
            )
        self.checkpoint = done = found or 0
        asked, option = getattr(self.settings, self.kind.length), "--" + self.kind.length.replace("_", "-")
        if asked < done and asked != saved:
            raise ValueError(f"--resume: {option} {asked} is below the {done:,} {self.kind.unit} already done")
        if complete and asked <= done:
            model = self.kind.model.format(out=self.out)
            line = f"the run in {self.out} is complete ({done:,} {self.kind.unit}; its model: {model})"
            say(f"{line}; --resume {option} N trains it further", sys.stderr)
            if self.held is not None:
                self.held.untouched = True  # nothing written: the lock file too as it was
            return True
        say(f"resuming from {unit} {done:,}{detail}" if done else "resuming with no checkpoint yet: from the start")
        return False

    def set_status(self, status: str, **details) -> None:
        """Enter `status` (one of `STATUSES`) with its `details`, one atomic write of run.json."""
        for stale in ("stopped", "error"):
            self.record.pop(stale, None)
        updated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.record |= {"status": status, "updated": updated, "checkpoint": self.checkpoint, **details}
        outputs.write_json(self.out / outputs.RUN_FILE, self.record)

    def start(self) -> None:
        """The first write (every check done): on resume the `.partial` files of a killed write go and the
        progress file is trimmed to the checkpoint; the settings are written and the run marked running."""
        if self.settings.resume:
            clean_partials(self.out, self.kind, self.run_id)
            if self.kind.progress is not None:
                trim_progress(self.out / self.kind.progress, self.checkpoint)
        outputs.write_json(self.out / SETTINGS_FILE, asdict(self.settings))
        self.set_status("running")

    def checkpointed(self, count: int, signals=None) -> None:
        """The checkpoint of `count` steps (iterations) is whole on disk: run.json says so; a signal that
        `signals` noted meanwhile stops the run there (`Stopped`)."""
        self.checkpoint = count
        self.set_status("running")
        if signals is not None and signals.requested is not None:
            raise Stopped(signals.requested, count)

    def supervise(self, signals, body: Callable[[], dict], again: str, on_stop: Callable[[BaseException], None]):
        """Run `body` (returning run.json's details of a complete run) under `signals`: complete at its end (exit
        status 0); interrupted on a signal, a `StopNow` a library swallowed included (`on_stop(stop)` first,
        then the line saying where it stopped, what is kept and `again`, the command that goes on; 128 + the
        signal's number); failed on an error, raised again. A write that fails in a library's own thread
        (TensorBoard's writer on a full disk) fails the run in one line naming the folder."""
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
            if signals.requested is not None:  # its StopNow swallowed by a library after the last safe point
                raise StopNow(signals.requested)
        except (Stopped, StopNow) as stop:
            signals.shutting_down = True  # a further signal changes nothing now: the files say how it ended
            unit = self.kind.one
            if self.checkpoint:
                kept = f"checkpoint of {unit} {self.checkpoint:,} kept"
            elif self.kind.early is not None and (self.out / self.kind.early[0]).is_dir():
                kept = self.kind.early[1]
            else:
                kept = "no checkpoint yet"
            at = "at" if unit == "step" else "after"
            where = f"{at} {unit} {stop.steps:,}" if isinstance(stop, Stopped) else "at once"
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


class Trainer:
    """What a trainer adds to the lifecycle; `execute` calls each method in its turn."""

    KIND: ClassVar[RunKind]

    def __init__(self, settings) -> None:
        """Load and check what the run needs before the folder's lock (an error writes nothing)."""
        self.settings = settings

    def build(self, run: Run) -> tuple[int | None, int | None, str]:
        """Build the learner; on resume load the newest checkpoint that loads into it, checked before any
        write. Returns `Run.resume`'s arguments: its count (None: none), the length it was saved with, a detail."""
        return None, None, ""

    def ready(self) -> None:
        """Check what training needs, after the refusals of a resume and before the first write."""

    def train(self, run: Run, signals: Signals) -> dict:
        """Train to the run's length; returns run.json's details of the complete run."""
        raise NotImplementedError

    def stopped(self, run: Run, stop: BaseException) -> None:
        """Note a stop before run.json says so."""

    def run(self, claimed: Run, again: str, signals: Signals | None = None) -> int:
        """The `claimed` run from its checks to its end: `build`; on resume `Run.resume` (complete: nothing
        written); `ready`; `Run.start`; `train` under `Run.supervise`. Returns the exit status."""
        found = self.build(claimed)
        if self.settings.resume and claimed.resume(*found):
            return 0
        self.ready()
        claimed.start()
        with contextlib.nullcontext(signals) if signals else Signals() as watch:
            body, stopped = functools.partial(self.train, claimed, watch), functools.partial(self.stopped, claimed)
            return claimed.supervise(watch, body, again, stopped)


def iterate(run: Run, signals: Signals, step: Callable[[int], dict], save: Callable[[int], None], line) -> None:
    """The loop of an iteration trainer, from the checkpoint to the run's length: `step(iteration)` (its
    progress record), the record appended to the progress file, `save(iteration)` (its checkpoint),
    `line(record)` said; then run.json says so and a signal noted meanwhile stops the run there."""
    with safe_points(signals):
        for iteration in range(run.checkpoint + 1, getattr(run.settings, run.kind.length) + 1):
            row = step(iteration)
            append_progress(run.out / str(run.kind.progress), row)
            save(iteration)
            say(line(row))
            run.checkpointed(iteration, signals)


def execute(trainer_class: type[Trainer], settings, again: str, signals: Signals | None = None) -> int:
    """The run of `settings` by `trainer_class` through the lifecycle's states; `again`: the command line
    that resumes it; `signals`: the command's, if it holds them already. Returns the exit status
    (`Run.supervise`); a refusal raises `ValueError` with nothing written."""
    out = prepare(settings, trainer_class.KIND)  # absolute before an agent loads (one may change directory)
    trainer = trainer_class(settings)
    with outputs.lock(out) as held:  # one writer per folder (OutputBusyError, a ValueError, if another holds it)
        return trainer.run(claim(out, settings, trainer.KIND, held), again, signals)
