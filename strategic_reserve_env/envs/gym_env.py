"""Gymnasium interfaces: `StrategicReserve-v1` (one learner vs an opponent) and its vector env.

Both wrap `LearnerGames`, so they play
exactly the same games for the same seed.

`gymnasium.make("StrategicReserve-v1", opponent="random", seat="random")`

- **Observation**: `Box(0, 1, (6, 6, 9), int8)`, the planes of
  `strategic_reserve_env.core.observation` from the learner's side.
- **Action**: `Discrete(36)`, the square to place on; use the mask:
  `info["action_mask"]` or `env.action_masks()` ((36,) bool, the
  sb3-contrib convention). An illegal action loses the game (reward -1,
  terminated, `info["illegal_action"]` says why), as PettingZoo's classic
  envs do; `illegal_action="raise"` raises
  `IllegalActionError` instead.
- **Opponent**: `"random"` (uniform over legal squares), any object with
  `act(observations, masks, rng)`, or such a callable
  (`strategic_reserve_env.core.policies`). It moves inside `step`.
- **Seat**: `"random"` (drawn per episode), `"red"` or `"blue"`;
  `info["seat"]` says which.
- **Reward**: `reward="outcome"` (the default): +1 when the learner's
  placement wins, -1 when the opponent's does (reported by the learner's
  step that led to it), 0 otherwise. `reward="luck_adjusted"`: that
  outcome minus the learner's luck in the rolls since its last decision,
  on the reward's scale (2 x luck: `REWARD_SCALE`;
  `strategic_reserve_env.core.luck`: the opponent's roll's luck is added
  back, the learner's own subtracted; the value function is
  `DEFAULT_VALUE` unless a
  `LuckAdjusted` with another is
  given). Each luck term has mean zero given the action before it (the 36
  rolls are equally likely whatever the value function), so every policy's
  expected return is unchanged and policy gradients stay unbiased, with
  much less variance (`tests/test_rewards.py` measures both). Any
  callable of a `Transition` (the
  rolls since the learner's last decision, with the positions before and
  after each, and the outcome) may be given instead; it must return finite
  real numbers, and an error in it (or a bad answer) raises and changes
  nothing. Rolls before the learner's first decision of a game are in no
  reward.
- **Versions**: `StrategicReserve-v1` takes the luck-adjusted reward's luck
  on the reward's scale (2 x); `-v0` took 1 x (the same expected return,
  more variance) and is refused by `gymnasium.make` naming v1 (the AEC
  env's spec card, `strategic_reserve_env.envs.aec_env`, has the history).
- **Termination**: a player won. **Truncation**: `ply_limit` plies (both
  players' placements count) were made without a winner.
- **Seeding**: `reset(seed=s)` seeds the game: its dice stream is `s`
  (the PettingZoo env seeded `s` rolls the same dice) and its seat,
  opponent-pool and built-in random opponent draws come from stream `s`
  under another tag (`strategic_reserve_env.envs.learner`); later resets
  without a seed continue these streams. A stochastic opponent of your own
  gets `env.np_random` (seeded by `reset(seed=s)`) as its `rng`.
- **Bad input** raises with nothing changed: an action must be an integer
  (a Python or numpy integer; `6.9` or `True` raise `ValueError`);
  `step` before `reset` or after the episode ended raises
  `ResetNeeded`; an opponent that
  raises or returns anything but a legal square raises
  `OpponentError` naming it, the game
  and the square, and the env is as before the `step` (`reset` starts
  afresh). Observations and masks are new arrays: editing one changes
  nothing in the env.

`gymnasium.make_vec("StrategicReserve-v1", num_envs=N)` builds
`StrategicReserveVectorEnv`, natively batched over the engine.
Sub-env `i` plays the game seeded `seed + i`: every observation, reward,
termination, truncation and info of it, episode after episode, is what a
`StrategicReserveEnv` reset with `seed + i` (then reset without a seed
after each episode) returns, for the built-in random opponent and any
deterministic opponent; only the action mask that comes with a final
observation differs (see auto-reset below). A stochastic opponent of your own acts on the whole
batch with one generator (`np.random.default_rng(seeds)`), so there its
choices in one sub-env depend on the others; note that the greedy and
expectimax agents break ties at random with their generator, so they are
stochastic here. `reset()` without a seed continues the streams, as the
single env does.

Auto-reset follows Gymnasium's default *next-step* mode: the step that
returns `terminated` or `truncated` for an env shows its final
observation; on the next `step` that env's action is ignored, it starts a
new game and returns the new game's first observation with reward 0.
`info["action_mask"]` and `action_masks()` give the actions the next
`step` accepts: the legal placements (the legal plane of the observation
just returned) for a game in progress, and **all 36 squares** for an env
whose game just ended (its next action is ignored), so a loop that samples
`np.random.choice(np.flatnonzero(mask))` always has a square to pick. (The
single env's mask with a final observation is empty: it takes no action
until `reset`.)
`info["seat"]` and `info["ply"]` are (N,) arrays with the single env's
`info` values.
"""

from __future__ import annotations

from typing import cast

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from strategic_reserve_env.core.board import (
    COLOURS,
    DEFAULT_RESERVE,
    NUM_SQUARES,
    bits_of,
    brief,
    checked_int,
    is_integer,
    names_of,
)
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, make_config
from strategic_reserve_env.core.dice import DRAWN_SEEDS
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.pictures import render as rendering

from .learner import LearnerGames

_COLOUR_NAMES = np.array(COLOURS, dtype=object)  # (2,) the seat names of info["seat"], indexed by colour


