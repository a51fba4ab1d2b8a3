"""The network of the RLlib module, in plain torch, and its file format (no pickle anywhere).

`BoardNet` is what `strategic_reserve_env.envs.rllib_env` trains with
Ray RLlib and what `strategic_reserve_env.agents.rllib_agent` plays with: 3x3 convolutions over
the `(6, 6, 9)` observation planes (channels last in the observation,
moved first here), a linear layer, then a policy head (36 logits, one per
square) and a value head, both on the same features. Illegal squares are
masked with `masked_logits` in training, exploration and play alike.

A saved module is a directory:

- `model.json`: the format tag and version, the network's settings
  (`NetworkConfig`), the spaces it was trained on and free-form
  training notes;
- `weights.npz`: one float32 array per parameter, read with
  `numpy.load(allow_pickle=False)`, so loading a model never executes code
  from its files.

This module needs torch but not ray: a trained module plays (``evaluate.py
rllib:PATH``) wherever torch is installed.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import nn

from strategic_reserve_env.core.board import NUM_SQUARES, checked_int
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.files import outputs, safe_json
from strategic_reserve_env.files.model_files import (
    Tensor,
    check_description,
    check_finite,
    check_tensors,
    npz_arrays,
    npz_headers,
)

MASKED_LOGIT = -1e8  # logit of an illegal square (sb3-contrib's value): probability exactly 0 in float32
FORMAT = "strategic-reserve-rllib-module"
FORMAT_VERSION = 1
MODEL_FILE, WEIGHTS_FILE = "model.json", "weights.npz"
MAX_WIDTH = 4096  # bound on channels and hidden units, so a malformed file cannot ask for huge tensors
MAX_CONV_LAYERS = 16
MAX_MODEL_JSON_BYTES = 2**20  # a model.json larger than this is refused before it is read
WEIGHTS_DTYPE = "float32"
DESCRIPTION_KEYS = {"format", "version", "network", "observation_shape", "actions", "notes"}


@dataclass(frozen=True)
class NetworkConfig:
    """Settings of `BoardNet`."""

    channels: int = 32  # channels of every 3x3 convolution
    conv_layers: int = 3  # number of 3x3 convolutions (padding keeps the 6x6 board)
    hidden: int = 256  # width of the linear layer both heads read

    def __post_init__(self) -> None:
        for name, high in (("channels", MAX_WIDTH), ("conv_layers", MAX_CONV_LAYERS), ("hidden", MAX_WIDTH)):
            checked_int(f"network setting {name}", getattr(self, name), 1, high)

    @classmethod
    def from_mapping(cls, mapping) -> NetworkConfig:
        """The settings named in `mapping` (other keys are ignored: RLlib adds its own to a model config)."""
        return cls(**{f.name: mapping[f.name] for f in fields(cls) if f.name in mapping})


class BoardNet(nn.Module):
    """Convolutions over the planes, a shared linear layer, policy and value heads."""

    def __init__(self, config: NetworkConfig = NetworkConfig()) -> None:
        super().__init__()
        self.config = config
        height, width, planes = OBSERVATION_SHAPE
        layers: list[nn.Module] = []
        for index in range(config.conv_layers):
            layers += [nn.Conv2d(planes if index == 0 else config.channels, config.channels, 3, padding=1), nn.ReLU()]
        self.convolutions = nn.Sequential(*layers, nn.Flatten())
        self.linear = nn.Sequential(nn.Linear(config.channels * height * width, config.hidden), nn.ReLU())
        self.policy_head = nn.Linear(config.hidden, NUM_SQUARES)
        self.value_head = nn.Linear(config.hidden, 1)

    def features(self, planes: torch.Tensor) -> torch.Tensor:
        """(B, hidden) features of (B, 6, 6, 9) planes (any numeric dtype)."""
        return self.linear(self.convolutions(planes.float().permute(0, 3, 1, 2)))

    def logits(self, features: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """(B, 36) masked policy logits from (B, hidden) features and (B, 36) masks."""
        return masked_logits(self.policy_head(features), masks)

    def value(self, features: torch.Tensor) -> torch.Tensor:
        """(B,) value estimates (from the mover's side) from (B, hidden) features."""
        return self.value_head(features).squeeze(-1)

    def forward(self, planes: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 36) masked logits and (B,) values of (B, 6, 6, 9) planes and (B, 36) masks."""
        features = self.features(planes)
        return self.logits(features, masks), self.value(features)


def masked_logits(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """`logits` with every square whose mask entry is 0 set to `MASKED_LOGIT`.

    A row with no legal square (an observation of a finished game, never acted
    on) becomes uniform, which keeps every loss term finite.
    """
    return torch.where(masks.bool(), logits, torch.full_like(logits, MASKED_LOGIT))


def save(
    directory: str | Path, weights: dict[str, np.ndarray], config: NetworkConfig, notes: dict | None = None
) -> Path:
    """Write a module (`weights` = a `BoardNet` state dict as arrays) to `directory`.

    The weights are checked against `config`'s network first, so a saved
    module always loads. Returns the directory.
    """
    directory = Path(directory)
    arrays = {key: np.asarray(value, dtype=np.float32) for key, value in weights.items()}
    found = {key: Tensor(str(array.dtype), array.shape) for key, array in arrays.items()}
    check_tensors(found, expected_weights(config), "weights to save")
    check_finite(arrays, "weights to save")
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    outputs.write_bytes(directory / WEIGHTS_FILE, buffer.getvalue())
    description = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "network": asdict(config),
        "observation_shape": list(OBSERVATION_SHAPE),
        "actions": NUM_SQUARES,
        "notes": notes or {},
    }
    outputs.write_text(directory / MODEL_FILE, json.dumps(description, indent=2) + "\n")
    return directory


def expected_weights(config: NetworkConfig) -> dict[str, Tensor]:
    """The arrays `weights.npz` holds for `config`'s network (built on torch's meta device: nothing is
    allocated)."""
    with torch.device("meta"):
        net = BoardNet(config)
    return {name: Tensor(WEIGHTS_DTYPE, tuple(tensor.shape)) for name, tensor in net.state_dict().items()}


def load(directory: str | Path) -> tuple[BoardNet, dict]:
    """The `BoardNet` saved in `directory` (in eval mode) and its `model.json` contents.

    `ValueError` naming the file and the fault for a missing or malformed
    file, another format, other spaces, or weights that do not fit the network. Every array's name, shape
    and dtype is read from the archive's headers and checked against the described network before anything
    is built or read, so a load takes memory in proportion to the files' sizes.
    """
    directory = Path(directory)
    model_path, weights_path = directory / MODEL_FILE, directory / WEIGHTS_FILE
    for path in (model_path, weights_path):
        if not path.is_file():
            raise ValueError(f"rllib module {directory}: {path.name} not found (train one with train_rllib.py)")
    description = safe_json.load(model_path, MAX_MODEL_JSON_BYTES, follow_links=True)
    description = check_description(description, str(model_path), FORMAT, FORMAT_VERSION, DESCRIPTION_KEYS)
    shape, actions = description.get("observation_shape"), description.get("actions")
    if shape != list(OBSERVATION_SHAPE) or actions != NUM_SQUARES:
        raise ValueError(
            f"{model_path}: trained on observations {shape} and {actions} actions; "
            f"this environment has {list(OBSERVATION_SHAPE)} and {NUM_SQUARES}"
        )
    network = description.get("network")
    if not isinstance(network, dict):
        raise ValueError(f"{model_path}: 'network' must be an object of settings, got {network!r}")
    unknown = sorted(set(network) - {f.name for f in fields(NetworkConfig)})
    if unknown:
        raise ValueError(f"{model_path}: unknown network settings {unknown}")
    try:
        config = NetworkConfig.from_mapping(network)
    except ValueError as error:
        raise ValueError(f"{model_path}: {error}") from None
    expected = expected_weights(config)
    check_tensors(npz_headers(weights_path), expected, str(weights_path))
    net = BoardNet(config)
    arrays = npz_arrays(weights_path, expected)
    check_finite(arrays, str(weights_path))
    net.load_state_dict({key: torch.from_numpy(np.asarray(value, dtype=np.float32)) for key, value in arrays.items()})
    return net.eval(), description
