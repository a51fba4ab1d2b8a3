"""Command line: ``python -m strategic_reserve_env {replay,bench,play,analyse} ...``."""

from __future__ import annotations

import argparse
import sys

from . import bench, records
from .board import DEFAULT_RESERVE
from .config import Config

STDIN_NAME = "<stdin>"  # how messages name the standard input (``replay -``)


def _replay(args: argparse.Namespace) -> int:
    """Print the trace of a record as JSON lines; one line on stderr and exit 1 on a bad record."""
    stdin = args.record == "-"
    name = STDIN_NAME if stdin else args.record
    try:
        record = records.load_record(sys.stdin.buffer if stdin else args.record, name)
    except records.RecordError as error:  # the message names the file
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        for entry in records.replay(record):
            print(records.trace_line(entry), flush=False)
    except records.RecordError as error:
        sys.stdout.flush()
        print(f"error: {name}: {error}", file=sys.stderr)
        return 1
    return 0


def _bench(args: argparse.Namespace) -> int:
    """Print plies/s of random legal play."""
    config = Config(reserve=args.reserve)
    print(f"random legal play, reserve {config.reserve}, {args.seconds:g} s per line, one process")
    for line in bench.run(seconds=args.seconds, batch_sizes=tuple(args.batch_sizes), config=config):
        print(line, flush=True)
    return 0


def _play(args: argparse.Namespace) -> int:
    """A person against an agent in the terminal."""
    from strategic_reserve_env.agents import (
        load_agent,  # the command line is the one layer of this package that uses the agents
    )

    from .terminal import terminal_game

    agent = load_agent(args.opponent)  # ValueError naming the problem for a bad spec
    return terminal_game(agent, seat=args.seat, seed=args.seed, reserve=args.reserve, save=args.save)


def _analyse(args: argparse.Namespace) -> int:
    """Print the analysis of a record (luck per roll, error per placement, per-player totals), or its JSON."""
    from strategic_reserve_env.evaluation.analysis import analyse  # loads the agents, like ``play``

    stdin = args.record == "-"
    name = STDIN_NAME if stdin else args.record
    try:
        record = records.load_record(sys.stdin.buffer if stdin else args.record, name)
        analysis = analyse(record, args.agent, args.luck_value)
    except records.RecordError as error:
        print(f"error: {name}: {error}" if error.ply is not None else f"error: {error}", file=sys.stderr)
        return 1
    print(analysis.json() if args.json else analysis.text())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m strategic_reserve_env", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    replay = commands.add_parser("replay", help="print the trace of a game record (docs/RULES.md format)")
    replay.add_argument(
        "record",
        help=f"path of a record .json file, or - for the standard input "
        f"(at most {records.MAX_RECORD_BYTES:,} bytes, UTF-8 JSON)",
    )
    replay.set_defaults(run=_replay)

    bench_parser = commands.add_parser("bench", help="plies per second of uniformly random legal play")
    bench_parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement (default 2)")
    bench_parser.add_argument(
        "--batch-sizes", type=int, nargs="+", default=[1, 64, 4096], metavar="B", help="batch sizes (default 1 64 4096)"
    )
    bench_parser.add_argument("--reserve", type=int, default=DEFAULT_RESERVE, help="reserve size (default %(default)s)")
    bench_parser.set_defaults(run=_bench)

    play_parser = commands.add_parser("play", help="play against an agent in the terminal")
    play_parser.add_argument(
        "--opponent",
        default="greedy",
        help="agent spec (default greedy), e.g. random, expectimax:depth=2, ppo:models/ppo_baseline.safetensors",
    )
    play_parser.add_argument("--seat", choices=["red", "blue", "random"], default="red", help="your colour")
    play_parser.add_argument("--seed", type=int, help="seed of the dice and the agent")
    play_parser.add_argument("--reserve", type=int, default=DEFAULT_RESERVE, help="reserve size (default %(default)s)")
    play_parser.add_argument("--save", help="write the game record here at the end (otherwise you are asked)")
    play_parser.set_defaults(run=_play)

    analyse_parser = commands.add_parser(
        "analyse", help="the luck of every roll and the error of every placement of a game record"
    )
    analyse_parser.add_argument("record", help="path of a record .json file, or - for the standard input")
    analyse_parser.add_argument(
        "--agent", default="expectimax:depth=2", help="the analysing agent: expectimax[:depth=1|2] or value[...]"
    )
    analyse_parser.add_argument("--luck-value", default="race", help="value function of the luck (default race)")
    analyse_parser.add_argument("--json", action="store_true", help="print the analysis as JSON")
    analyse_parser.set_defaults(run=_analyse)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # e.g. piped into head
        return 0
    except ValueError as error:  # bad settings, e.g. --reserve 20
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
