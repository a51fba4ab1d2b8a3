"""Output folders: checked before anything runs, owned by one process at a time, written atomically.

Every command that writes a folder (`train.py`, `train_rllib.py`,
`evaluate.py`, the benchmark, the skill report) goes through this module:

- `check_out` says before any work whether a folder can be written, and
  whether each file the command will write there can be (a directory named
  `results.json` cannot);
- `lock` holds an operating-system lock (`fcntl.flock` on the
  folder's `.lock` file) while the command writes: a second process on the
  same folder is refused at once, naming the holder. The kernel drops the
  lock when its process ends, however it ends (`kill -9` included), so a
  stale lock never blocks a later run;
- `write_text`, `write_bytes` and `atomic` write through a
  temporary file of a unique name in the same folder, renamed over the
  target: a reader never sees half a file, two writers never share a
  temporary name, and the file gets the permissions the user's umask gives
  a new file (`tempfile` would leave 0600);
- `naming` makes an `OSError` that names no file (a full disk) name
  the one it was writing (`atomic` does it for every file it writes);
- `remove` deletes entries of a folder without following a link out of
  it, and so that a kill leaves each entry whole or gone;
- `new_run_id`, `read_run` and `write_run`: the run file
  (`run.json`) that says which run a folder belongs to.
"""

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
from pathlib import Path
from typing import IO

from strategic_reserve_env.core.board import brief, clip
from strategic_reserve_env.version import __version__

from . import safe_json

LOCK_FILE = ".lock"
_UNTOUCHED: set[Path] = set()  # folders whose lock file goes back to its old text when released (leave_lock_as_found)
LOCK_TEXT_BYTES = 4096  # what is read of a lock file: its holder's process id and command line (about 210 bytes)
RUN_FILE = "run.json"
RUN_ID = re.compile(r"[0-9a-f]{32}")  # what new_run_id() makes: never a path
MAX_RUN_FILE_BYTES = 1 << 20  # run.json and settings.json hold a few hundred bytes
TRASH_PREFIX = ".removing-"  # what remove() moves entries into before deleting them
FILE_MODE = 0o666  # a new file's mode before the umask (what open() gives)


class OutputLost(OSError):
    """A file could not be written (a full disk, a folder gone) or the standard output is lost: the message
    names the file and says why, in one line (`atomic` raises it for every file written through it)."""


TORCH_WRITE_FAILED = "PytorchStreamWriter failed writing"  # torch.save's RuntimeError when the disk is full


def _write_failed(error: BaseException) -> bool:
    if isinstance(error, OutputLost):
        return False
    return isinstance(error, OSError) or isinstance(error, RuntimeError) and TORCH_WRITE_FAILED in str(error)


class OutputBusyError(ValueError):
    """The output folder cannot be locked: another process holds its lock, or its lock file is not a plain
    file of its own (`lock`)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_out(path: str | Path, files: Iterable[str] = (), option: str = "--out") -> Path:
    """`path` as a directory results can be written in, checked without creating anything, and made absolute
    (so that nothing run later, an agent that changes directory at import included, can move it): an existing
    directory we can write in, or a missing one whose nearest existing parent is such a directory; each of
    `files` (names relative to it) either absent or a regular file; its lock file, if there, a plain file
    (`lock`). `ValueError` (one line naming `option`) saying why not: an empty path, a path that is
    not valid UTF-8 (it could be neither shown nor written in the lock file), or one of the above."""
    text = os.fspath(path)
    if not text:
        raise ValueError(f"{option} '': an empty path; name a folder (. for the current one)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{option} {brief(text)}: the path is not valid UTF-8; choose another name") from None
    directory = Path(os.path.abspath(text))
    try:
        return _check_out(directory, path, files, option)
    except OSError as error:  # a name too long, a loop of links, a folder we may not search
        raise ValueError(f"{option} {brief(text)}: {error.strerror or error}; choose another folder") from None


def _check_out(directory: Path, path: str | Path, files: Iterable[str], option: str) -> Path:
    """`check_out` of the absolute `directory` (`path` as given)."""
    existing = directory
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
    for name in files:
        target = directory / name
        if target.exists() and not target.is_file():
            raise ValueError(f"{option} {path}: {target} exists and is not a file, so it cannot be written")
    lock_file = directory / LOCK_FILE
    if os.path.lexists(lock_file):
        _check_lock(os.lstat(lock_file), lock_file, option, directory)
    return directory


def _check_lock(status: os.stat_result, path: Path, option: str, directory: Path) -> None:
    """`OutputBusyError` unless `status` (of the lock file `path`, not following links) is a plain
    file with one name: a link, a directory, a FIFO or a second name of another file is not ours to truncate."""
    if stat.S_ISLNK(status.st_mode):
        what = "a symbolic link"
    elif not stat.S_ISREG(status.st_mode):
        what = "not a regular file"
    elif status.st_nlink > 1:
        what = f"a file with {status.st_nlink} names (a hard link)"
    else:
        return
    raise OutputBusyError(
        f"{option} {directory}: its lock file {path.name} is {what}; it is not followed or written: "
        "remove it, or choose another folder"
    )


def check_replaceable(path: str | Path) -> None:
    """`OSError` (its `strerror` one line) if `path` exists and is neither a regular file nor a link (the
    link itself is what a rename replaces): a device such as `/dev/null`, a FIFO, a socket or a folder is
    never replaced by a write."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # missing, or its folder is not one: the write itself says why
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EINVAL, "it is not a regular file (a device, a FIFO or a folder is never replaced)")


