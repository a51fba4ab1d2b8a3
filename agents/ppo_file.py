"""The policy file of a PPO agent: weights in safetensors, the architecture as JSON in its header.

An SB3 `.zip` stores the model's settings as pickles: loading one runs any
code a crafted file holds. A policy file cannot run code. It is one
[safetensors](https://huggingface.co/docs/safetensors) file:

- the tensors: the parameters and buffers of sb3-contrib's
  `MaskableActorCriticPolicy` (float32), each once under its first name
  (a shared features extractor also appears as `pi_`/`vf_features_extractor`
  in the `state_dict`);
- the header metadata `"strategic_reserve"`: a JSON object describing the
  network, read by our own code (no class is imported by a name from the file):

  ```python
  {"format": "strategic-reserve-ppo-policy", "version": 1,
   "observation_shape": [6, 6, 9], "observation_dtype": "int8", "actions": 36,
   "net_arch": [256, 256],                    # or {"pi": [...], "vf": [...]}
   "activation": "Tanh",                      # one of ACTIVATIONS
   "features": {"kind": "mlp"},               # or {"kind": "cnn", "channels": 32, "features_dim": 256}
   "share_features_extractor": true, "normalize_images": true,
   "about": {...}}                            # free-form: training settings, where it came from
  ```

`load_policy` rebuilds the policy from that description and loads the
tensors, requiring exactly the names and shapes of that network, so its action
probabilities are bit-identical to those of the model that was saved.
`strategic-reserve policy-file convert MODEL.zip` turns
an SB3 zip that you trust into a policy file (it unpickles the zip: that is
the one step that trusts it); `show FILE` prints the description.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import NUM_SQUARES
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.files import outputs
from strategic_reserve_env.files.model_files import (
    Tensor,
    check_description,
    check_finite,
    check_tensors,
    header_description,
)

FORMAT = "strategic-reserve-ppo-policy"
VERSION = 1
METADATA_KEY = "strategic_reserve"
SUFFIX = ".safetensors"
OBSERVATION_DTYPE = "int8"
ACTIVATIONS = ("Tanh", "ReLU", "ELU", "LeakyReLU", "GELU", "SiLU")  # torch.nn classes a file may name
FEATURES = {"mlp": (), "cnn": ("channels", "features_dim")}  # features kind -> its integer settings
CNN_CONVOLUTIONS = 3  # the 3x3 convolutions of agents.networks.BoardCNN (at indices 0, 2, 4 of its Sequential)
TENSOR_DTYPE = "F32"  # every tensor of a policy file (safetensors' name of float32)


class PolicyFileError(ValueError):
    """A policy file that cannot be read, or that describes a network this code does not build."""


def architecture_of(policy) -> dict:
    """The JSON description (see the module docstring) of a `MaskableActorCriticPolicy`."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    from .networks import BoardCNN

    if policy.features_extractor_class is FlattenExtractor:
        features = {"kind": "mlp"}
    elif policy.features_extractor_class is BoardCNN:
        features = {
            "kind": "cnn",
            "channels": policy.features_extractor.convolutions[0].out_channels,
            "features_dim": policy.features_extractor.features_dim,
        }
    else:
        raise PolicyFileError(f"no policy-file format for features extractor {policy.features_extractor_class}")
    activation = policy.activation_fn.__name__
    if activation not in ACTIVATIONS:
        raise PolicyFileError(f"no policy-file format for activation {activation}; known: {', '.join(ACTIVATIONS)}")
    net_arch = policy.net_arch
    return {
        "format": FORMAT,
        "version": VERSION,
        "observation_shape": list(policy.observation_space.shape),
        "observation_dtype": str(policy.observation_space.dtype),
        "actions": int(policy.action_space.n),
        "net_arch": {k: list(v) for k, v in net_arch.items()} if isinstance(net_arch, dict) else list(net_arch),
        "activation": activation,
        "features": features,
        "share_features_extractor": bool(policy.share_features_extractor),
        "normalize_images": bool(policy.normalize_images),
    }


