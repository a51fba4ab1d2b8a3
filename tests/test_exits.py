"""evaluate.py's exits and output folders: what stopped a run is written, what was finished is kept, the
status says which (0, 1, 2, 130, 143), and one process at a time writes a folder.

The agents are files written here: one that calls `sys.exit()` in play or at import, one that hangs,
one that is slow enough to be stopped by a signal after its first pairing.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from strategic_reserve_env.commands.evaluate import main
from strategic_reserve_env.evaluation import tournament
from strategic_reserve_env.files import outputs
from strategic_reserve_env.interrupts import stop_line

from conftest import REPO, as_from_a_shell


def agent_file(directory: Path, name: str, body: str) -> str:
    """The spec of an agent file `name`.py whose `act` runs `body` after its first call (the check before
    the first game is its first call), then plays uniformly at random."""
    path = directory / f"{name}.py"
    path.write_text(
        textwrap.dedent(
            """
            import sys, time
            import numpy as np
            calls = 0
            def act(observations, masks, rng):
                global calls
                calls += 1
                if calls > 1:
            {body}
                masks = np.asarray(masks, dtype=bool)
                return np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=-1)
            """
        ).replace("{body}", textwrap.indent(body, " " * 8))
    )
    return f"{path}:act"


def evaluate(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "evaluate.py", "--no-progress", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def start(*arguments: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    """`python ARGUMENTS` from the checkout's root, with SIGINT and SIGTERM as a shell leaves them."""
    return subprocess.Popen(
        [sys.executable, *arguments],
        cwd=REPO,
        preexec_fn=as_from_a_shell,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )


def _tournament(tmp_path, out) -> subprocess.Popen:
    spec = agent_file(tmp_path, "slow", "time.sleep(0.05)")
    return start(
        "evaluate.py", "--no-progress", "random", "greedy", spec, "--games", "200", "--batch", "2", "--out", str(out)
    )


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_an_agent_that_calls_sys_exit_in_play_fails_the_run(tmp_path):
    spec = agent_file(tmp_path, "quitter", "sys.exit(0)")
    out = tmp_path / "out"
    result = evaluate("random", "greedy", spec, "--games", "4", "--out", str(out))
    assert result.returncode == 1, result.stderr
    assert "raised SystemExit: 0" in result.stderr.splitlines()[-1]
    written = results(out)
    assert written["complete"] is False and "raised SystemExit" in written["error"]
    assert [(p["a"], p["b"]) for p in written["pairings"]] == [("random", "greedy")]  # finished before: kept


@pytest.mark.slow
def test_an_agent_module_that_exits_at_import_is_refused_before_play(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(3)\n")
    out = tmp_path / "out"
    result = evaluate("random", f"{path}:act", "--games", "2", "--out", str(out))
    assert result.returncode == 2
    assert f"running {path} raised SystemExit: 3" in result.stderr.splitlines()[-1]
    assert not out.exists()


@pytest.mark.slow
def test_the_act_timeout_stops_a_hanging_agent(tmp_path):
    spec = agent_file(tmp_path, "hangs", "time.sleep(1000)")
    out = tmp_path / "out"
    start = time.perf_counter()
    result = evaluate("random", spec, "--games", "2", "--act-timeout", "0.2", "--out", str(out))
    assert time.perf_counter() - start < 120
    assert result.returncode == 1, result.stderr
    assert "raised ActTimeoutError: act() ran past its budget of " in result.stderr
    assert "(0.2 s per game, " in result.stderr
    assert results(out)["complete"] is False and "ActTimeoutError" in results(out)["error"]


@pytest.mark.slow
@pytest.mark.parametrize("option", ["0", "-1", "nan", "inf", "soon"])
def test_a_bad_act_timeout_is_refused(option):
    result = evaluate("random", "greedy", "--act-timeout", option)
    assert result.returncode == 2 and "--act-timeout" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "stop, status, reason",
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted (SIGINT, Ctrl-C)")],
)
def test_a_signal_ends_the_run_with_its_status_and_keeps_what_was_finished(tmp_path, stop, status, reason):
    out = tmp_path / "out"
    process = _tournament(tmp_path, out)
    deadline = time.time() + 240
    while time.time() < deadline and not (out / "results.json").exists():
        time.sleep(0.2)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == status, stderr
    assert stderr.splitlines()[-1].startswith(f"error: stopped: {reason}; the 1 pairing(s) finished before are kept")
    written = results(out)
    assert written["complete"] is False and written["error"] == f"stopped: {reason}"
    assert [(p["a"], p["b"]) for p in written["pairings"]] == [("random", "greedy")]
    assert f"**Unfinished**: stopped: {reason}" in (out / "results.md").read_text()


