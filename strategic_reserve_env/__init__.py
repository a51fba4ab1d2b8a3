"""strategic-reserve-env: a reinforcement-learning environment for Strategic Reserve.

Strategic Reserve is a two-player dice and placement game designed by Mark
Steere. This package implements his rules (see docs/RULES.md) as a batched numpy
engine (:mod:`.engine`), a single-game fast path (:class:`Game`), game records
and traces (:mod:`.records`).
"""

from . import engine, records, rules
from .aec_env import ENV_NAME, env, raw_env
from .board import BLUE, NUM_SQUARES, RED, BOARD_SIZE
from .config import Config, StartPosition
from .engine import IllegalActionError, State
from .game import Game

__version__ = "0.1.0"


def _register() -> None:
    """Register the PettingZoo env (where the registry exists) and the Gymnasium envs."""
    import gymnasium

    if "StrategicReserve-v0" not in gymnasium.registry:
        gymnasium.register(
            id="StrategicReserve-v0",
            entry_point="strategic_reserve_env.gym_env:StrategicReserveEnv",
            vector_entry_point="strategic_reserve_env.gym_env:StrategicReserveVectorEnv",
        )
    try:
        from pettingzoo import aec_registry, register
    except ImportError:  # PettingZoo < 1.26 has no registry
        return
    entry_point = "strategic_reserve_env.aec_env:env"
    if not any(spec.entry_point == entry_point for spec in aec_registry.values()):
        register("aec", ENV_NAME, entry_point=entry_point)


_register()

__all__ = [
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
    "rules",
]