def _checked(description: object, where: str) -> dict:
    """`description` if it is a policy description this code builds, else `PolicyFileError`."""

    def fail(what: str):
        raise PolicyFileError(f"{where}: {what}")

    description = check_description(description, where, FORMAT, VERSION, DESCRIPTION_KEYS, PolicyFileError)
    shape = description.get("observation_shape")
    if (
        not isinstance(shape, list)
        or tuple(shape) != OBSERVATION_SHAPE
        or description.get("observation_dtype") != OBSERVATION_DTYPE
    ):
        fail(
            f"the policy observes {tuple(shape) if isinstance(shape, list) else shape} "
            f"{description.get('observation_dtype')}, "
            f"this environment gives {OBSERVATION_SHAPE} {OBSERVATION_DTYPE}"
        )
    if type(description.get("actions")) is not int or description.get("actions") != NUM_SQUARES:
        fail(f"the policy has {description.get('actions')} actions, this environment {NUM_SQUARES}")
    net_arch = description.get("net_arch")
    layers = list(net_arch.values()) if isinstance(net_arch, dict) else [net_arch]
    if (isinstance(net_arch, dict) and set(net_arch) - {"pi", "vf"}) or not all(
        isinstance(sizes, list) and all(type(n) is int and n > 0 for n in sizes) for sizes in layers
    ):
        fail(f"net_arch must be a list of positive ints or {{'pi': [...], 'vf': [...]}}, got {net_arch!r}")
    if not isinstance(description.get("activation"), str) or description.get("activation") not in ACTIVATIONS:
        fail(f"activation {description.get('activation')!r} is not one of {', '.join(ACTIVATIONS)}")
    features = description.get("features")
    if not isinstance(features, dict) or not isinstance(features.get("kind"), str) or features["kind"] not in FEATURES:
        fail(f"features must be {{'kind': one of {', '.join(FEATURES)}, ...}}, got {features!r}")
    settings = {k: v for k, v in features.items() if k != "kind"}
    if set(settings) != set(FEATURES[features["kind"]]) or not all(type(v) is int and v > 0 for v in settings.values()):
        fail(f"features {features['kind']!r} takes positive ints {list(FEATURES[features['kind']])}, got {settings}")
    for flag in ("share_features_extractor", "normalize_images"):
        if type(description.get(flag)) is not bool:
            fail(f"{flag} must be true or false, got {description.get(flag)!r}")
    return description


DESCRIPTION_KEYS = {
    "format",
    "version",
    "observation_shape",
    "observation_dtype",
    "actions",
    "net_arch",
    "activation",
    "features",
    "share_features_extractor",
    "normalize_images",
    "about",
}


def _linear(name: str, inputs: int, outputs: int) -> dict[str, Tensor]:
    return {f"{name}.weight": Tensor(TENSOR_DTYPE, (outputs, inputs)), f"{name}.bias": Tensor(TENSOR_DTYPE, (outputs,))}


def expected_tensors(description: dict, where: str = "policy description") -> dict[str, Tensor]:
    """The tensors (names as `save_policy` writes them, shapes, dtypes) of the network `description`
    describes, computed from the description alone: nothing is built or allocated, so a file can be checked
    against it before its network is (`tests/test_model_files.py` checks this against built networks)."""
    description = _checked(description, where)
    features = description["features"]
    flat = int(np.prod(OBSERVATION_SHAPE))
    extractor: dict[str, Tensor] = {}
    width = flat
    if features["kind"] == "cnn":
        height, board_width, planes = OBSERVATION_SHAPE
        channels, width = features["channels"], features["features_dim"]
        for index in range(CNN_CONVOLUTIONS):
            before = planes if index == 0 else channels
            extractor[f"convolutions.{2 * index}.weight"] = Tensor(TENSOR_DTYPE, (channels, before, 3, 3))
            extractor[f"convolutions.{2 * index}.bias"] = Tensor(TENSOR_DTYPE, (channels,))
        extractor |= _linear("linear.0", channels * height * board_width, width)
    extractors = ["features_extractor"] + ([] if description["share_features_extractor"] else ["vf_features_extractor"])
    tensors = {f"{owner}.{name}": tensor for owner in extractors for name, tensor in extractor.items()}
    net_arch = description["net_arch"]
    sizes = net_arch if isinstance(net_arch, dict) else {"pi": net_arch, "vf": net_arch}
    last = {}
    for key, branch in (("pi", "policy_net"), ("vf", "value_net")):
        before = width
        for index, size in enumerate(sizes.get(key, [])):
            tensors |= _linear(f"mlp_extractor.{branch}.{2 * index}", before, size)
            before = size
        last[key] = before
    return tensors | _linear("action_net", last["pi"], NUM_SQUARES) | _linear("value_net", last["vf"], 1)


class _NoOptimizer:
    """The optimizer of a policy that is only played: none. SB3 builds an optimizer with every policy, and
    torch's first optimizer imports torch._dynamo, seconds of a command's start spent on nothing."""

    def __init__(self, params, **options) -> None:
        del params, options