@pytest.mark.parametrize("name", ["results.json", "ratings.png", "results.md"])
def test_an_output_path_that_is_a_directory_is_refused_before_the_first_game(tmp_path, capsys, name):
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    assert main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {out}: {out / name} exists and is not a file, so it cannot be written\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [name]


def test_files_follow_the_umask(tmp_path):
    out = tmp_path / "out"
    before = os.umask(0o027)
    try:
        assert main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 0
    finally:
        os.umask(before)
    for name in ("results.json", "results.md", "ratings.png"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o640, name


def test_results_say_complete_only_after_every_file_is_written(tmp_path, monkeypatch):
    """The picture is written before results.json: if it fails, no results.json says complete."""
    out = tmp_path / "out"

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tournament, "plot_ratings", broken)
    settings = tournament.Settings(agents=["random", "greedy"], games=2, progress=False)
    pairings, ratings = tournament.run(settings)
    tournament.write_outputs(out, settings, pairings, None, error="running")
    with pytest.raises(OSError, match="disk full"):
        tournament.write_outputs(out, settings, pairings, ratings)
    assert results(out)["complete"] is False


def test_a_folder_another_process_writes_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    with outputs.lock(out):
        assert main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 2
        assert main(["--benchmark", "random", "--benchmark-games", "2", "--no-progress", "--out", str(out)]) == 2
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert all(
        line.startswith(f"error: --out {out} is in use by another process (pid {os.getpid()}") for line in errors
    )
    assert not out.exists()  # the lock made the folder, and nothing was written in it: it goes again


