"""Throughput of uniformly random legal play: `python -m strategic_reserve_env bench`.

Every ply is counted; the time includes the roll, captures, the random choice
of a legal square, the placement, win detection and auto-reset of finished
games. Dice and choices come from a seeded generator drawn in blocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import engine, turns
from .board import brief, is_integer
from .config import Config
from .game import Game
from .reference import ReferenceGame
from .sampling import uniform_square

BLOCK = 256  # plies of dice and uniforms drawn per generator call
MAX_BATCH = 262_144
"""The largest batch measured: each game draws `BLOCK` dice and uniforms at a time (4 KiB a game, 1 GiB
at this size), and the vector env plays as many games as the largest batch."""


def _timed(run_block: Callable[[], int], seconds: float) -> float:
    """Plies per second of `run_block` (returns plies played) repeated for about `seconds`."""
    run_block()  # warm-up
    plies, start = 0, time.perf_counter()
    while True:
        plies += run_block()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return plies / elapsed


class _BlockDice:
    """Rolled squares for every game at every roll, served row by row from a (plies, B) block."""

    def __init__(self, rolls: np.ndarray) -> None:
        self.rolls = rolls  # (plies, B) int64 rolled squares
        self.row = 0

    def next(self, mask: np.ndarray) -> np.ndarray:
        """The next row (every game of the benchmark rolls at every turn, so `mask` is all True)."""
        self.row += 1
        return self.rolls[self.row - 1]


def batched(batch_size: int, seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of the batched engine with B games in lockstep, through the turn loop
    (`turn`), finished games reset after each ply."""
    rng = np.random.default_rng(seed)
    state = engine.init(config, batch_size)
    everyone = np.ones(batch_size, dtype=bool)

    def run_block() -> int:
        nonlocal state
        dice, uniforms = _BlockDice(engine.draw_rolls(rng, batch_size, BLOCK)), rng.random((BLOCK, batch_size))
        for i in range(BLOCK):
            state = turns.turn(
                state, everyone, dice, lambda position, _, i=i: uniform_square(position.legal, uniforms[i]), config
            )
            state = engine.reset(state, state.done, config)
        return BLOCK * batch_size

    return _timed(run_block, seconds)


