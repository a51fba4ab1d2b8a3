"""train-az end to end on a tiny configuration (strategic_reserve_env/training/az.py, its command
commands/train_az.py): it trains, stops on SIGINT / SIGTERM after the current iteration, resumes by its folder
alone to the same network, refuses what it must (a changed setting, another command's folder, a damaged
checkpoint, a full disk) in one line writing nothing, and its file loads safely and plays (agents/az_net.py).

Every run here has the same sizes, so the process compiles the iteration once (the minute this file takes)."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mctx")
pytest.importorskip("optax")
pytest.importorskip("pgx")

from strategic_reserve_env.agents import az_net, load_agent  # noqa: E402
from strategic_reserve_env.commands import train, train_az  # noqa: E402
from strategic_reserve_env.core import engine  # noqa: E402
from strategic_reserve_env.core.board import bitboards_to_array  # noqa: E402
from strategic_reserve_env.core.config import Config  # noqa: E402
from strategic_reserve_env.core.observation import planes  # noqa: E402
from strategic_reserve_env.files import outputs  # noqa: E402
from strategic_reserve_env.training import az  # noqa: E402

# the smallest sizes, --hidden not the default (a resume must read it back from the folder)
TINY = ["--games", "4", "--steps", "6", "--simulations", "2", "--hidden", "8", "--updates", "2", "--seed", "3"]
PROG = "strategic-reserve train-az"


def _main(*argv: str) -> tuple[int, str, str]:
    """train-az in this process (the compiled iteration is shared): exit status, stdout, stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = train_az.main(list(argv), PROG)
    return status, stdout.getvalue(), stderr.getvalue()


def _stopped_by(signum: int, out: Path, at: int = 1, times: int = 1) -> tuple[int, str, str]:
    """A run of 2 iterations sent `signum` `times` times during its iteration `at` (as a Ctrl-C or a
    kill would)."""
    iterate = az.Trainer.iterate

    def signalled(self):
        stats = iterate(self)
        if self.iteration == at:
            for _ in range(times):
                os.kill(os.getpid(), signum)
        return stats

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(az.Trainer, "iterate", signalled)
        return _main(*TINY, "--iterations", "2", "--out", str(out))


def _files(out: Path) -> dict[str, bytes]:
    """Every file of the folder but its lock, with its contents (to see that a refusal wrote nothing)."""
    return {
        str(path.relative_to(out)): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file() and path.name != outputs.LOCK_FILE
    }


def _network(out: Path) -> dict[str, np.ndarray]:
    return az_net.load(out / az.MODEL)[0]


