"""The fault catalogue: every long command x every fault, generated from two tables (issue 40, "What to build" 7).

`COMMANDS` says, for each long command, its minimal fast argv, the files its run folder holds and the lines it
prints that mark an instant of a phase. `faults(command)` turns one row into every fault that applies to it:

- a signal (SIGINT, SIGTERM, SIGHUP) at several instants of each phase (`Instant`: a phase's line seen on
  stdout or stderr, then a delay in seconds; the phase `start` is the process's start, imports included);
- SIGKILL at those instants, then `--out DIR --resume` (commands that resume);
- a full disk at the Nth open for writing inside the folder (N = 1, 2, 3, ... and the last ones, counted by a
  calibration run): `inject/sitecustomize.py`, put first on the child's PYTHONPATH, makes that open and every
  later one fail with ENOSPC (no LD_PRELOAD, no root, no size-limited mount needed);
- each run file missing, truncated, of the wrong type, out of range, from another run (another seed), a symbolic
  link (to a copy outside the folder, whose bytes must not change), a FIFO; applied to a complete run and then
  `--resume` (commands that resume), or placed at an output name before a fresh run (commands that do not);
- stdout or stderr on /dev/full, stdout on a closed pipe;
- a bad `--out` (a name too long; a regular file);
- user agents that misbehave (commands that take agent specs): raise, exit, sleep past `--act-timeout`, catch
  signals (then SIGINT), raise KeyboardInterrupt, return 2**70.

A new command is one `Command` row; a new run file is one `RunFile` in its row: both get every fault with no
new test code. The pytest harness (`test_faults.py`) and the hostile probe (`probe.py`) draw their cases from
`all_cases()`; what each case must show is in `promises.py`.
"""

from __future__ import annotations

import importlib.util
import signal
from dataclasses import dataclass, field

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DELAYS = (0.0, 0.3, 1.5)  # seconds after a phase's line: at once, within its first work, well inside it
START = "start"  # the phase that begins when the process is spawned (interpreter start and imports)
TAMPERINGS = ("missing", "truncated", "wrong_type", "out_of_range", "other_run", "symlink", "fifo")
EARLY_WRITES = (1, 2, 3, 4, 6, 8)  # the Nth open for writing inside the folder that fails
LATE_WRITES = (-1, -2, -3)  # counted from the last write of a calibration run (-1: the last)
STREAM_FAULTS = ("stdout_full", "stderr_full", "stdout_closed")
BAD_OUTS = ("out_too_long", "out_is_file")
AGENT_FAULTS = ("raises", "exits", "sleeps", "catches_signals", "keyboard_interrupt", "returns_huge")
ACT_TIMEOUT = "0.5"  # seconds, given with the agent that sleeps past its time


@dataclass(frozen=True)
class RunFile:
    """A file (or folder) of a run folder. `name` is a path relative to the folder; `kind` is json, jsonl,
    binary or folder; `out_of_range` is a JSON key and a value outside its range (json files)."""

    name: str
    kind: str
    out_of_range: tuple[str, object] | None = None


@dataclass(frozen=True)
class Phase:
    """A phase of a run and the regular expression of the line (stdout or stderr) that marks its start."""

    name: str
    line: str


@dataclass(frozen=True)
class Command:
    """One long command: its argv (without --out), the files of its folder, its phases.

    `long_argv` is a longer run (more of each phase) for the signal faults, so that an instant falls inside a
    phase; `other_argv` starts another run (for files "from another run"); `resumes`: it takes
    `--out DIR --resume`; `same_after_resume`: files the docs say equal those of the run that never stopped;
    `agents`: it takes agent specs (the user-agent faults append one); `needs`: a module it needs installed."""

    name: str
    argv: tuple[str, ...]
    long_argv: tuple[str, ...]
    other_argv: tuple[str, ...]
    run_files: tuple[RunFile, ...]
    phases: tuple[Phase, ...]
    resumes: bool
    same_after_resume: tuple[str, ...] = ()
    agent_argv: tuple[str, ...] = ()  # argv before the user's agent spec (agents=True)
    needs: str | None = None

    @property
    def available(self) -> bool:
        """Whether what the command needs is installed here."""
        return self.needs is None or importlib.util.find_spec(self.needs) is not None


