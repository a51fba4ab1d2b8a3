"""train.py: smoke test, settings errors, exact resume (after a kill, past a damaged checkpoint), progress."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict

import pytest
import torch
from safetensors.torch import load_file

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.commands import train
from strategic_reserve_env.files import outputs
from strategic_reserve_env.training import checkpoint, folder
from strategic_reserve_env.training.settings import TrainSettings

from conftest import REPO, as_from_a_shell

TINY = [
    "--n-envs",
    "32",
    "--n-steps",
    "16",
    "--batch-size",
    "256",
    "--n-epochs",
    "1",
    "--net-arch",
    "32",
    "32",
    "--eval-games",
    "20",
    "--final-eval-games",
    "20",
    "--snapshot-every",
    "1024",
    "--distill-games",
    "0",  # PPO alone: tests/test_distill.py runs the distillation
    "--total-steps",
    "1024",  # tests that train give their own
    "--no-progress",
]
ROLLOUT = 32 * 16  # steps per PPO update with TINY


def _train(*args: str, timeout: float = 240, progress: bool = False) -> subprocess.CompletedProcess:
    settings = TINY if not progress else [arg for arg in TINY if arg != "--no-progress"]
    return subprocess.run(
        [sys.executable, "train.py", *settings, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


@pytest.mark.slow
def test_smoke_writes_model_logs_and_evaluation(tmp_path):
    out = tmp_path / "run"
    result = _train(
        "--total-steps", "3000", "--eval-every", "1500", "--checkpoint-every", "1024", "--out", str(out), progress=True
    )
    assert result.returncode == 0, result.stderr
    assert "env steps/s" in result.stdout and "% of the time in the environment" in result.stdout
    split = result.stdout.split("wall time: ")[1].splitlines()[0]
    shares = [float(part.rsplit(" ", 2)[1]) for part in split.split(", ")]
    assert len(shares) == 4 and all(share >= 0 for share in shares), split  # the parts nest as described
    agent = load_agent(f"ppo:{out / 'model.safetensors'}")
    assert agent.name == f"ppo:{out / 'model.safetensors'}"
    assert (out / "model.zip").exists()  # SB3's own format, for SB3 users (loads only with ,trust=pickle)
    assert list((out / "tb").rglob("events.out.tfevents.*"))
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert [p["b"] for p in evaluation["pairings"]] == ["random", "greedy"]
    assert all(p["games"] == 20 for p in evaluation["pairings"])
    assert evaluation["pairings"][0]["a"] == f"ppo:{out / 'model.safetensors'}"
    assert (out / "evaluation.md").read_text().startswith("# Tournament")
    assert "vs greedy" in result.stdout  # the periodic evaluation ran (progress: on stdout)
    assert json.loads((out / "settings.json").read_text())["total_steps"] == 3000
    # stderr is a pipe: progress comes as plain lines, not as a bar redrawn with carriage returns
    assert "\r" not in result.stderr
    assert "[train] 3,072/3,000 steps (102.4 %)" in result.stderr


@pytest.mark.slow
def test_resume_after_a_kill(tmp_path, capsys):
    out = tmp_path / "run"
    process = subprocess.Popen(
        [
            sys.executable,
            "train.py",
            *TINY,
            "--total-steps",
            "200000",
            "--eval-every",
            "0",
            "--checkpoint-every",
            "1024",
            "--out",
            str(out),
        ],
        cwd=REPO,
        preexec_fn=as_from_a_shell,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 180
    while time.time() < deadline and len(checkpoint.checkpoint_steps(out)) < 2:
        time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoints = checkpoint.checkpoint_steps(out)
    assert checkpoints, "no checkpoint was written before the kill"
    assert not (out / "model.safetensors").exists()
    resume = ["--total-steps", str(checkpoints[-1] + 2048), "--checkpoint-every", "1024", "--out", str(out), "--resume"]
    assert train.main([*TINY, "--eval-every", "0", *resume]) == 0  # in this process: the kill was the command's
    stdout = capsys.readouterr().out
    assert f"resuming from step {checkpoints[-1]:,}" in stdout
    trained = int(stdout.split("trained ")[1].split(" steps")[0].replace(",", ""))
    assert trained == 2048  # only the remainder was trained
    assert (out / "model.safetensors").exists()


def _final_state(out) -> tuple[dict, dict]:
    """The policy tensors of `out` and the contents of its last checkpoint."""
    last = torch.load(checkpoint.checkpoint_path(out, checkpoint.checkpoint_steps(out)[-1]), weights_only=True)
    return load_file(out / "model.safetensors"), last


@pytest.mark.slow
def test_a_resumed_run_is_the_run_that_never_stopped(tmp_path, capsys):
    """2,560 steps in one go against 1,536 steps, the last checkpoint damaged, and a resume to 2,560: the
    resumed run falls back to the 1,024-step checkpoint with a warning, then plays the same games (dice, seats,
    opponents), makes the same updates and ends with the same weights, bit for bit. The three runs are made in
    this process, one after the other (what a run draws is its own: no run leans on the process's state)."""
    common = [*TINY, "--eval-every", "0", "--checkpoint-every", "512", "--seed", "3"]
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert train.main([*common, "--total-steps", "2560", "--out", str(whole)]) == 0
    assert train.main([*common, "--total-steps", "1536", "--out", str(parts)]) == 0
    assert checkpoint.checkpoint_steps(parts) == [1024, 1536]  # the last two are kept; the last one after the run
    damaged = checkpoint.checkpoint_path(parts, 1536)
    damaged.write_bytes(damaged.read_bytes()[:5000])  # as a kill or a full disk would leave it
    capsys.readouterr()
    assert train.main([*common, "--total-steps", "2560", "--out", str(parts), "--resume"]) == 0
    result = capsys.readouterr()
    assert f"warning: --resume: skipping {damaged}: it does not load" in result.err
    assert "resuming from step 1,024 with 2 snapshot(s)" in result.out
    assert "trained 1,536 steps" in result.out

    (weights, end), (resumed_weights, resumed_end) = _final_state(whole), _final_state(parts)
    assert end["steps"] == resumed_end["steps"] == 2560
    assert end["learner"]["n_updates"] == resumed_end["learner"]["n_updates"] == 2560 // ROLLOUT
    for key in ("seat", "opponent_id"):
        assert torch.equal(end["env"][key], resumed_end["env"][key]), key
    for streams in ("dice", "chance"):
        for key in ("keys", "counters"):
            assert torch.equal(end["env"][streams][key], resumed_end["env"][streams][key]), (streams, key)
    assert end["env"]["dice"]["counters"].numpy().min() > 0 and end["env"]["rng"] == resumed_end["env"]["rng"]
    assert [s["name"] for s in end["snapshots"]] == [s["name"] for s in resumed_end["snapshots"]]
    assert weights.keys() == resumed_weights.keys()
    assert all(torch.equal(weights[k], resumed_weights[k]) for k in weights)
    evaluations = [json.loads((out / "evaluation.json").read_text())["pairings"] for out in (whole, parts)]
    assert [p["pair_scores"] for p in evaluations[0]] == [p["pair_scores"] for p in evaluations[1]]

    other = ["--total-steps", "3072", "--out", str(parts), "--resume", "--n-envs", "16"]
    assert train.main(other) == 2
    assert capsys.readouterr().err == (
        "error: --resume: --n-envs defines the run, which was started with --n-envs 32, not 16; leave it out "
        "(or --restart to start over)\n"
    )


def test_resume_without_a_loadable_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    resume = ["--out", str(out), "--resume"]
    assert train.main(resume) == 2
    assert capsys.readouterr().err == f"error: --resume: {out} holds no run (no run.json)\n"
    assert not out.exists()  # nothing was written, not even the folder
    out.mkdir(parents=True)
    outputs.write_run(out, outputs.new_run_id(), "train.py")
    assert train.main(resume) == 2
    assert capsys.readouterr().err == f"error: --resume: {out} holds no settings.json (the run's settings)\n"
    (out / "settings.json").write_text('{"total_steps": 1024}')
    assert train.main(resume) == 2
    assert (
        capsys.readouterr().err == f"error: --resume: {out / 'settings.json'} is not a settings file of this command\n"
    )
    settings = TrainSettings(distill_games=0, total_steps=1024, out=str(out))
    (out / "settings.json").write_text(json.dumps(asdict(settings)))
    path = checkpoint.checkpoint_path(out, 512)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a checkpoint")
    assert train.main(resume) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"warning: --resume: skipping {path}")
    assert err[1] == f"error: --resume: none of the 1 checkpoint(s) in {out / 'checkpoints'} loads"
    assert sorted(p.name for p in out.iterdir()) == ["checkpoints", "run.json", "settings.json"]  # no lock file left
    torch.save({"format": checkpoint.CHECKPOINT_FORMAT, "version": checkpoint.CHECKPOINT_VERSION, "steps": 512}, path)
    assert train.main(resume) == 2  # it loads, but holds nothing to resume from
    assert capsys.readouterr().err.splitlines()[0] == (
        f"warning: --resume: skipping {path}: it does not load (its run_id is not a string)"
    )