def _progress(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / az.PROGRESS).read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run straight through (2 iterations); stopped by SIGINT and by SIGTERM after iteration 1; the SIGINT one
    resumed by `--out DIR --resume` alone, after a progress line of an iteration its checkpoint does not
    hold was added (a run killed between the two writes)."""
    root = tmp_path_factory.mktemp("az")
    whole = _main(*TINY, "--iterations", "2", "--out", str(root / "whole"))
    stopped = {signum: _stopped_by(signum, root / signum.name) for signum in (signal.SIGINT, signal.SIGTERM)}
    with open(root / "SIGINT" / az.PROGRESS, "a") as progress:
        progress.write(json.dumps({"iteration": 2, "policy_loss": 9.0}) + "\n")
    resumed = _main("--out", str(root / "SIGINT"), "--resume")
    return root, whole, stopped, resumed


@pytest.mark.slow
def test_a_run_says_what_it_does_and_where_its_model_is(runs):
    root, (status, stdout, stderr), _, _ = runs
    out = root / "whole"
    assert status == 0 and stderr == ""
    lines = stdout.splitlines()
    assert lines[0].startswith("iteration 1: compiling")  # before the slow first iteration, not after it
    assert lines[-1].startswith(f"wrote {out / az.MODEL} (agent spec mctx:net={out / az.MODEL})")
    progress = _progress(out)
    assert [p["iteration"] for p in progress] == [1, 2] and all(np.isfinite(p["policy_loss"]) for p in progress)
    assert progress[0]["value_targets"] == 0  # 6 decisions: no game has ended, so no value target
    for record, line in zip(progress, lines[1:3], strict=True):
        assert line.startswith(f"iteration {record['iteration']}/2: policy loss")
        assert ("no value targets" in line) == (record["value_loss"] is None) == (record["value_targets"] == 0)
        assert "value loss 0.0000" not in line
    run = outputs.read_run(out)
    assert run["command"] == "train-az" and run["status"] == "complete"
    saved = json.loads((out / "settings.json").read_text())
    assert saved["hidden"] == [8] and saved["iterations"] == 2 and saved["simulations"] == 2
    assert any(path.name.startswith("events") for path in (out / "tb").iterdir())
    network, about = az_net.load(out / az.MODEL)
    assert about["about"]["iteration"] == 2 and about["hidden"] == [8]
    fresh = az_net.init(__import__("jax").random.key(0), [8])
    assert not np.array_equal(network["policy.weight"], fresh["policy.weight"])


@pytest.mark.slow
@pytest.mark.parametrize("signum, exit_status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_after_the_iteration_with_its_checkpoint(runs, signum, exit_status):
    root, _, stopped, _ = runs
    out, (status, stdout, stderr) = root / signum.name, stopped[signum]
    assert status == exit_status
    assert stderr.strip().splitlines() == [
        f"{signum.name} stopped the run after iteration 1 (checkpoint of iteration 1 kept); "
        f"go on with: {PROG} --out {out} --resume"
    ]
    assert "interrupted" not in stdout and "iteration 1/2" in stdout
    run = outputs.read_run(out)
    assert run["status"] in ("interrupted", "complete")  # the SIGINT run was resumed since
    if signum == signal.SIGTERM:
        assert run["stopped"] == {"signal": "SIGTERM", "iteration": 1}
        assert [p.get("iteration") for p in _progress(out)] == [1, 1] and _progress(out)[1]["stopped"] == "SIGTERM"


@pytest.mark.slow
def test_a_second_signal_stops_at_once_and_names_the_iteration_its_checkpoint_holds(tmp_path):
    """Two Ctrl-C during iteration 2: the run stops inside it, before its writes; the line, run.json and
    progress.jsonl name iteration 1, whose checkpoint the folder holds, and --resume goes on from there."""
    out = tmp_path / "run"
    status, _, stderr = _stopped_by(signal.SIGINT, out, at=2, times=2)
    assert status == 130
    assert stderr.strip().splitlines() == [
        f"SIGINT stopped the run at once (checkpoint of iteration 1 kept); go on with: {PROG} --out {out} --resume"
    ]
    assert outputs.read_run(out)["stopped"] == {"signal": "SIGINT", "iteration": 1}
    assert [(p["iteration"], "stopped" in p) for p in _progress(out)] == [(1, False), (1, True)]
    with np.load(out / az.CHECKPOINT) as data:
        assert int(data["iteration"]) == 1


def test_a_signal_before_the_run_starts_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    check_out = outputs.check_out

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # as a Ctrl-C while the command checks its settings and folder
        return check_out(*args, **kwargs)

    monkeypatch.setattr(outputs, "check_out", signalled)
    out = tmp_path / "run"
    assert _main(*TINY, "--out", str(out)) == (130, "", "SIGINT: train-az stopped at once\n")
    assert not out.exists()


@pytest.mark.slow
def test_restart_starts_over_in_the_folder_of_a_train_az_run(done):
    old = outputs.read_run(done)["run_id"]
    status, stdout, stderr = _main(*TINY, "--iterations", "1", "--out", str(done))
    assert status == 2 and f"--out {done} holds run {old} (train-az" in stderr
    status, stdout, stderr = _main(*TINY, "--iterations", "1", "--out", str(done), "--restart")
    assert status == 0, stderr
    assert outputs.read_run(done)["run_id"] != old and [p["iteration"] for p in _progress(done)] == [1]


@pytest.mark.slow
def test_resume_by_folder_alone_gives_the_network_of_the_run_that_never_stopped(runs):
    root, _, _, (status, stdout, stderr) = runs
    out = root / "SIGINT"
    assert status == 0, stderr
    assert stdout.splitlines()[0] == "resuming from iteration 1"  # the iteration the stop line named
    whole, resumed = _network(root / "whole"), _network(out)
    assert whole.keys() == resumed.keys() and all(np.array_equal(whole[name], resumed[name]) for name in whole)
    # the added line of iteration 2 (not in the checkpoint) went; the stop line and the redone iteration stay
    assert [(p["iteration"], "stopped" in p) for p in _progress(out)] == [(1, False), (1, True), (2, False)]
    assert _progress(out)[2]["policy_loss"] != 9.0
    assert outputs.read_run(out)["status"] == "complete"


@pytest.fixture
def done(runs, tmp_path) -> Path:
    """A copy of the finished run's folder."""
    copy = tmp_path / "done"
    shutil.copytree(runs[0] / "whole", copy)
    return copy


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--simulations", "3"], "--simulations defines the run, which was started with --simulations 2, not 3"),
        (["--seed", "0"], "--seed defines the run, which was started with --seed 3, not 0"),
        (["--learning-rate", "0.5"], "--learning-rate defines the run"),
        (["--hidden", "8", "8"], "--hidden defines the run, which was started with --hidden 8, not 8 8"),
        (["--iterations", "1"], "--iterations 1 is below the 2 iterations already done"),
    ],
)
def test_a_resume_that_changes_the_run_is_refused_in_one_line_writing_nothing(done, argv, message):
    before = _files(done)
    status, stdout, stderr = _main("--out", str(done), "--resume", *argv)
    assert status == 2 and stdout == ""
    assert stderr.count("\n") == 1 and message in stderr, stderr
    assert _files(done) == before


