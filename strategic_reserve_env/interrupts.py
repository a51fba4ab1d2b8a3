"""SIGINT, SIGTERM and SIGHUP, from the package's first line to the exit: one line, exit 130 / 143 / 129 (128 +
the signal's number), no traceback. Standard library only: the package's `__init__` imports it first of all
(`hold_from_start`). A command run as the process's own stops at once (`as_process`); a long run stops at its
next safe point (`Signals`); `play` keeps Ctrl-C as Python's own (`own_ctrl_c`).
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
    """A signal that stops the whole run at once: a `BaseException` no `except Exception` takes, and no agent's
    failure (`arena.choose_checked` lets it through)."""


class Stopped(_Signalled, Exception):
    """The run stopped on a signal at a safe point (after an update, an iteration), its checkpoint at `steps`."""


class Ended(_Signalled, KeyboardInterrupt):
    """SIGTERM or SIGHUP where the command handles Ctrl-C (`own_ctrl_c`): it ends as Ctrl-C does, with its `status`."""


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
    """Handle each of `HANDLED` with `handler`, but one that is ignored (`nohup`'s SIGHUP, a background job's
    SIGINT); returns the handlers replaced."""
    return {
        signum: signal.signal(signum, handler) for signum in HANDLED if signal.getsignal(signum) is not signal.SIG_IGN
    }


class Signals:
    """The stop signals while the block runs. The first is recorded (`requested`, read by a training loop at
    each safe point) and raises `StopNow` (or `raises`) while `at_once` (outside a loop); a second raises it. Once
    stopping (`shutting_down`), further signals only count (`ignored`), so the files written on the way out are
    whole; a `StopNow` a library swallowed (jax's gc callback, `sys.unraisablehook`) leaves the run stoppable."""

    def __init__(self, at_once: bool = True, raises: Callable[[int], BaseException] = StopNow) -> None:
        self.requested: int | None = None
        self.at_once, self.shutting_down, self.raises = at_once, False, raises
        self.ignored = self.swallowed = 0
        self._before: dict = {}
        self._hook = sys.unraisablehook

    def __enter__(self) -> Signals:
        self._before, self._hook = install(self._handle), sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._before.items():
            signal.signal(signum, handler)
        sys.unraisablehook = self._hook

    def hold(self) -> None:
        """Install the block's handlers again, after a library put its own in their place (`ray.init`)."""
        for signum in self._before:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if self.shutting_down:
            self.ignored += 1
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
    """The exit status of `body`, a `StopNow` (or a `KeyboardInterrupt`) one line and its status; as the
    process's own command (`process`), a signal stops it at once, and the process ends when `body` returns
    (`end`), so that no signal is lost in the interpreter's teardown."""
    try:
        with Signals() if process else contextlib.nullcontext():
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
    """End this process, its command done with `status`: the exit handlers run, the standard streams are
    flushed, and the interpreter's teardown (seconds once torch or jax is loaded) is skipped. A stop signal
    meanwhile ends it at once with the signal's line and status, unless a signal already stopped the command."""
    install(signal.SIG_IGN if status > SIGNALLED else _end_by_signal)
    atexit._run_exitfuncs()
    _flush_standard_streams()
    os._exit(status)


def _end_by_signal(signum: int, frame) -> None:
    install(signal.SIG_IGN)
    status = stopped(signum)
    _flush_standard_streams()
    os._exit(status)


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def script(target: str) -> int:
    """Run the command `module:function` (a `main()`) as this process's own: the repository's scripts."""
    module, _, function = target.partition(":")
    return as_process(lambda: getattr(importlib.import_module(module), function)())


@contextlib.contextmanager
def own_ctrl_c() -> Iterator[None]:
    """While the block runs (`play`), SIGINT is Python's `KeyboardInterrupt`, SIGTERM and SIGHUP raise `Ended`
    once (further ones ignored, so what the command keeps on its way out is written whole)."""
    with Signals(raises=Ended):
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        yield


def _exit_at_start(signum: int, frame) -> None:
    install(signal.SIG_IGN)  # the interpreter's shutdown is not cut short by a second signal
    raise SystemExit(stopped(signum))


def hold_from_start() -> None:
    """In the console command (not a library import), each of `HANDLED` exits with its line and status until
    the command installs its own handling."""
    argv = sys.orig_argv  # `strategic-reserve ...` or `python -m strategic_reserve_env ...`
    if "-m" in argv[1:]:
        command = argv[argv.index("-m") + 1 :][:1] == [PACKAGE]
    else:
        command = bool(sys.argv) and os.path.basename(sys.argv[0]) == COMMAND
    if command and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN):
        install(_exit_at_start)


hold_from_start()