@pytest.mark.slow
def test_tampered_checkpoint_contents_are_refused_before_use(finished_runs, tmp_path, capsys):
    """A checkpoint that loads but holds a negative step count or a schedule holding a string is skipped for
    the one before it, with a warning naming the entry; when none is left, one line and exit 2."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(finished_runs / "0", out)  # 1,024 steps, checkpoints at 512 and 1,024
    last = checkpoint.checkpoint_path(out, 1024)
    tampered = torch.load(last, weights_only=True) | {"steps": -100}
    torch.save(tampered, last)
    capsys.readouterr()
    assert train.main(["--out", str(out), "--resume", "--total-steps", "1536"]) == 0
    result = capsys.readouterr()
    assert f"skipping {last}: it does not load (its steps are not a non-negative integer: -100)" in result.err
    assert "resuming from step 512" in result.out and "trained 1,024 steps" in result.out
    for path in checkpoint.checkpoint_path(out, 1024), checkpoint.checkpoint_path(out, 1536):
        contents = torch.load(path, weights_only=True)
        contents["schedule"]["eval"] = "soon"
        torch.save(contents, path)
    assert train.main(["--out", str(out), "--resume", "--total-steps", "2048"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "it does not load (its schedule's eval is not a number of steps: 'soon')" in err
    assert err.splitlines()[-1] == f"error: --resume: none of the 2 checkpoint(s) in {out / 'checkpoints'} loads"


BAD_SETTINGS = [
    (["--n-envs", "0"], "--n-envs must be >= 1, got 0"),
    (["--batch-size", "0"], "--batch-size must be >= 2, got 0"),
    (["--batch-size", "1"], "--batch-size must be >= 2, got 1"),
    (["--n-steps", "0"], "--n-steps must be >= 1, got 0"),
    (["--n-envs", "1", "--n-steps", "1"], "--n-envs times --n-steps must be >= 2"),
    (["--n-epochs", "0"], "--n-epochs must be >= 1, got 0"),
    (["--threads", "0"], "--threads must be in [1, "),
    (["--eval-games", "21"], "--eval-games must be an even number >= 2 (paired dice), got 21"),
    (["--final-eval-games", "0"], "--final-eval-games must be an even number >= 2 (paired dice), got 0"),
    (["--total-steps", "-5"], "--total-steps must be >= 0, got -5"),
    (["--total-steps", "0"], "--total-steps 0 and --distill-games 0: nothing to train"),
    (["--distill-games", "3"], "--distill-games must be even (each opponent is met as Red and as Blue), got 3"),
    (["--distill-explore", "1.5"], "--distill-explore must be in [0, 1], got 1.5"),
    (["--distill-games", "2", "--distill-expert", "greedy"], "--distill-expert 'greedy' has no move_values"),
    (["--distill-games", "2", "--distill-opponents", ","], "--distill-opponents needs at least one agent spec"),
    (["--distill-temperature", "-1"], "--distill-temperature must be >= 0, got -1.0"),
    (["--max-snapshots", "0"], "--max-snapshots must be >= 1, got 0"),
    (["--snapshot-every", "0"], "--snapshot-every must be >= 1, got 0"),
    (["--checkpoint-every", "0"], "--checkpoint-every must be >= 1, got 0"),
    (["--eval-every", "-1"], "--eval-every must be >= 0, got -1"),
    (["--learning-rate", "0"], "--learning-rate must be in (0, 1], got 0.0"),
    (["--gamma", "1.5"], "--gamma must be in (0, 1], got 1.5"),
    (["--gae-lambda", "-0.1"], "--gae-lambda must be in [0, 1], got -0.1"),
    (["--clip-range", "0"], "--clip-range must be in (0, 1], got 0.0"),
    (["--ent-coef", "-1"], "--ent-coef must be >= 0, got -1.0"),
    (["--net-arch", "32", "0"], "--net-arch needs one or more sizes >= 1, got [32, 0]"),
    (["--features", "rnn"], "--features must be one of mlp, cnn, got 'rnn'"),
    (["--cnn-channels", "0"], "--cnn-channels must be >= 1, got 0"),
    (["--seed", "-1"], "--seed must be in [0, 4294967295], got -1"),
    (["--device", "toaster"], "--device 'toaster' is not a torch device"),
    (["--device", "meta"], "--device 'meta': training runs on cpu or cuda"),  # a traceback and a failed run before
    (["--device", "mps"], "--device 'mps': training runs on cpu or cuda"),
    (["--opponents", "random:1,minimax:2"], "unknown agent 'minimax'"),
    (["--opponents", "random:x"], "is not name:weight"),
    (["--opponents", "self:0"], "--opponents needs at least one positive weight"),
    # infinite, NaN and out-of-range floats, and weights that do not normalise to a distribution (issue 29, 6)
    (["--clip-range", "inf"], "--clip-range must be in (0, 1], got inf"),
    (["--learning-rate", "nan"], "--learning-rate must be in (0, 1], got nan"),
    (["--distill-learning-rate", "inf"], "--distill-learning-rate must be in (0, 1], got inf"),
    (["--ent-coef", "inf"], "--ent-coef must be >= 0, got inf"),
    (["--distill-value-weight", "nan"], "--distill-value-weight must be >= 0, got nan"),
    (["--opponents", "random:1,greedy:nan"], "--opponents: the weight of 'greedy' must be a finite number >= 0"),
    (["--opponents", "random:1e308,greedy:1e308"], "--opponents needs at least one positive weight, and weights"),
    (["--opponents", "random:inf"], "--opponents: the weight of 'random' must be a finite number >= 0"),
    # sizes checked against the memory they would take, before anything is made (issue 29, 17)
    (["--threads", "1000000"], "--threads must be in [1, "),
    (["--net-arch", "100000", "100000"], "--net-arch: these settings would allocate about"),
    (["--features", "cnn", "--cnn-channels", "1000000"], "--cnn-channels: these settings would allocate about"),
    (["--n-envs", "100000000"], "--n-envs x --n-steps (the rollout buffer): these settings would allocate"),
    (["--out", ""], "--out must name a folder, got ''"),
]


@pytest.mark.parametrize("args, message", BAD_SETTINGS, ids=[" ".join(a) for a, _ in BAD_SETTINGS])
def test_each_bad_setting_is_one_line_before_anything_runs(tmp_path, capsys, args, message):
    out = tmp_path / "run"
    settings = [*TINY, "--out", str(out), *args]
    assert train.main(settings) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing was written, nothing trained


def test_out_must_be_a_writable_directory(tmp_path, unwritable_directory, capsys):
    """A file, a path under a file, or an existing directory we cannot write in: one line, before anything is
    built (not a traceback at the first checkpoint)."""
    file = tmp_path / "file"
    file.write_text("keep me")
    for out, message in [
        (file, "is a file, not a directory"),
        (file / "run", f"lies under the file {file}, not a directory"),
        (unwritable_directory, f"cannot write in {unwritable_directory} ("),
    ]:
        settings = [*TINY, "--out", str(out)]
        assert train.main(settings) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {out}: {message}") and err.count("\n") == 1, err
    assert file.read_text() == "keep me"


@pytest.mark.slow
def test_bad_settings_on_the_command_line(tmp_path):
    """The real command: exit status 2, one line on stderr, no traceback."""
    for args, message in [
        (["--n-envs", "0"], "error: --n-envs must be >= 1, got 0"),
        (["--opponents", "random:1,minimax:2"], "unknown agent 'minimax'"),
    ]:
        result = _train(*args, "--out", str(tmp_path / "run"))
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_same_seed_same_run(tmp_path):
    """Two runs of one seed, one a command of its own and one in this process (another process, another hash
    seed, another state of every library): the same weights and the same evaluation games."""
    settings = ["--total-steps", "1500", "--eval-every", "0", "--checkpoint-every", "100000", "--seed", "7"]
    result = _train(*settings, "--out", str(tmp_path / "a"))
    assert result.returncode == 0, result.stderr
    assert train.main([*TINY, *settings, "--out", str(tmp_path / "b")]) == 0
    weights = [load_file(tmp_path / run / "model.safetensors") for run in ("a", "b")]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    evaluations = [json.loads((tmp_path / run / "evaluation.json").read_text())["pairings"] for run in ("a", "b")]
    assert [p["pair_scores"] for p in evaluations[0]] == [p["pair_scores"] for p in evaluations[1]]


@pytest.mark.slow
def test_a_run_owns_its_out(finished_runs, tmp_path, capsys):
    """A second run into a folder that holds a run is refused unless --restart (start over: the first run's
    checkpoints go) or --resume; --resume refuses other training-defining settings, naming the setting, and
    takes a larger --total-steps; a folder another process holds is refused whatever the options."""
    import shutil

    out = tmp_path / "run"
    common = ["--eval-every", "0", "--checkpoint-every", "512", "--out", str(out), "--seed", "1"]
    shutil.copytree(finished_runs / "1", out)  # a finished run of these settings and --total-steps 1024
    first = outputs.read_run(out)["run_id"]
    assert checkpoint.checkpoint_steps(out) == [512, 1024]

    # the refusals come before any training
    capsys.readouterr()
    assert train.main([*TINY, "--total-steps", "1024", *common]) == 2
    again = capsys.readouterr().err
    assert again.startswith(f"error: --out {out} holds run {first} (train, started ")
    assert "--resume to continue it, --restart to start over" in again
    assert outputs.read_run(out)["run_id"] == first and checkpoint.checkpoint_steps(out) == [512, 1024]

    assert train.main([*TINY, "--total-steps", "2048", *common[:-1], "2", "--resume"]) == 2
    assert capsys.readouterr().err == (
        "error: --resume: --seed defines the run, which was started with --seed 1, not 2; leave it out "
        "(or --restart to start over)\n"
    )
    for name, value, message in (
        ("opponents", "random:1", "--opponents random:1,greedy:3,self:1, not random:1"),
        ("learning_rate", 0.001, "--learning-rate 0.0003, not 0.001"),
        ("distill_games", 2, "--distill-games 0, not 2"),
        ("net_arch", (64,), "--net-arch 32 32, not 64"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            folder.resumed_settings(out, {"total_steps": 2048, name: value})
    same = folder.resumed_settings(out, {"total_steps": 2048, "eval_every": 512, "seed": 1, "net_arch": (32, 32)})
    assert (same.total_steps, same.eval_every, same.seed, same.net_arch, same.resume) == (2048, 512, 1, (32, 32), True)
    # larger total, other threads: the command's own process (its threads are the process's)
    resumed = _train("--total-steps", "1536", *common, "--resume", "--threads", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from step 1,024" in resumed.stdout and checkpoint.checkpoint_steps(out) == [1024, 1536]

    assert train.main([*TINY, "--total-steps", "512", *common, "--restart"]) == 0
    second = outputs.read_run(out)["run_id"]
    assert second != first and checkpoint.checkpoint_steps(out) == [512]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [f"checkpoint_512-{second}.pt"]

    settings = [*TINY, *common, "--restart"]
    with outputs.lock(out):  # another writer holds the folder
        assert train.main(settings) == 2
    assert f"error: --out {out} is in use by another process (pid " in capsys.readouterr().err
    assert outputs.read_run(out)["run_id"] == second


# -- stopping, resuming by folder, restarting (issues 27 and 29) -------------------------------------------------


def _start(out, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "train.py", *TINY, "--eval-every", "0", "--out", str(out), *args],
        cwd=REPO,
        preexec_fn=as_from_a_shell,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


SIGNALLED_STEPS = 20 * ROLLOUT  # the signal comes at the first checkpoint (2 updates in): 18 updates to spare


def _wait_for_checkpoint(out, process: subprocess.Popen) -> None:
    deadline = time.time() + 180
    while time.time() < deadline and not checkpoint.checkpoint_steps(out) and process.poll() is None:
        time.sleep(0.2)
    assert checkpoint.checkpoint_steps(out), "no checkpoint was written"


@pytest.mark.slow
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_after_the_update_with_a_checkpoint_and_resume_by_folder_goes_on(tmp_path, signum, status):
    """The README's pair, small: a PPO run from scratch, stopped by a signal (after its current update: a
    checkpoint at the step it stopped, one line saying where and how to go on, exit 130 / 143, run.json saying
    so), then `--out DIR --resume` alone trains the rest of the run's own --total-steps."""
    out = tmp_path / "run"
    process = _start(out, "--total-steps", str(SIGNALLED_STEPS), "--checkpoint-every", "1024")
    _wait_for_checkpoint(out, process)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == status, stderr
    name = signal.Signals(signum).name
    steps = checkpoint.checkpoint_steps(out)[-1]
    assert steps % ROLLOUT == 0 and steps < SIGNALLED_STEPS  # a whole update, not the end of the run
    assert stderr.strip().splitlines() == [
        f"{name} stopped the run at step {steps:,} (checkpoint of step {steps:,} kept); "
        f"go on with: python train.py --out {out} --resume"
    ]
    assert "Traceback" not in stderr and not (out / "model.safetensors").exists()
    run = outputs.read_run(out)
    assert run["status"] == "interrupted" and run["stopped"] == {"signal": name, "checkpoint_steps": steps}
    if signum != signal.SIGINT:
        return  # the same stop: one resume is enough

    resumed = subprocess.run(
        [sys.executable, "train.py", "--out", str(out), "--resume"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from step {steps:,}" in resumed.stdout
    assert f"trained {SIGNALLED_STEPS - steps:,} steps" in resumed.stdout
    assert outputs.read_run(out)["status"] == "complete" and checkpoint.checkpoint_steps(out)[-1] == SIGNALLED_STEPS
    assert json.loads((out / "evaluation.json").read_text())["pairings"][0]["games"] == 20  # the run's own settings


@pytest.mark.slow
def test_a_second_signal_stops_at_once(tmp_path):
    """Slow updates (many epochs): the first SIGINT waits for the update, the second stops the run at once,
    leaving the checkpoints it had; the line says so, and so does run.json."""
    out = tmp_path / "run"
    process = _start(out, "--total-steps", "200000", "--checkpoint-every", "512", "--n-epochs", "200")
    _wait_for_checkpoint(out, process)
    process.send_signal(signal.SIGINT)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    steps = checkpoint.checkpoint_steps(out)[-1]
    assert stderr.strip().splitlines()[-1] == (
        f"SIGINT stopped the run at once (checkpoint of step {steps:,} kept); "
        f"go on with: python train.py --out {out} --resume"
    )
    assert "Traceback" not in stderr and outputs.read_run(out)["status"] == "interrupted"
    assert not list(out.rglob("*.partial"))  # a checkpoint being written when it stopped left no temporary file


@pytest.fixture
def old_run(tmp_path):
    """A folder holding a finished run's state and results (made up: the restart tests train nothing)."""
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    outputs.write_run(out, "1" * 32, "train.py")
    (out / "settings.json").write_text(json.dumps(asdict(TrainSettings(distill_games=0, total_steps=512))))
    (out / "checkpoints" / f"checkpoint_512-{'1' * 32}.pt").write_bytes(b"old checkpoint")
    for name in ("model.safetensors", "model.zip", "evaluation.md"):
        (out / name).write_bytes(b"old")
    (out / "evaluation.json").write_text('{"complete": true}')
    (out / "tb" / "ppo_1").mkdir(parents=True)
    return out


def _restart(out, monkeypatch, capsys) -> tuple[int, str]:
    """`train.py --out OUT --restart` up to the training itself, which is replaced by nothing."""
    monkeypatch.setattr(train.loop.Trainer, "run", lambda *args: 0)
    status = train.main([*TINY, "--out", str(out), "--restart"])
    return status, capsys.readouterr().err


def test_restart_never_follows_a_link_out_of_the_folder(old_run, tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("keep me")
    (elsewhere / "sub").mkdir()
    (elsewhere / "sub" / "more.txt").write_text("keep me too")
    (old_run / "checkpoints" / f"checkpoint_512-{'1' * 32}.pt").unlink()
    (old_run / "checkpoints").rmdir()
    (old_run / "checkpoints").symlink_to(elsewhere, target_is_directory=True)
    (old_run / "model.zip").unlink()
    (old_run / "model.zip").symlink_to(elsewhere / "notes.txt")
    status, err = _restart(old_run, monkeypatch, capsys)
    assert status == 0, err
    assert (elsewhere / "notes.txt").read_text() == "keep me" and (elsewhere / "sub" / "more.txt").exists()
    assert not (old_run / "checkpoints").exists() and not (old_run / "model.zip").is_symlink()
    assert outputs.read_run(old_run)["run_id"] != "1" * 32


def test_restart_clears_subfolders_whole_and_leaves_nothing_half_cleared(old_run, monkeypatch, capsys):
    (old_run / "checkpoints" / "a folder" / "deeper").mkdir(parents=True)
    (old_run / "checkpoints" / "a folder" / "deeper" / "file").write_text("x")
    status, err = _restart(old_run, monkeypatch, capsys)
    assert status == 0, err
    assert sorted(p.name for p in old_run.iterdir()) == [".lock", "run.json"]  # the (replaced) run writes the rest


class Killed(BaseException):
    """What a kill does to the process, as far as the folder can tell: nothing after it runs."""


def test_a_killed_restart_leaves_no_old_result_looking_current(old_run, tmp_path, monkeypatch, capsys):
    """Killed at each rename of the restart's removal: the folder is the old run still (its run file, nothing
    new written) or holds none of the old results; a later --restart clears what is left. Killed just after
    the new run file: none of the old results is there."""
    import os
    import shutil

    results = ("evaluation.json", "evaluation.md", "model.safetensors", "model.zip", "tb")
    rename = os.rename
    for kill_at in range(8):
        out = tmp_path / f"killed-{kill_at}"
        shutil.copytree(old_run, out, symlinks=True)
        calls = []

        def dying(source, target, kill_at=kill_at, calls=calls):
            if len(calls) == kill_at:
                raise Killed
            calls.append(source)
            rename(source, target)

        monkeypatch.setattr(os, "rename", dying)
        with pytest.raises(Killed):
            train.main([*TINY, "--out", str(out), "--restart"])
        monkeypatch.setattr(os, "rename", rename)
        present = [name for name in results if (out / name).exists()]
        assert outputs.read_run(out)["run_id"] == "1" * 32  # nothing new was written
        assert present == [] or kill_at < len(results), (kill_at, present)
        status, err = _restart(out, monkeypatch, capsys)
        assert status == 0, err
        assert sorted(p.name for p in out.iterdir()) == [".lock", "run.json"], kill_at

    def killed_after_claim(*args):
        raise Killed

    monkeypatch.setattr(train.loop.Trainer, "run", killed_after_claim)
    with pytest.raises(Killed):
        train.main([*TINY, "--out", str(old_run), "--restart"])
    assert outputs.read_run(old_run)["run_id"] != "1" * 32
    assert [name for name in results if (old_run / name).exists()] == []


@pytest.mark.slow
def test_model_zip_is_written_atomically(tmp_path, monkeypatch, capsys):
    """A full disk while SB3 writes model.zip (an injected ENOSPC after part of the file): the previous
    model.zip stays whole, no temporary file is left, the run says it failed, one line naming the file, exit 2."""
    import errno

    from sb3_contrib import MaskablePPO

    out = tmp_path / "run"
    args = [*TINY, "--total-steps", "512", "--eval-every", "0", "--out", str(out)]
    assert train.main(args) == 0
    before = (out / "model.zip").read_bytes()
    capsys.readouterr()

    def full_disk(self, path, *rest, **options):
        handle = path if hasattr(path, "write") else open(path, "wb")  # noqa: SIM115
        handle.write(before[: len(before) // 2])
        handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(MaskablePPO, "save", full_disk)
    assert train.main(["--out", str(out), "--resume", "--total-steps", "1024"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"error: cannot write {out / 'model.zip'} (No space left on device)"
    assert "Traceback" not in err
    assert (out / "model.zip").read_bytes() == before
    assert [p.name for p in out.iterdir() if p.name.endswith(".partial")] == []
    assert outputs.read_run(out)["status"] == "failed"


def test_outputs_remove_moves_whole_entries_and_never_follows_links(tmp_path):
    folder, outside = tmp_path / "folder", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (folder / "tree" / "link").mkdir(parents=True)
    (folder / "tree" / "link").rmdir()
    (folder / "tree" / "link").symlink_to(outside, target_is_directory=True)
    (folder / "file").write_text("y")
    (folder / ".removing-left-by-a-kill").mkdir()
    assert outputs.remove(folder, ["file", "tree", "absent"]) == ["file", "tree"]
    assert sorted(p.name for p in folder.iterdir()) == [] and (outside / "keep").read_text() == "x"
    with pytest.raises(ValueError, match="is not the name of an entry"):
        outputs.remove(folder, ["../outside"])


DISTILL = [
    *TINY,
    "--distill-games",
    "20",
    "--distill-expert",
    "expectimax:depth=1",
    "--distill-opponents",
    "greedy,random",
    "--distill-epochs",
    "3",
    "--distill-batch-size",
    "64",
    "--total-steps",
    "0",
]


@pytest.mark.slow
def test_a_distillation_stopped_while_labelling_or_fitting_goes_on_where_it_stopped(tmp_path, monkeypatch, capsys):
    """Killed after two chunks of labels (the third being made), then again in the fit's third epoch:
    each --resume reads back what was saved and goes on, and the distilled network is the one of a run that
    never stopped, bit for bit. The fit's losses and agreement are in TensorBoard."""
    from strategic_reserve_env.training import distillation

    monkeypatch.setattr(distillation, "CHUNK_GAMES", 10)  # 4 chunks: 2 per opponent
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert train.main([*DISTILL, "--out", str(whole)]) == 0
    assert sorted(p.name for p in (whole / "distillation").iterdir()) == [
        "fit.pt",
        *(f"labels_{n:04d}.npz" for n in range(4)),
    ]

    write_chunk, chunks = distillation.write_chunk, []

    def killed_at_the_third(path, positions, cursor, belongs):
        if len(chunks) == 2:
            raise Killed
        chunks.append(path)
        write_chunk(path, positions, cursor, belongs)

    monkeypatch.setattr(distillation, "write_chunk", killed_at_the_third)
    with pytest.raises(Killed):
        train.main([*DISTILL, "--out", str(parts)])
    monkeypatch.setattr(distillation, "write_chunk", write_chunk)
    assert sorted(p.name for p in (parts / "distillation").iterdir()) == ["labels_0000.npz", "labels_0001.npz"]

    save, epochs = torch.save, []

    def killed_in_the_third_epoch(contents, handle, *args, **kwargs):
        if contents["epoch"] == 3:  # the third epoch's state is never written
            raise Killed
        save(contents, handle, *args, **kwargs)
        epochs.append(contents["epoch"])

    monkeypatch.setattr(torch, "save", killed_in_the_third_epoch)
    capsys.readouterr()
    with pytest.raises(Killed):
        train.main(["--out", str(parts), "--resume"])
    monkeypatch.setattr(torch, "save", save)
    assert "distillation: 2 chunk(s) of labelled decisions read back (20 games)" in capsys.readouterr().out
    fit = distillation.read_fit(parts / "distillation" / "fit.pt", *_identity(parts))
    assert epochs == [1, 2] and fit["epoch"] == 2

    assert train.main(["--out", str(parts), "--resume"]) == 0
    assert "distillation: the fit goes on after epoch 2" in capsys.readouterr().out
    expected, got = load_file(whole / "distilled.safetensors"), load_file(parts / "distilled.safetensors")
    assert expected.keys() == got.keys() and all(torch.equal(expected[k], got[k]) for k in expected)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(whole / "tb" / "distillation")).Reload()
    assert {"distill/cross_entropy", "distill/value_mse", "distill/agreement"} <= set(events.Tags()["scalars"])
    assert [event.step for event in events.Scalars("distill/cross_entropy")] == [1, 2, 3]


def _identity(out) -> tuple:
    """The settings of the run in `out` and what its files belong to (its run id, its settings' digest)."""
    settings = folder.resumed_settings(out, {})
    return settings, (outputs.read_run(out)["run_id"], folder.settings_hash(settings))


def test_a_tampered_chunk_of_labels_is_refused_before_it_is_read(tmp_path):
    """A chunk that claims more decisions than its games can hold, or holds other arrays: one line naming the
    file, from its headers, before any array is allocated."""
    import numpy as np

    from strategic_reserve_env.training import distillation

    path = tmp_path / "labels_0000.npz"
    np.savez(path, masks=np.zeros((3, 36), bool), extra=np.zeros(2))
    with pytest.raises(ValueError, match="not a chunk of labelled decisions"):
        distillation.read_chunk(path, 2, 20)
    many = distillation.CHUNK_GAMES * distillation.MAX_DECISIONS_PER_GAME + 1
    arrays = {name: np.zeros(shape, dtype) for name, (dtype, shape) in distillation._expected(many).items()}
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=f"{many} decisions, more than"):
        distillation.read_chunk(path, 2, 20)


# -- one run kit: refusals write nothing, runs resume alone, folders and files of other runs (issue 34) ---------


def _files(out) -> dict:
    """Every regular file of `out` (but its lock file, which names the last holder) and its bytes."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.is_symlink() and p.name != outputs.LOCK_FILE
    }


def _refused(out, capsys, *args: str) -> str:
    """`train --out OUT --resume ARGS`: exit 2, one line (after a warning per checkpoint skipped), not a byte
    of the folder changed; what it printed."""
    lock = out / outputs.LOCK_FILE
    before, lock_before = _files(out), lock.read_bytes() if lock.exists() else None
    assert train.main(["--out", str(out), "--resume", *args]) == 2
    err = capsys.readouterr().err
    *warnings, last = err.splitlines()
    assert last.startswith("error: ") and all(line.startswith("warning: --resume: skipping") for line in warnings), err
    assert _files(out) == before
    assert (lock.read_bytes() if lock.exists() else None) == lock_before  # its lock file too (issue 34, probe)
    return err


@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory):
    """Two finished runs of 1,024 steps (seeds 0 and 1), checkpoints at 512 and 1,024."""
    runs = tmp_path_factory.mktemp("finished")
    for seed in ("0", "1"):
        args = [*TINY, "--eval-every", "0", "--checkpoint-every", "512", "--seed", seed]
        assert train.main([*args, "--out", str(runs / seed)]) == 0
    return runs


@pytest.mark.slow
def test_a_refused_resume_writes_nothing(finished_runs, tmp_path, capsys):
    """A --total-steps below the steps done, a settings.json changed by hand, a checkpoint of another run
    under this run's name: each is refused in one line and the folder is left byte for byte (0.3.0 rewrote
    settings.json and marked the run failed, so that --resume alone then failed too)."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(finished_runs / "0", out)
    assert "--total-steps 512 is below the 1,024 steps already done" in _refused(out, capsys, "--total-steps", "512")
    settings = json.loads((out / "settings.json").read_text())
    (out / "settings.json").write_text(json.dumps(settings | {"reward": "luck_adjusted"}))
    assert "the checkpoint was trained with --reward outcome, not luck_adjusted" in _refused(
        out, capsys, "--total-steps", "2048"
    )
    (out / "settings.json").write_text(json.dumps(settings))
    ours, theirs = outputs.read_run(out)["run_id"], outputs.read_run(finished_runs / "1")["run_id"]
    swapped = checkpoint.checkpoint_path(out, 1024, ours)
    swapped.write_bytes(checkpoint.checkpoint_path(finished_runs / "1", 1024, theirs).read_bytes())
    assert f"holds run {theirs}, not run {ours} of this folder" in _refused(out, capsys, "--total-steps", "2048")
    assert outputs.read_run(out)["status"] == "complete"


@pytest.mark.slow
def test_a_run_past_its_total_steps_resumes_alone_and_a_finished_run_stays_complete(tmp_path, monkeypatch, capsys):
    """--total-steps 700 ends at 1,024 (two updates of 512); a SIGINT during the last update stops the run
    trained but without its model; the command its stop line prints (--resume alone) writes the model and
    completes it; --resume alone on a complete run says so and writes nothing (0.3.0 refused both)."""
    import os

    from sb3_contrib import MaskablePPO

    out = tmp_path / "run"
    update, updates = MaskablePPO.train, []

    def interrupted_in_the_last(self):
        updates.append(self.num_timesteps)
        if len(updates) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        update(self)

    monkeypatch.setattr(MaskablePPO, "train", interrupted_in_the_last)
    args = [*TINY, "--eval-every", "0", "--total-steps", "700", "--out", str(out)]
    assert train.main(args) == 130
    monkeypatch.setattr(MaskablePPO, "train", update)
    err = capsys.readouterr().err
    assert "SIGINT stopped the run at step 1,024 (checkpoint of step 1,024 kept); go on with: " in err
    assert checkpoint.checkpoint_steps(out) == [1024] and not (out / "model.safetensors").exists()
    assert train.main(["--out", str(out), "--resume"]) == 0
    assert outputs.read_run(out)["status"] == "complete" and (out / "model.safetensors").exists()
    capsys.readouterr()
    before = _files(out)
    assert train.main(["--out", str(out), "--resume"]) == 0
    assert "is complete (1,024 steps" in capsys.readouterr().err
    assert _files(out) == before


def test_another_commands_folder_is_refused_whatever_the_options(tmp_path, capsys):
    """A folder train-az (or any other command) made is neither resumed nor replaced by train, nor the
    reverse: one line, nothing written (0.3.0 replaced the other command's model)."""
    out = tmp_path / "az"
    out.mkdir()
    run_id = outputs.write_run(out, outputs.new_run_id(), "train_az.py")["run_id"]
    (out / "settings.json").write_text("{}")
    (out / "model.safetensors").write_bytes(b"az")
    before = _files(out)
    for options in ([], ["--restart"], ["--resume"]):
        assert train.main([*TINY, "--out", str(out), *options]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"error: --out {out} holds run {run_id} of train_az.py, not of train; this command neither resumes "
            "nor replaces another command's run: choose another folder\n"
        )
        assert _files(out) == before
    theirs = tmp_path / "train"
    theirs.mkdir()
    outputs.write_run(theirs, outputs.new_run_id(), "train.py")
    from strategic_reserve_env.training import rllib_run as rllib
    from strategic_reserve_env.training import run

    with pytest.raises(ValueError, match="not of train_rllib.py"):
        run.claim(theirs, TrainSettings(resume=True), rllib.KIND)


def test_run_json_names_the_command_and_a_0_3_0_folder_still_resumes(tmp_path):
    """run.json says `"command": "train"` (the command a user ran; it said "train.py", a script a wheel does
    not have), with the package version; a folder 0.3.0 wrote with "train.py" is still train's."""
    out = tmp_path / "run"
    out.mkdir()
    from strategic_reserve_env.training import az, loop
    from strategic_reserve_env.training import run as lifecycle

    run_id = lifecycle.claim(out, TrainSettings(), loop.KIND).run_id
    run = outputs.read_run(out)
    assert run["command"] == "train" and run["run_id"] == run_id and "package_version" in run
    old = tmp_path / "old"
    old.mkdir()
    old_id = outputs.write_run(old, outputs.new_run_id(), "train.py")["run_id"]
    assert lifecycle.claim(old, TrainSettings(resume=True), loop.KIND).run_id == old_id
    with pytest.raises(ValueError, match="of train.py, not of train-az"):
        lifecycle.claim(old, TrainSettings(resume=True), az.KIND)


def test_links_and_paths_in_a_resumed_folder_are_refused(finished_runs, tmp_path, capsys):
    """checkpoints/, tb/ or distillation/ a link out of the folder: --resume refuses it in one line and writes
    nothing there (0.3.0 wrote 8 checkpoints through the link); a run id that is a path is no run file."""
    import shutil

    out, outside = tmp_path / "run", tmp_path / "outside"
    shutil.copytree(finished_runs / "0", out)
    outside.mkdir()
    for name in ("checkpoints", "tb"):
        shutil.move(out / name, outside / name)
        (out / name).symlink_to(outside / name, target_is_directory=True)
        seen = _files(outside)
        assert f"its {name} is a symbolic link" in _refused(out, capsys, "--total-steps", "2048")
        assert _files(outside) == seen
        (out / name).unlink()
        shutil.move(outside / name, out / name)
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps(run | {"run_id": "x/../../../evil"}))
    assert "not a run file (an object with a run_id of 32 hex digits)" in _refused(out, capsys)


def test_special_and_huge_files_are_refused_in_one_line(finished_runs, tmp_path, capsys):
    """run.json a FIFO (0.3.0 hung holding the lock), settings.json of 2 MB, every checkpoint a FIFO or a
    link to /dev/zero (a MemoryError): each refused in one line, before a byte of it is read."""
    import os
    import shutil

    out = tmp_path / "run"
    shutil.copytree(finished_runs / "0", out)
    run = (out / "run.json").read_bytes()
    (out / "run.json").unlink()
    os.mkfifo(out / "run.json")
    assert f"cannot read {out / 'run.json'}: not a regular file" in _refused(out, capsys)
    (out / "run.json").unlink()
    (out / "run.json").write_bytes(run)
    settings = (out / "settings.json").read_bytes()
    (out / "settings.json").unlink()
    os.mkfifo(out / "settings.json")
    assert f"cannot read {out / 'settings.json'}: not a regular file" in _refused(out, capsys)
    (out / "settings.json").unlink()
    (out / "settings.json").write_bytes(settings[:-2] + b" " * (2 << 20) + settings[-2:])
    assert "settings.json is larger than 1,048,576 bytes" in _refused(out, capsys)
    (out / "settings.json").write_bytes(settings)
    first, last = (checkpoint.checkpoint_path(out, steps) for steps in checkpoint.checkpoint_steps(out))
    first.unlink()
    os.mkfifo(first)
    last.unlink()
    last.symlink_to("/dev/zero")
    for special, kind in ((first, "not a regular file"), (last, "a symbolic link")):
        err = _refused(out, capsys, "--total-steps", "2048")
        assert f"{special} is {kind}, so the run cannot read or write its checkpoint there" in err
        special.unlink()  # then the other one alone


@pytest.mark.slow
def test_files_of_another_run_are_refused(tmp_path, capsys):
    """Labels or the fit's state of a --seed 1 run copied into a --seed 0 run: --resume refuses each in one
    line naming the file, before anything is written (0.3.0 went on with the other run's tensors)."""
    import shutil

    from strategic_reserve_env.training import distillation

    runs = {seed: tmp_path / seed for seed in ("0", "1")}
    for seed, out in runs.items():
        assert train.main([*DISTILL, "--seed", seed, "--out", str(out)]) == 0
    out = runs["0"]
    run = outputs.read_run(out)
    (out / "run.json").write_text(json.dumps(run | {"status": "interrupted"}))  # as if stopped in the fit
    capsys.readouterr()
    for name in ("labels_0000.npz", "fit.pt"):
        own = (out / "distillation" / name).read_bytes()
        shutil.copy(runs["1"] / "distillation" / name, out / "distillation" / name)
        err = _refused(out, capsys)
        assert f"{out / 'distillation' / name} belongs to run {outputs.read_run(runs['1'])['run_id']}" in err
        (out / "distillation" / name).write_bytes(own)
    settings, belongs = _identity(out)
    with pytest.raises(ValueError, match="was made with other settings"):
        distillation.read_fit(out / "distillation" / "fit.pt", settings, (belongs[0], "0" * 64))


def test_settings_that_pass_the_checks_but_would_crash_are_refused_on_resume(finished_runs, tmp_path, capsys):
    """settings.json with "net_arch": [] (an IndexError in 0.3.0): one line, nothing written."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(finished_runs / "0", out)
    settings = json.loads((out / "settings.json").read_text())
    (out / "settings.json").write_text(json.dumps(settings | {"net_arch": []}))
    assert f'{out / "settings.json"}: "net_arch" needs one or more sizes >= 1, got []' in _refused(out, capsys)