@pytest.mark.slow
def test_a_resume_may_train_further(done):
    status, stdout, _ = _main("--out", str(done), "--resume", "--iterations", "3")
    lines = stdout.splitlines()
    assert status == 0 and lines[0] == "resuming from iteration 2" and lines[2].startswith("iteration 3/3: ")
    assert [p["iteration"] for p in _progress(done)] == [1, 2, 3]
    assert json.loads((done / "settings.json").read_text())["iterations"] == 3


def _rewritten_checkpoint(out: Path, **changes) -> None:
    with np.load(out / az.CHECKPOINT) as data:
        arrays = {name: data[name] for name in data.files}
    for name, change in changes.items():
        arrays[name.replace("__", "/")] = change(arrays[name.replace("__", "/")])
    np.savez(out / az.CHECKPOINT, **arrays)


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes, message",
    [
        ({"iteration": lambda a: np.asarray(-5, dtype=np.int64)}, "iteration -5 is not a count of iterations done"),
        ({"params__policy.weight": lambda a: np.full_like(a, np.nan)}, "params/policy.weight holds NaN"),
        ({"opt__1": lambda a: np.full_like(a, np.inf) if a.dtype.kind == "f" else a}, "holds NaN or infinite"),
    ],
    ids=["iteration-5", "nan-weights", "inf-optimiser"],
)
def test_a_damaged_checkpoint_is_refused_before_use(done, changes, message):
    _rewritten_checkpoint(done, **changes)
    before = _files(done)
    status, _, stderr = _main("--out", str(done), "--resume", "--iterations", "3")
    assert status == 2 and stderr.count("\n") == 1 and message in stderr, stderr
    assert str(done / az.CHECKPOINT) in stderr
    assert _files(done) == before


@pytest.mark.slow
def test_resume_of_a_complete_run_says_so_and_writes_nothing(done):
    """`--resume` alone on a finished run: one line saying it is complete (and no "resuming from"), exit 0, not a
    file rewritten (the first run-kit train-az rewrote settings.json, run.json and the model, and added an event
    file)."""
    before = _files(done)
    status, stdout, stderr = _main("--out", str(done), "--resume")
    assert status == 0 and f"the run in {done} is complete" in stderr, stderr
    assert "resuming from" not in stdout + stderr  # it printed "resumed at iteration 3" first (issue 41)
    assert _files(done) == before


