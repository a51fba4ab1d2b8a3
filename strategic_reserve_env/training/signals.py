"""SIGINT, SIGTERM and SIGHUP: one mechanism for every command that runs long.

`Signals` holds them while a run goes on (`train`, `train-rllib`, the distillation, `evaluate`
and `benchmark`): the first is recorded (`requested`, which a training loop reads at each safe point) and
stops the run there (after a PPO update or an RLlib iteration, with a checkpoint) or, where there is none,
at once (`StopNow`); a second stops it at once; from then on the run is shutting down (its files say how
it ended, one line says so, the exit status is 128 + the first signal's number: 130, 143, 129) and further
signals change nothing. A `StopNow` that a library swallows (raised inside jax's garbage-collector callback,
"Exception ignored in: _xla_gc_callback") stops nothing: the request stays recorded for the loop's next safe
point, and the next signal raises again. Around a command run as the process's own (`quiet`,
`ignore_until_exit`, used by `strategic_reserve_env.__main__` and the repository's scripts): a signal while
the command's modules import, or outside a `Signals` block (loading agents, after the stop line), raises
`StopNow` (no agent is blamed for it), which the command line turns into one line and that status, and one
after the command returned no longer kills the process by signal. Standard library only
(`strategic_reserve_env.interrupts`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator

from strategic_reserve_env.interrupts import HANDLED, StopRun, exit_status, install, restore, say_stopped

__all__ = [
    "HANDLED",
    "Ended",
    "Signals",
    "StopNow",
    "Stopped",
    "ignore_until_exit",
    "own_ctrl_c",
    "quiet",
    "script",
    "stopped",
]


class StopNow(StopRun):
    """A signal that stops the run at once (a `BaseException`, so no `except Exception` of the libraries or
    of an agent takes it; a `StopRun`, so the arena blames no agent)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stopped(Exception):
    """The run stopped on a signal at a safe point (after a PPO update, an RLlib iteration), with a checkpoint
    at `steps` (steps or iterations)."""

    def __init__(self, signum: int, steps: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum, self.steps = signum, steps


class Signals:
    """SIGINT, SIGTERM and SIGHUP while the block runs. The first is recorded (`requested`, which a training
    loop reads at each safe point); while `at_once` (the default: outside a loop, where there is nothing to
    finish), or on a second, the handler raises `StopNow`. Once a stop is under way (a `StopNow` raised
    and not swallowed, or `shutting_down` set by the code that handles a `Stopped`), further signals are
    counted in `ignored` and raise nothing, so the files written while shutting down are whole. A `StopNow`
    swallowed where it was raised (reported to `sys.unraisablehook`, as a garbage-collector callback's
    exception is) is not reported and leaves the run stoppable. The handlers before the block (and the hook)
    are put back after it."""

    def __init__(self, at_once: bool = True) -> None:
        self.requested: int | None = None
        self.at_once = at_once
        self.shutting_down = False
        self.ignored = 0
        self.swallowed = 0  # StopNow raised where a library swallowed it
        self._before: dict = {}
        self._hook = sys.unraisablehook

    def __enter__(self) -> Signals:
        self._before = install(self._handle)
        self._hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        restore(self._before)
        sys.unraisablehook = self._hook

    def hold(self) -> None:
        """Install this block's handlers again, after a library put its own in their place (`ray.init`
        installs a SIGTERM handler that aborts the process)."""
        for signum in self._before:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if self.shutting_down:
            self.ignored += 1
            return
        first = self.requested is None
        if first:
            self.requested = signum
        if self.at_once or not first:
            self.shutting_down = True
            raise StopNow(self.requested)

    def _unraisable(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, StopNow):  # swallowed where it was raised: the run is not stopping
            self.swallowed += 1
            self.shutting_down = False
            return
        self._hook(unraisable)


def _stop_quietly(signum: int, frame) -> None:
    raise StopNow(signum)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """While the block runs (a command's modules importing: torch, SB3, Ray take seconds; a command outside
    its `Signals` blocks), SIGINT, SIGTERM and SIGHUP raise `StopNow` at once (which `stopped` turns into
    one line and status 130 / 143 / 129); the handlers before it are put back after it."""
    before = install(_stop_quietly)
    try:
        yield
    finally:
        restore(before)


class Ended(KeyboardInterrupt):
    """SIGTERM or SIGHUP in a command that handles Ctrl-C itself (`own_ctrl_c`): a `KeyboardInterrupt`,
    so it ends the command the way Ctrl-C does (the terminal game keeps its record), with `status` its own."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum, self.status = signum, exit_status(signum)


@contextlib.contextmanager
def own_ctrl_c() -> Iterator[None]:
    """While the block runs (`play`), SIGINT is Python's own `KeyboardInterrupt`, which the command handles
    (the terminal game asks before it quits), and SIGTERM and SIGHUP raise `Ended` once, further ones
    ignored, so what the command keeps on its way out (the game record) is written whole."""
    raised: list[int] = []

    def end(signum: int, frame) -> None:
        if not raised:
            raised.append(signum)
            raise Ended(signum)

    before = install(end)
    if signal.SIGINT in before:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        restore(before)


def stopped(stop: StopNow) -> int:
    """Say that `stop` stopped the command (one line on stderr) and return its exit status."""
    say_stopped(stop.signum)
    return exit_status(stop.signum)


def ignore_until_exit() -> None:
    """After the process's command returned its status: the signals are ignored while the interpreter
    shuts down (a second signal after the stop line exits with the first one's status, not by signal)."""
    install(signal.SIG_IGN)


def script(target: str) -> int:
    """Run the command `module:function` (a `main(argv, prog)`) as this process's own, with its script's
    name (the repository's `train.py`, `evaluate.py`, `train_rllib.py`): imported and run under
    `quiet`, then `ignore_until_exit`; returns its exit status."""
    import importlib

    module, _, function = target.partition(":")
    try:
        with quiet():
            return getattr(importlib.import_module(module), function)()
    except StopNow as stop:
        return stopped(stop)
    finally:
        ignore_until_exit()
