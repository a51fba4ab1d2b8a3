"""SIGINT and SIGTERM during a training run: the first stops it at the next safe point, a second at once.

Used by ``train`` (the safe point: after the current PPO update, with a checkpoint) and ``train-rllib``
(after the current iteration); standard library only.
"""

from __future__ import annotations

import signal


class StopNow(BaseException):
    """A second signal: stop at once (a ``BaseException``, so no ``except Exception`` of the libraries takes it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stopped(Exception):
    """The run stopped on a signal at a safe point (after a PPO update, an RLlib iteration), with a checkpoint
    at ``steps`` (steps or iterations)."""

    def __init__(self, signum: int, steps: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum, self.steps = signum, steps


class Signals:
    """SIGINT and SIGTERM while the block runs: the first is noted (``requested``, which the training loop reads
    at each safe point); a second, or the first while ``at_once`` (outside the loop, where there is nothing
    to finish), raises :class:`StopNow`. The handlers before the block are put back after it."""

    HANDLED = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: int | None = None
        self.at_once = True
        self._before: dict = {}

    def __enter__(self) -> Signals:
        self._before = {signum: signal.signal(signum, self._handle) for signum in self.HANDLED}
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._before.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame) -> None:
        if self.requested is not None or self.at_once:
            raise StopNow(signum)
        self.requested = signum