@pytest.mark.slow
def test_commands_refuse_each_others_folders(done, tmp_path, capsys):
    """train-az on a train run's folder, train on a train-az run's folder: one line each, nothing written."""
    ppo = tmp_path / "ppo"
    ppo.mkdir()
    outputs.write_run(ppo, outputs.new_run_id(), "train.py")
    (ppo / "settings.json").write_text(json.dumps({"total_steps": 1024}))
    (ppo / "model.safetensors").write_bytes(b"a train run's model")
    before = _files(ppo)
    refusal = f"--out {ppo} holds run {outputs.read_run(ppo)['run_id']} of train.py, not of train-az"
    for argv in ([*TINY, "--out", str(ppo)], ["--out", str(ppo), "--resume"]):
        status, _, stderr = _main(*argv)
        assert status == 2 and stderr.count("\n") == 1 and refusal in stderr, stderr
        assert _files(ppo) == before
    before = _files(done)
    refusal = f"--out {done} holds run {outputs.read_run(done)['run_id']} of train-az, not of train"
    for argv in (["--distill-games", "0", "--total-steps", "64"], ["--resume"]):
        assert train.main(["--out", str(done), *argv]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and refusal in error, error
        assert _files(done) == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed", str(2**70)], "--seed must be in [0, 4294967295], got 1180591620717411303424"),
        (["--games", "20000000"], "more than this machine's"),
        (["--hidden", "0"], "--hidden needs one or more widths in 1..4096"),
        (["--updates", "5"], "--updates 5 must divide games x steps = 24"),
        (["--learning-rate", "nan"], "--learning-rate must be in (0, 1], got nan"),
        (["--dirichlet-fraction", "1.5"], "--dirichlet-fraction must be in [0, 1], got 1.5"),
    ],
)
def test_bad_settings_are_one_line_before_anything_is_written(tmp_path, argv, message):
    out = tmp_path / "run"
    status, stdout, stderr = _main(*TINY, "--out", str(out), *argv)
    assert status == 2 and stdout == "" and stderr.count("\n") == 1 and message in stderr, stderr
    assert not out.exists()


def test_help_shows_the_defaults_in_plain_text(capsys):
    with pytest.raises(SystemExit):
        train_az.main(["--help"], PROG)
    shown = capsys.readouterr().out
    assert "``" not in shown and ":class:" not in shown
    assert "(default: 100)" in shown and "(default: 128 128)" in shown and "(default: runs/az)" in shown


@pytest.mark.slow
def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """The checkpoint's write fails as on a full disk: one line naming the file, exit 1 (a file not written, not
    a refusal), run.json says failed."""

    def full_disk(handle, **arrays):
        handle.write(b"PK")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(az.np, "savez", full_disk)
    out = tmp_path / "run"
    status, _, stderr = _main(*TINY, "--iterations", "1", "--out", str(out))
    assert status == 1 and stderr.count("\n") == 1, stderr
    assert "No space left on device" in stderr and str(out / az.CHECKPOINT) in stderr
    assert outputs.read_run(out)["status"] == "failed" and not (out / az.CHECKPOINT).exists()


@pytest.mark.slow
def test_the_model_plays_with_search_and_alone(runs):
    model = runs[0] / "whole" / az.MODEL
    config = Config()
    state = engine.roll(engine.init(config, 3), np.array([0, 7, 20]))
    observations, masks = planes(state, state.to_move), bitboards_to_array(state.legal)
    for simulations in (0, 2):
        agent = load_agent(f"mctx:net={model},simulations={simulations}")
        actions = agent.act(observations, masks, np.random.default_rng(0))
        assert masks[np.arange(3), actions].all()
        assert agent.name.endswith(f"simulations={simulations}")


