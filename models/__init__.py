"""The shipped models, installed as package data of `strategic_reserve_env.models` (see README.md here).

Found with `importlib.resources`, so they are there wherever the package is installed (a wheel, or an
editable install of a clone, where this folder is the repository's `models/`):

- `ppo`: the shipped MaskablePPO policy (`SHIPPED_POLICY`; what `make train` makes);
- `value`: the shipped value network of the `value` agent (`VALUE_NET`);
- the benchmark panel's frozen PPO model of protocol v1 (`PANEL_V1_POLICY`).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

SHIPPED_POLICY = "ppo_baseline.safetensors"
"""The shipped policy file (`ppo` with no path)."""
VALUE_NET = "value_net.safetensors"
"""The shipped value network (`value` with no path)."""
PANEL_V1_POLICY = "panel/ppo_baseline_v1.safetensors"
"""Protocol v1's PPO panel member, frozen apart from the shipped model."""


def path(name: str) -> Path:
    """The file `name` (relative to this package, POSIX separators) of the installed models."""
    resource = files(__name__).joinpath(*name.split("/"))
    if not isinstance(resource, Path):  # pragma: no cover - a zipped install, which setuptools does not make
        raise RuntimeError(f"strategic_reserve_env.models is not installed as files: cannot open {name}")
    return resource
