"""What a stop by a signal is, in the standard library only, so that the console command holds the signals from
the first line of the package on (before numpy imports).

- `StopRun`: the exception that stops a whole run from outside the agents (the arena lets it through
  instead of blaming the agent that was running when it came; `strategic_reserve_env.training.signals`
  raises its subclass `StopNow`);
- `HANDLED`: the signals every command stops on (SIGINT, SIGTERM, SIGHUP), and `stop_line` / `exit_status`:
  the one line a stop prints and its exit status (128 + the signal's number: 130, 143, 129);
- `hold_from_start`: run when the package's `__init__` imports this module (first of all), it installs
  handlers at once when the process is the console command (`strategic-reserve` or
  `python -m strategic_reserve_env`), so a signal while the
  package and the command's modules import is one line and its exit status, never a traceback.
"""

from __future__ import annotations

import os
import signal
import sys

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
COMMAND = "strategic-reserve"  # the console script's name ([project.scripts] in pyproject.toml)
PACKAGE = "strategic_reserve_env"
_WHAT = {
    signal.SIGINT: "interrupted (SIGINT, Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class StopRun(BaseException):
    """A request to stop the whole run from outside the agents (a signal handler raises one, as SIGINT raises
    `KeyboardInterrupt`): `arena.choose_checked` lets it through instead of blaming the agent that was
    running when it came."""


def exit_status(signum: int) -> int:
    """The exit status of a command a signal stopped: 128 + its number."""
    return 128 + signum


def stop_line(signum: int) -> str:
    """What stopped a command, for its one line on stderr and its files: `stopped: interrupted (SIGINT, Ctrl-C)`."""
    return f"stopped: {_WHAT.get(signal.Signals(signum), signal.Signals(signum).name)}"


def say_stopped(signum: int) -> None:
    """Print the stop line of `signum` on stderr, as `error: ...`; a lost stderr loses only the line."""
    try:
        print(f"error: {stop_line(signum)}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def install(handler) -> dict:
    """Handle each of `HANDLED` with `handler`, except one that is ignored (`nohup` ignores SIGHUP, a shell
    SIGINT for a job in the background: it stays ignored); returns the handlers it replaced, to put back."""
    return {
        signum: signal.signal(signum, handler) for signum in HANDLED if signal.getsignal(signum) is not signal.SIG_IGN
    }


def restore(before: dict) -> None:
    """Put back the handlers `install` replaced."""
    for signum, handler in before.items():
        signal.signal(signum, handler)


def _exit_at_start(signum: int, frame) -> None:
    say_stopped(signum)
    install(signal.SIG_IGN)  # the interpreter's shutdown is not cut short by a second signal
    raise SystemExit(exit_status(signum))


def is_command() -> bool:
    """Whether this process is the console command: `strategic-reserve ...` or `python -m strategic_reserve_env`."""
    argv = getattr(sys, "orig_argv", [])
    if "-m" in argv[1:]:
        module = argv.index("-m") + 1
        return module < len(argv) and argv[module] == PACKAGE
    return bool(sys.argv) and os.path.basename(sys.argv[0]) == COMMAND


def hold_from_start() -> None:
    """When the process is the console command and its signals are still the interpreter's own, stop on each
    of `HANDLED` with one line and its exit status (`SystemExit`) until the command installs its own handling
    (`strategic_reserve_env.__main__.main`); a library import changes nothing."""
    if is_command() and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN):
        install(_exit_at_start)


hold_from_start()
