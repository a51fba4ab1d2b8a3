"""SIGINT, SIGTERM and SIGHUP from the package's first line to the exit: one line, exit 128 + the signal's number
(130 / 143 / 129), no traceback. Standard library only: the package's `__init__` imports it first. A command
stops at once (`as_process`), a long run at its next safe point (`Signals`); `play` keeps Ctrl-C (`own_ctrl_c`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SIGNALLED = 128  # an exit status above it: 128 + the number of the signal that stopped the command
COMMAND = "strategic-reserve"  # the console script's name ([project.scripts] in pyproject.toml)
PACKAGE = "strategic_reserve_env"
_WHAT = {
    signal.SIGINT: "interrupted (SIGINT, Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class _Signalled:
    """A stop by the signal `signum` (its name the message), with its exit `status` and the `steps` done."""

    def __init__(self, signum: int, steps: int = 0) -> None:
        super().__init__(signal.Signals(signum).name)  # type: ignore[call-arg]
        self.signum, self.steps, self.status = signum, steps, exit_status(signum)


class StopNow(_Signalled, BaseException):
    """A signal that stops the whole run at once (a `BaseException`: no agent's failure, no `except Exception`)."""


class Stopped(_Signalled, Exception):
    """The run stopped on a signal at a safe point, its checkpoint at `steps`."""


class Ended(_Signalled, KeyboardInterrupt):
    """SIGTERM or SIGHUP where the command handles Ctrl-C (`own_ctrl_c`): it ends as Ctrl-C does."""


def exit_status(signum: int) -> int:
    """The exit status of a command a signal stopped: 128 + its number."""
    return SIGNALLED + signum


def stop_line(signum: int) -> str:
    """What stopped a command, for its one line and its files: `stopped: interrupted (SIGINT, Ctrl-C)`."""
    return f"stopped: {_WHAT.get(signal.Signals(signum), signal.Signals(signum).name)}"


def stopped(signum: int) -> int:
    """Say `error: ` and the stop line of `signum` on stderr (if it can be written); returns its exit status."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"error: {stop_line(signum)}", file=sys.stderr, flush=True)
    return exit_status(signum)


def install(handler) -> dict:
    """Handle each of `HANDLED` not ignored (`nohup`, a background job) with `handler`; returns those replaced."""
    return {each: signal.signal(each, handler) for each in HANDLED if signal.getsignal(each) is not signal.SIG_IGN}


class Signals:
    """The stop signals while the block runs: the first is recorded (`requested`, read at a training loop's safe
    points) and raises `raises(signum)` if `at_once`; a second raises it. Once `shutting_down`, signals are
    ignored; a `StopNow` a library swallowed (jax's gc callback) leaves the run stoppable."""

    def __init__(self, at_once: bool = True, raises: Callable[[int], BaseException] = StopNow) -> None:
        self.requested: int | None = None
        self.at_once, self.shutting_down, self.raises = at_once, False, raises
        self.swallowed = 0
        self._before: dict = {}
        self._hook = sys.unraisablehook

    def __enter__(self) -> Signals:
        self._before, self._hook = install(self._handle), sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._before.items():
            outer = getattr(handler, "__self__", None)
            if self.shutting_down and isinstance(outer, Signals):
                outer.shutting_down = True  # the stop was said in this block: a further signal changes nothing
            signal.signal(signum, handler)
        sys.unraisablehook = self._hook

    def hold(self) -> None:
        """Install the block's handlers again, after a library put its own in their place (`ray.init`)."""
        for signum in self._before:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if self.shutting_down:
            return
        if self.requested is None:
            self.requested = signum
            if not self.at_once:
                return
        self.shutting_down = True
        raise self.raises(self.requested)

    def _unraisable(self, unraisable) -> None:
        if not isinstance(unraisable.exc_value, StopNow):
            return self._hook(unraisable)
        self.swallowed += 1  # swallowed where it was raised: the run is not stopping
        self.shutting_down = False


def as_process(body: Callable[[], int], process: bool = True) -> int:
    """The exit status of `body` (a stop: one line and its status); as the process's own command (`process`), a
    signal stops it at once and the process ends when `body` returns (`end`)."""
    if process:
        Signals().__enter__()  # the process's own to its end: never put back (a default handler would kill it)
    try:
        status = body()
    except (StopNow, KeyboardInterrupt) as stop:
        status = stopped(getattr(stop, "signum", signal.SIGINT))
    except BaseException:
        if process:
            install(signal.SIG_IGN)  # while the interpreter shuts down: the status stays the exception's
        raise
    if process:
        end(status)
    return status


def end(status: int) -> NoReturn:
    """End this process with `status`: exit handlers run, standard streams flushed, the interpreter's teardown
    (seconds with torch or jax) skipped; a stop signal meanwhile ends it with its own line and status."""
    install(signal.SIG_IGN if status > SIGNALLED else _end_by_signal)
    atexit._run_exitfuncs()
    _exit(status)


def _end_by_signal(signum: int, frame=None) -> None:
    install(signal.SIG_IGN)  # a second signal does not cut the exit short
    _exit(stopped(signum))


def _exit(status: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(status)


def script(target: str) -> int:
    """Run the command `module:function` (a `main()`) as this process's own: the repository's scripts."""
    module, _, function = target.partition(":")
    return as_process(lambda: getattr(importlib.import_module(module), function)())


@contextlib.contextmanager
def own_ctrl_c() -> Iterator[None]:
    """While the block runs (`play`), SIGINT is Python's `KeyboardInterrupt`, SIGTERM and SIGHUP raise `Ended`."""
    with Signals(raises=Ended):
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        yield


def hold_from_start() -> None:
    """In the console command (not a library import), each of `HANDLED` ends it with its line and status."""
    argv = sys.orig_argv  # `strategic-reserve ...` or `python -m strategic_reserve_env ...`
    if "-m" in argv[1:]:
        command = argv[argv.index("-m") + 1 :][:1] == [PACKAGE]
    else:
        command = bool(sys.argv) and os.path.basename(sys.argv[0]) == COMMAND
    if command and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN):
        install(_end_by_signal)


hold_from_start()
