"""Untrusted model and checkpoint files run no code on any default route.

A crafted SB3 `.zip` and a crafted checkpoint `.pt` hold a harmless payload
(it writes a marker file when unpickled). The explicit opt-ins show that the
payloads are real; every default route refuses the files and leaves no marker.
"""

from __future__ import annotations

import base64
import json
import pickle
import re
import subprocess
import sys
import zipfile
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.ppo_file import METADATA_KEY, PolicyFileError, load_policy, read_description
from strategic_reserve_env.commands import train
from strategic_reserve_env.files import outputs
from strategic_reserve_env.training import checkpoint
from strategic_reserve_env.training.settings import TrainSettings

from conftest import REPO


class Payload:
    """Unpickling this writes `marker`: a stand-in for any code an attacker would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"import pathlib; pathlib.Path({self.marker!r}).write_text('payload ran')",)


@pytest.fixture(scope="module")
def tiny_zip(tmp_path_factory) -> Path:
    """An honest SB3 MaskablePPO zip (tiny network)."""
    from sb3_contrib import MaskablePPO

    from strategic_reserve_env.envs.gym_env import StrategicReserveEnv

    path = tmp_path_factory.mktemp("honest") / "tiny.zip"
    MaskablePPO(
        "MlpPolicy",
        StrategicReserveEnv(),
        n_steps=32,
        batch_size=32,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [8]},
    ).save(path)
    return path


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "PAYLOAD_RAN"


@pytest.fixture
def crafted_zip(tiny_zip, tmp_path, marker) -> Path:
    """The tiny zip with one more entry in its `data`: a pickled payload (SB3 unpickles every such entry)."""
    path = tmp_path / "crafted.zip"
    with zipfile.ZipFile(tiny_zip) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                data["zz_payload"] = {
                    ":type:": "<class 'object'>",
                    ":serialized:": base64.b64encode(pickle.dumps(Payload(marker))).decode(),
                }
                content = json.dumps(data).encode()
            target.writestr(item, content)
    return path


@pytest.fixture
def crafted_checkpoint(tmp_path, marker) -> Path:
    """A run directory whose only checkpoint carries a payload (it looks like a checkpoint otherwise)."""
    directory = tmp_path / "run" / "checkpoints"
    directory.mkdir(parents=True)
    path = checkpoint.checkpoint_path(
        tmp_path / "run", 512, outputs.write_run(tmp_path / "run", "0" * 32, "train.py")["run_id"]
    )
    settings = TrainSettings(distill_games=0, total_steps=1024, n_envs=8, out=str(tmp_path / "run"))
    (tmp_path / "run" / "settings.json").write_text(json.dumps(asdict(settings)))
    torch.save(
        {
            "format": checkpoint.CHECKPOINT_FORMAT,
            "version": checkpoint.CHECKPOINT_VERSION,
            "steps": 512,
            "payload": Payload(marker),
        },
        path,
    )
    return path


def test_the_payloads_are_real_and_the_opt_in_is_explicit(crafted_zip, crafted_checkpoint, marker):
    """Only asked for by name (`,trust=pickle`) does the zip load, and then its payload runs: this is what
    the default routes below prevent. The checkpoint's payload runs under torch.load(weights_only=False)."""
    agent = load_agent(f"ppo:{crafted_zip},trust=pickle")
    assert marker.read_text() == "payload ran" and agent.name == f"ppo:{crafted_zip},trust=pickle"
    marker.unlink()
    torch.load(crafted_checkpoint, weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("options", ["", ",deterministic=false", ",deterministic=true"])
def test_load_agent_refuses_the_zip(crafted_zip, marker, options):
    with pytest.raises(
        ValueError,
        match=r"is an SB3 \.zip: loading it unpickles its contents, which can run any "
        r"code .*,trust=pickle if you trust where the file came from",
    ):
        load_agent(f"ppo:{crafted_zip}{options}")
    assert not marker.exists()


def test_a_zip_under_another_name_is_not_unpickled(crafted_zip, tmp_path, marker):
    for name in ("model.safetensors", "model.pt", "model"):
        disguised = tmp_path / name
        disguised.write_bytes(crafted_zip.read_bytes())
        with pytest.raises(PolicyFileError, match="not a safetensors file"):
            load_agent(f"ppo:{disguised}")
    with pytest.raises(PolicyFileError):
        read_description(disguised)
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "command, stdin",
    [
        (["evaluate.py", "random", "ppo:{zip}", "--games", "2"], None),
        (["-m", "strategic_reserve_env", "play", "--opponent", "ppo:{zip}"], "q\n\n"),
    ],
    ids=["evaluate", "play"],
)
def test_the_command_line_refuses_the_zip(crafted_zip, marker, command, stdin):
    result = subprocess.run(
        [sys.executable, *(part.format(zip=crafted_zip) for part in command)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2 and "trust=pickle" in result.stderr and "Traceback" not in result.stderr
    assert not marker.exists()


def test_train_refuses_the_zip_as_an_opponent(crafted_zip, tmp_path, marker, capsys):
    assert train.main(["--opponents", f"random:1,ppo:{crafted_zip}:1", "--out", str(tmp_path / "run")]) == 2
    assert "trust=pickle" in capsys.readouterr().err
    assert not marker.exists()


def test_train_resume_does_not_unpickle_a_crafted_checkpoint(crafted_checkpoint, marker, capsys):
    out = crafted_checkpoint.parents[1]
    assert train.main(["--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        f"warning: --resume: skipping {crafted_checkpoint}: it does not load (UnpicklingError: Weights only "
        "load failed" in err
    )
    assert "error: --resume: none of the 1 checkpoint(s)" in err
    assert not marker.exists()


def _policy_file_with(tmp_path, shipped: Path, **changes) -> Path:
    """A copy of `shipped` whose description has `changes`."""
    from safetensors.torch import load, save

    description = read_description(shipped) | changes
    path = tmp_path / "edited.safetensors"
    path.write_bytes(save(load(shipped.read_bytes()), metadata={METADATA_KEY: json.dumps(description)}))
    return path


SHIPPED = REPO / "models" / "ppo_baseline.safetensors"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"activation": "os.system"}, "activation 'os.system' is not one of Tanh, ReLU"),
        ({"features": {"kind": "pickle"}}, "features must be {'kind': one of mlp, cnn, ...}"),
        ({"features": {"kind": "cnn", "channels": "__import__('os')", "features_dim": 8}}, "takes positive ints"),
        ({"format": "sb3"}, "not a strategic-reserve-ppo-policy description"),
        ({"version": 2}, "format version 2; this code reads 1"),
        ({"observation_shape": [6, 6, 8]}, r"the policy observes \(6, 6, 8\) int8"),
        (
            {"net_arch": [256, 128]},
            r"tensor mlp_extractor.policy_net.2.weight is \[256, 256\] F32, the described network has \[128, 256\] F32",
        ),
        ({"net_arch": [256]}, "unexpected .*mlp_extractor.policy_net.2.weight"),
        ({"net_arch": "[256, 256]"}, "net_arch must be a list of positive ints"),
    ],
)
def test_a_policy_file_names_no_code_and_must_fit_its_tensors(tmp_path, changes, message):
    """The description is data checked against known choices: no class is looked up by a name from the file."""
    with pytest.raises(PolicyFileError, match=message):
        load_policy(_policy_file_with(tmp_path, SHIPPED, **changes))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_policy_file_with_non_finite_weights_does_not_load(tmp_path, value):
    from safetensors.torch import load, save

    tensors = load(SHIPPED.read_bytes())
    name = "action_net.bias"
    tensors[name] = tensors[name].clone()
    tensors[name][3] = value
    path = tmp_path / "poisoned.safetensors"
    path.write_bytes(save(tensors, metadata={METADATA_KEY: json.dumps(read_description(SHIPPED))}))
    with pytest.raises(PolicyFileError, match=re.escape(f"{path}: tensor {name} holds NaN or infinite values")):
        load_agent(f"ppo:{path}")


def test_the_opt_in_is_documented():
    readme = (REPO / "README.md").read_text()
    assert "ppo:PATH.zip,trust=pickle" in readme and "can run any code" in readme
    assert "trust=pickle" in (REPO / "models" / "README.md").read_text()
