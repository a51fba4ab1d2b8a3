"""SIGINT and SIGTERM: one mechanism for every command that runs long.

`Signals` holds them while a run goes on (`train`, `train-rllib`, the distillation, `evaluate`
and `benchmark`): the first stops the run at its next safe point (after a PPO update or an RLlib
iteration, with a checkpoint) or, where there is none, at once (`StopNow`); a second stops it at
once; from then on the run is shutting down (its files say how it ended, one line says so, the exit status
is 128 + the first signal's number) and further signals change nothing. Around a command run as the
process's own (`quiet`, `ignore_until_exit`, used by `strategic_reserve_env.__main__` and
the repository's scripts): a signal while the command's modules import, or outside a `Signals` block
(loading agents, after the stop line), exits at once with that status and no traceback, and one after the
command returned no longer kills the process by signal.
Standard library only (and the arena's `StopRun`).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

from strategic_reserve_env.arena import StopRun

HANDLED = (signal.SIGINT, signal.SIGTERM)


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
    """SIGINT and SIGTERM while the block runs. The first is noted (`requested`, which a training loop reads
    at each safe point) while `at_once` is False; the first while `at_once` (the default: outside a loop,
    where there is nothing to finish) or a second raises `StopNow`. Once a stop is under way (a
    `StopNow` raised, or `shutting_down` set by the code that handles a `Stopped`), further
    signals are counted in `ignored` and raise nothing, so the files written while shutting down are whole.
    The handlers before the block are put back after it."""

    def __init__(self, at_once: bool = True) -> None:
        self.requested: int | None = None
        self.at_once = at_once
        self.shutting_down = False
        self.ignored = 0
        self._before: dict = {}

    def __enter__(self) -> Signals:
        self._before = {signum: signal.signal(signum, self._handle) for signum in HANDLED}
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._before.items():
            signal.signal(signum, handler)

    def hold(self) -> None:
        """Install this block's handlers again, after a library put its own in their place (`ray.init`
        installs a SIGTERM handler that aborts the process)."""
        for signum in HANDLED:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if self.shutting_down:
            self.ignored += 1
            return
        if self.requested is not None or self.at_once:
            self.shutting_down = True
            raise StopNow(signum)
        self.requested = signum


def _exit_quietly(signum: int, frame) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """While the block runs (a command's modules importing: torch, SB3, Ray take seconds; a command outside
    its `Signals` blocks), SIGINT and SIGTERM exit at once with status 130 / 143 and no traceback
    (`SystemExit`); the handlers before it are put back after it."""
    before = {signum: signal.signal(signum, _exit_quietly) for signum in HANDLED}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def ignore_until_exit() -> None:
    """After the process's command returned its status: SIGINT and SIGTERM are ignored while the interpreter
    shuts down (a second signal after the stop line exits with the first one's status, not by signal)."""
    for signum in HANDLED:
        signal.signal(signum, signal.SIG_IGN)


def script(target: str) -> int:
    """Run the command `module:function` (a `main(argv, prog)`) as this process's own, with its script's
    name (the repository's `train.py`, `evaluate.py`, `train_rllib.py`): imported and run under
    `quiet`, then `ignore_until_exit`; returns its exit status."""
    import importlib

    module, _, function = target.partition(":")
    try:
        with quiet():
            return getattr(importlib.import_module(module), function)()
    finally:
        ignore_until_exit()
