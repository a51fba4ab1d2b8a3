"""Throughput of uniformly random legal play: `python -m strategic_reserve_env bench`.

Every ply is counted; the time includes the roll, captures, the random choice
of a legal square, the placement, win detection and auto-reset of finished
games. Dice and choices come from a seeded generator drawn in blocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np

from strategic_reserve_env.core import engine, turns
from strategic_reserve_env.core.board import array_to_bitboards, brief, is_integer
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.oracle import ReferenceGame
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.envs.registration import GYM_ID, register_gymnasium

BLOCK = 256  # plies of dice and uniforms drawn per generator call
MAX_BATCH = 262_144
"""The largest batch measured: each game draws `BLOCK` dice and uniforms at a time (4 KiB a game, 1 GiB
at this size)."""


def _rates(run_block: Callable[[], tuple[int, int]], seconds: float) -> tuple[float, float]:
    """(steps/s, plies/s) of `run_block` (returns the steps and plies it made) repeated for about `seconds`."""
    run_block()  # warm-up
    steps = plies = 0
    start = time.perf_counter()
    while True:
        more_steps, more_plies = run_block()
        steps, plies = steps + more_steps, plies + more_plies
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps / elapsed, plies / elapsed


def _timed(run_block: Callable[[], int], seconds: float) -> float:
    """Plies per second of `run_block` (returns plies played) repeated for about `seconds` (`_rates`)."""
    return _rates(lambda: (run_block(), 0), seconds)[0]


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


def _uniforms(rng: np.random.Generator) -> Iterator[float]:
    """Uniform floats in [0, 1) without end, drawn `BLOCK` at a time (a random choice each)."""
    while True:
        yield from rng.random(BLOCK).tolist()


def _whole_games(play_game: Callable[[], tuple[int, int]]) -> Callable[[], tuple[int, int]]:
    """A block of `play_game` (one game or episode: returns (steps, plies)) repeated until it made at least
    `BLOCK` steps; the block's (steps, plies)."""

    def run_block() -> tuple[int, int]:
        steps = plies = 0
        while steps < BLOCK:
            more_steps, more_plies = play_game()
            steps, plies = steps + more_steps, plies + more_plies
        return steps, plies

    return run_block


def aec_loop(environment, uniforms: Iterator[float]) -> tuple[int, int]:
    """One game in the loop a PettingZoo user writes (`reset`, `agent_iter`, `last`, a uniformly random
    legal action from the mask, `step`; `None` for a done agent): (plies, plies) it made, a ply being a
    step with an action other than `None` (`_whole_games` counts its blocks in plies)."""
    environment.reset()
    plies = 0
    for _ in environment.agent_iter():
        observation, _, terminated, truncated, _ = environment.last()
        action = None
        if not (terminated or truncated):
            legal = observation["action_mask"].nonzero()[0]
            action = int(legal[int(next(uniforms) * len(legal))])
            plies += 1
        environment.step(action)
    return plies, plies


def aec(seconds: float, config: Config, seed: int = 0, wrapped: bool = True, reward: str = "outcome") -> float:
    """Plies/s of the PettingZoo env (`env()`, or `raw_env` if not `wrapped`) with the reward
    `reward` in the user's loop (`aec_loop`)."""
    from strategic_reserve_env.envs.aec_env import env as make_env
    from strategic_reserve_env.envs.aec_env import raw_env

    make = make_env if wrapped else raw_env
    environment = make(reserve=config.reserve, ply_limit=config.ply_limit, start=config.start, reward=reward)
    return _aec_rate(environment, seconds, seed)


def _aec_rate(environment, seconds: float, seed: int) -> float:
    """Plies/s of the AEC `environment` in `aec_loop`, seeded `seed`, for about `seconds`."""
    environment.reset(seed=seed)
    uniforms = _uniforms(np.random.default_rng(seed))
    return _rates(_whole_games(lambda: aec_loop(environment, uniforms)), seconds)[0]


def connect_four(seconds: float, seed: int = 0) -> float:
    """Plies/s of PettingZoo's own `connect_four_v3.raw_env` in the same loop (`aec_loop`)."""
    from pettingzoo.classic import connect_four_v3

    return _aec_rate(connect_four_v3.raw_env(), seconds, seed)


