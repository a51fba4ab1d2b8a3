"""SIGINT, SIGTERM and SIGHUP for every command, from the package's first line to the exit: one line, exit
130 / 143 / 129 (128 + the signal's number), no traceback. Standard library only, so that the package's
`__init__` imports it first of all (`hold_from_start`, before numpy).

- `hold_from_start`: in the console command, a signal while the package and the command's modules import
  exits at once with its line;
- `as_process`: a command run as the process's own (`strategic_reserve_env.__main__`, the repository's
  scripts through `script`), a signal outside its own handling one line and its status, and one after it
  returned ignored;
- `Signals`: the handling of a long run (train, train-az, train-rllib, the distillation, evaluate,
  benchmark): the first signal is recorded for the loop's next safe point, a second stops it at once;
- `own_ctrl_c`: `play` keeps Ctrl-C as Python's `KeyboardInterrupt`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
COMMAND = "strategic-reserve"  # the console script's name ([project.scripts] in pyproject.toml)
PACKAGE = "strategic_reserve_env"
_WHAT = {
    signal.SIGINT: "interrupted (SIGINT, Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class StopNow(BaseException):
    """A signal that stops the whole run at once: a `BaseException`, so no `except Exception` of a library or
    an agent takes it, and `arena.choose_checked` lets it through instead of blaming the agent."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stopped(Exception):
    """The run stopped on a signal at a safe point (after a PPO update, an iteration), with a checkpoint at
    `steps` (steps or iterations)."""

    def __init__(self, signum: int, steps: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum, self.steps = signum, steps


class Ended(KeyboardInterrupt):
    """SIGTERM or SIGHUP in a command that handles Ctrl-C itself (`own_ctrl_c`): it ends the command as Ctrl-C
    does (the terminal game keeps its record), with its own exit `status`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum, self.status = signum, exit_status(signum)


def exit_status(signum: int) -> int:
    """The exit status of a command a signal stopped: 128 + its number."""
    return 128 + signum


def stop_line(signum: int) -> str:
    """What stopped a command, for its one line and its files: `stopped: interrupted (SIGINT, Ctrl-C)`."""
    return f"stopped: {_WHAT.get(signal.Signals(signum), signal.Signals(signum).name)}"


def stopped(signum: int) -> int:
    """Print `error: ` and the stop line of `signum` on stderr (a lost stderr loses only the line); returns
    its exit status."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"error: {stop_line(signum)}", file=sys.stderr, flush=True)
    return exit_status(signum)


def install(handler) -> dict:
    """Handle each of `HANDLED` with `handler`, but one that is ignored (`nohup` ignores SIGHUP, a shell SIGINT
    for a background job: it stays ignored); returns the handlers replaced, for `restore`."""
    return {
        signum: signal.signal(signum, handler) for signum in HANDLED if signal.getsignal(signum) is not signal.SIG_IGN
    }


def restore(before: dict) -> None:
    """Put back the handlers `install` replaced."""
    for signum, handler in before.items():
        signal.signal(signum, handler)


def ignore_until_exit() -> None:
    """After the command returned its status, the signals are ignored while the interpreter shuts down (a
    second signal after the stop line exits with the first one's status, not by signal)."""
    install(signal.SIG_IGN)


class Signals:
    """SIGINT, SIGTERM and SIGHUP while the block runs. The first is recorded (`requested`, which a training
    loop reads at each safe point); while `at_once` (outside a loop, where there is nothing to finish), or on
    a second, the handler raises `StopNow`. Once a stop is under way (a `StopNow` raised, or `shutting_down`
    set by the code that handles a `Stopped`), further signals only count in `ignored`, so the files written
    on the way out are whole. A `StopNow` that a library swallowed (reported to `sys.unraisablehook`, as
    jax's garbage-collector callback's is) counts in `swallowed` and leaves the run stoppable. The handlers
    and the hook before the block are put back after it."""

    def __init__(self, at_once: bool = True) -> None:
        self.requested: int | None = None
        self.at_once, self.shutting_down = at_once, False
        self.ignored = self.swallowed = 0
        self._before: dict = {}
        self._hook = sys.unraisablehook

    def __enter__(self) -> Signals:
        self._before, self._hook = install(self._handle), sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        restore(self._before)
        sys.unraisablehook = self._hook

    def hold(self) -> None:
        """Install the block's handlers again, after a library put its own in their place (`ray.init`)."""
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
        if not isinstance(unraisable.exc_value, StopNow):
            return self._hook(unraisable)
        self.swallowed += 1  # swallowed where it was raised: the run is not stopping
        self.shutting_down = False


def as_process(body: Callable[[], int], process: bool = True) -> int:
    """The exit status of `body`; a `StopNow` (or a `KeyboardInterrupt` where the command handles Ctrl-C) is
    one line and its status. As the process's own command (`process`), its signals stop it at once
    (`Signals`) and are ignored once it returned (`ignore_until_exit`)."""
    try:
        with Signals() if process else contextlib.nullcontext():
            return body()
    except (StopNow, KeyboardInterrupt) as stop:
        return stopped(getattr(stop, "signum", signal.SIGINT))
    finally:
        if process:
            ignore_until_exit()


def script(target: str) -> int:
    """Run the command `module:function` (a `main()`) as this process's own (`as_process`): the repository's
    `train.py`, `evaluate.py`, `train_rllib.py`."""
    module, _, function = target.partition(":")
    return as_process(lambda: getattr(importlib.import_module(module), function)())


@contextlib.contextmanager
def own_ctrl_c() -> Iterator[None]:
    """While the block runs (`play`), SIGINT is Python's own `KeyboardInterrupt`, which the command handles,
    and SIGTERM and SIGHUP raise `Ended` once (further ones ignored), so what the command keeps on its way
    out is written whole."""
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


def _exit_at_start(signum: int, frame) -> None:
    ignore_until_exit()  # the interpreter's shutdown is not cut short by a second signal
    raise SystemExit(stopped(signum))


def is_command() -> bool:
    """Whether this process is the console command: `strategic-reserve ...` or `python -m strategic_reserve_env`."""
    argv = getattr(sys, "orig_argv", [])
    if "-m" in argv[1:]:
        module = argv.index("-m") + 1
        return module < len(argv) and argv[module] == PACKAGE
    return bool(sys.argv) and os.path.basename(sys.argv[0]) == COMMAND


def hold_from_start() -> None:
    """In the console command, while its signals are still the interpreter's own: each of `HANDLED` exits
    with its line and status until the command installs its own handling; a library import changes nothing."""
    if is_command() and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN):
        install(_exit_at_start)


hold_from_start()
