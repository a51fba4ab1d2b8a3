"""Runs that fail mid-way, agents that fight their time budget, settings too big to allocate (issue 29, items
5, 11, 12, 17): a run that stops says so in its files, on one stderr line and in its exit status, never
"still running"; a time budget holds against an agent that catches `Exception`; sizes are checked before
anything is allocated.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from strategic_reserve_env import outputs
from strategic_reserve_env.arena import MAX_ACT_SECONDS, ActTimeoutError, TimeLimited
from strategic_reserve_env.commands.evaluate import main
from strategic_reserve_env.evaluation import benchmark, tournament

from conftest import REPO

RANDOM_AFTER_BODY = """
masks = np.asarray(masks, dtype=bool)
return np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=-1)
"""


def agent_file(directory: Path, name: str, body: str, prelude: str = "") -> str:
    """The spec of an agent file whose `act` runs `body` from its second call on (its first is the check
    before the first game), then plays uniformly at random."""
    path = directory / f"{name}.py"
    source = "import sys, time\nimport numpy as np\n" + textwrap.dedent(prelude) + "\ncalls = 0\n"
    source += "def act(observations, masks, rng):\n    global calls\n    calls += 1\n    if calls > 1:\n"
    source += textwrap.indent(textwrap.dedent(body).strip() + "\n", " " * 8)
    source += textwrap.indent(RANDOM_AFTER_BODY.strip() + "\n", " " * 4)
    path.write_text(source)
    return f"{path}:act"


def run_command(*args: str, stdout=subprocess.PIPE, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def no_traceback(stderr: str) -> bool:
    return "Traceback" not in stderr


# -- 5: a run that stops says it stopped, and why -------------------------------------------------------------


@pytest.mark.parametrize(
    "raised",
    [
        "class Halt(BaseException):\n    pass\n",  # a custom BaseException
        "Halt = GeneratorExit\n",
    ],
)
def test_an_agent_raising_a_base_exception_stops_the_run_and_says_so(tmp_path, raised):
    spec = agent_file(tmp_path, "halts", "raise Halt('enough')", prelude=raised)
    out = tmp_path / "out"
    result = run_command("evaluate", "random", spec, "--games", "2", "--no-progress", "--out", str(out))
    assert result.returncode == 1, result.stderr
    name = "Halt" if "class" in raised else "GeneratorExit"
    assert result.stderr.splitlines()[-1].startswith("error: ") and f"raised {name}: enough" in result.stderr
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and f"raised {name}: enough" in written["error"]
    assert "still running" not in (out / "results.md").read_text()


def test_the_benchmark_stops_with_its_reason_when_an_agent_raises_a_base_exception(tmp_path):
    spec = agent_file(tmp_path, "halts", "raise Halt('enough')", prelude="class Halt(BaseException):\n    pass\n")
    out = tmp_path / "out"
    result = run_command("benchmark", spec, "--benchmark-games", "2", "--no-progress", "--out", str(out))
    assert result.returncode == 1, result.stderr
    card = json.loads((out / "benchmark.json").read_text())
    assert card["complete"] is False and "raised Halt: enough" in card["error"]


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_at_the_last_file_stops_the_tournament_with_the_reason_in_its_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tournament, "plot_ratings", enospc)  # the picture, the last file before results.json
    out = tmp_path / "out"
    assert main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "No space left on device" in error[0], error
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and "No space left on device" in written["error"]
    assert "still running" not in (out / "results.md").read_text()


def test_a_disk_full_for_every_write_ends_with_one_line_and_files_that_do_not_say_running(
    tmp_path, monkeypatch, capsys
):
    """The first write (after the first pairing) succeeds, every later one fails: what is on disk must not
    claim a live run, and the run ends with one line and exit 1."""
    real = outputs.write_text
    calls = []

    def fills_up(path, text):
        calls.append(path)
        if len(calls) > 2:  # results.md and results.json after the first pairing
            enospc()
        real(path, text)

    monkeypatch.setattr(tournament, "write_text", fills_up)
    out = tmp_path / "out"
    assert main(["random", "greedy", "expectimax:depth=1", "--games", "2", "--no-progress", "--out", str(out)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "No space left on device" in error[0] and "could not be written" in error[0], error
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and written["error"]
    assert "still running" not in written["error"] and "still running" not in (out / "results.md").read_text()


def test_a_full_disk_during_the_benchmark_stops_it_with_the_reason(tmp_path, monkeypatch, capsys):
    real = benchmark.write_text
    calls = []

    def fails_once(path, text):
        calls.append(path)
        if len(calls) == 3:  # the first write after the first opponent
            enospc()
        real(path, text)

    monkeypatch.setattr(benchmark, "write_text", fails_once)
    out = tmp_path / "out"
    assert main(["--benchmark", "random", "--benchmark-games", "2", "--no-progress", "--out", str(out)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert "No space left on device" in error[-1], error
    card = json.loads((out / "benchmark.json").read_text())
    assert card["complete"] is False and "No space left on device" in card["error"]


@pytest.mark.parametrize(
    "command", [["evaluate", "random", "greedy", "--games", "2"], ["benchmark", "random", "--benchmark-games", "2"]]
)
def test_stdout_on_a_full_device_ends_with_one_line_and_a_stopped_run(tmp_path, command):
    out = tmp_path / "out"
    with open("/dev/full", "w") as full:
        result = run_command(*command, "--no-progress", "--out", str(out), stdout=full)
    assert result.returncode == 1, result.stderr
    error = result.stderr.strip().splitlines()
    assert len(error) == 1 and "standard output" in error[0], result.stderr
    stem = "results" if command[0] == "evaluate" else "benchmark"
    written = json.loads((out / f"{stem}.json").read_text())
    assert written["complete"] is False and "standard output" in written["error"]


def test_results_written_while_running_do_not_claim_a_live_run(tmp_path):
    settings = tournament.Settings(agents=["random", "greedy"], games=2, progress=False)
    pairings, _ = tournament.run(settings)
    tournament.write_outputs(tmp_path, settings, pairings, None)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["complete"] is False and written["error"] == tournament.UNFINISHED
    assert "still running" not in (tmp_path / "results.md").read_text()


# -- 11, 12: the act timeout ---------------------------------------------------------------------------------


def test_the_act_timeout_holds_against_an_agent_that_catches_exception(tmp_path):
    body = """
    try:
        time.sleep(2)
    except Exception:
        pass
    """
    spec = agent_file(tmp_path, "swallows", body)
    out = tmp_path / "out"
    result = run_command(
        "evaluate", "random", spec, "--games", "2", "--batch", "2", "--act-timeout", "0.25", "--no-progress",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "ActTimeoutError" in result.stderr.splitlines()[-1]
    written = json.loads((out / "results.json").read_text())
    assert written["complete"] is False and "ActTimeoutError" in written["error"]


def test_the_act_timeout_fails_an_agent_that_swallows_the_alarm_itself():
    """An agent that catches everything (BaseException) still returns too late: the call is failed then."""

    class Swallower:
        name = "swallower"

        def act(self, observations, masks, rng):
            try:
                import time

                time.sleep(0.3)
            except BaseException:
                import time

                time.sleep(0.3)
            return np.zeros(len(masks), dtype=np.int64)

    limited = TimeLimited(Swallower(), 0.1)
    with pytest.raises(ActTimeoutError, match="ran past its budget"):
        limited.act(None, np.ones((1, 36), dtype=bool), np.random.default_rng(0))


def test_the_timeout_error_is_not_an_exception_an_agent_catches_by_accident():
    assert not issubclass(ActTimeoutError, Exception)


@pytest.mark.parametrize("option", ["1e8", str(MAX_ACT_SECONDS * 2)])
def test_a_huge_act_timeout_is_refused_before_play(option):
    result = run_command("evaluate", "random", "greedy", "--games", "2", "--act-timeout", option)
    assert result.returncode == 2 and "--act-timeout" in result.stderr and no_traceback(result.stderr)
    assert "OverflowError" not in result.stderr


def test_the_largest_act_timeout_on_a_large_batch_does_not_overflow():
    limited = TimeLimited(type("Quick", (), {"act": lambda self, o, m, r: np.zeros(len(m), dtype=np.int64)})(),
                          MAX_ACT_SECONDS)  # fmt: skip
    masks = np.ones((4096, 36), dtype=bool)
    assert limited.act(None, masks, np.random.default_rng(0)).shape == (4096,)


# -- 17: sizes checked before anything is allocated -----------------------------------------------------------


@pytest.mark.parametrize(
    "args, option",
    [
        (["evaluate", "random", "greedy", "--games", str(10**12)], "--games"),
        (["evaluate", "random", "greedy", "--batch", str(10**8)], "--batch"),
        (["benchmark", "random", "--benchmark-games", str(10**12)], "--benchmark-games"),
        (["bench", "--batch-sizes", "64", str(10**8)], "--batch-sizes"),
        (["bench", "--batch-sizes", "0"], "--batch-sizes"),
    ],
)
def test_huge_sizes_are_refused_with_one_line_before_anything_is_allocated(tmp_path, args, option):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if args[0] != "bench" else []
    result = run_command(*args, *extra, timeout=60)
    assert result.returncode == 2, result.stderr
    assert option in result.stderr.splitlines()[-1] and no_traceback(result.stderr)
    assert not out.exists()


def test_the_size_limits_are_the_settings_own():
    with pytest.raises(ValueError, match="games"):
        tournament.Settings(agents=[], games=tournament.MAX_GAMES + 2)
    with pytest.raises(ValueError, match="batch"):
        tournament.Settings(agents=[], batch=tournament.MAX_BATCH + 2)
    tournament.Settings(agents=[], games=tournament.MAX_GAMES, batch=tournament.MAX_BATCH)