@contextlib.contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """A write in the block that fails (a full disk: an `OSError`, or torch's `RuntimeError` for it) is
    `OutputLost`, one line naming `path` and why."""
    try:
        yield
    except BaseException as error:
        if _write_failed(error):
            reason = getattr(error, "strerror", None) or clip(str(error).splitlines()[0] if str(error) else "", 120)
            raise OutputLost(f"cannot write {path} ({reason})") from None
        raise


@contextlib.contextmanager
def atomic(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """A file object whose contents replace `path` when the block ends without an exception (a temporary
    file of a unique name beside it, renamed over it; removed if the block fails). The file gets the mode the
    umask gives a new file. A `path` that is not a regular file (`check_replaceable`) is an
    `OSError` before anything is written; a failed write is `OutputLost` naming `path`
    (`naming`)."""
    path = Path(path)
    check_replaceable(path)
    with naming(path):
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        try:
            os.fchmod(descriptor, FILE_MODE & ~_umask())
            with os.fdopen(descriptor, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
                yield handle
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def remove(directory: str | Path, names: Iterable[str]) -> list[str]:
    """Remove the entries `names` (single names, not paths) of `directory`, whatever they are: a file, a
    folder with everything in it, a link (the link itself, never what it points to). Each is first renamed
    whole into a new trash folder inside `directory` (an atomic rename, in the order given), then the trash
    is deleted without following any link: a kill at any point leaves every name either as it was or gone,
    never half-cleared, and the trash left behind (`.removing-*`) goes with the next call. Returns the names
    that were there."""
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


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (`atomic`)."""
    with atomic(path, "wb") as handle:
        handle.write(data)


def write_text(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically (`atomic`)."""
    with atomic(path, "w") as handle:
        handle.write(text)


def write_figure(path: str | Path, figure, dpi: float) -> None:
    """Save the matplotlib `figure` as a PNG at `path` atomically (`atomic`): a link there is replaced,
    never written through."""
    with atomic(path, "wb") as handle:
        figure.savefig(handle, dpi=dpi, format="png")


@contextlib.contextmanager
def lock(directory: str | Path, option: str = "--out") -> Iterator[Path]:
    """Create `directory` if missing and hold its lock for the block; `OutputBusyError` (one line
    naming the holder's process id and command) at once if another process holds it. The lock file keeps
    the last holder's process id and command line (for that message); the lock is the `flock`, not the
    file, so the file left behind locks nothing. The lock file is opened without following a link, and one
    that is not a plain file of one name (a link, a directory, a FIFO, a hard link to another file) is
    refused with `OutputBusyError` before anything is written to it. A block that raises (a refusal) leaves
    the lock file as it was found (its old text, or none if it had none). A directory this call created
    that holds nothing but the lock file at the end (the run failed before writing) is removed again."""
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
            _check_lock(os.lstat(path), path, option, directory)
        raise OutputBusyError(f"{option} {directory}: cannot open its lock file ({error.strerror or error})") from None
    try:
        _check_lock(os.fstat(descriptor), path, option, directory)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, LOCK_TEXT_BYTES, 0).decode("utf-8", "replace").strip() or "unknown"
            raise OutputBusyError(
                f"{option} {directory} is in use by another process ({clip(holder, 200)}); wait for it to end, "
                "or choose another folder"
            ) from None
        previous, found_at = os.pread(descriptor, LOCK_TEXT_BYTES, 0), os.fstat(descriptor)
        command = " ".join(sys.argv).encode("utf-8", "backslashreplace")  # an argument may hold stray bytes
        text = f"pid {os.getpid()}: ".encode() + command[:200]
        try:
            with naming(path):  # a full disk: one line naming the lock file, which is left as it was found
                os.pwrite(descriptor, text, 0)  # over the old text's block first: a full disk changes nothing
                os.ftruncate(descriptor, len(text))
        except OutputLost:
            if not found and not created:
                os.unlink(path)
            raise

        def as_found() -> None:  # while still holding the lock, as below: its text and its times
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, previous, 0)
            os.utime(descriptor, ns=(found_at.st_atime_ns, found_at.st_mtime_ns))
            if not found and not created:
                os.unlink(path)

        try:
            yield directory
        except BaseException:  # a refusal (or a failure): the lock file left as it was found
            as_found()
            raise
        if directory in _UNTOUCHED:  # the block wrote nothing (`leave_lock_as_found`)
            _UNTOUCHED.discard(directory)
            as_found()
    finally:
        if created and [entry.name for entry in directory.iterdir()] == [LOCK_FILE]:
            os.unlink(path)  # while still holding the lock: no other process took it meanwhile
            directory.rmdir()
        os.close(descriptor)  # releases the flock