def test_the_lock_goes_with_its_process_after_kill_9(tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from strategic_reserve_env import outputs\nimport sys, time\n"
            f"with outputs.lock({str(out)!r}):\n    print('held', flush=True)\n    time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(outputs.OutputBusyError, match=f"pid {holder.pid}"):
        with outputs.lock(out):
            pass
    holder.kill()  # SIGKILL: no clean-up runs
    holder.wait()
    with outputs.lock(out):
        assert (out / outputs.LOCK_FILE).exists()


def test_atomic_writes_use_unique_temporary_names(tmp_path):
    """Two writers of one file never share a temporary name, and a failed write leaves nothing behind."""
    target = tmp_path / "f.txt"
    with outputs.atomic(target) as first, outputs.atomic(target) as second:
        assert first.name != second.name
        first.write(b"one")
        second.write(b"two")
    assert target.read_text() == "one" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
    with pytest.raises(RuntimeError), outputs.atomic(target) as handle:
        handle.write(b"half")
        raise RuntimeError
    assert target.read_text() == "one" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


@pytest.mark.slow
def test_the_benchmark_keeps_what_was_finished_when_an_agent_exits(tmp_path):
    """An agent that calls sys.exit() in play fails the benchmark (exit 1); benchmark.json (written when the run
    starts, then after each opponent) says complete false, with the cause."""
    spec = agent_file(tmp_path, "quits_late", "if calls > 3:\n    sys.exit(0)")
    out = tmp_path / "out"
    result = evaluate("--benchmark", spec, "--benchmark-games", "2", "--out", str(out))
    assert result.returncode == 1, result.stderr
    card = json.loads((out / "benchmark.json").read_text())
    assert card["complete"] is False and "raised SystemExit: 0" in card["error"]
    assert "raised SystemExit: 0" in result.stderr.splitlines()[-1]


# -- one signal path for every command (issue 34, item 9) ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.005, 0.03])
def test_a_second_sigint_while_evaluate_shuts_down_changes_nothing(tmp_path, delay):
    """The second Ctrl-C a few milliseconds after the first, while the stopped run writes its files: no
    traceback, exit 130, results.json says it stopped (0.3.0: an 82-line traceback, results.json 'going on')."""
    out = tmp_path / "out"
    process = _tournament(tmp_path, out)
    deadline = time.time() + 240
    while time.time() < deadline and not (out / "results.json").exists():
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.splitlines()[-1].startswith("error: stopped: interrupted (SIGINT")
    assert results(out)["complete"] is False and results(out)["error"] == "stopped: interrupted (SIGINT, Ctrl-C)"


ENTRIES = {  # a command run as the process's own, the two ways: a repository script, the console command
    "script": "from strategic_reserve_env.interrupts import script\nsys.exit(script('slow_import:main'))",
    "console": (
        "from strategic_reserve_env import __main__ as entry\n"
        "entry.COMMANDS['slow'] = entry.Command('a command that imports slowly', 'slow_import:main')\n"
        "sys.argv = ['strategic-reserve', 'slow']\nsys.exit(entry.main())"
    ),
}


def _signalled_command(tmp_path, entry: str, module: str) -> tuple[int, str, str]:
    """Run the command `slow_import:main` (whose module is `module`) as the process's own, by `entry`: its exit
    status, stdout and stderr."""
    (tmp_path / "slow_import.py").write_text(module)
    code = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n{ENTRIES[entry]}"
    process = start("-c", code)
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr


@pytest.mark.parametrize("entry", sorted(ENTRIES))
@pytest.mark.parametrize("stop, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_while_the_command_imports_exits_with_its_status_and_no_traceback(tmp_path, entry, stop, status):
    """A signal while a command's modules import (torch, SB3, Ray take seconds; here a module that signals
    itself while it imports): exit 130 / 143 / 129, the one stop line on stderr, nothing on stdout (0.3.0: a
    KeyboardInterrupt traceback, or death by SIGTERM; main before issue 40: SIGHUP killed it, no line)."""
    module = (
        f"import os, time\nos.kill(os.getpid(), {int(stop)})\ntime.sleep(30)\n\n"
        "def main(argv=None, prog=None):\n    return 0\n"
    )
    assert _signalled_command(tmp_path, entry, module) == (status, "", f"error: {stop_line(stop)}\n")


@pytest.mark.parametrize("entry", sorted(ENTRIES))
@pytest.mark.parametrize("stop, status", [(signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_after_the_command_returned_exits_with_its_status(tmp_path, entry, stop, status):
    """A signal once the command's work is done, while the process ends (here an exit handler that signals the
    process, as a user's Ctrl-C may land while torch's teardown runs): exit 130 / 129 with the one stop line,
    the command's output whole (main before: ignored, exit 0; in Python's own teardown: death by the signal)."""
    module = (
        f"import atexit, os, time\natexit.register(lambda: (os.kill(os.getpid(), {int(stop)}), time.sleep(30)))\n\n"
        "def main(argv=None, prog=None):\n    print('done')\n    return 0\n"
    )
    assert _signalled_command(tmp_path, entry, module) == (status, "done\n", f"error: {stop_line(stop)}\n")


@pytest.mark.slow
def test_a_second_sigterm_after_trains_stop_line_exits_143(tmp_path):
    """SIGTERM stops train after its update; a second SIGTERM once the stop line is out (the process shutting
    down) neither kills it by signal nor changes its status (0.3.0 died by the signal)."""
    out = tmp_path / "run"
    tiny = ["--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1", "--net-arch", "32"]
    tiny += ["--distill-games", "0", "--total-steps", "100000", "--no-progress", "--eval-every", "0"]
    process = start("train.py", *tiny, "--checkpoint-every", "512", "--out", str(out), stdout=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and not list((out / "checkpoints").glob("*.pt")):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    line = process.stderr.readline()
    while line and not line.startswith("SIGTERM stopped the run"):
        line = process.stderr.readline()
    assert line.startswith("SIGTERM stopped the run at step"), line
    process.send_signal(signal.SIGTERM)
    rest = process.stderr.read()
    process.wait(timeout=120)
    assert process.returncode == 143 and "Traceback" not in rest, rest
    assert outputs.read_run(out)["status"] == "interrupted"


@pytest.mark.slow
@pytest.mark.parametrize("stop, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_distillation_labels_stops_it_in_one_line_and_it_resumes(tmp_path, stop, status):
    """A signal while the expert's decisions are labelled: one line saying what was kept and how to go on,
    exit 130 / 143, the run interrupted and resumable by its folder alone."""
    from strategic_reserve_env.training import folder

    out = tmp_path / "run"
    args = ["--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--net-arch", "32", "--no-progress"]
    args += ["--distill-games", "2000", "--distill-expert", "expectimax:depth=1", "--total-steps", "0"]
    args += ["--distill-opponents", "greedy,random", "--out", str(out)]
    process = start("train.py", *args, stdout=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and not (out / "distillation").is_dir():
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=120)
    name = signal.Signals(stop).name
    assert process.returncode == status, stderr
    assert stderr.strip().splitlines() == [
        f"{name} stopped the run at once (the distillation's labels and fit so far kept); "
        f"go on with: python train.py --out {out} --resume"
    ]
    assert outputs.read_run(out)["status"] == "interrupted"
    assert folder.resumed_settings(out, {}, command="train").distill_games == 2000
