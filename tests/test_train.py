"""train.py smoke test, resume after a kill, and settings errors (subprocesses, tiny budgets)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from agents import load_agent
from conftest import REPO

TINY = ["--n-envs", "32", "--n-steps", "16", "--batch-size", "256", "--n-epochs", "1", "--net-arch", "32", "32",
        "--eval-games", "20", "--final-eval-games", "20", "--snapshot-every", "1024", "--no-progress"]


def _train(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", *TINY, *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout, check=False)


def test_smoke_writes_model_logs_and_evaluation(tmp_path):
    out = tmp_path / "run"
    result = _train("--total-steps", "3000", "--eval-every", "1500", "--checkpoint-every", "1024", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "env steps/s" in result.stdout and "% of the time in the environment" in result.stdout
    split = result.stdout.split("wall time: ")[1].splitlines()[0]
    shares = [float(part.rsplit(" ", 2)[1]) for part in split.split(", ")]
    assert len(shares) == 4 and all(share >= 0 for share in shares), split  # the parts nest as described
    agent = load_agent(f"ppo:{out / 'model.zip'}")
    assert agent.name.startswith("ppo:")
    assert list((out / "tb").rglob("events.out.tfevents.*"))
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert [p["b"] for p in evaluation["pairings"]] == ["random", "greedy"]
    assert all(p["games"] == 20 for p in evaluation["pairings"])
    assert (out / "evaluation.md").read_text().startswith("# Tournament")
    assert "vs greedy" in result.stderr  # the periodic evaluation ran
    assert json.loads((out / "settings.json").read_text())["total_steps"] == 3000


def test_resume_after_a_kill(tmp_path):
    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "train.py", *TINY, "--total-steps", "200000", "--eval-every", "0",
                                "--checkpoint-every", "1024", "--out", str(out)],
                               cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    while time.time() < deadline and len(list((out / "checkpoints").glob("model_*.zip"))) < 2:
        time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoints = sorted(int(p.stem.split("_")[1]) for p in (out / "checkpoints").glob("model_*.zip"))
    assert checkpoints, "no checkpoint was written before the kill"
    assert not (out / "model.zip").exists()
    result = _train("--total-steps", str(checkpoints[-1] + 2048), "--eval-every", "0", "--checkpoint-every", "1024",
                    "--out", str(out), "--resume")
    assert result.returncode == 0, result.stderr
    assert f"resuming from {checkpoints[-1]:,} steps" in result.stderr
    trained = int(result.stdout.split("trained ")[1].split(" steps")[0].replace(",", ""))
    assert trained <= 2048  # only the remainder was trained
    assert (out / "model.zip").exists()


def test_bad_settings():
    result = _train("--opponents", "random:1,minimax:2", "--out", "/tmp/unused-run")
    assert result.returncode == 2 and "unknown agent 'minimax'" in result.stderr
    result = _train("--opponents", "random:x")
    assert result.returncode == 2 and "is not name:weight" in result.stderr
    assert "Traceback" not in result.stderr


def test_same_seed_same_run(tmp_path):
    import torch

    weights = []
    for run in ("a", "b"):
        result = _train("--total-steps", "1500", "--eval-every", "0", "--checkpoint-every", "100000",
                        "--seed", "7", "--out", str(tmp_path / run))
        assert result.returncode == 0, result.stderr
        agent = load_agent(f"ppo:{tmp_path / run / 'model.zip'}")
        weights.append({k: v.clone() for k, v in agent.policy.state_dict().items()})
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    evaluations = [json.loads((tmp_path / run / "evaluation.json").read_text())["pairings"] for run in ("a", "b")]
    assert [p["pair_scores"] for p in evaluations[0]] == [p["pair_scores"] for p in evaluations[1]]