def leave_lock_as_found(directory: str | Path) -> None:
    """Say that the block holding `lock(directory)` ends having written nothing (a resume of a complete run):
    the lock file goes back to what it held when the lock was taken, as after a refusal, so the folder is
    byte for byte as it was."""
    _UNTOUCHED.add(Path(directory))


def new_run_id() -> str:
    """A fresh run id (32 hex digits)."""
    return uuid.uuid4().hex


def open_regular(path: str | Path, limit: int) -> contextlib.AbstractContextManager[IO[bytes]]:
    """`path` opened for reading as a regular file of at most `limit` bytes, checked before a byte is read,
    a link never followed (a run folder's files: `strategic_reserve_env.files.safe_json.open_regular`);
    `ValueError` (one line naming the path) for a link, a FIFO, a device, a folder or a larger file."""
    return safe_json.open_regular(path, limit, follow_links=False)


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of `path`: a regular file of at most `limit` bytes, no link followed (`open_regular`)."""
    return safe_json.read_regular(path, limit, follow_links=False)


def read_run(directory: str | Path) -> dict | None:
    """The run file of `directory` (`{"run_id": ..., ...}`), None if it has none; `ValueError` if it is
    there but unreadable, not a regular file of a bounded size (`read_regular`), or its run id is not one
    `new_run_id` makes (it names files: never a path)."""
    path = Path(directory) / RUN_FILE
    if not os.path.lexists(path):
        return None
    run = safe_json.loads(read_regular(path, MAX_RUN_FILE_BYTES), str(path))
    if not isinstance(run, dict) or not isinstance(run.get("run_id"), str) or not RUN_ID.fullmatch(run["run_id"]):
        raise ValueError(f"{path}: not a run file (an object with a run_id of 32 hex digits)")
    return run


def write_run(directory: str | Path, run_id: str, command: str, **details) -> dict:
    """Write `directory`'s run file for run `run_id` of `command` (with the package version that wrote it and
    `details`, e.g. its status); returns its contents."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    run = {"run_id": run_id, "command": command, "package_version": __version__, "started": started, **details}
    write_text(Path(directory) / RUN_FILE, json.dumps(run, indent=1) + "\n")
    return run
