"""The run lifecycle (strategic_reserve_env/training/run.py) as `train` and `train-az` stand on it: files of no run
never removed, a resume that would start over refused, everything a resume reads checked before the first write,
a run stopped between its claim and its settings resumable, .partial files of a killed write cleaned (issue 40)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import tracemalloc

import numpy as np
import pytest
import torch
from test_train import TINY

from strategic_reserve_env.commands import train
from strategic_reserve_env.files import outputs
from strategic_reserve_env.training import checkpoint, distillation, run

FINISHED = [*TINY, "--eval-every", "0", "--checkpoint-every", "512"]  # 1,024 steps, checkpoints at 512 and 1,024


def _files(out) -> dict:
    """Every file of `out` (links and FIFOs by their kind) and its bytes, the lock file included."""
    found = {}
    for path in sorted(out.rglob("*")):
        name = path.relative_to(out).as_posix()
        if path.is_symlink():
            found[name] = ("link", os.readlink(path))
        elif path.is_file():
            found[name] = path.read_bytes()
        else:
            found[name] = "folder" if path.is_dir() else "special"
    return found


def _refused(capsys, argv: list[str], out, status: int = 2) -> str:
    """`train ARGV` exits `status` with one line (after any warning of a checkpoint skipped), not a byte of
    `out` changed; the line."""
    before = _files(out)
    assert train.main(argv) == status
    lines = capsys.readouterr().err.splitlines()
    assert lines and lines[-1].startswith("error: ") and all(line.startswith("warning: ") for line in lines[:-1])
    assert _files(out) == before
    return lines[-1]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of 1,024 steps, checkpoints at 512 and 1,024."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert train.main([*FINISHED, "--out", str(out)]) == 0
    return out


@pytest.fixture
def copy(finished, tmp_path, capsys):
    """A copy of the finished run, to tamper with."""
    out = tmp_path / "run"
    shutil.copytree(finished, out, symlinks=True)
    capsys.readouterr()
    return out


def test_restart_on_a_folder_of_no_run_removes_nothing(tmp_path, capsys):
    """A user's model, evaluation files and TensorBoard logs in a folder no run made: `--restart` (and a fresh
    run) refuse in one line and leave every byte (main deleted them all)."""
    out = tmp_path / "mine"
    (out / "tb").mkdir(parents=True)
    (out / "tb" / "events").write_bytes(b"my logs")
    for name in ("model.safetensors", "model.zip", "evaluation.json", "evaluation.md"):
        (out / name).write_bytes(b"mine: " + name.encode())
    for options in (["--restart"], []):
        line = _refused(capsys, [*TINY, "--out", str(out), *options], out)
        assert "but no run (run.json): files of no run are never replaced or removed" in line


def test_restart_removes_what_its_own_run_made(copy, capsys):
    """On a folder that holds a run of this command, --restart removes that run's files (and only those) and
    starts over under a new run id."""
    (copy / "notes.txt").write_text("the user's own")
    old = outputs.read_run(copy)["run_id"]
    assert train.main([*FINISHED, "--total-steps", "512", "--out", str(copy), "--restart"]) == 0
    assert (copy / "notes.txt").read_text() == "the user's own"
    new = outputs.read_run(copy)
    assert new["run_id"] != old and new["status"] == "complete" and new["checkpoint"] == 512
    assert checkpoint.checkpoint_steps(copy) == [512] and not checkpoint.checkpoint_steps(copy, old)


@pytest.mark.parametrize("damage", ["checkpoints gone", "another run id"])
def test_a_resume_that_would_start_over_is_refused(copy, capsys, damage):
    """A complete run whose checkpoints are gone, or whose run.json names another run id: `--resume` refuses in
    one line and writes nothing (main trained from step 0 and replaced the model, exit 0)."""
    if damage == "checkpoints gone":
        shutil.rmtree(copy / "checkpoints")
    else:
        record = outputs.read_run(copy)
        (copy / "run.json").write_text(json.dumps(record | {"run_id": "0" * 32}))
    line = _refused(capsys, ["--out", str(copy), "--resume", "--total-steps", "2048"], copy)
    assert "wrote a checkpoint of step 1,024, but none of it is in" in line and "--restart to start over" in line


def test_a_run_stopped_between_its_claim_and_its_settings_says_what_to_type_and_a_fresh_run_takes_it(
    tmp_path, monkeypatch, capsys
):
    """A full disk at settings.json, right after run.json claimed the folder: one line, exit 1; then --resume
    says in one line that nothing was trained and what to type, and that fresh run takes the folder over (main:
    neither --resume nor a fresh run accepted it)."""
    out = tmp_path / "run"
    write_text = outputs.write_text

    def full_at_settings(path, text):
        if str(path).endswith("settings.json"):
            raise outputs.OutputLost(f"cannot write {path} (No space left on device)")
        write_text(path, text)

    monkeypatch.setattr(outputs, "write_text", full_at_settings)
    assert train.main([*FINISHED, "--total-steps", "512", "--out", str(out)]) == 1
    assert capsys.readouterr().err == f"error: cannot write {out / 'settings.json'} (No space left on device)\n"
    monkeypatch.setattr(outputs, "write_text", write_text)
    assert outputs.read_run(out)["status"] == "claimed"
    line = _refused(capsys, ["--out", str(out), "--resume"], out)
    assert "was stopped before its settings were written, so nothing was trained: start it again without" in line
    assert train.main([*FINISHED, "--total-steps", "512", "--out", str(out)]) == 0
    assert outputs.read_run(out)["status"] == "complete"


def _tamper_all(out, change) -> None:
    for steps in checkpoint.checkpoint_steps(out):
        path = checkpoint.checkpoint_path(out, steps)
        contents = torch.load(path, weights_only=True)
        change(contents)
        torch.save(contents, path)


def _nan_policy(contents):
    name = next(iter(contents["policy"]))
    contents["policy"][name] = torch.full_like(contents["policy"][name], float("nan"))


def _inf_adam(contents):
    state = next(iter(contents["optimizer"]["state"].values()))
    state["exp_avg_sq"] = torch.full_like(state["exp_avg_sq"], float("inf"))


def _short_starts(contents):
    contents["learner"]["last_episode_starts"] = contents["learner"]["last_episode_starts"][:3]


@pytest.mark.parametrize(
    "change, words",
    [
        (_nan_policy, "its policy holds NaN or infinite numbers"),
        (_inf_adam, "its optimizer holds NaN or infinite numbers"),
        (_short_starts, "last_episode_starts has 3 games, not its settings' n_envs"),
    ],
    ids=["nan-policy", "inf-adam", "short-episode-starts"],
)
def test_checkpoint_contents_are_checked_before_anything_is_written(copy, capsys, change, words):
    """NaN weights, infinite Adam moments, an episode-start vector of the wrong length in every checkpoint:
    refused in one line (a warning per checkpoint naming the fault), not a byte written (main marked the run
    failed, rewrote settings.json, added TensorBoard events and dumped a tensor)."""
    _tamper_all(copy, change)
    before = _files(copy)
    assert train.main(["--out", str(copy), "--resume", "--total-steps", "2048"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.splitlines()[-1].startswith("error: --resume: none of the 2 checkpoint(s)")
    assert _files(copy) == before


def _chunk(tmp_path, **changes):
    """A chunk of labels as the distillation writes it, with `changes` to its arrays."""
    from strategic_reserve_env.agents import distill
    from strategic_reserve_env.core.observation import OBSERVATION_SHAPE

    decisions = 64  # a member of a few kB, so that a byte 600 in is in its compressed data
    observations = np.random.default_rng(0).integers(-1, 2, (decisions, *OBSERVATION_SHAPE)).astype(np.int8)
    positions = distill.Positions(
        observations, np.ones((decisions, 36), bool), np.zeros((decisions, 36)), np.ones(decisions)
    )
    for name, value in changes.items():
        getattr(positions, name)[...] = value
    cursor = distill.Cursor(0, 2, np.zeros((2, 6), np.uint64))
    path = tmp_path / "labels_0000.npz"
    distillation.write_chunk(path, positions, cursor, ("a" * 32, "b" * 64))
    return path


@pytest.mark.parametrize("changes", [{"outcomes": np.nan}, {"outcomes": 3.0}, {"values": np.inf}])
def test_labels_that_are_not_numbers_in_range_are_refused(tmp_path, changes):
    """A chunk of labels with NaN or out-of-range outcomes, or infinite move values: one line naming the file
    (main fitted the network to them)."""
    path = _chunk(tmp_path, **changes)
    with pytest.raises(ValueError, match=f"{path}: its (outcomes|values)"):
        distillation.read_chunk(path, 2, 20)


@pytest.mark.parametrize("where", [40, 600], ids=["at-its-header", "in-its-data"])
def test_a_damaged_zip_member_is_one_line(tmp_path, where):
    """Bytes of a labels chunk's compressed member changed, where its .npy header is or in its data: a
    ValueError naming the file, not zipfile's or zlib's traceback."""
    path = _chunk(tmp_path)
    data = bytearray(path.read_bytes())
    start = data.index(b"observations.npy") + where
    data[start : start + 16] = bytes(16)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"{path}: (a damaged .npz member|not a readable .npz archive)"):
        distillation.read_chunk(path, 2, 20)


def test_output_names_that_cannot_be_written_are_refused_before_the_run(tmp_path, copy, capsys):
    """A folder at model.zip, a FIFO at evaluation.json, a folder at the name of a checkpoint the resumed run
    will write: one line naming it, before anything runs (main failed after the whole run)."""
    out = tmp_path / "fresh"
    (out / "model.zip").mkdir(parents=True)
    assert "model.zip exists and is not a file" in _refused(capsys, [*TINY, "--out", str(out)], out)
    (out / "model.zip").rmdir()
    os.mkfifo(out / "evaluation.json")
    assert "evaluation.json exists and is not a file" in _refused(capsys, [*TINY, "--out", str(out)], out)
    later = checkpoint.checkpoint_path(copy, 1536)
    later.mkdir()
    line = _refused(capsys, ["--out", str(copy), "--resume", "--total-steps", "1536"], copy)
    assert f"{later} is not a regular file, so the run cannot read or write its checkpoint there" in line


@pytest.mark.parametrize("steps", [1024, 512])
def test_a_checkpoint_that_is_a_link_is_refused_in_one_line(copy, tmp_path, capsys, steps):
    """The newest or an older checkpoint a link to a copy outside the folder: one line naming it, no warning
    before it (the probe: a warning skipping it, then an error), no byte changed here or outside."""
    link, outside = checkpoint.checkpoint_path(copy, steps), tmp_path / "outside.pt"
    shutil.move(link, outside)
    link.symlink_to(outside)
    before, bytes_outside = _files(copy), outside.read_bytes()
    assert train.main(["--out", str(copy), "--resume", "--total-steps", "1536"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: --resume: {link} is a symbolic link, so the run cannot read or write its checkpoint there; "
        "move it away"
    ]
    assert _files(copy) == before and outside.read_bytes() == bytes_outside


def test_a_signal_swallowed_in_the_final_evaluation_still_stops_the_run(tmp_path, monkeypatch, capsys):
    """SIGHUP during the final evaluation whose `StopNow` a finalizer swallows (reported to
    `sys.unraisablehook`, as jax's and torch's callbacks do): 129 and one line, not 0 (the probe:
    `train/SIGHUP@evaluation`); the folder resumes to completion."""
    from strategic_reserve_env.training import loop

    class Finalizer:
        def __del__(self):
            signal.raise_signal(signal.SIGHUP)  # its handler runs here, inside __del__: the exception is swallowed

    real = loop.final_evaluation

    def evaluation(*args):
        Finalizer()
        return real(*args)

    monkeypatch.setattr(loop, "final_evaluation", evaluation)
    out = tmp_path / "run"
    assert train.main([*FINISHED, "--out", str(out)]) == 128 + signal.SIGHUP
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("SIGHUP stopped the run at once (checkpoint of step 1,024 kept)")
    assert outputs.read_run(out)["status"] == "interrupted"
    monkeypatch.setattr(loop, "final_evaluation", real)
    assert train.main(["--out", str(out), "--resume"]) == 0 and outputs.read_run(out)["status"] == "complete"


def test_a_fresh_run_never_writes_through_a_link(tmp_path, capsys):
    """tb/ a link out of a new folder: refused in one line, nothing written through it (main wrote its
    TensorBoard events there)."""
    out, outside = tmp_path / "run", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "tb").symlink_to(outside, target_is_directory=True)
    _refused(capsys, [*TINY, "--out", str(out)], out)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("value, words", [(8, '"net_arch" must be tuple[int, ...], got 8'), (None, '"net_arch"')])
def test_a_settings_field_of_the_wrong_type_is_one_line_naming_the_file(copy, capsys, value, words):
    """settings.json with "net_arch": 8 or null: one line naming settings.json and the field (main: a
    TypeError traceback)."""
    settings = json.loads((copy / "settings.json").read_text())
    (copy / "settings.json").write_text(json.dumps(settings | {"net_arch": value}))
    line = _refused(capsys, ["--out", str(copy), "--resume"], copy)
    assert line.startswith(f"error: --resume: {copy / 'settings.json'}: ") and words in line


def test_a_full_disk_at_the_lock_file_is_one_line_and_changes_nothing(copy, monkeypatch, capsys):
    """ENOSPC while the lock file takes the holder's command line: one line naming it, exit 1, the folder as it
    was (main: an OSError naming no file)."""
    real = os.pwrite

    def full(descriptor, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    line = _refused(capsys, ["--out", str(copy), "--resume"], copy, status=1)
    monkeypatch.setattr(os, "pwrite", real)
    assert line == f"error: cannot write {copy / outputs.LOCK_FILE} (No space left on device)"


def test_partial_files_of_a_killed_write_go_with_the_next_resume(copy, capsys):
    """`.partial` files a SIGKILL left (outputs.atomic's temporary names) go when the run resumes, those of
    another run's checkpoint stay (main left them all)."""
    run_id, other = outputs.read_run(copy)["run_id"], "f" * 32
    ours = [copy / ".model.zip.x1y2.partial", copy / "checkpoints" / f".checkpoint_1536-{run_id}.pt.abc.partial"]
    theirs = copy / "checkpoints" / f".checkpoint_1536-{other}.pt.abc.partial"
    for path in [*ours, theirs]:
        path.write_bytes(b"half")
    assert train.main(["--out", str(copy), "--resume", "--total-steps", "1536"]) == 0
    assert not any(path.exists() for path in ours) and theirs.exists()


def test_a_resume_checks_the_checkpoint_settings_once(copy, monkeypatch, capsys):
    """`check_resumable` runs once per resume (main ran it twice)."""
    from strategic_reserve_env.training import loop

    calls = []
    real = loop.check_resumable
    monkeypatch.setattr(loop, "check_resumable", lambda *args: calls.append(args) or real(*args))
    assert train.main(["--out", str(copy), "--resume", "--total-steps", "1536"]) == 0
    assert len(calls) == 1


def test_progress_trimming_streams_the_file(tmp_path):
    """A progress file of 32 MiB (one line of junk among lines of iterations): trimmed to the checkpoint's
    iteration a line at a time, within a small fraction of the file's size in memory (main's train-az read
    it whole: 1 GB took 10.8 GB)."""
    path = tmp_path / "progress.jsonl"
    with open(path, "wb") as handle:
        for iteration in (1, 2, 3):
            handle.write(json.dumps({"iteration": iteration}).encode() + b"\n")
        handle.write(b"x" * (32 << 20) + b"\n")
        handle.write(b'{"iteration": 4}\n')
    tracemalloc.start()
    run.trim_progress(path, 2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert path.read_text().splitlines() == ['{"iteration": 1}', '{"iteration": 2}']
    assert peak < 4 * run.MAX_PROGRESS_LINE + (1 << 20)


def test_a_full_disk_in_the_tensorboard_writer_is_one_line(tmp_path, monkeypatch, capsys):
    """ENOSPC inside SB3's TensorBoard writer: one line naming tb/, exit 1, run.json says failed (main: a
    traceback)."""
    from stable_baselines3.common.logger import TensorBoardOutputFormat

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TensorBoardOutputFormat, "write", full)
    out = tmp_path / "run"
    assert train.main([*FINISHED, "--out", str(out)]) == 1
    assert capsys.readouterr().err == f"error: cannot write {out / 'tb'} (No space left on device)\n"
    assert outputs.read_run(out)["status"] == "failed"
