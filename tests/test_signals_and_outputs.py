"""Signals at any instant, output faults and misbehaving user code, for the console command (issue 40, what to
build 4, 5, 6): each test holds one defect found on main 31e4772, and says what main did.

The subprocess tests send their signal after a line the command (or the agent it runs) prints, never after a
blind sleep.
"""

from __future__ import annotations

import gc
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from strategic_reserve_env.files import records
from strategic_reserve_env.interrupts import Signals, StopNow, stop_line

from conftest import REPO, as_from_a_shell

STOPS = [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
FULL = "error: cannot write to the standard output (No space left on device)"
TIMEOUT = 120  # seconds a command under test may take before the test fails instead of hanging


def start(*arguments: str, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd: Path = REPO) -> subprocess.Popen:
    """`python -m strategic_reserve_env ARGUMENTS` (the console command), signals as a shell leaves them."""
    return subprocess.Popen(
        [sys.executable, "-m", "strategic_reserve_env", *arguments],
        cwd=cwd,
        preexec_fn=as_from_a_shell,
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(*arguments: str, stdout=subprocess.PIPE, cwd: Path = REPO) -> subprocess.CompletedProcess:
    process = start(*arguments, stdout=stdout, cwd=cwd)
    out, err = process.communicate(timeout=TIMEOUT)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def one_line(stderr: str) -> str:
    """The one line of `stderr` (asserted: exactly one, no traceback)."""
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-2000:]
    return lines[0]


def wait_for(stream, text: str) -> None:
    """Read `stream` until a line holding `text` (the command reached the phase the test signals in)."""
    for line in stream:
        if text in line:
            return
    raise AssertionError(f"the stream ended before a line holding {text!r}")


def agent_file(directory: Path, body: str) -> str:
    """The spec of a batch agent whose `act` runs `body` (names: `calls`, its call number from 1; `masks`) and
    then plays the first legal square."""
    path = directory / "agent.py"
    path.write_text(
        "import os, signal, sys, time\n"
        "import numpy as np\n"
        "calls = 0\n"
        "def act(observations, masks, rng):\n"
        "    global calls\n"
        "    calls += 1\n" + textwrap.indent(textwrap.dedent(body), "    ") + "\n"
        "    return np.argmax(masks, axis=1)\n"
    )
    return f"{path}:act"


# -- signals ---------------------------------------------------------------------------------------------------


def test_a_stop_swallowed_by_a_gc_callback_leaves_the_run_stoppable(capsys):
    """A signal whose `StopNow` is raised inside a garbage-collector callback (jax's `_xla_gc_callback`) is
    swallowed there: the request stays recorded for the loop's next safe point, nothing is printed, and the next
    signal stops the run (main: "Exception ignored in ... StopNow", the run marked as shutting down, so every
    later signal was ignored and train-az ran to its end)."""
    fired = []

    def callback(phase, info) -> None:
        if phase == "start" and not fired:
            fired.append(phase)
            signal.raise_signal(signal.SIGTERM)  # its handler runs here, inside the callback

    with Signals() as signals:
        gc.callbacks.append(callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(callback)
        assert fired and signals.requested == signal.SIGTERM and signals.swallowed == 1
        assert not signals.shutting_down
        with pytest.raises(StopNow) as stop:
            signal.raise_signal(signal.SIGINT)
    assert stop.value.signum == signal.SIGTERM  # the first signal's status: 143
    assert capsys.readouterr().err == ""


def test_a_signal_recorded_in_a_loop_is_read_at_its_safe_point():
    """In a loop (`at_once` False) the first signal only records the request; a second stops at once."""
    with Signals(at_once=False) as signals:
        signal.raise_signal(signal.SIGHUP)
        assert signals.requested == signal.SIGHUP and not signals.shutting_down
        with pytest.raises(StopNow):
            signal.raise_signal(signal.SIGINT)


def test_a_stop_said_in_an_inner_block_leaves_the_outer_block_ignoring_further_signals():
    """A run's own block (train's) inside the command's (`as_process`): once the inner block stopped on a signal
    and said so, a further signal in the outer block changes nothing (main: it raised there too, and the command
    said a second stop line)."""
    with Signals() as outer:
        with pytest.raises(StopNow), Signals():
            signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
        assert outer.shutting_down and outer.requested is None
    with Signals() as outer, Signals():  # an inner block that ended without a stop leaves the outer one as it was
        pass
    with pytest.raises(StopNow):
        with outer:
            signal.raise_signal(signal.SIGINT)


@pytest.mark.parametrize("stop, status", STOPS)
def test_the_console_command_holds_its_signals_from_the_package_import(tmp_path, stop, status):
    """A signal while the package itself imports (numpy, before `main` runs) in the console command: one stop
    line and 130 / 143 / 129 (main: a KeyboardInterrupt traceback for SIGINT, death by SIGTERM or SIGHUP)."""
    script = tmp_path / "strategic-reserve"  # the console script's name: the process is the command
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\nimport strategic_reserve_env\n"
        "print('imported', flush=True)\nimport time\ntime.sleep(60)\n"
    )
    process = subprocess.Popen(
        [sys.executable, str(script)],
        preexec_fn=as_from_a_shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(process.stdout, "imported")
    process.send_signal(stop)
    _, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == status and one_line(err) == f"error: {stop_line(stop)}"


def test_a_library_import_of_the_package_keeps_pythons_ctrl_c():
    """Importing the package outside the console command changes no signal handler."""
    code = "import signal, strategic_reserve_env\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.stdout.strip() == "True", done.stderr


def test_sigint_while_evaluate_checks_an_agent_blames_no_agent(tmp_path):
    """Ctrl-C while evaluate checks an agent before the first game (outside the run's own handling): the stop
    line and 130 (main: "agent ... raised SystemExit: 130", exit 2)."""
    spec = agent_file(tmp_path, "print('acting', file=sys.stderr, flush=True)\ntime.sleep(60)")
    process = start("evaluate", spec, "random", "--games", "2", "--no-progress")
    wait_for(process.stderr, "acting")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 130 and one_line(err) == f"error: {stop_line(signal.SIGINT)}"


def test_sighup_stops_evaluate_in_one_line_with_129(tmp_path):
    """SIGHUP (the terminal closed) mid-tournament: one line and 129, results.json says so (main: killed by
    the signal, results.json left claiming a run going on)."""
    spec = agent_file(tmp_path, "if calls == 3:\n    print('acting', file=sys.stderr, flush=True)\n    time.sleep(60)")
    out = tmp_path / "out"
    process = start("evaluate", spec, "random", "--games", "2", "--no-progress", "--out", str(out))
    wait_for(process.stderr, "acting")
    process.send_signal(signal.SIGHUP)
    _, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 129 and err.splitlines()[-1] == f"error: {stop_line(signal.SIGHUP)}", err
    assert "Traceback" not in err and '"complete": false' in (out / "results.json").read_text()


def test_play_keeps_its_record_on_sigterm(tmp_path):
    """SIGTERM while the terminal game waits for the person: the record is saved, exit 143 (main: killed by the
    signal, the record lost, though the README says it is kept whatever happens)."""
    saved = tmp_path / "game.json"
    process = start("play", "--seed", "3", "--save", str(saved), stdin=subprocess.PIPE)
    wait_for(process.stdout, "Legal: ")  # the game asks for the person's first placement
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=TIMEOUT)
    assert process.returncode == 143
    assert records.load_record(saved).seed == 3


# -- output faults ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [["rules"], ["bench", "--seconds", "0.05"], ["evaluate", "--list-agents"], ["--help"], ["rules", "--help"]],
)
def test_stdout_on_a_full_device_is_one_line_and_exit_1(arguments):
    """Main: a traceback ending in `OSError: [Errno 28]` (rules, bench, evaluate --list-agents), or exit 0 with
    the help lost (--help)."""
    with open("/dev/full", "w") as full:
        result = run(*arguments, stdout=full)
    assert result.returncode == 1 and one_line(result.stderr) == FULL


