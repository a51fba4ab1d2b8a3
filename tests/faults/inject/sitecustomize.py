"""A full disk for one child process, without LD_PRELOAD or root: put this folder first on the child's
`PYTHONPATH` and Python imports it at start-up (`site` imports `sitecustomize`).

It wraps `io.open` (so `open` and `Path.open`) and `os.open` (so `tempfile.mkstemp`, the atomic writes of
`outputs.atomic`): every open for writing of a path inside `FAULT_ROOT` is counted, one line per open
appended to `FAULT_LOG` (shared by the process and its children); from the `FAULT_ENOSPC_AT`-th such open
on (1-based) each one fails with `OSError(ENOSPC)`, as a disk that filled up and stays full. With
`FAULT_ENOSPC_AT=0` it only counts (the catalogue's calibration: how many writes a run makes).

Limits, said where they matter: writes made by compiled code that opens files itself (safetensors' Rust
writer, TensorBoard's C++ writer if any) are not seen; a write that fails part-way through a file (rather
than at its open) is not simulated.
"""

from __future__ import annotations

import builtins
import errno
import io
import os

_ROOT = os.environ.get("FAULT_ROOT")
_LOG = os.environ.get("FAULT_LOG")
_AT = int(os.environ.get("FAULT_ENOSPC_AT", "0") or 0)
_WRITING_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _inside(path: object) -> str | None:
    """The absolute path of `path` when it names a file inside FAULT_ROOT, else None."""
    if isinstance(path, int) or _ROOT is None:
        return None
    try:
        absolute = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None
    return absolute if absolute == _ROOT or absolute.startswith(_ROOT + os.sep) else None


def _count(path: str) -> None:
    """Log one write of `path`; raise ENOSPC once the disk is full."""
    if _LOG is None:
        return
    descriptor = _real_os_open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, (path.replace("\n", "?") + "\n").encode("utf-8", "replace"))
    finally:
        os.close(descriptor)
    if _AT > 0:
        with _real_io_open(_LOG, "rb") as log:
            done = log.read().count(b"\n")
        if done >= _AT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


_real_io_open = io.open
_real_os_open = os.open


def _io_open(file, mode="r", *args, **kwargs):
    path = _inside(file)
    if path is not None and any(flag in mode for flag in "wax+"):
        _count(path)
    return _real_io_open(file, mode, *args, **kwargs)


def _os_open(path, flags, *args, **kwargs):
    inside = _inside(path)
    if inside is not None and flags & _WRITING_FLAGS:
        _count(inside)
    return _real_os_open(path, flags, *args, **kwargs)


if _ROOT is not None:
    _ROOT = os.path.abspath(_ROOT)
    io.open = _io_open
    builtins.open = _io_open
    os.open = _os_open
