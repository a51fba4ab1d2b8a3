"""Print the trace of a game record (the format: strategic-reserve rules): one JSON line per ply.

    strategic-reserve replay game.json
    strategic-reserve replay - < game.json

A bad record prints one line on stderr naming the file and what is wrong, and exits 1.
"""

from __future__ import annotations

import sys

from strategic_reserve_env.commands import fail, flush_stdout
from strategic_reserve_env.commands.arguments import command_parser
from strategic_reserve_env.files import records

STDIN_NAME = "<stdin>"  # how messages name the standard input (``replay -``)
BAD_RECORD = 1  # the exit status for a record that cannot be read or breaks the rules
RECORD_HELP = "path of a record .json file, or - for the standard input"
ANALYSE = """Analyse a game record, as GNU Backgammon analyses a match: the luck of every roll for its roller, the error
of every placement (the analysing agent's value of its best placement minus that of the one played), and per
player the total luck, the error rate and the luck-adjusted result.

    strategic-reserve analyse game.json
    strategic-reserve analyse game.json --agent expectimax:depth=1 --json
    strategic-reserve analyse - < game.json

A bad record prints one line on stderr naming the file and what is wrong, and exits 1; a bad --agent or
--luck-value exits 2.
"""


def read_record(path: str) -> tuple[records.Record, str]:
    """The record of a command's record argument (a file's path, or `-` for the standard input) and the name its
    messages give it; `RecordError` naming the file."""
    if path != "-":
        return records.load_record(path, path), path
    if sys.stdin is None:  # started with its standard input closed (``<&-``)
        raise records.RecordError(f"{STDIN_NAME}: the standard input is closed; give a file, or pipe the record in")
    return records.load_record(sys.stdin.buffer, STDIN_NAME), STDIN_NAME


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print the trace of a record as JSON lines; one line on stderr and exit 1 on a bad record."""
    parser = command_parser(prog, __doc__)
    parser.add_argument("record", help=f"{RECORD_HELP} (at most {records.MAX_RECORD_BYTES:,} bytes, UTF-8 JSON)")
    args = parser.parse_args(argv)
    where = ""  # the loader's messages name the file; the replay's do not
    try:
        record, name = read_record(args.record)
        where = f"{name}: "
        for entry in records.replay(record):
            print(records.trace_line(entry), flush=False)
    except records.RecordError as error:
        flush_stdout()  # the trace up to the bad ply first
        return fail(f"{where}{error}", BAD_RECORD)
    return 0


def analyse(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The analyse command: the analysis of a record (or its JSON); one line on stderr and exit 1 on a bad record."""
    parser = command_parser(prog, ANALYSE)
    parser.add_argument("record", help=RECORD_HELP)
    parser.add_argument(
        "--agent", default="expectimax:depth=2", help="the analysing agent: expectimax[:depth=1|2] or value[...]"
    )
    parser.add_argument("--luck-value", default="race", help="value function of the luck (default race)")
    parser.add_argument("--json", action="store_true", help="print the analysis as JSON")
    args = parser.parse_args(argv)
    from strategic_reserve_env.evaluation.analysis import analyse  # loads the agents

    name = args.record
    try:
        record, name = read_record(args.record)
        analysis = analyse(record, args.agent, args.luck_value)
    except records.RecordError as error:  # the loader's messages name the file; those at a ply do not
        return fail(f"{name}: {error}" if error.ply is not None else str(error), BAD_RECORD)
    except ValueError as error:  # a bad --agent or --luck-value
        return fail(str(error))
    print(analysis.json() if args.json else analysis.text())
    return 0
