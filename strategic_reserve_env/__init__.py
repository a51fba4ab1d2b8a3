"""strategic-reserve-env: a reinforcement-learning environment for Strategic Reserve.

Strategic Reserve is a two-player dice and placement game designed by Mark
Steere. This package implements his rules (see docs/RULES.md) as a batched numpy
engine (`engine`), a single-game fast path (`Game`), game records
and traces (`records`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# isort: off
from . import interrupts  # noqa: F401  first: as the console command, its signals are held from here on (before numpy)

# isort: on
from . import engine, records, registration, render, rules, version  # render: Jupyter shows a Game as SVG
from .board import BLUE, BOARD_SIZE, NUM_SQUARES, RED
from .config import Config, StartPosition
from .engine import IllegalActionError, State
from .game import Game
from .registration import ENV_NAME

if TYPE_CHECKING:
    from .aec_env import env, raw_env

__version__ = version.__version__

#: names this package exposes from its env adapters, imported at first access (PEP 562): importing the
#: package (and its core: board, config, rules, engine, game, records) imports numpy only
_LAZY = {"env": "aec_env", "raw_env": "aec_env"}


def __getattr__(name: str) -> object:
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
