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

from strategic_reserve_env.commands import fail
from strategic_reserve_env.commands.arguments import command_parser
from strategic_reserve_env.commands.replay import BAD_RECORD, read_record
from strategic_reserve_env.files import records


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print the analysis of a record (or its JSON); one line on stderr and exit 1 on a bad record."""
    parser = command_parser(prog, __doc__)
    parser.add_argument("record", help="path of a record .json file, or - for the standard input")
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