@pytest.mark.parametrize("arguments", [["policy-file", "show", "models/ppo_baseline.safetensors"], ["rules"]])
def test_a_reader_gone_ends_the_command_quietly(arguments):
    """The reader closed the pipe before the command wrote (`| head` that has its lines): exit 0, nothing on
    stderr, as `replay` and `analyse` (main: "error: [Errno 32] Broken pipe", exit 2, for policy-file show)."""
    process = start(*arguments)
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=TIMEOUT) == 0 and err == ""


def test_policy_file_show_of_a_fifo_is_refused_at_once(tmp_path):
    """Main: it waited forever for a writer."""
    fifo = tmp_path / "policy.safetensors"
    os.mkfifo(fifo)
    result = run("policy-file", "show", str(fifo))
    assert result.returncode == 2 and "not a regular file" in one_line(result.stderr)


@pytest.mark.parametrize("command", [["evaluate", "random", "greedy", "--games", "2"], ["benchmark", "random"]])
def test_a_too_long_out_is_one_line_and_creates_nothing(tmp_path, command):
    """Main: an `OSError: [Errno 36]` traceback."""
    parent = tmp_path / "parent"
    result = run(*command, "--out", str(parent / ("x" * 300) / "results"))
    assert result.returncode == 2 and "File name too long" in one_line(result.stderr)
    assert not parent.exists()


