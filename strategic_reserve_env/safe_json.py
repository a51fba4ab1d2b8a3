"""JSON from files we do not trust: bounded nesting, no duplicate keys, no NaN or infinity.

Python's :func:`json.loads` recurses once per nested bracket, so a file made of
100,000 ``[`` ends in a ``RecursionError``; it keeps the last of two equal keys
without a word, and reads ``NaN`` and ``Infinity``, which JSON does not have.
:func:`loads` refuses all three with the caller's own error type, one line
naming the file. The depth is measured on the text before it is parsed (a
linear scan outside strings), so a deep file costs no more than reading it.
"""

from __future__ import annotations

import json
import re

import numpy as np

from .board import brief

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (our files need fewer than 8 levels)."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: no backtracking state per character


def nesting_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON ``text``, counted outside strings."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    codes = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    steps = ((codes == ord("[")) | (codes == ord("{"))).astype(np.int32)
    steps -= (codes == ord("]")) | (codes == ord("}"))
    return int(np.cumsum(steps, dtype=np.int32).max(initial=0))


def unique_keys(pairs: list[tuple[str, object]], error: type[Exception] = ValueError) -> dict:
    """The object of ``pairs`` (a ``json.loads`` ``object_pairs_hook``); ``error`` if a key appears twice."""
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise error(f"key {brief(key)} appears twice in one object")
        result[key] = value
    return result


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str | bytes, where: str, error: type[Exception] = ValueError, max_depth: int = MAX_DEPTH) -> object:
    """The value of JSON ``text``; ``error`` (one line starting with ``where``) if it is not JSON, nests deeper
    than ``max_depth``, repeats a key within one object, or holds NaN or infinity."""
    depth = nesting_depth(text)
    if depth > max_depth:
        raise error(f"{where}: JSON nested {depth} levels deep; at most {max_depth} are read")

    try:
        return json.loads(text, object_pairs_hook=unique_keys, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as problem:  # JSONDecodeError is a ValueError
        raise error(f"{where}: not valid JSON ({problem})") from None
