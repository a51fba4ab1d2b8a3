"""Analyse a game record, as GNU Backgammon analyses a match: the luck of every roll for its roller, the error
of every placement (the analysing agent's value of its best placement minus that of the one played), and per
player the total luck, the error rate and the luck-adjusted result.

    strategic-reserve analyse game.json
    strategic-reserve analyse game.json --agent expectimax:depth=1 --json
    strategic-reserve analyse - < game.json

A bad record prints one line on stderr naming the file and what is wrong, and exits 1; a bad --agent or
--luck-value exits 2.
"""

from __future__ import annotations

import argparse
import sys

from strategic_reserve_env.commands import flush_stdout, stdout_lost
from strategic_reserve_env.commands.record_input import record_source
from strategic_reserve_env.files import records


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line; `prog`: the name `--help` shows."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("record", help="path of a record .json file, or - for the standard input")
    parser.add_argument(
        "--agent", default="expectimax:depth=2", help="the analysing agent: expectimax[:depth=1|2] or value[...]"
    )
    parser.add_argument("--luck-value", default="race", help="value function of the luck (default race)")
    parser.add_argument("--json", action="store_true", help="print the analysis as JSON")
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print the analysis of a record (or its JSON); one line on stderr and exit 1 on a bad record."""
    args = build_parser(prog).parse_args(argv)
    from strategic_reserve_env.evaluation.analysis import analyse  # loads the agents

    name = args.record
    try:
        source, name = record_source(args.record)
        record = records.load_record(source, name)
        analysis = analyse(record, args.agent, args.luck_value)
    except records.RecordError as error:
        print(f"error: {name}: {error}" if error.ply is not None else f"error: {error}", file=sys.stderr)
        return 1
    except ValueError as error:  # a bad --agent or --luck-value
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        print(analysis.json() if args.json else analysis.text())
        flush_stdout()
    except BrokenPipeError:  # piped into head (the console command exits 0)
        raise
    except OSError as error:
        print(f"error: {stdout_lost(error)}", file=sys.stderr)
        return 1
    return 0