def gym_episode(environment, uniforms: Iterator[float], masked: bool) -> tuple[int, int]:
    """One episode in the loop a Gymnasium user writes (`reset`, then `step` with a uniformly random
    action, legal by `info["action_mask"]` where `masked`, until terminated or truncated): (steps,
    plies), the plies both players' placements (`info["ply"]`; a step where there is none)."""
    _, info = environment.reset()
    steps, actions = 0, environment.action_space.n
    while True:
        if masked:
            legal = info["action_mask"].nonzero()[0]
            action = int(legal[int(next(uniforms) * len(legal))])
        else:
            action = int(next(uniforms) * actions)
        _, _, terminated, truncated, info = environment.step(action)
        steps += 1
        if terminated or truncated:
            return steps, info.get("ply", steps)


def gym_single(seconds: float, config: Config, seed: int = 0, env_id: str = GYM_ID, **kwargs) -> tuple[float, float]:
    """(steps/s, plies/s) of `gymnasium.make(env_id)` in the user's loop (`gym_episode`); `GYM_ID` (our
    env, random opponent, `kwargs` such as `reward`) or another id (`"CartPole-v1"`: no mask)."""
    import gymnasium

    register_gymnasium()
    ours = env_id == GYM_ID
    settings = dict(reserve=config.reserve, ply_limit=config.ply_limit, start=config.start, **kwargs) if ours else {}
    environment = gymnasium.make(env_id, **settings)
    environment.reset(seed=seed)
    uniforms = _uniforms(np.random.default_rng(seed))
    return _rates(_whole_games(lambda: gym_episode(environment, uniforms, ours)), seconds)