def build_policy(description: dict, where: str = "policy description", trainable: bool = True):
    """A fresh `MaskableActorCriticPolicy` (CPU, eval mode) with the architecture of `description`; with
    `trainable` False, one to play only (its `optimizer` does nothing)."""
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3.common.torch_layers import FlattenExtractor
    from torch import nn

    from .networks import BoardCNN

    description = _checked(description, where)
    features = description["features"]
    extractor = {"mlp": FlattenExtractor, "cnn": BoardCNN}[features["kind"]]
    policy = MaskableActorCriticPolicy(
        spaces.Box(0, 1, OBSERVATION_SHAPE, np.dtype(OBSERVATION_DTYPE)),
        spaces.Discrete(NUM_SQUARES),
        lr_schedule=lambda _: 0.0,
        net_arch=description["net_arch"],
        activation_fn=getattr(nn, description["activation"]),
        features_extractor_class=extractor,
        features_extractor_kwargs={k: v for k, v in features.items() if k != "kind"},
        share_features_extractor=description["share_features_extractor"],
        normalize_images=description["normalize_images"],
        **({} if trainable else {"optimizer_class": _NoOptimizer}),
    )
    return policy.eval()


def _tensors_of(policy) -> dict:
    """The parameters and buffers of `policy` by name, each shared tensor once (under its first name)."""
    return dict(policy.named_parameters()) | dict(policy.named_buffers())


def save_policy(policy, path: str | Path, about: dict | None = None) -> Path:
    """Write `policy` as a policy file (written under a temporary name, then renamed); returns the path."""
    from safetensors.torch import save

    path = Path(path)
    description = architecture_of(policy) | {"about": about or {}}
    tensors = {name: tensor.detach().cpu().contiguous() for name, tensor in _tensors_of(policy).items()}
    outputs.write_bytes(path, save(tensors, metadata={METADATA_KEY: json.dumps(description)}))
    return path


def read_header(path: str | Path) -> tuple[dict, dict[str, Tensor]]:
    """The JSON description in a policy file's header (unchecked) and the tensors the file holds, from its
    header only (`strategic_reserve_env.files.model_files.safetensors_header`)."""
    description, tensors = header_description(path, METADATA_KEY, FORMAT, PolicyFileError)
    if not isinstance(description, dict):
        raise PolicyFileError(f"{path}: the description is not a JSON object")
    return description, tensors


def read_description(path: str | Path) -> dict:
    """The JSON description in a policy file's header (unchecked)."""
    return read_header(path)[0]


def load_policy(path: str | Path):
    """`(policy, description)` of a policy file; `PolicyFileError` says what is wrong with a bad one
    (not a policy file, a description this code does not build, tensors of the wrong names, shapes or dtypes,
    or NaN/infinite values). The description is checked against the tensors the header lists before anything
    is built, so the memory a load takes is a small multiple of the file's size. The policy is one to play:
    it has no optimizer (`build_policy` builds one to train)."""
    from safetensors.torch import load

    path = Path(path)
    description, found = read_header(path)
    check_tensors(found, expected_tensors(description, str(path)), str(path), PolicyFileError)
    policy = build_policy(description, str(path), trainable=False)
    try:
        tensors = load(path.read_bytes())
    except Exception as error:  # safetensors raises its own error types for malformed data
        raise PolicyFileError(f"{path}: the tensors do not load ({error})") from None
    copy_tensors(tensors, _tensors_of(policy), str(path))
    return policy.eval(), description


def copy_tensors(tensors: dict, expected: dict, where: str, error: type[ValueError] = PolicyFileError) -> None:
    """Copy `tensors` ({name: tensor} read from a file) into a network's `expected` tensors, requiring
    exactly their names, shapes and dtypes, and finite values; `error` naming `where` and the fault if not."""
    import torch

    if set(tensors) != set(expected):
        missing, unexpected = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
        raise error(
            f"{where}: the tensors do not fit the described network: missing {missing}, unexpected {unexpected}"
        )
    check_finite(tensors, where, error)
    for name, target in expected.items():
        if tensors[name].shape != target.shape or tensors[name].dtype != target.dtype:
            raise error(
                f"{where}: tensor {name} is {tuple(tensors[name].shape)} {tensors[name].dtype}, "
                f"the described network has {tuple(target.shape)} {target.dtype}"
            )
        with torch.no_grad():
            target.copy_(tensors[name])


def convert(zip_path: str | Path, out: str | Path | None = None, about: dict | None = None) -> Path:
    """Write the policy file of an SB3 MaskablePPO `.zip` (`about` added to its description);
    this UNPICKLES the zip: only for files you trust."""
    from sb3_contrib import MaskablePPO

    zip_path = Path(zip_path)
    out = zip_path.with_suffix(SUFFIX) if out is None else Path(out)
    model = MaskablePPO.load(zip_path, device="cpu")
    return save_policy(model.policy, out, about={"converted_from": zip_path.name} | (about or {}))


__all__ = [
    "FORMAT",
    "PolicyFileError",
    "SUFFIX",
    "VERSION",
    "architecture_of",
    "build_policy",
    "convert",
    "copy_tensors",
    "expected_tensors",
    "load_policy",
    "read_description",
    "save_policy",
]
