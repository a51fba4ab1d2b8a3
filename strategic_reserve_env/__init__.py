"""strategic-reserve-env: a reinforcement-learning environment for Strategic Reserve.

Strategic Reserve is a two-player dice and placement game designed by Mark
Steere. This package implements his rules (see docs/RULES.md) as a batched numpy
engine (`engine`), a single-game fast path (`Game`), game records
and traces (`records`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

# isort: off
from . import interrupts  # noqa: F401  first: as the console command, its signals are held from here on (before numpy)

# isort: on
from . import version  # render: Jupyter shows a Game as SVG
from .core import engine, rules
from .core.board import BLUE, BOARD_SIZE, NUM_SQUARES, RED
from .core.config import Config, StartPosition
from .core.engine import IllegalActionError, State
from .core.game import Game
from .envs import registration
from .envs.registration import ENV_NAME
from .files import records
from .pictures import render

if TYPE_CHECKING:
    from .envs.aec_env import env, raw_env

__version__ = version.__version__

#: names this package exposes from its env adapters, imported at first access (PEP 562): importing the
#: package (and its core: board, config, rules, engine, game, records) imports numpy only
_LAZY = {"env": "envs.aec_env", "raw_env": "envs.aec_env"}


#: the modules that moved into the layers' subpackages (CHANGELOG, Moved), by their old names: `from
#: strategic_reserve_env import OLD`, `import strategic_reserve_env.OLD` and pickles that name an old module
#: still find it (the module itself, imported at first use; its documented name is the new one)
_MOVED = {
    "aec_env": "envs.aec_env",
    "agents.policy_file": "agents.ppo_file",
    "agents.value_net": "agents.value_network",
    "arena": "envs.arena",
    "bench": "speed.engine_speed",
    "bench_jax": "speed.jax_speed",
    "board": "core.board",
    "commands.rules": "commands.show_rules",
    "config": "core.config",
    "dice": "core.dice",
    "engine": "core.engine",
    "evaluation.benchmark": "evaluation.benchmark_protocol",
    "evaluation.headroom": "evaluation.placement_headroom",
    "evaluation.reference": "evaluation.reference_cards",
    "evaluation.skill": "evaluation.skill_report",
    "game": "core.game",
    "gym_env": "envs.gym_env",
    "jax_rules": "envs.jax_rules",
    "learner": "envs.learner",
    "luck": "core.luck",
    "model_files": "files.model_files",
    "observation": "core.observation",
    "openspiel": "envs.openspiel",
    "outcome": "core.outcome",
    "outputs": "files.outputs",
    "pgx_checks": "envs.pgx_checks",
    "pgx_env": "envs.pgx_env",
    "pgx_state": "envs.pgx_state",
    "pgx_svg": "envs.pgx_svg",
    "plotting": "pictures.plotting",
    "policies": "core.policies",
    "progress": "files.progress",
    "records": "files.records",
    "reference": "core.oracle",
    "registration": "envs.registration",
    "render": "pictures.render",
    "rllib": "envs.rllib_env",
    "rules": "core.rules",
    "safe_json": "files.safe_json",
    "sampling": "core.sampling",
    "sb3_env": "envs.sb3_env",
    "scene": "pictures.scene",
    "terminal": "commands.terminal",
    "training.rllib": "training.rllib_run",
    "training.signals": "interrupts",
    "turns": "core.turns",
}


class _MovedModules:
    """The import system's finder of the old names of `_MOVED` (`sys.meta_path`): the old name is an alias of the
    module at its new place, never a second copy."""

    _specs: dict[str, object] = {}

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> object:
        from importlib.util import spec_from_loader

        old = fullname[len(__name__) + 1 :] if fullname.startswith(__name__ + ".") else ""
        return spec_from_loader(fullname, _MovedModules) if old in _MOVED else None  # type: ignore[arg-type]

    @staticmethod
    def create_module(spec: object) -> object:
        from importlib import import_module

        module = import_module(f".{_MOVED[spec.name[len(__name__) + 1 :]]}", __name__)  # type: ignore[attr-defined]
        _MovedModules._specs[module.__name__] = module.__spec__  # the import system sets the alias's spec on it
        return module

    @staticmethod
    def exec_module(module: object) -> None:
        module.__spec__ = _MovedModules._specs.pop(module.__name__)  # type: ignore[attr-defined]


sys.meta_path.append(_MovedModules)  # type: ignore[arg-type]


def __getattr__(name: str) -> object:
    if name in _MOVED:  # an old module name
        from importlib import import_module

        return import_module(f".{_MOVED[name]}", __name__)
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


registration.install()

__all__ = [
    "ENV_NAME",
    "BLUE",
    "BOARD_SIZE",
    "NUM_SQUARES",
    "RED",
    "Config",
    "Game",
    "IllegalActionError",
    "StartPosition",
    "State",
    "engine",
    "env",
    "raw_env",
    "records",
    "render",
    "rules",
]