@pytest.mark.slow
def test_bad_model_files_are_refused_before_their_tensors_load(runs, tmp_path):
    data = (runs[0] / "whole" / az.MODEL).read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(data[:-10])
    with pytest.raises(az_net.NetFileError, match="byte ranges"):
        az_net.load(truncated)
    # a description claiming a huge network: refused from the header, nothing of that size allocated
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    description = json.loads(header["__metadata__"][az_net.METADATA_KEY])
    description["hidden"] = [4096, 4096]
    header["__metadata__"][az_net.METADATA_KEY] = json.dumps(description)
    text = json.dumps(header).encode()
    huge = tmp_path / "huge.safetensors"
    huge.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + length :])
    with pytest.raises(az_net.NetFileError, match="do not fit the described network"):
        az_net.load(huge)
    with pytest.raises(ValueError, match="no such network file"):
        load_agent(f"mctx:net={tmp_path / 'missing.safetensors'}")


# -- the run lifecycle (training/run.py, issue 40) ---------------------------------------------------------------


def _refused_here(out: Path, *argv: str) -> str:
    """train-az ARGV: exit 2, one line, not a byte of `out` changed; the line."""
    before = _files(out)
    status, stdout, stderr = _main(*argv)
    assert status == 2 and stdout == "" and stderr.count("\n") == 1, stderr
    assert _files(out) == before
    return stderr


@pytest.mark.slow
def test_a_checkpoint_of_another_run_or_other_settings_is_refused(done):
    """checkpoint.npz carries its run id and settings digest: under another run's run.json, or with a
    learning rate changed in settings.json, --resume refuses it in one line (main trained on silently)."""
    run = json.loads((done / "run.json").read_text())
    (done / "run.json").write_text(json.dumps(run | {"run_id": "0" * 32}))
    line = _refused_here(done, "--out", str(done), "--resume", "--iterations", "3")
    assert f"{done / az.CHECKPOINT} belongs to run {run['run_id']}, not to run {'0' * 32}" in line
    (done / "run.json").write_text(json.dumps(run))
    settings = json.loads((done / "settings.json").read_text())
    (done / "settings.json").write_text(json.dumps(settings | {"learning_rate": 0.5}))
    assert "was made with other settings" in _refused_here(done, "--out", str(done), "--resume", "--iterations", "3")


@pytest.mark.slow
def test_a_resume_without_its_checkpoint_is_refused_and_keeps_the_progress(done):
    """A complete run whose checkpoint.npz is gone: --resume refuses in one line (main trained from iteration 0
    and wiped progress.jsonl)."""
    (done / az.CHECKPOINT).unlink()
    line = _refused_here(done, "--out", str(done), "--resume", "--iterations", "3")
    assert "wrote a checkpoint of iteration 2, but none of it is in" in line


def test_restart_never_removes_files_of_no_run(tmp_path):
    """A folder with a model, a progress file and logs but no run.json: --restart refuses and removes nothing
    (main deleted them)."""
    out = tmp_path / "mine"
    (out / az.LOGS).mkdir(parents=True)
    (out / az.LOGS / "events").write_bytes(b"mine")
    (out / az.MODEL).write_bytes(b"my model")
    (out / az.PROGRESS).write_text('{"iteration": 1}\n')
    assert "files of no run are never replaced" in _refused_here(out, *TINY, "--out", str(out), "--restart")


def test_a_progress_file_that_is_a_link_is_refused_before_a_fresh_run(tmp_path):
    out, outside = tmp_path / "run", tmp_path / "outside.jsonl"
    out.mkdir()
    outside.write_text("theirs\n")
    (out / az.PROGRESS).symlink_to(outside)
    _refused_here(out, *TINY, "--out", str(out))
    assert outside.read_text() == "theirs\n"


@pytest.mark.slow
def test_a_settings_field_of_the_wrong_type_names_the_file_and_field(done):
    """settings.json with "hidden": 8: one line naming the file and the field (main: a TypeError traceback)."""
    settings = json.loads((done / "settings.json").read_text())
    (done / "settings.json").write_text(json.dumps(settings | {"hidden": 8}))
    line = _refused_here(done, "--out", str(done), "--resume")
    assert f'{done / "settings.json"}: "hidden" must be tuple[int, ...], got 8' in line