def _random_legal(masks: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """(N,) int64: a uniformly random legal square of each row of `masks` ((N, 36) bool)."""
    return uniform_square(array_to_bitboards(masks), uniforms)


def vector(num_envs: int, seconds: float, config: Config, seed: int = 0, env_id: str = GYM_ID, **kwargs) -> float:
    """Env steps/s of `gymnasium.make_vec(env_id, num_envs)` stepped with a uniformly random
    action per env (legal by `infos["action_mask"]` for `GYM_ID`, learner and opponent random, `kwargs`
    such as `reward`; CartPole-v1's own vector env for `"CartPole-v1"`); an env step is one env's step."""
    import gymnasium

    register_gymnasium()
    ours = env_id == GYM_ID
    if ours:
        settings = dict(reserve=config.reserve, ply_limit=config.ply_limit, start=config.start, **kwargs)
        environment = gymnasium.make_vec(env_id, num_envs=num_envs, **settings)
    else:
        environment = gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point")
    _, infos = environment.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps_per_block = BLOCK // 8

    def run_block() -> int:
        nonlocal infos
        for _ in range(steps_per_block):
            uniforms = rng.random(num_envs)
            if ours:
                actions = _random_legal(infos["action_mask"], uniforms)
            else:
                actions = (uniforms * environment.single_action_space.n).astype(np.int64)
            infos = environment.step(actions)[-1]
        return steps_per_block * num_envs

    return _timed(run_block, seconds)


def sb3(num_envs: int, seconds: float, config: Config, seed: int = 0, **kwargs) -> float:
    """Env steps/s of the SB3 VecEnv stepped as sb3-contrib's MaskablePPO `collect_rollouts` does
    (`get_action_masks`: `env_method("action_masks")`, an action per env, `step`), a uniformly
    random legal action per env; `kwargs` such as `reward`."""
    from strategic_reserve_env.envs.sb3_env import StrategicReserveVecEnv

    environment = StrategicReserveVecEnv(num_envs, config=config, seed=seed, **kwargs)
    environment.reset()
    rng = np.random.default_rng(seed)
    steps_per_block = BLOCK // 8

    def run_block() -> int:
        for _ in range(steps_per_block):
            masks = np.stack(environment.env_method("action_masks"))
            environment.step(_random_legal(masks, rng.random(num_envs)))
        return steps_per_block * num_envs

    return _timed(run_block, seconds)


def reference(seconds: float, config: Config, seed: int = 0) -> float:
    """Plies/s of the plain scalar reference (`strategic_reserve_env.core.oracle`)."""
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
VECTOR_ENVS = 64  # the envs of the vector env and SB3 VecEnv lines (a usual PPO setting)
PEERS = ("connect_four_v3.raw_env", "CartPole-v1")  # the libraries' own envs the interfaces are measured beside


def row(interface: str, size: str, what: str, rate: float, unit: str = "plies/s") -> str:
    """One report line, its columns aligned with every other's (`COLUMNS`)."""
    first, second, third, fourth = COLUMNS
    return f"{interface:<{first}}{size:<{second}}{what:<{third}}{rate:>{fourth},.0f} {unit}"


def _interface_lines(seconds: float, config: Config, rates: dict) -> Iterator[str]:
    """The interfaces in their users' loops, each beside its peer measured in the same run (`PEERS`), the
    ratio to it at the end of the line; the AEC env's plies/s go into `rates` (`"env"`, `"raw"`)."""
    four = connect_four(seconds)
    rates["raw"] = outcome = aec(seconds, config, wrapped=False)
    rates["env"] = aec(seconds, config)
    lines = {
        "env()": rates["env"],
        "raw_env": outcome,
        "raw_env luck_adjusted": aec(seconds, config, wrapped=False, reward="luck_adjusted"),
    }
    yield row("pettingzoo", "1 game", f"{PEERS[0]}, aec_loop", four)
    for name, rate in lines.items():
        versus = f", x{rate / outcome:.2f} outcome" if name.endswith("luck_adjusted") else ""
        yield row("aec", "1 game", f"{name}, aec_loop", rate) + f"  x{rate / four:.2f} connect_four{versus}"
    cart_steps, _ = gym_single(seconds, config, env_id=PEERS[1])
    yield row("gymnasium", "1 env", f"{PEERS[1]}, gym_episode", cart_steps, "steps/s")
    gym_outcome = 0.0
    for reward in ("outcome", "luck_adjusted"):
        steps, plies = gym_single(seconds, config, reward=reward)
        versus = f", x{steps / gym_outcome:.2f} outcome" if gym_outcome else ""
        gym_outcome = gym_outcome or steps
        yield (
            row("gym env", "1 env", f"{reward}, gym_episode", steps, "steps/s")
            + f"  x{steps / cart_steps:.2f} CartPole{versus}, {plies:,.0f} plies/s x{plies / outcome:.2f} aec raw_env"
        )
    cart_vector = vector(VECTOR_ENVS, seconds, config, env_id=PEERS[1])
    yield row("gymnasium", f"{VECTOR_ENVS}", f"{PEERS[1]} vector, masks->step", cart_vector, "steps/s")
    vector_outcome = 0.0
    for reward in ("outcome", "luck_adjusted"):
        rate = vector(VECTOR_ENVS, seconds, config, reward=reward)
        versus = f", x{rate / vector_outcome:.2f} outcome" if vector_outcome else ""
        vector_outcome = vector_outcome or rate
        yield row("vector env", f"{VECTOR_ENVS}", f"{reward}, masks->step", rate, "steps/s") + (
            f"  x{rate / cart_vector:.2f} CartPole{versus}"
        )
    sb3_outcome = sb3(VECTOR_ENVS, seconds, config)
    yield row("sb3 VecEnv", f"{VECTOR_ENVS}", "outcome, collect_rollouts", sb3_outcome, "steps/s")
    sb3_luck = sb3(VECTOR_ENVS, seconds, config, reward="luck_adjusted")
    yield row("sb3 VecEnv", f"{VECTOR_ENVS}", "luck_adjusted, collect_rollouts", sb3_luck, "steps/s") + (
        f"  x{sb3_luck / sb3_outcome:.2f} outcome"
    )


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
    lines.extend(_interface_lines(seconds, config, rates))
    ref = reference(seconds, config)
    lines.append(row("reference", "B=1", "plain scalar (reference.py)", ref))
    best = max(batch_sizes)
    lines.append(
        f"speed-up vs reference: B={best} x{rates[best] / ref:,.1f}, single-game path x{rates['single'] / ref:,.1f}, "
        f"aec raw_env x{rates['raw'] / ref:.2f}, aec env() x{rates['env'] / ref:.2f}"
    )
    return lines
