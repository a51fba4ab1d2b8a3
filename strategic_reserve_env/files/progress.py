"""Progress reports that suit where they go: a tqdm bar on a terminal, periodic plain lines elsewhere.

A tqdm bar redraws itself with carriage returns; written to a file or a pipe
(`make train > log`, CI) every redraw becomes a line of its own and the log
fills with megabytes of bars. `Progress` draws the bar only when its
stream is a terminal (`stream.isatty()`); otherwise it writes one plain line
at most every `interval` seconds, and one when it closes:

```text
[train] 1,048,576/6,000,000 step (17.5 %), 16,620 step/s, 4 min 58 s left
```

Used by train.py, the tournament of evaluate.py and `strategic_reserve_env.evaluation.placement_headroom`.
tqdm (in the `train` extra) is imported only when a bar is drawn.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TypeVar

PLAIN_INTERVAL = 30.0  # seconds between two plain progress lines
SECONDS_PER_MINUTE = 60
NO_TIME_LEFT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]"  # tqdm's bar, no estimate

T = TypeVar("T")


def is_terminal(stream: IO[str]) -> bool:
    """Whether `stream` is an interactive terminal (False for files, pipes and streams without `isatty`)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def _duration(seconds: float) -> str:
    """'1 h 02 min', '4 min 58 s' or '12 s'."""
    seconds = int(round(seconds))
    minutes, seconds = divmod(seconds, SECONDS_PER_MINUTE)
    hours, minutes = divmod(minutes, SECONDS_PER_MINUTE)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {seconds:02d} s"
    return f"{seconds} s"


class Progress:
    """Progress of `total` units of work towards `stream` (stderr by default); see the module docstring.

    `enabled=False` draws nothing (`write` still prints). `interval` is the
    time between two plain lines; `clock` (seconds, monotonic) is replaceable for tests. `time_left=False`
    shows no estimate of the time left: for work whose parts run at rates far apart (the benchmark's opponents,
    random to expectimax), where the rate so far says nothing of the parts to come.
    Use it as a context manager, or call `close` (which writes the last plain line).
    """

    def __init__(
        self,
        total: int | None,
        unit: str = "it",
        *,
        description: str = "",
        initial: int = 0,
        enabled: bool = True,
        stream: IO[str] | None = None,
        interval: float = PLAIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        time_left: bool = True,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.total, self.unit, self.description = total, unit, description
        self.count = self.start_count = initial
        self.enabled, self.interval, self.clock = enabled, interval, clock
        self.time_left = time_left
        self.started = self.last_line = clock()
        self.closed = False
        self._bar = None
        if enabled and is_terminal(self.stream):
            from tqdm import tqdm

            shape = {} if time_left else {"bar_format": NO_TIME_LEFT}
            self._bar = tqdm(
                total=total, initial=initial, unit=unit, desc=description or None, file=self.stream, **shape
            )

    @property
    def plain(self) -> bool:
        """Whether progress goes out as plain lines (enabled, and the stream is not a terminal)."""
        return self.enabled and self._bar is None

    def update(self, amount: int = 1) -> None:
        """`amount` more units done."""
        self.count += amount
        if self._bar is not None:
            self._bar.update(amount)
        elif self.plain and self.clock() - self.last_line >= self.interval:
            self._line()

    def set_description(self, description: str) -> None:
        """Name the current part of the work (shown in the bar, or at the start of the plain lines)."""
        self.description = description
        if self._bar is not None:
            self._bar.set_description(description)

    def write(self, text: str, stream: IO[str] | None = None) -> None:
        """Print a line of text (to `stream`, default the progress's own) without breaking the bar."""
        if self._bar is not None:
            self._bar.write(text, file=stream or self.stream)
        else:
            print(text, file=stream or self.stream, flush=True)

    def line(self) -> str:
        """The plain progress line for the current count."""
        now = self.clock()
        rate = (self.count - self.start_count) / max(now - self.started, 1e-9)
        text = f"{self.count:,}"
        units = self.unit if (self.total or self.count) == 1 else plural(self.unit)
        if self.total:
            text += f"/{self.total:,} {units} ({100 * self.count / self.total:.1f} %)"
        else:
            text += f" {units}"
        text += f", {rate:,.0f} {plural(self.unit)}/s"
        if self.time_left and self.total and rate > 0 and self.count < self.total:
            text += f", {_duration((self.total - self.count) / rate)} left"
        return f"[{self.description}] {text}" if self.description else text

    def _line(self) -> None:
        print(self.line(), file=self.stream, flush=True)
        self.last_line = self.clock()

    def close(self) -> None:
        """End the bar, or write the last plain line (once)."""
        if self.closed:
            return
        self.closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.plain:
            self._line()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def plural(unit: str) -> str:
    """The plural of a unit of work (`game` -> `games`); `it` (tqdm's iterations) and a unit ending in s
    stay as they are."""
    return unit if unit == "it" or unit.endswith("s") else unit + "s"


def track(items: Iterable[T], total: int | None = None, unit: str = "it", **options) -> Iterator[T]:
    """Yield `items`, reporting one unit of progress per item (`options` as `Progress`)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)
    with Progress(total, unit, **options) as progress:
        for item in items:
            yield item
            progress.update()


__all__ = ["PLAIN_INTERVAL", "Progress", "is_terminal", "track"]
