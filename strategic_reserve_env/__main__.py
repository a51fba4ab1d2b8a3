"""The `strategic-reserve` command (also `python -m strategic_reserve_env`): one subcommand per task.

`strategic-reserve COMMAND --help` describes each. The commands live in
`strategic_reserve_env.commands`; `COMMANDS` lists them, and a module
is imported only when its command runs (`replay` needs neither torch nor the agents).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass

from strategic_reserve_env.commands import GuardedStdout, StdoutLost, flush_stdout, stdout_lost
from strategic_reserve_env.extras import EXIT_MISSING_EXTRA, missing_extra, needs_extra
from strategic_reserve_env.files.outputs import OutputLost
from strategic_reserve_env.interrupts import as_process, own_ctrl_c

PROG = "strategic-reserve"  # the console script's name ([project.scripts] in pyproject.toml)
HELP = {"-h", "--help"}  # a command's help: shown without its extras, when its module imports without them
OWN_CTRL_C = ("play",)  # commands that handle Ctrl-C themselves (the terminal game asks before it quits)
OUTPUT_FAILED = 1  # the exit status when a write failed (a full disk, the standard output on a full device)


@dataclass(frozen=True)
class Command:
    """A subcommand: what it does (one line of `--help`), where its `main(argv, prog) -> int` is, and the
    optional extras it needs (names of `strategic_reserve_env.extras.EXTRAS`): `main` checks them
    before it imports `target` (unless the command is asked for its help), so a command that lacks one is
    refused in one line and writes nothing."""

    summary: str
    target: str  # "module:function", imported when the command runs
    extras: tuple[str, ...] = ()  # e.g. ("mctx",): every library of these extras installed, or a refusal
    maintainer: bool = False
    """A command for the project's maintainers (regenerating the reference cards, the skill report, the shipped
    value network), listed apart from the user's commands in `--help`; it runs like any other."""

    def load(self) -> Callable[[list[str], str], int]:
        module, _, function = self.target.partition(":")
        return getattr(importlib.import_module(module), function)


# name -> command; a new command is one more line here and a module in strategic_reserve_env/commands
COMMANDS: dict[str, Command] = {
    "evaluate": Command(
        "round robin with paired dice, ratings (the code of evaluate.py)",
        "strategic_reserve_env.commands.evaluate:main",
    ),
    "benchmark": Command(
        "one agent against the protocol's fixed panel, a score card",
        "strategic_reserve_env.commands.evaluate:benchmark_main",
    ),
    "train": Command(
        "distillation, then optional PPO (the code of train.py)",
        "strategic_reserve_env.commands.train:main",
        extras=("train",),
    ),
    "train-az": Command(
        "AlphaZero-style self-play with chance nodes on the JAX game (needs the mctx extra)",
        "strategic_reserve_env.commands.train_az:main",
        extras=("mctx",),
    ),
    "train-rllib": Command(
        "Ray RLlib self-play, one machine or a cluster (needs the rllib extra)",
        "strategic_reserve_env.commands.train_rllib:main",
        extras=("rllib",),
    ),
    "replay": Command(
        "print the trace of a game record (the format: strategic-reserve rules)",
        "strategic_reserve_env.commands.replay:main",
    ),
    "bench": Command("plies per second of uniformly random legal play", "strategic_reserve_env.commands.bench:main"),
    "play": Command("play against an agent in the terminal", "strategic_reserve_env.commands.play:main"),
    "analyse": Command(
        "the luck of every roll and the error of every placement of a game record",
        "strategic_reserve_env.commands.replay:analyse",
    ),
    "skill": Command(
        "the skill report: the ladder, the first-player advantage, the variants (docs/SKILL.md)",
        "strategic_reserve_env.commands.maintainer:skill",
        maintainer=True,
    ),
    "headroom": Command(
        "how much a placement can gain over greedy's (rollouts on common dice)",
        "strategic_reserve_env.commands.maintainer:headroom",
        maintainer=True,
    ),
    "reference": Command(
        "the reference score cards of docs/BENCHMARK.md (from the repository's root)",
        "strategic_reserve_env.commands.maintainer:reference",
        maintainer=True,
    ),
    "policy-file": Command(
        "show a PPO policy file's description, or convert a trusted SB3 .zip into one",
        "strategic_reserve_env.commands.policy_file:main",
    ),
    "value-net": Command(
        "the value agent's network: play games for its data, fit it",
        "strategic_reserve_env.commands.maintainer:value_net",
        maintainer=True,
    ),
    "rules": Command(
        "print the rules, the notation and the record format (ply numbers included)",
        "strategic_reserve_env.commands.show_rules:main",
    ),
}


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The top-level parser: `--help`, `--version` and the list of commands."""
    from strategic_reserve_env import __version__

    width = max(map(len, COMMANDS))

    def listing(maintainer: bool) -> str:
        chosen = [(name, command) for name, command in COMMANDS.items() if command.maintainer == maintainer]
        return "\n".join(f"  {name:<{width}}  {command.summary}" for name, command in chosen)

    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [-h] [--version] COMMAND [ARGS ...]",
        description="Strategic Reserve (a game by Mark Steere): evaluate, benchmark and train agents,\n"
        "replay and analyse game records, play a game, read the rules.",
        epilog=f"commands:\n{listing(False)}\n\nmaintainer commands (for the project's own results):\n"
        f"{listing(True)}\n\n{prog} COMMAND --help describes each one.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("command", metavar="COMMAND", choices=COMMANDS, help="one of the commands below")
    return parser


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run `argv` (default `sys.argv[1:]`): `COMMAND ARGS...`; returns the exit status. `prog`: the name
    the help texts give the command. Run as the process's own command (`argv` None), a signal while the
    command imports, or while it runs outside its own handling, exits 130 / 143 / 129 with one line and no
    traceback, and the process ends as soon as the command returns, so none is lost in the interpreter's
    teardown (`strategic_reserve_env.interrupts.as_process`; `play` keeps Ctrl-C). The output faults of every
    command are handled here, once (`output_failed`): a write that fails (a full disk, standard output on a
    full device) is one line naming what could not be written, exit 1; a reader that went away (a broken
    pipe: `| head`) ends the command quietly with its status."""
    process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if process and sys.stdout is not None and not isinstance(sys.stdout, GuardedStdout):
        sys.stdout = GuardedStdout(sys.stdout)

    def body() -> int:
        try:
            status = _run(argv, prog, process)
        except SystemExit:  # argparse: --help, --version, a usage error
            if _flushed():
                raise
            raise SystemExit(OUTPUT_FAILED) from None
        except OSError as error:
            return output_failed(error)
        return status if _flushed() else OUTPUT_FAILED

    return as_process(body, process)


