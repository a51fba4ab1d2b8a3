"""strategic_reserve_env.files.progress: a bar on a terminal, periodic plain lines in files and pipes."""

from __future__ import annotations

import io

from strategic_reserve_env.files.progress import Progress, is_terminal, track


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    """A clock moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_file_gets_plain_lines_at_the_interval_and_at_close():
    stream, clock = io.StringIO(), Clock()
    with Progress(1000, "step", description="train", stream=stream, interval=30, clock=clock) as progress:
        for _ in range(100):  # 100 updates within 10 s: no line yet
            progress.update(5)
            clock.now += 0.1
        assert stream.getvalue() == ""
        clock.now = 130.0  # 30 s after the start
        progress.update(100)
        progress.write("vs greedy: 0.5")
        for _ in range(10):  # 1 s more: no new progress line
            progress.update(10)
            clock.now += 0.1
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines == [
        "[train] 600/1,000 steps (60.0 %), 20 steps/s, 20 s left",
        "vs greedy: 0.5",
        "[train] 700/1,000 steps (70.0 %), 23 steps/s, 13 s left",
    ]


def test_a_terminal_gets_a_tqdm_bar():
    stream = Terminal()
    with Progress(10, "game", stream=stream) as progress:
        progress.set_description("random vs greedy")
        progress.update(10)
    assert "\r" in stream.getvalue() and "random vs greedy" in stream.getvalue()
    assert "10/10" in stream.getvalue()


def test_work_of_uneven_parts_shows_no_time_left():
    """The benchmark's opponents play at rates far apart: with `time_left=False` neither the plain line nor the
    bar estimates the time left from the rate so far (issue 41: "10 s left" with the slowest opponent to come)."""
    stream, clock = io.StringIO(), Clock()
    with Progress(1000, "game", stream=stream, clock=clock, time_left=False) as progress:
        clock.now += 10
        progress.update(420)
    assert stream.getvalue() == "420/1,000 games (42.0 %), 42 games/s\n"
    terminal = Terminal()
    with Progress(1000, "game", stream=terminal, time_left=False) as progress:
        progress.update(420)
    with Progress(1000, "game", stream=(shown := Terminal())) as progress:
        progress.update(420)
    assert "<" not in terminal.getvalue() and "<" in shown.getvalue()  # tqdm's "elapsed<left"


def test_disabled_progress_writes_only_text():
    for stream in (io.StringIO(), Terminal()):
        with Progress(10, enabled=False, stream=stream) as progress:
            progress.update(10)
            progress.write("hello")
        assert stream.getvalue() == "hello\n"


def test_track_yields_every_item_and_reports_the_count():
    stream = io.StringIO()
    assert list(track(range(7), unit="decision", stream=stream)) == list(range(7))
    assert stream.getvalue().startswith("7/7 decisions (100.0 %)")
    single = io.StringIO()
    assert list(track(["one"], unit="game", stream=single)) == ["one"]
    assert single.getvalue().startswith("1/1 game (100.0 %)")


def test_is_terminal_of_odd_streams():
    closed = io.StringIO()
    closed.close()
    assert not is_terminal(closed) and not is_terminal(object()) and is_terminal(Terminal())
