"""The commands behind the repository's scripts and the `strategic-reserve` console command.

- `evaluate`: round robins with paired dice and the versioned benchmark (`evaluate.py`);
- `benchmark`: the versioned benchmark as a command of its own;
- `train`: distillation, then optional PPO (`train.py`);
- `train_rllib`: Ray RLlib self-play (`train_rllib.py`);
- `replay`, `bench`, `play`: a record's trace, the engine's speed, a game in the terminal.

Each command is a function `main(argv, prog)` (`argv`: its arguments, default `sys.argv[1:]`; `prog`:
the name its `--help` shows, default the script's) returning the exit status; `strategic_reserve_env.__main__`
lists them. The top layer: they may import anything of the package below them.
"""

from __future__ import annotations

import contextlib
import os
import sys


def named(doc: str, script: str, prog: str | None) -> str:
    """`doc` with the script's own command line (`python SCRIPT`) replaced by `prog`, the name the command
    was run by (`strategic-reserve evaluate`); `doc` as it is when `prog` is None."""
    return doc if prog is None else doc.replace(f"python {script}", prog)


def flush_stdout() -> None:
    """Flush the standard output now, so that a failure to write it (a full device, a closed stream) is raised
    here, as an `OSError`, instead of in the interpreter's last flush; a closed one (None) raises too."""
    if sys.stdout is None:
        raise OSError("the standard output is closed")
    sys.stdout.flush()
    failed = getattr(sys.stdout, "failed", None)
    if failed is not None:  # an earlier write failed where its caller swallowed the error
        raise failed


class StdoutLost(OSError):
    """Writing the standard output failed (a full device, an input/output error): the `OSError` with its
    errno and reason, known to be the standard output's (`GuardedStdout`)."""


class GuardedStdout:
    """The standard output (`stream`, every attribute its own) with its failures told apart: an `OSError`
    of `write`, `writelines` or `flush` is `StdoutLost` (a `BrokenPipeError`, the reader gone, stays
    itself), so the command line can say that it was the standard output that could not be written."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.failed: StdoutLost | None = None  # the first failure, even one a caller swallowed (argparse's)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    def _guarded(self, call, *arguments):
        try:
            return call(*arguments)
        except BrokenPipeError:
            raise
        except StdoutLost:
            raise
        except OSError as error:
            lost = StdoutLost(error.errno, error.strerror or str(error))
            self.failed = self.failed or lost
            raise lost from None

    def write(self, text: str) -> int:
        return self._guarded(self.stream.write, text)

    def writelines(self, lines) -> None:
        self._guarded(self.stream.writelines, lines)

    def flush(self) -> None:
        self._guarded(self.stream.flush)

    def told(self) -> None:
        """The failure has been said (in its one line): a later flush does not raise it again."""
        self.failed = None


def stdout_lost(error: OSError) -> str:
    """After writing the standard output failed with `error`: point it at `/dev/null`, so that the
    interpreter's own last flush does not fail again with a traceback, and return what to say (one line)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if isinstance(sys.stdout, GuardedStdout):
        sys.stdout.told()  # the caller says it, once
    return f"cannot write to the standard output ({error.strerror or error})"
