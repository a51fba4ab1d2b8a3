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

from strategic_reserve_env.extras import EXIT_MISSING_EXTRA, missing_extra, needs_extra
from strategic_reserve_env.training import signals

PROG = "strategic-reserve"  # the console script's name ([project.scripts] in pyproject.toml)
HELP = {"-h", "--help"}  # a command's help: shown without its extras, when its module imports without them
OWN_CTRL_C = ("play",)  # commands that handle Ctrl-C themselves (the terminal game asks before it quits)


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
        "one agent against the protocol's fixed panel, a score card", "strategic_reserve_env.commands.benchmark:main"
    ),
    "train": Command(
        "distillation, then optional PPO (the code of train.py)",
        "strategic_reserve_env.commands.train:cli",
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
        "strategic_reserve_env.commands.analyse:main",
    ),
    "skill": Command(
        "the skill report: the ladder, the first-player advantage, the variants (docs/SKILL.md)",
        "strategic_reserve_env.commands.skill:main",
        maintainer=True,
    ),
    "headroom": Command(
        "how much a placement can gain over greedy's (rollouts on common dice)",
        "strategic_reserve_env.commands.headroom:main",
        maintainer=True,
    ),
    "reference": Command(
        "the reference score cards of docs/BENCHMARK.md (from the repository's root)",
        "strategic_reserve_env.commands.reference:main",
        maintainer=True,
    ),
    "policy-file": Command(
        "show a PPO policy file's description, or convert a trusted SB3 .zip into one",
        "strategic_reserve_env.commands.policy_file:main",
    ),
    "value-net": Command(
        "the value agent's network: play games for its data, fit it",
        "strategic_reserve_env.commands.value_net:main",
        maintainer=True,
    ),
    "rules": Command(
        "print the rules, the notation and the record format (ply numbers included)",
        "strategic_reserve_env.commands.rules:main",
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
    command imports, or while it runs outside its own handling, exits 130 / 143 without a traceback, and one
    after it returned is ignored (`strategic_reserve_env.training.signals`; `play` keeps Ctrl-C)."""
    process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        build_parser(prog).parse_args(argv)  # --help, --version, or a usage error (exit 2)
        return 2  # not reached: every argument list that is not a command ends in the parser
    name, rest = argv[0], argv[1:]
    command, what = COMMANDS[name], f"{prog} {name}"
    guard = signals.quiet if process else contextlib.nullcontext
    try:
        # before the command's code, so nothing is read or written; its --help is shown without the extra
        missing = None if HELP & set(rest) else missing_extra(command.extras, what)
        if missing is None:
            try:
                with guard():
                    run = command.load()
                with guard() if name not in OWN_CTRL_C else contextlib.nullcontext():
                    return run(rest, what)
            except BrokenPipeError:  # e.g. piped into head
                return 0
            except ModuleNotFoundError as error:  # a library of an optional extra: one line naming the extra
                missing = needs_extra(error, what, command.extras)
                if missing is None:
                    raise
        print(f"error: {missing}", file=sys.stderr)
        return EXIT_MISSING_EXTRA
    finally:
        if process:
            signals.ignore_until_exit()


if __name__ == "__main__":
    sys.exit(main(prog="python -m strategic_reserve_env"))