@pytest.mark.parametrize("command", [["evaluate", "random", "greedy", "--games", "2"], ["benchmark", "random"]])
def test_evaluate_and_benchmark_refuse_another_commands_run_folder(tmp_path, command):
    """A folder holding train's run: refused before anything is written (main: results written into it)."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text('{"run_id": "' + "a" * 32 + '", "command": "train", "started": "now"}\n')
    result = run(*command, "--out", str(out), "--no-progress")
    assert result.returncode == 2 and "of train, not of" in one_line(result.stderr)
    assert sorted(path.name for path in out.iterdir()) == ["run.json"]


@pytest.mark.slow
def test_ratings_png_replaces_a_link_instead_of_writing_through_it(tmp_path):
    """Main: ratings.png was written through a link already in --out, overwriting what it pointed to."""
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file")
    out = tmp_path / "out"
    out.mkdir()
    (out / "ratings.png").symlink_to(outside)
    result = run("evaluate", "random", "greedy", "--games", "2", "--no-progress", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert outside.read_text() == "the user's file"
    assert stat.S_ISREG(os.lstat(out / "ratings.png").st_mode)
    assert (out / "ratings.png").read_bytes().startswith(b"\x89PNG")


# -- user code -------------------------------------------------------------------------------------------------

MISBEHAVING = {  # body of the agent's act -> what its one line says
    "raise KeyboardInterrupt": "raised KeyboardInterrupt at ",
    "sys.exit(3)": "raised SystemExit: 3 at ",
    "raise ValueError('boom')": "raised ValueError: boom at ",
    "return [2**70] * len(masks)": "not integer square indices 0..35 (the first: 1180591620717411303424)",
    "signal.signal(signal.SIGINT, signal.SIG_IGN)": "replaced the handler of SIGINT",
}


@pytest.mark.parametrize("body", sorted(MISBEHAVING))
def test_a_misbehaving_agent_is_one_line_naming_it(tmp_path, body):
    """Before the first game: exit 2, one line naming the agent and what it did, no traceback (main: the
    agent's traceback under "where it came from"; KeyboardInterrupt taken for a Ctrl-C, exit 130; 2**70 an
    OverflowError; a handler replaced taken silently, so Ctrl-C no longer stopped the command)."""
    spec = agent_file(tmp_path, body)
    result = run("evaluate", spec, "random", "--games", "2", "--no-progress")
    line = one_line(result.stderr)
    assert result.returncode == 2 and "agent.py:act" in line and MISBEHAVING[body] in line


def test_an_agent_that_answers_2_to_the_70_is_out_of_range(tmp_path):
    """A single-game function returning 2**70: out of range, one line (main: OverflowError from the cast)."""
    path = tmp_path / "big.py"
    path.write_text("def big(observation, mask):\n    return 2**70\n")
    result = run("evaluate", f"{path}:big", "random", "--games", "2", "--no-progress")
    assert result.returncode == 2 and "returned 1180591620717411303424, not a square index 0..35" in one_line(
        result.stderr
    )


def test_ctrl_c_still_stops_evaluate_after_an_agent_took_sigint(tmp_path):
    """An agent that ignores SIGINT mid-tournament fails (its handler is put back), so the command ends in one
    line naming it, exit 1 (main: the tournament ran on, Ctrl-C ignored)."""
    spec = agent_file(tmp_path, "if calls == 3:\n    signal.signal(signal.SIGINT, signal.SIG_IGN)")
    result = run("evaluate", spec, "random", "--games", "2", "--no-progress")
    assert result.returncode == 1 and "replaced the handler of SIGINT" in result.stderr.splitlines()[-1]
    assert "Traceback" not in result.stderr


# -- seeds -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [2**64, -1, 2**64 + 5])
def test_the_aec_env_refuses_a_seed_out_of_range(seed):
    """Main: seed 2**64 played seed 0's game (the dice reduce seeds to 64 bits)."""
    from strategic_reserve_env.envs.aec_env import env

    game = env()
    game.reset(seed=5)
    before = game.unwrapped.game.rolled
    with pytest.raises(ValueError, match=r"seed must be an integer in 0 \.\. 2\*\*64 - 1"):
        game.reset(seed=seed)
    assert game.unwrapped.game.rolled == before  # the env is as it was
    game.reset(seed=2**64 - 1)  # the largest seed a record holds is still one
