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
    parser.add_argument(
        "record",
        help=f"path of a record .json file, or - for the standard input "
        f"(at most {records.MAX_RECORD_BYTES:,} bytes, UTF-8 JSON)",
    )
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
