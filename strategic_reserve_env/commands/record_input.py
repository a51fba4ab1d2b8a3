"""The record argument of the commands that read a game record (`replay`, `analyse`): a path, or `-`."""

from __future__ import annotations

import sys
from typing import BinaryIO

from strategic_reserve_env.files import records

STDIN_NAME = "<stdin>"  # how messages name the standard input (``replay -``)


def record_source(path: str) -> tuple[str | BinaryIO, str]:
    """(what `strategic_reserve_env.files.records.load_record` reads, the name its messages give) of a command's
    record argument: a file's path, or `-` for the standard input."""
    if path != "-":
        return path, path
    if sys.stdin is None:  # started with its standard input closed (``<&-``)
        raise records.RecordError(f"{STDIN_NAME}: the standard input is closed; give a file, or pipe the record in")
    return sys.stdin.buffer, STDIN_NAME
