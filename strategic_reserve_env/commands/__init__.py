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


def stdout_lost(error: OSError) -> str:
    """After writing the standard output failed with `error`: point it at `/dev/null`, so that the
    interpreter's own last flush does not fail again with a traceback, and return what to say (one line)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return f"cannot write to the standard output ({error.strerror or error})"
