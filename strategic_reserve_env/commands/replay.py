"""Print the trace of a game record (the format: strategic-reserve rules): one JSON line per ply.

    strategic-reserve replay game.json
    strategic-reserve replay - < game.json

A bad record prints one line on stderr naming the file and what is wrong, and exits 1.
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
    parser.add_argument(
        "record",
        help=f"path of a record .json file, or - for the standard input "
        f"(at most {records.MAX_RECORD_BYTES:,} bytes, UTF-8 JSON)",
    )
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Print the trace of a record as JSON lines; one line on stderr and exit 1 on a bad record."""
    args = build_parser(prog).parse_args(argv)
    try:
        source, name = record_source(args.record)
        record = records.load_record(source, name)
    except records.RecordError as error:  # the message names the file
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        for entry in records.replay(record):
            print(records.trace_line(entry), flush=False)
        flush_stdout()
    except records.RecordError as error:
        try:
            flush_stdout()
        except BrokenPipeError:
            raise
        except OSError as lost:
            print(f"error: {name}: {error}; and {stdout_lost(lost)}", file=sys.stderr)
            return 1
        print(f"error: {name}: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # piped into head: the reader has what it wanted (the console command exits 0)
        raise
    except OSError as error:
        print(f"error: {stdout_lost(error)}", file=sys.stderr)
        return 1
    return 0
