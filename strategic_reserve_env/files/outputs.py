"""Output folders: checked first (`check_out`), held by one process (`lock`), written atomically (`atomic`),
entries removed without following a link (`remove`), and the run file (`read_run`, `write_run`). A failed
write is `OutputLost`, one line naming the file."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from strategic_reserve_env.core.board import brief, clip
from strategic_reserve_env.version import __version__

from . import safe_json

LOCK_FILE = ".lock"
LOCK_TEXT_BYTES = 4096  # what is read of a lock file: its holder's process id and command line (about 210 bytes)
LOCK_COMMAND_BYTES = 200  # bytes of the holder's command line the lock file keeps
RUN_FILE = "run.json"
RUN_ID = re.compile(r"[0-9a-f]{32}")  # what new_run_id() makes: never a path
MAX_RUN_FILE_BYTES = 1 << 20  # run.json and settings.json hold a few hundred bytes
TRASH_PREFIX = ".removing-"  # what remove() moves entries into before deleting them
FILE_MODE = 0o666  # a new file's mode before the umask (what open() gives)
TORCH_WRITE_FAILED = "PytorchStreamWriter failed writing"  # torch.save's RuntimeError when the disk is full


class OutputLost(OSError):
    """A file (or the standard output) could not be written: one line naming it and why."""


class StdoutLost(OSError):
    """Writing the standard output failed (errno and reason), said once by `strategic_reserve_env.__main__`."""


class OutputBusyError(ValueError):
    """The output folder cannot be locked: another process holds it, or its lock file is not a plain file."""


@dataclass
class Lock:
    """An output folder held by `lock`; a block that wrote nothing sets `untouched` (the lock file is restored)."""

    directory: Path
    untouched: bool = False


def check_out(path: str | Path, files: Iterable[str] = (), option: str = "--out") -> Path:
    """`path` made absolute and checked, creating nothing: a writable directory or a missing one under one, each
    of `files` absent or a regular file, its lock file plain; else `ValueError` (one line naming `option`)."""
    text = os.fspath(path)
    if not text:
        raise ValueError(f"{option} '': an empty path; name a folder (. for the current one)")
    try:
        text.encode("utf-8")  # else it could be neither shown nor written in the lock file
    except UnicodeEncodeError:
        raise ValueError(f"{option} {brief(text)}: the path is not valid UTF-8; choose another name") from None
    directory = existing = Path(os.path.abspath(text))
    try:
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        missing = directory.relative_to(existing).parts  # the folders `lock` will create
        if missing and max(len(os.fsencode(name)) for name in missing) > os.pathconf(existing, "PC_NAME_MAX"):
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        if not existing.is_dir():
            where = "is a file" if existing == directory else f"lies under the file {existing}"
            raise ValueError(f"{option} {path}: {where}, not a directory")
        try:
            with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-test-"):
                pass
        except OSError as error:
            raise ValueError(f"{option} {path}: cannot write in {existing} ({error.strerror or error})") from None
        for target in (directory / name for name in files):
            if target.exists() and not target.is_file():
                raise ValueError(f"{option} {path}: {target} exists and is not a file, so it cannot be written")
        if os.path.lexists(directory / LOCK_FILE):
            _check_lock(os.lstat(directory / LOCK_FILE), option, directory)
    except OSError as error:  # a name too long, a loop of links, a folder we may not search
        raise ValueError(f"{option} {brief(text)}: {error.strerror or error}; choose another folder") from None
    return directory


def _check_lock(status: os.stat_result, option: str, directory: Path) -> None:
    """`OutputBusyError` unless `status` (the lock file's `lstat`) is a regular file of one name."""
    if stat.S_ISLNK(status.st_mode):
        what = "a symbolic link"
    elif not stat.S_ISREG(status.st_mode):
        what = "not a regular file"
    elif status.st_nlink > 1:
        what = f"a file with {status.st_nlink} names (a hard link)"
    else:
        return
    raise OutputBusyError(
        f"{option} {directory}: its lock file {LOCK_FILE} is {what}; it is not followed or written: "
        "remove it, or choose another folder"
    )


def check_replaceable(path: str | Path) -> None:
    """`OSError` if `path` exists and is neither a regular file nor a link (a device, FIFO or folder stays)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # missing, or its folder is not one: the write itself says why
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EINVAL, "it is not a regular file (a device, a FIFO or a folder is never replaced)")


@contextlib.contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """A write in the block that fails (`OSError`, torch's full-disk `RuntimeError`) is `OutputLost` naming `path`."""
    try:
        yield
    except (OSError, RuntimeError) as error:
        if isinstance(error, OutputLost) or isinstance(error, RuntimeError) and TORCH_WRITE_FAILED not in str(error):
            raise
        reason = getattr(error, "strerror", None) or clip(str(error).splitlines()[0] if str(error) else "", 120)
        raise OutputLost(f"cannot write {path} ({reason})") from None


@contextlib.contextmanager
def atomic(path: str | Path) -> Iterator[IO[bytes]]:
    """A binary file that replaces `path` when the block ends well: a temporary file beside it with the umask's
    mode, renamed over it (removed on failure); `check_replaceable` first, a failed write `OutputLost`."""
    path = Path(path)
    check_replaceable(path)
    with naming(path):
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(descriptor, FILE_MODE & ~umask)
            with os.fdopen(descriptor, "wb") as handle:
                yield handle
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (`atomic`)."""
    with atomic(path) as handle:
        handle.write(data)


def write_text(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically (`atomic`)."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, value: object) -> None:
    """Write `value` as JSON, one item a line and a final newline, to `path` atomically (run files, records)."""
    write_text(path, json.dumps(value, indent=1) + "\n")


def write_figure(path: str | Path, figure, dpi: float) -> None:
    """Save the matplotlib `figure` as a PNG at `path` atomically."""
    with atomic(path) as handle:
        figure.savefig(handle, dpi=dpi, format="png")


def remove(directory: str | Path, names: Iterable[str]) -> list[str]:
    """Remove the entries `names` of `directory` (a link, never its target); returns those that were there. Each
    is renamed into a trash folder, then the trash deleted: a kill leaves each name whole or gone."""
    directory = Path(directory)
    for name in names:
        if name in ("", ".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"remove: {name!r:.60} is not the name of an entry of {directory}")
    trash = Path(tempfile.mkdtemp(dir=directory, prefix=TRASH_PREFIX))
    removed = []
    for name in names:
        if os.path.lexists(directory / name):
            os.rename(directory / name, trash / name)
            removed.append(name)
    for leftover in directory.glob(TRASH_PREFIX + "*"):
        if leftover.is_symlink() or not leftover.is_dir():
            leftover.unlink()
        else:
            shutil.rmtree(leftover)  # unlinks the links inside; never descends into what they point to
    return removed


@contextlib.contextmanager
def lock(directory: str | Path, option: str = "--out") -> Iterator[Lock]:
    """Create `directory` if missing and hold its `flock` for the block (`OutputBusyError` naming the holder, or a
    lock file that is not plain). A block that raises or sets `Lock.untouched` leaves the lock file as found; a
    folder this call made that holds nothing else at the end goes again."""
    directory = Path(directory)
    created = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    found = os.path.lexists(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        descriptor = os.open(path, flags, FILE_MODE)
    except OSError as error:  # ELOOP: a link; EISDIR: a directory; ENXIO: a FIFO no one reads
        if os.path.lexists(path):
            _check_lock(os.lstat(path), option, directory)
        raise OutputBusyError(f"{option} {directory}: cannot open its lock file ({error.strerror or error})") from None
    held = Lock(directory)
    try:
        _check_lock(os.fstat(descriptor), option, directory)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, LOCK_TEXT_BYTES, 0).decode("utf-8", "replace").strip() or "unknown"
            raise OutputBusyError(
                f"{option} {directory} is in use by another process ({clip(holder, LOCK_COMMAND_BYTES)}); wait "
                "for it to end, or choose another folder"
            ) from None
        previous, found_at = os.pread(descriptor, LOCK_TEXT_BYTES, 0), os.fstat(descriptor)
        command = " ".join(sys.argv).encode("utf-8", "backslashreplace")  # an argument may hold stray bytes
        text = f"pid {os.getpid()}: ".encode() + command[:LOCK_COMMAND_BYTES]
        try:
            with naming(path):  # a full disk: one line naming the lock file, which is left as it was found
                os.pwrite(descriptor, text, 0)  # over the old text's block first: a full disk changes nothing
                os.ftruncate(descriptor, len(text))
        except OutputLost:
            if not found and not created:
                os.unlink(path)
            raise
        try:
            yield held
        except BaseException:
            held.untouched = True  # a refusal (or a failure)
            raise
        finally:
            if held.untouched:  # its text and its times as found, while still holding the lock
                os.ftruncate(descriptor, 0)
                os.pwrite(descriptor, previous, 0)
                os.utime(descriptor, ns=(found_at.st_atime_ns, found_at.st_mtime_ns))
                if not found and not created:
                    os.unlink(path)
    finally:
        if created and [entry.name for entry in directory.iterdir()] == [LOCK_FILE]:
            os.unlink(path)  # while still holding the lock: no other process took it meanwhile
            directory.rmdir()
        os.close(descriptor)  # releases the flock


def new_run_id() -> str:
    """A fresh run id (32 hex digits)."""
    return uuid.uuid4().hex


def read_run(directory: str | Path) -> dict | None:
    """The run file of `directory`, None if it has none; `ValueError` if unreadable or its run id is not ours."""
    path = Path(directory) / RUN_FILE
    if not os.path.lexists(path):
        return None
    run = safe_json.load(path, MAX_RUN_FILE_BYTES)
    if not isinstance(run, dict) or not isinstance(run.get("run_id"), str) or not RUN_ID.fullmatch(run["run_id"]):
        raise ValueError(f"{path}: not a run file (an object with a run_id of 32 hex digits)")
    return run


def write_run(directory: str | Path, run_id: str, command: str, **details) -> dict:
    """Write and return `directory`'s run file: `run_id`, `command`, the package version and `details`."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run = {"run_id": run_id, "command": command, "package_version": __version__, "started": started, **details}
    write_json(Path(directory) / RUN_FILE, run)
    return run