def single(seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of one game on the Python-int path (`Game`)."""
    rng = np.random.default_rng(seed)
    game = Game(config)

    def run_block() -> int:
        rolls = engine.draw_rolls(rng, BLOCK).tolist()
        uniforms = rng.random(BLOCK).tolist()
        for rolled, uniform in zip(rolls, uniforms, strict=True):
            game.roll(rolled)
            game.place(uniform_square(game.legal, uniform))
            if game.done:
                game.reset()
        return BLOCK

    return _timed(run_block, seconds)


def aec(seconds: float, config: Config, seed: int = 0, wrapped: bool = True, reward: str = "outcome") -> float:
    """Plies/s of the PettingZoo env (`env()`, or `raw_env` if not `wrapped`) with the reward
    `reward` under random masked play through the public API (`last`/`step`)."""
    from .aec_env import env as make_env
    from .aec_env import raw_env

    make = make_env if wrapped else raw_env
    environment = make(reserve=config.reserve, ply_limit=config.ply_limit, start=config.start, reward=reward)
    environment.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def run_block() -> int:
        uniforms = iter(rng.random(BLOCK).tolist())
        plies = 0
        while plies < BLOCK:
            if not environment.agents:
                environment.reset()
            observation, _, terminated, truncated, _ = environment.last()
            if terminated or truncated:
                environment.step(None)
                continue
            legal = observation["action_mask"].nonzero()[0]
            environment.step(int(legal[int(next(uniforms) * len(legal))]))
            plies += 1
        return plies

    return _timed(run_block, seconds)


def vector(num_envs: int, seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s (both sides' placements) of the Gymnasium vector env, learner and opponent random."""
    from .gym_env import StrategicReserveVectorEnv
    from .policies import UniformRandomPolicy

    environment = StrategicReserveVectorEnv(
        num_envs, reserve=config.reserve, ply_limit=config.ply_limit, start=config.start
    )
    environment.reset(seed=seed)
    learner, rng = UniformRandomPolicy(), np.random.default_rng(seed)

    def run_block() -> int:
        before = int(environment.games.state.ply.sum())
        finished = 0
        for _ in range(BLOCK // 8):
            actions = learner.act(None, environment.action_masks(), rng)
            _, _, terminated, truncated, _ = environment.step(actions)
            ended = terminated | truncated
            finished += int(environment.games.state.ply[ended].sum())  # plies of games about to restart
        return int(environment.games.state.ply.sum()) - before + finished

    return _timed(run_block, seconds)


def reference(seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of the plain scalar reference (`strategic_reserve_env.reference`)."""
    rng = np.random.default_rng(seed)
    game = ReferenceGame.from_config(config)

    def run_block() -> int:
        nonlocal game
        rolls = engine.draw_rolls(rng, BLOCK).tolist()
        uniforms = rng.random(BLOCK).tolist()
        for rolled, uniform in zip(rolls, uniforms, strict=True):
            legal = game.roll(rolled)
            game.place(legal[int(uniform * len(legal))])
            if game.winner is not None:
                game = ReferenceGame.from_config(config)
        return BLOCK

    return _timed(run_block, seconds)


COLUMNS = (12, 8, 32, 12)  # widths of a report row's interface, size, what and rate


def row(interface: str, size: str, what: str, rate: float) -> str:
    """One report line, its columns aligned with every other's (`COLUMNS`)."""
    first, second, third, fourth = COLUMNS
    return f"{interface:<{first}}{size:<{second}}{what:<{third}}{rate:>{fourth},.0f} plies/s"


def run(seconds: float = 2.0, batch_sizes: tuple[int, ...] = (1, 64, 4096), config: Config | None = None) -> list[str]:
    """Measure and return the report lines; `ValueError` before any work for a batch size outside
    1..`MAX_BATCH`."""
    for batch_size in batch_sizes:
        if not (is_integer(batch_size) and 1 <= batch_size <= MAX_BATCH):
            raise ValueError(f"batch sizes must be integers in 1..{MAX_BATCH:,}, got {brief(batch_size)}")
    config = config if config is not None else Config()
    lines = []
    rates = {}
    rates["single"] = single(seconds, config)
    lines.append(row("engine", "B=1", "single-game path (Python ints)", rates["single"]))
    for batch_size in batch_sizes:
        rates[batch_size] = batched(batch_size, seconds, config)
        lines.append(row("engine", f"B={batch_size}", "batched numpy arrays", rates[batch_size]))
    rates["env"] = aec(seconds, config)
    lines.append(row("aec env()", "1 game", "random masked play, public API", rates["env"]))
    rates["raw"] = aec(seconds, config, wrapped=False)
    lines.append(row("aec raw_env", "1 game", "random masked play, public API", rates["raw"]))
    luck_adjusted = aec(seconds, config, wrapped=False, reward="luck_adjusted")
    lines.append(row("aec raw_env", "1 game", "the same, luck_adjusted reward", luck_adjusted))
    vector_envs = max(batch_sizes)
    lines.append(row("vector env", f"{vector_envs}", "random vs random", vector(vector_envs, seconds, config)))
    ref = reference(seconds, config)
    lines.append(row("reference", "B=1", "plain scalar (reference.py)", ref))
    best = max(batch_sizes)
    lines.append(
        f"speed-up vs reference: B={best} x{rates[best] / ref:,.1f}, single-game path x{rates['single'] / ref:,.1f}, "
        f"aec raw_env x{rates['raw'] / ref:.2f}, aec env() x{rates['env'] / ref:.2f}"
    )
    return lines