TRAIN_TINY = (
    "train", "--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1", "--net-arch", "32", "32",
    "--eval-games", "4", "--final-eval-games", "4", "--snapshot-every", "1024", "--checkpoint-every", "512",
    "--no-progress",
)  # fmt: skip
DISTILL_TINY = (
    "train", "--distill-games", "2", "--distill-epochs", "2", "--net-arch", "32", "32", "--total-steps", "0",
    "--eval-games", "2", "--final-eval-games", "2", "--no-progress",
)  # fmt: skip
AZ_TINY = ("train-az", "--games", "4", "--steps", "6", "--simulations", "2", "--hidden", "8", "--updates", "2")
RUN_JSON = RunFile("run.json", "json", ("run_id", 7))
SETTINGS_JSON_TRAIN = RunFile("settings.json", "json", ("n_envs", -5))
TRAIN_RESULTS = (
    RunFile("model.safetensors", "binary"),
    RunFile("model.zip", "binary"),
    RunFile("evaluation.json", "json", ("pairings", 3)),
    RunFile("evaluation.md", "binary"),
    RunFile("tb", "folder"),
)

COMMANDS: tuple[Command, ...] = (
    Command(
        name="train",
        argv=(*TRAIN_TINY, "--distill-games", "0", "--total-steps", "1024", "--seed", "1"),
        long_argv=(*TRAIN_TINY, "--distill-games", "0", "--total-steps", "8192", "--seed", "1"),
        other_argv=(*TRAIN_TINY, "--distill-games", "0", "--total-steps", "1024", "--seed", "2"),
        run_files=(
            RUN_JSON,
            SETTINGS_JSON_TRAIN,
            RunFile("checkpoints", "folder"),
            RunFile("checkpoints/*", "binary"),
            *TRAIN_RESULTS,
        ),
        phases=(
            Phase(START, ""),
            Phase("ppo", r"^Using cpu device|^Logging to|resuming from"),
            Phase("evaluation", r"^learner vs|^pairing|env steps/s"),
        ),
        resumes=True,
        same_after_resume=("model.safetensors",),
    ),
    Command(
        name="distillation",
        argv=(*DISTILL_TINY, "--seed", "1"),
        long_argv=(*DISTILL_TINY[:2], "12", *DISTILL_TINY[3:], "--seed", "1"),
        other_argv=(*DISTILL_TINY, "--seed", "2"),
        run_files=(
            RUN_JSON,
            RunFile("settings.json", "json", ("distill_games", -1)),
            RunFile("distillation", "folder"),
            RunFile("distillation/*", "binary"),
            RunFile("distilled.safetensors", "binary"),
            *TRAIN_RESULTS,
        ),
        phases=(
            Phase(START, ""),
            Phase("labelling", r"^distillation: .*(label|games|chunk)"),
            Phase("fitting", r"^distillation: .*(fit|epoch)"),
            Phase("evaluation", r"^learner vs|^pairing|env steps/s"),
        ),
        resumes=True,
        same_after_resume=("model.safetensors",),
    ),
    Command(
        name="train-az",
        argv=(*AZ_TINY, "--iterations", "2", "--seed", "3"),
        long_argv=(*AZ_TINY, "--iterations", "6", "--seed", "3"),
        other_argv=(*AZ_TINY, "--iterations", "2", "--seed", "4"),
        run_files=(
            RUN_JSON,
            RunFile("settings.json", "json", ("games", 0)),
            RunFile("checkpoint.npz", "binary"),
            RunFile("model.safetensors", "binary"),
            RunFile("progress.jsonl", "jsonl"),
            RunFile("tb", "folder"),
        ),
        phases=(
            Phase(START, ""),
            Phase("compiling", r"compil|train-az"),
            Phase("iteration", r"^iteration|^\[train-az\]|iteration \d"),
        ),
        resumes=True,
        same_after_resume=("model.safetensors", "checkpoint.npz"),
    ),
    Command(
        name="train-rllib",
        argv=("train-rllib", "--iterations", "1", "--seed", "1"),
        long_argv=("train-rllib", "--iterations", "4", "--seed", "1"),
        other_argv=("train-rllib", "--iterations", "1", "--seed", "2"),
        run_files=(
            RUN_JSON,
            RunFile("settings.json", "json", ("iterations", -1)),
            RunFile("checkpoints", "folder"),
            RunFile("checkpoints/*", "folder"),  # each checkpoint is a folder: a link to one refused in one line
            RunFile("model.json", "json"),
            RunFile("weights.npz", "binary"),
            RunFile("progress.jsonl", "jsonl"),
        ),
        phases=(Phase(START, ""), Phase("iteration", r"iteration")),
        resumes=True,
        needs="ray",
    ),
    Command(
        name="evaluate",
        argv=("evaluate", "random", "greedy", "--games", "2", "--no-progress"),
        long_argv=("evaluate", "random", "greedy", "--games", "400", "--batch", "20", "--no-progress"),
        other_argv=("evaluate", "random", "greedy", "--games", "2", "--seed", "5", "--no-progress"),
        run_files=(
            RunFile("results.json", "json", ("pairings", 3)),
            RunFile("results.md", "binary"),
            RunFile("ratings.png", "binary"),
        ),
        phases=(Phase(START, ""), Phase("playing", r"vs|score|Pairing|pairing")),
        resumes=False,
        agent_argv=("evaluate", "random", "--games", "2", "--batch", "2", "--no-progress"),
    ),
    Command(
        name="benchmark",
        argv=("benchmark", "random", "--benchmark-games", "2", "--no-progress"),
        long_argv=("benchmark", "random", "--benchmark-games", "40", "--no-progress"),
        other_argv=("benchmark", "greedy", "--benchmark-games", "2", "--no-progress"),
        run_files=(RunFile("benchmark.json", "json", ("protocol", 99)), RunFile("benchmark.md", "binary")),
        phases=(Phase(START, ""), Phase("playing", r"vs|score|random")),
        resumes=False,
        agent_argv=("benchmark", "--benchmark-games", "2", "--no-progress"),
    ),
)


