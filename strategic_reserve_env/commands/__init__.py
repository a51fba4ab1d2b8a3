"""The commands of the `strategic-reserve` console command (`strategic_reserve_env.__main__.COMMANDS`) and the
repository's scripts: each a `main(argv, prog) -> int` that turns the command line into settings and calls the
layer that does the work. Here: what every command shares to end with one line on stderr.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys

from strategic_reserve_env.files.outputs import StdoutLost

BAD_INPUT = 2  # the exit status of a refused command line, agent, setting or folder (nothing run)


def fail(message: str, status: int = BAD_INPUT) -> int:
    """Say `error: message` on stderr (one line) and return the exit status `status`."""
    print(f"error: {message}", file=sys.stderr)
    return status


def named(doc: str, script: str, prog: str | None) -> str:
    """`doc` with the command line `script` (`python train.py`) replaced by `prog`."""
    return doc if prog is None else doc.replace(script, prog)


def flush_stdout() -> None:
    """Flush the standard output now: a failure to write it is an `OSError` here, not in the last flush."""
    if sys.stdout is None:
        raise OSError("the standard output is closed")
    sys.stdout.flush()
    failed = getattr(sys.stdout, "failed", None)
    if failed is not None:  # an earlier write failed where its caller swallowed the error
        raise failed


class GuardedStdout:
    """The standard output `stream` whose write errors are `StdoutLost` (a `BrokenPipeError` stays itself)."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.failed: StdoutLost | None = None  # the first failure, even one a caller swallowed (argparse's)

    def __getattr__(self, name: str):
        attribute = getattr(self.stream, name)
        return functools.partial(self._guarded, attribute) if name in ("write", "writelines", "flush") else attribute

    def _guarded(self, call, *arguments):
        try:
            return call(*arguments)
        except (BrokenPipeError, StdoutLost):
            raise
        except OSError as error:
            lost = StdoutLost(error.errno, error.strerror or str(error))
            self.failed = self.failed or lost
            raise lost from None


def stdout_lost(error: OSError) -> str:
    """After writing the standard output failed with `error`: point it at `/dev/null` and return the line to say."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if isinstance(sys.stdout, GuardedStdout):
        sys.stdout.failed = None  # said by the caller: a later flush does not raise it again
    return f"cannot write to the standard output ({error.strerror or error})"
