"""The record argument of the commands that read a game record (``replay``, ``analyse``): a path, or ``-``."""

from __future__ import annotations

import sys
from typing import BinaryIO

STDIN_NAME = "<stdin>"  # how messages name the standard input (``replay -``)


def record_source(path: str) -> tuple[str | BinaryIO, str]:
    """(what :func:`strategic_reserve_env.records.load_record` reads, the name its messages give) of a command's
    record argument: a file's path, or ``-`` for the standard input."""
    return (sys.stdin.buffer, STDIN_NAME) if path == "-" else (path, path)