def _spaces() -> tuple[spaces.Box, spaces.Discrete]:
    """Observation and action space of one learner."""
    return spaces.Box(0, 1, OBSERVATION_SHAPE, np.int8), spaces.Discrete(NUM_SQUARES)


class StrategicReserveEnv(gymnasium.Env):
    """One learner against an opponent; see the module docstring for the spec."""

    metadata = {"render_modes": rendering.RENDER_MODES, "render_fps": rendering.RENDER_FPS}

    def __init__(
        self,
        opponent="random",
        seat: str = "random",
        reserve: int = DEFAULT_RESERVE,
        ply_limit: int = DEFAULT_PLY_LIMIT,
        start=None,
        render_mode: str | None = None,
        illegal_action: str = "lose",
        reward="outcome",
    ) -> None:
        self._renderer = rendering.Renderer(render_mode, rendering.RENDER_FPS)
        self.observation_space, self.action_space = _spaces()
        self.render_mode = render_mode
        self.games = LearnerGames(
            make_config(reserve, ply_limit, start), 1, opponent, seat, illegal_action, reward=reward
        )
        self._seeded = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if isinstance(seed, np.integer):  # as the AEC and vector envs take it (Gymnasium wants a Python int)
            seed = int(seed)
        super().reset(seed=seed)
        if seed is None and not self._seeded:
            seed = int(self.np_random.integers(DRAWN_SEEDS))
        self.games.reset(None if seed is None else [seed], self.np_random if seed is not None else None)
        self._seeded = True
        if self.render_mode == "human":
            self.render()
        return self.games.observations()[0], self._info()

    def step(self, action):
        legal_before = self.games.action_masks()[0]  # the learner's legal placements (its view, kept)
        rewards, terminated, truncated, illegal = self.games.step(action)[:4]
        info = self._info()
        if illegal[0]:
            legal = names_of(bits_of(np.flatnonzero(legal_before).tolist()))
            info["illegal_action"] = f"action {action} is not a legal placement; legal: {legal}"
            gymnasium.logger.warn(f"illegal action, the learner loses: {info['illegal_action']}")
        if self.render_mode == "human":
            self.render()
        return self.games.observations()[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), info

    def action_masks(self) -> np.ndarray:
        """(36,) bool legal placements for the current observation."""
        return self.games.action_masks()[0]

    def _info(self) -> dict:
        """Mask, seat and ply of the current game."""
        return {
            "action_mask": self.action_masks(),
            "seat": COLOURS[int(self.games.seat[0])],
            "ply": int(self.games.plies()[0]),
        }

    def render(self):
        game = Game(self.games.config)
        game.load(self.games.state, 0)
        return self._renderer.render(game)

    def close(self) -> None:
        self._renderer.close()


class StrategicReserveVectorEnv(VectorEnv):
    """`num_envs` learners, one engine batch; next-step auto-reset (see the module docstring)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        opponent="random",
        seat: str = "random",
        reserve: int = DEFAULT_RESERVE,
        ply_limit: int = DEFAULT_PLY_LIMIT,
        start=None,
        render_mode: str | None = None,
        illegal_action: str = "lose",
        reward="outcome",
    ) -> None:
        if render_mode is not None:
            raise ValueError("the vector env does not render; render a StrategicReserveEnv or the AEC env")
        self.num_envs = checked_int("num_envs", num_envs, 1)
        self.single_observation_space, self.single_action_space = _spaces()
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self.games = LearnerGames(
            make_config(reserve, ply_limit, start), self.num_envs, opponent, seat, illegal_action, reward=reward
        )
        self._restart = np.zeros(self.num_envs, dtype=bool)  # (N,) bool: ended last step, restart on this one
        self._seeded = False

    def reset(self, *, seed=None, options: dict | None = None):
        if seed is None and not self._seeded:
            seed = int(cast(int, np.random.SeedSequence().entropy) % DRAWN_SEEDS)
        seeds = None if seed is None else self._seeds(seed)
        rng = None if seeds is None else np.random.default_rng(seeds)
        self.games.reset(seeds, rng)
        if rng is not None:
            self._np_random = rng
        self._seeded = True
        self._restart = np.zeros(self.num_envs, dtype=bool)
        return self.games.observations(), self._infos()

    def _seeds(self, seed) -> list[int]:
        """The N sub-env seeds of `seed` (an int: `seed + i`; or N ints), or ValueError."""
        if is_integer(seed):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(np.atleast_1d(np.asarray(seed, dtype=object)))
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed must be an int or {self.num_envs} ints, got {len(seeds)}")
            if not all(map(is_integer, seeds)):
                raise ValueError(f"seed must be an int or {self.num_envs} ints, got {brief(seed)}")
            seeds = [int(s) for s in seeds]
        if min(seeds) < 0:
            raise ValueError(f"seeds must be non-negative, got {min(seeds)}")
        return seeds

    def step(self, actions):
        rewards, terminated, truncated, illegal = self.games.step(actions, restart=self._restart)[:4]
        self._restart = terminated | truncated
        infos = self._infos()
        if illegal.any():
            infos["illegal_action"], infos["_illegal_action"] = illegal, illegal
        return self.games.observations(), rewards, terminated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """(N, 36) bool: the actions the next `step` accepts (all 36 for an env whose game just ended)."""
        return self.games.action_masks() | self._restart[:, None]

    def _infos(self) -> dict:
        everyone = np.ones(self.num_envs, dtype=bool)
        return {
            "action_mask": self.action_masks(),
            "_action_mask": everyone,
            "seat": _COLOUR_NAMES[self.games.seat],
            "_seat": everyone,
            "ply": self.games.state.ply.copy(),
            "_ply": everyone,
        }
