"""The policy-value network of AlphaZero-style training (`strategic-reserve train-az`), in plain JAX, and its file.

The network reads a decision's `(6, 6, 9)` observation planes (from the mover's side, flattened to 324 inputs)
through `hidden` ReLU layers into 36 policy logits and a value `tanh` (-1 .. 1, the mover's result:
twice its win probability minus one). `evaluation` makes it the leaf evaluation of the search
(`mctx_search.Evaluation`).

**The file** is safetensors (`F32` tensors `layer{i}.weight` (in, out) and `layer{i}.bias`, `policy.*`,
`value.*`) with a JSON description in its header's metadata under `METADATA_KEY`: `format`,
`version`, `hidden`, `about`. `load` checks the header, the description and every tensor's name,
shape and dtype against the described network (`strategic_reserve_env.files.model_files`) before it reads a
tensor, refuses NaN or infinite weights, and never runs code from the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from strategic_reserve_env.core.board import NUM_SQUARES
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.files.model_files import (
    Tensor,
    check_description,
    check_finite,
    check_tensors,
    header_description,
)

FORMAT, VERSION = "strategic-reserve-az-net", 1
METADATA_KEY = "strategic_reserve_az_net"
INPUTS = int(np.prod(OBSERVATION_SHAPE))
MAX_HIDDEN_LAYERS, MAX_WIDTH = 8, 4096
DESCRIPTION_KEYS = {"format", "version", "hidden", "about"}


class NetFileError(ValueError):
    """A network file that cannot be read: one line naming the file and the fault."""


def layer_shapes(hidden: list[int]) -> dict[str, tuple[int, ...]]:
    """The tensors' names and shapes of the network with `hidden` layer widths."""
    shapes: dict[str, tuple[int, ...]] = {}
    width = INPUTS
    for i, size in enumerate(hidden):
        shapes[f"layer{i}.weight"], shapes[f"layer{i}.bias"] = (width, size), (size,)
        width = size
    shapes["policy.weight"], shapes["policy.bias"] = (width, NUM_SQUARES), (NUM_SQUARES,)
    shapes["value.weight"], shapes["value.bias"] = (width, 1), (1,)
    return shapes


def init(key, hidden: list[int]) -> dict:
    """Fresh parameters (He-scaled normal weights, zero biases; the heads start small)."""
    import jax
    import jax.numpy as jnp

    params = {}
    shapes = layer_shapes(hidden)
    keys = jax.random.split(key, len(shapes))
    for subkey, (name, shape) in zip(keys, shapes.items(), strict=True):
        if name.endswith(".bias"):
            params[name] = jnp.zeros(shape, jnp.float32)
        else:
            scale = np.sqrt(2.0 / shape[0]) * (0.01 if name.split(".")[0] in ("policy", "value") else 1.0)
            params[name] = scale * jax.random.normal(subkey, shape, jnp.float32)
    return params


def hidden_of(params: dict) -> list[int]:
    """The hidden layer widths of `params`."""
    return [params[f"layer{i}.bias"].shape[0] for i in range(sum(name.startswith("layer") for name in params) // 2)]


def apply(params: dict, observations):
    """`(logits (B, 36), value (B,))` of (B, 6, 6, 9) observations (bool or 0/1 ints)."""
    import jax
    import jax.numpy as jnp

    x = jnp.reshape(observations, (observations.shape[0], -1)).astype(jnp.float32)
    for i in range(len(hidden_of(params))):
        x = jax.nn.relu(x @ params[f"layer{i}.weight"] + params[f"layer{i}.bias"])
    logits = x @ params["policy.weight"] + params["policy.bias"]
    value = jnp.tanh(x @ params["value.weight"] + params["value.bias"])[:, 0]
    return logits, value


def evaluation(params: dict, states):
    """The network as the search's leaf evaluation: `apply` on the States' observations."""
    return apply(params, states.observation)


def save(path: str | Path, params: dict, about: dict | None = None) -> None:
    """Write `params` as a network file at `path`, atomically."""
    from safetensors.numpy import save as to_bytes

    from strategic_reserve_env.files.outputs import write_bytes

    description = {"format": FORMAT, "version": VERSION, "hidden": hidden_of(params), "about": about or {}}
    tensors = {name: np.ascontiguousarray(np.asarray(value, dtype=np.float32)) for name, value in params.items()}
    write_bytes(path, to_bytes(tensors, metadata={METADATA_KEY: json.dumps(description)}))


def load(path: str | Path) -> tuple[dict, dict]:
    """`(params, description)` of a network file; `NetFileError` says what is wrong with a bad one."""
    import jax.numpy as jnp
    from safetensors.numpy import load as from_bytes

    path = Path(path)
    if not path.is_file():
        raise NetFileError(f"{path}: no such network file")
    description, found = header_description(path, METADATA_KEY, FORMAT, NetFileError)
    description = check_description(description, str(path), FORMAT, VERSION, DESCRIPTION_KEYS, NetFileError)
    hidden = description.get("hidden")
    if (
        not isinstance(hidden, list)
        or len(hidden) > MAX_HIDDEN_LAYERS
        or not all(type(n) is int and 0 < n <= MAX_WIDTH for n in hidden)
    ):
        raise NetFileError(f"{path}: hidden must be a list of at most {MAX_HIDDEN_LAYERS} widths in 1..{MAX_WIDTH}")
    expected = {name: Tensor("F32", shape) for name, shape in layer_shapes(hidden).items()}
    check_tensors(found, expected, str(path), NetFileError)
    try:
        tensors = from_bytes(path.read_bytes())
    except Exception as error:  # safetensors raises its own error types for malformed data
        raise NetFileError(f"{path}: the tensors do not load ({error})") from None
    check_finite(tensors, str(path), NetFileError)
    return {name: jnp.asarray(tensors[name]) for name in expected}, description