@dataclass(frozen=True)
class Instant:
    """A phase's line seen, then `delay` seconds."""

    phase: str
    delay: float


@dataclass(frozen=True)
class Fault:
    """One fault. `kind` is signal, kill, enospc, tamper, stream, bad_out or agent; the other fields say which."""

    kind: str
    signum: int = 0
    instant: Instant | None = None
    write: int = 0  # enospc: the Nth open for writing that fails (negative: from the last)
    run_file: str = ""  # tamper: RunFile.name
    tampering: str = ""
    variant: str = ""  # stream, bad_out or agent: which

    @property
    def label(self) -> str:
        """A short stable name (the pytest id)."""
        if self.kind in ("signal", "kill"):
            name = signal.Signals(self.signum).name if self.kind == "signal" else "SIGKILL"
            assert self.instant is not None
            return f"{name}@{self.instant.phase}+{self.instant.delay:g}s"
        if self.kind == "enospc":
            return f"enospc@write{self.write}"
        if self.kind == "tamper":
            return f"{self.run_file}:{self.tampering}"
        return f"{self.kind}:{self.variant}"


@dataclass(frozen=True)
class Case:
    """One command under one fault."""

    command: Command
    fault: Fault
    tags: frozenset[str] = field(default_factory=frozenset)

    @property
    def id(self) -> str:
        return f"{self.command.name}/{self.fault.label}"


def instants(command: Command) -> list[Instant]:
    """Several instants of each phase of `command`."""
    return [Instant(phase.name, delay) for phase in command.phases for delay in DELAYS]


def faults(command: Command) -> list[Fault]:
    """Every fault that applies to `command`, from the tables above."""
    found = [Fault("signal", signum=int(signum), instant=at) for at in instants(command) for signum in SIGNALS]
    if command.resumes:
        found += [Fault("kill", signum=int(signal.SIGKILL), instant=at) for at in instants(command)]
    found += [Fault("enospc", write=n) for n in (*EARLY_WRITES, *LATE_WRITES)]
    found += [
        Fault("tamper", run_file=run_file.name, tampering=how)
        for run_file in command.run_files
        for how in TAMPERINGS
        if not (run_file.kind == "folder" and how in ("truncated", "out_of_range"))
        and not (how == "out_of_range" and run_file.out_of_range is None)
    ]
    found += [Fault("stream", variant=variant) for variant in STREAM_FAULTS]
    found += [Fault("bad_out", variant=variant) for variant in BAD_OUTS]
    if command.agent_argv:
        found += [Fault("agent", variant=variant) for variant in AGENT_FAULTS]
    return found


def all_cases(include_unavailable: bool = False) -> list[Case]:
    """Every case of the catalogue, in a stable order (commands whose `needs` is missing left out)."""
    return [
        Case(command, fault)
        for command in COMMANDS
        if include_unavailable or command.available
        for fault in faults(command)
    ]
