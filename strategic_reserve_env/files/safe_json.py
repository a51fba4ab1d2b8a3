"""Files we do not trust: bytes read only from a regular file of bounded size (`open_regular`), and JSON
(`loads`) with bounded nesting, no duplicate keys, no NaN or infinity; each fault one line of the caller's
error type naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from strategic_reserve_env.core.board import brief

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (our files need fewer than 8 levels)."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: no backtracking state per character


def unique_keys(pairs: list[tuple[str, object]], error: type[Exception] = ValueError) -> dict:
    """The object of `pairs` (a `json.loads` `object_pairs_hook`); `error` if a key appears twice."""
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise error(f"key {brief(key)} appears twice in one object")
        result[key] = value
    return result


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str | bytes, where: str, error: type[Exception] = ValueError, max_depth: int = MAX_DEPTH) -> object:
    """The value of JSON `text`; `error` (one line starting with `where`) if it is not JSON, nests deeper than
    `max_depth`, repeats a key within one object, or holds NaN or infinity."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    # the nesting, measured before parsing (json.loads recurses once per bracket): brackets outside strings
    codes = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    steps = ((codes == ord("[")) | (codes == ord("{"))).astype(np.int32) - ((codes == ord("]")) | (codes == ord("}")))
    depth = int(np.cumsum(steps, dtype=np.int32).max(initial=0))
    if depth > max_depth:
        raise error(f"{where}: JSON nested {depth} levels deep; at most {max_depth} are read")
    try:
        return json.loads(text, object_pairs_hook=unique_keys, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as problem:  # JSONDecodeError is a ValueError
        raise error(f"{where}: not valid JSON ({problem})") from None


@contextlib.contextmanager
def open_regular(
    path: str | Path,
    limit: int,
    what: str | None = None,
    error: type[Exception] = ValueError,
    follow_links: bool = False,
) -> Iterator[IO[bytes]]:
    """`path` opened for reading, checked before a byte is read: `error` (naming `what`, default the path) unless
    a regular file of at most `limit` bytes, not a link unless `follow_links` (a user's file, not a run
    folder's); a FIFO is refused, never waited on. An `OSError` of a read in the block is `error` too."""
    what = str(path) if what is None else what
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | (0 if follow_links else os.O_NOFOLLOW)
    try:
        descriptor = os.open(path, flags)
    except OSError as problem:
        if not follow_links and os.path.islink(path):
            raise error(f"{what} is a symbolic link; links in a run folder are not followed") from None
        raise error(f"cannot read {what}: {problem.strerror or problem}") from None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise error(f"cannot read {what}: not a regular file (a FIFO, a device or a folder is never read)")
        if status.st_size > limit:
            raise error(f"{what} is larger than {limit:,} bytes, the most that is read")
        os.set_blocking(descriptor, True)
        try:
            yield handle
        except OSError as problem:  # a read in the block that failed
            raise error(f"cannot read {what}: {problem.strerror or problem}") from None


def read_regular(path: str | Path, limit: int, what: str | None = None, error=ValueError, **options) -> bytes:
    """The bytes of `path` (`open_regular`, whose checks and `options` these are), reading at most `limit + 1`
    bytes should the file grow meanwhile."""
    with open_regular(path, limit, what, error, **options) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise error(f"{path if what is None else what} grew past {limit:,} bytes while it was read")
    return data


def load(path: str | Path, limit: int, error: type[Exception] = ValueError, **options) -> object:
    """The JSON value of the file `path` (`read_regular`, then `loads`, whose checks these are)."""
    return loads(read_regular(path, limit, error=error, **options), str(path), error)