def _run(argv: list[str], prog: str, process: bool) -> int:
    """`main` without its handling of signals and output faults."""
    if not argv or argv[0] not in COMMANDS:
        build_parser(prog).parse_args(argv)  # --help, --version, or a usage error (exit 2)
        return 2  # not reached: every argument list that is not a command ends in the parser
    name, rest = argv[0], argv[1:]
    command, what = COMMANDS[name], f"{prog} {name}"
    # before the command's code, so nothing is read or written; its --help is shown without the extra
    missing = None if HELP & set(rest) else missing_extra(command.extras, what)
    if missing is None:
        try:
            run = command.load()
            if name in OWN_CTRL_C and process:
                with own_ctrl_c():
                    return run(rest, what)
            return run(rest, what)
        except ModuleNotFoundError as error:  # a library of an optional extra: one line naming the extra
            missing = needs_extra(error, what, command.extras)
            if missing is None:
                raise
    say_error(str(missing))
    return EXIT_MISSING_EXTRA


def say_error(text: str) -> None:
    """`error: text` on stderr; a lost stderr loses only the line (the exit status still says it)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"error: {text}", file=sys.stderr, flush=True)


def _flushed() -> bool:
    """Flush the standard output; False (after saying so in one line) if it could not be written."""
    try:
        flush_stdout()
    except BrokenPipeError as error:  # the reader went away (| head): it has what it wanted
        stdout_lost(error)
    except OSError as error:
        say_error(stdout_lost(error))
        return False
    return True


def output_failed(error: OSError) -> int:
    """A write that failed in a command (`error`): one line naming what could not be written (the file, or
    the standard output), and the exit status; a broken pipe (the reader went away) is no failure."""
    if isinstance(error, BrokenPipeError):
        stdout_lost(error)
        return 0
    if isinstance(error, StdoutLost):
        say_error(stdout_lost(error))
    elif isinstance(error, OutputLost):
        say_error(str(error))
    elif error.filename is not None:
        say_error(f"{error.filename}: {error.strerror or error}")
    else:
        say_error(f"a write failed ({error.strerror or error}), naming no file")
    return OUTPUT_FAILED


if __name__ == "__main__":
    sys.exit(main(prog="python -m strategic_reserve_env"))
