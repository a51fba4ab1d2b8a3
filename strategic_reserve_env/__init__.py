"""strategic-reserve-env: a reinforcement-learning environment for Strategic Reserve.

Strategic Reserve is a two-player dice and placement game designed by Mark
Steere. This package implements his rules (see RULES.md) as a batched numpy
engine (:mod:`.engine`), a single-game fast path (:class:`Game`), game records
and traces (:mod:`.records`).
"""

from . import engine, records, rules
from .board import BLUE, NUM_SQUARES, RED, BOARD_SIZE
from .config import Config, StartPosition
from .engine import IllegalActionError, State
from .game import Game

__version__ = "0.1.0"

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
    "records",
    "rules",
]
