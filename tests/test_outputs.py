"""Output folders (`outputs.py`): where outputs go and who may write them, against hostile surroundings: an agent
that changes directory at import, a `.lock` that is a link or not a plain file, paths that are empty or not UTF-8.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from strategic_reserve_env.commands.evaluate import main
from strategic_reserve_env.files import outputs

CHDIR_AGENT = """
import os
os.makedirs({elsewhere!r}, exist_ok=True)
os.chdir({elsewhere!r})
from strategic_reserve_env.agents import RandomAgent
agent = RandomAgent()
"""


def run_command(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "strategic_reserve_env", *args], capture_output=True, cwd=cwd, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["evaluate", "benchmark"])
def test_an_agent_that_changes_directory_at_import_does_not_move_the_outputs(tmp_path, command):
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "chdir_agent.py").write_text(CHDIR_AGENT.format(elsewhere=str(elsewhere)))
    if command == "evaluate":
        args = ["evaluate", "random", "chdir_agent.py:agent", "--games", "2", "--batch", "2"]
        written = "results.json"
    else:
        args = ["benchmark", "chdir_agent.py:agent", "--benchmark-games", "2"]
        written = "benchmark.json"
    result = run_command(*args, "--no-progress", "--out", "results/mine", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads((tmp_path / "results" / "mine" / written).read_text())["complete"] is True
    assert not (elsewhere / "results").exists()


def test_check_out_gives_an_absolute_path_resolved_before_any_user_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = outputs.check_out("runs/a")
    assert out == tmp_path / "runs" / "a" and out.is_absolute()


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me")
    (out / outputs.LOCK_FILE).symlink_to(precious)
    assert main(["random", "greedy", "--games", "2", "--no-progress", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "link" in error[0] and ".lock" in error[0], error
    assert precious.read_text() == "keep me"
    with pytest.raises(outputs.OutputBusyError, match="link"):
        with outputs.lock(out):
            pass
    assert precious.read_text() == "keep me"


@pytest.mark.parametrize("kind", ["directory", "fifo", "hard link"])
def test_a_lock_that_is_not_a_plain_file_of_its_own_is_refused(tmp_path, kind):
    out = tmp_path / "out"
    out.mkdir()
    lock_path = out / outputs.LOCK_FILE
    if kind == "directory":
        lock_path.mkdir()
    elif kind == "fifo":
        os.mkfifo(lock_path)
    else:
        other = tmp_path / "other.txt"
        other.write_text("someone else's")
        os.link(other, lock_path)
    with pytest.raises(outputs.OutputBusyError, match=r"\.lock"):
        with outputs.lock(out):
            pass
    if kind == "hard link":
        assert (tmp_path / "other.txt").read_text() == "someone else's"


def test_a_lock_made_in_a_fresh_folder_still_works(tmp_path):
    with outputs.lock(tmp_path / "new") as held:
        assert (held.directory / outputs.LOCK_FILE).is_file()
        (held.directory / "x").write_text("x")
    with outputs.lock(tmp_path / "new"):
        pass


@pytest.mark.slow
@pytest.mark.parametrize("command", [["evaluate", "random", "greedy", "--games", "2"], ["benchmark", "random"]])
def test_an_empty_out_is_refused(tmp_path, command):
    result = run_command(*command, "--no-progress", "--out", "", cwd=tmp_path)
    assert result.returncode == 2
    error = result.stderr.decode().strip().splitlines()
    assert len(error) == 1 and "--out" in error[0] and "empty" in error[0], error
    assert list(tmp_path.iterdir()) == []


def test_check_out_refuses_an_empty_path():
    with pytest.raises(ValueError, match="--out '': an empty path"):
        outputs.check_out("")


@pytest.mark.slow
def test_a_non_utf8_out_is_refused_with_one_line(tmp_path):
    name = b"res\xff"
    result = run_command(
        b"evaluate", b"random", b"greedy", b"--games", b"2", b"--no-progress", b"--out", name, cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr.decode(errors="replace")
    error = result.stderr.decode(errors="replace").strip().splitlines()
    assert len(error) == 1 and "UTF-8" in error[0], error
    assert list(tmp_path.iterdir()) == []


def test_the_lock_survives_a_command_line_that_is_not_utf8(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["evaluate.py", os.fsdecode(b"agent\xff.py:act")])
    with outputs.lock(tmp_path / "out"):
        holder = (tmp_path / "out" / outputs.LOCK_FILE).read_bytes()
    assert holder.startswith(f"pid {os.getpid()}".encode())


def test_a_refusal_under_the_lock_leaves_the_lock_file_as_it_was(tmp_path):
    """A command refused while it holds the folder's lock (a resume below the steps done, another command's
    folder) writes nothing, its lock file included: the old holder's text stays, and a lock file it created
    goes; a block that ends well leaves its own holder's line."""
    out = tmp_path / "run"
    out.mkdir()
    lock = out / outputs.LOCK_FILE
    lock.write_bytes(b"pid 1: an earlier run")
    with pytest.raises(ValueError, match="refused"), outputs.lock(out):
        assert lock.read_bytes().startswith(f"pid {os.getpid()}: ".encode())
        raise ValueError("refused")
    assert lock.read_bytes() == b"pid 1: an earlier run"
    lock.unlink()
    (out / "kept").write_text("a result")
    with pytest.raises(ValueError, match="refused"), outputs.lock(out):
        raise ValueError("refused")
    assert sorted(path.name for path in out.iterdir()) == ["kept"]
    with outputs.lock(out):
        pass
    assert lock.read_bytes().startswith(f"pid {os.getpid()}: ".encode())


def test_a_block_that_wrote_nothing_leaves_the_lock_file_as_found(tmp_path):
    """`Lock.untouched` (a resume of a complete run): the old holder's text and times come back, and a lock file
    the block's lock created goes again, as after a refusal; the next lock still works."""
    out = tmp_path / "run"
    out.mkdir()
    lock = out / outputs.LOCK_FILE
    lock.write_bytes(b"pid 1: an earlier run")
    os.utime(lock, ns=(10**18, 10**18))
    with outputs.lock(out) as held:
        assert lock.read_bytes().startswith(f"pid {os.getpid()}: ".encode())
        held.untouched = True
    assert lock.read_bytes() == b"pid 1: an earlier run" and lock.stat().st_mtime_ns == 10**18
    lock.unlink()
    (out / "kept").write_text("a result")
    with outputs.lock(out) as held:
        held.untouched = True
    assert sorted(path.name for path in out.iterdir()) == ["kept"]
