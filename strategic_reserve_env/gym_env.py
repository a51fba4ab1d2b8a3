"""Gymnasium interfaces: ``StrategicReserve-v0`` (one learner vs an opponent) and its vector env.

Both wrap :class:`~strategic_reserve_env.learner.LearnerGames`, so they play
exactly the same games for the same seed.

``gymnasium.make("StrategicReserve-v0", opponent="random", seat="random")``

- **Observation**: ``Box(0, 1, (6, 6, 9), int8)``, the planes of
  :mod:`strategic_reserve_env.observation` from the learner's side.
- **Action**: ``Discrete(36)``, the square to place on; use the mask:
  ``info["action_mask"]`` or ``env.action_masks()`` ((36,) bool, the
  sb3-contrib convention). An illegal action loses the game (reward -1,
  terminated, ``info["illegal_action"]`` says why), as PettingZoo's classic
  envs do; ``illegal_action="raise"`` raises
  :class:`~strategic_reserve_env.engine.IllegalActionError` instead.
- **Opponent**: ``"random"`` (uniform over legal squares), any object with
  ``act(observations, masks, rng)``, or such a callable
  (:mod:`strategic_reserve_env.policies`). It moves inside ``step``.
- **Seat**: ``"random"`` (drawn per episode), ``"red"`` or ``"blue"``;
  ``info["seat"]`` says which.
- **Reward**: +1 when the learner's placement wins, -1 when the opponent's
  does (reported by the learner's step that led to it), 0 otherwise.
- **Termination**: a player won. **Truncation**: ``ply_limit`` plies (both
  players' placements count) were made without a winner.
- **Seeding**: ``reset(seed=s)`` seeds the dice stream with ``s`` (the
  PettingZoo env seeded ``s`` rolls the same dice) and the seat/opponent
  generator; later resets without a seed continue both.

``gymnasium.make_vec("StrategicReserve-v0", num_envs=N)`` builds
:class:`StrategicReserveVectorEnv`, natively batched over the engine.
Sub-env ``i`` uses dice stream ``seed + i``. Auto-reset follows Gymnasium's
default *next-step* mode: the step that returns ``terminated`` or
``truncated`` for an env shows its final observation; on the next ``step``
that env's action is ignored, it starts a new game and returns the new
game's first observation with reward 0. ``info["action_mask"]`` and
``action_masks()`` always describe the observation just returned.
"""

from __future__ import annotations

import numpy as np
import gymnasium
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import render as rendering
from .aec_env import make_config
from .board import COLOURS, NUM_SQUARES, names_of
from .game import Game
from .learner import LearnerGames
from .observation import OBSERVATION_SHAPE

_SEED_RANGE = 2**63


def _spaces() -> tuple[spaces.Box, spaces.Discrete]:
    """Observation and action space of one learner."""
    return spaces.Box(0, 1, OBSERVATION_SHAPE, np.int8), spaces.Discrete(NUM_SQUARES)


class StrategicReserveEnv(gymnasium.Env):
    """One learner against an opponent; see the module docstring for the spec."""

    metadata = {"render_modes": rendering.RENDER_MODES, "render_fps": 2}

    def __init__(self, opponent="random", seat: str = "random", reserve: int = 7, ply_limit: int = 1000,
                 start=None, render_mode: str | None = None, illegal_action: str = "lose") -> None:
        self._renderer = rendering.Renderer(render_mode, self.metadata["render_fps"])
        self.observation_space, self.action_space = _spaces()
        self.render_mode = render_mode
        self.games = LearnerGames(make_config(reserve, ply_limit, start), 1, opponent, seat, illegal_action)
        self._seeded = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None and not self._seeded:
            seed = int(self.np_random.integers(_SEED_RANGE))
        self.games.reset(None if seed is None else [seed], self.np_random if seed is not None else None)
        self._seeded = True
        if self.render_mode == "human":
            self.render()
        return self.games.observations()[0], self._info()

    def step(self, action):
        legal_before = int(self.games.state.legal[0])
        rewards, terminated, truncated, illegal = self.games.step(np.array([action], dtype=np.int64))
        info = self._info()
        if illegal[0]:
            info["illegal_action"] = f"action {action} is not a legal placement; legal: {names_of(legal_before)}"
            gymnasium.logger.warn(f"illegal action, the learner loses: {info['illegal_action']}")
        if self.render_mode == "human":
            self.render()
        return self.games.observations()[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), info

    def action_masks(self) -> np.ndarray:
        """(36,) bool legal placements for the current observation."""
        return self.games.action_masks()[0]

    def _info(self) -> dict:
        """Mask, seat and ply of the current game."""
        return {"action_mask": self.action_masks(), "seat": COLOURS[int(self.games.seat[0])],
                "ply": int(self.games.state.ply[0])}

    def render(self):
        game = Game(self.games.config)
        game.load(self.games.state, 0)
        return self._renderer.render(game)

    def close(self) -> None:
        self._renderer.close()


class StrategicReserveVectorEnv(VectorEnv):
    """``num_envs`` learners, one engine batch; next-step auto-reset (see the module docstring)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, opponent="random", seat: str = "random", reserve: int = 7,
                 ply_limit: int = 1000, start=None, render_mode: str | None = None,
                 illegal_action: str = "lose") -> None:
        if render_mode is not None:
            raise ValueError("the vector env does not render; render a StrategicReserveEnv or the AEC env")
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.single_observation_space, self.single_action_space = _spaces()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self.games = LearnerGames(make_config(reserve, ply_limit, start), self.num_envs, opponent, seat,
                                  illegal_action)
        self._restart = np.zeros(self.num_envs, dtype=bool)  # (N,) bool: ended last step, restart on this one

    def reset(self, *, seed=None, options: dict | None = None):
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % _SEED_RANGE)
        if isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = [int(s) for s in seed]
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed must be an int or {self.num_envs} ints, got {len(seeds)}")
        if min(seeds) < 0:
            raise ValueError(f"seeds must be non-negative, got {min(seeds)}")
        self._np_random = np.random.default_rng(seeds)
        self.games.reset(seeds, self._np_random)
        self._restart[:] = False
        return self.games.observations(), self._infos()

    def step(self, actions):
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        rewards, terminated, truncated, illegal = self.games.step(actions.astype(np.int64), restart=self._restart)
        self._restart = terminated | truncated
        infos = self._infos()
        if illegal.any():
            infos["illegal_action"], infos["_illegal_action"] = illegal, illegal
        return self.games.observations(), rewards, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """(N, 36) bool legal placements for the observations just returned."""
        return self.games.action_masks()

    def _infos(self) -> dict:
        masks = self.action_masks()
        return {"action_mask": masks, "_action_mask": np.ones(self.num_envs, dtype=bool)}
