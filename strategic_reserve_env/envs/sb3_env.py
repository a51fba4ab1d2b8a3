"""A Stable-Baselines3 `VecEnv` over the engine: `n_envs` learner games in one batch.

No per-game Python env objects: the games live in one
`LearnerGames` batch. The learner's
seat is drawn per game; the opponents (a weighted pool of policies) move
inside `step`, so every observation is a decision of the learner and every
reward is from its side: `reward="outcome"` (the default; +1 win, -1 loss,
0 otherwise), `reward="luck_adjusted"` (the outcome minus the learner's luck
in the rolls since its last decision, on the rewards' scale (2 x luck,
`REWARD_SCALE`): its own rolls' luck subtracted, the
opponent's added back; `LuckAdjusted`
takes another value function) or a callable of a
`Transition`. Each luck term has mean
zero given the action before it, so every policy's expected return is
unchanged and policy gradients stay unbiased, with much less variance; the
outcome itself is in `infos[i]["learner_won"]`.

SB3 conventions: a finished game restarts in the same step; its final
observation is in `infos[i]["terminal_observation"]` and
`infos[i]["TimeLimit.truncated"]` says whether the ply limit ended it.
`infos[i]["opponent"]` names the opponent of a finished game and
`infos[i]["learner_won"]` whether the learner won. `env_method("action_masks")`
and `has_attr("action_masks")` serve sb3-contrib's MaskablePPO with the
`(n_envs, 36)` masks of the current observations. Works under `VecMonitor`.

Seeding: game `i` of the batch reset after `seed(s)` plays the games a
batch of one seeded `s + i` plays (`strategic_reserve_env.envs.learner`:
its dice, its seat and opponent draws and the built-in random opponent's
choices come from streams of that seed); each `reset()` moves on to the
next `n_envs` seeds. Bad input (non-integer actions or a wrong shape,
`step` before `reset`, a faulty opponent) raises as in
`strategic_reserve_env.envs.learner`, with nothing changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from strategic_reserve_env.core.board import NUM_SQUARES, checked_int
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.core.policies import policy_name

from .learner import LearnerGames

_OPPONENT_RNG_TAG = 0x5EA7  # mixed into the seed of the generator given to stochastic opponents of one's own


class StrategicReserveVecEnv(VecEnv):
    """`n_envs` games of a learner against a pool of opponents; see the module docstring."""

    def __init__(
        self,
        n_envs: int,
        opponents=("random",),
        opponent_weights=None,
        seat: str = "random",
        config: Config | None = None,
        seed: int = 0,
        reward="outcome",
    ) -> None:
        games = LearnerGames(
            config if config is not None else Config(),
            checked_int("n_envs", n_envs, 1),
            opponents,
            seat,
            opponent_weights=opponent_weights,
            reward=reward,
        )
        super().__init__(games.num_games, spaces.Box(0, 1, OBSERVATION_SHAPE, np.int8), spaces.Discrete(NUM_SQUARES))
        self.games = games
        self._seed = seed
        self._actions: np.ndarray | None = None

    # -- the VecEnv protocol --------------------------------------------------------------------
    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seeds the next reset: game `i` uses dice stream `seed + i`."""
        if seed is not None:
            self._seed = int(seed)
        return [None if seed is None else self._seed + i for i in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        seeds = [self._seed + i for i in range(self.num_envs)]
        self.games.reset(seeds, np.random.default_rng([self._seed, _OPPONENT_RNG_TAG]))
        self._seed += self.num_envs  # a later reset() plays new games
        return self.games.observations()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions  # checked by step_wait (LearnerGames), which may raise with nothing changed

    def step_wait(self):
        step = self.games.step(self._actions, autoreset=True)
        rewards, terminated, truncated, finals, opponents = (
            step.rewards,
            step.terminated,
            step.truncated,
            step.finals,
            step.opponents,
        )
        done = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(done):
            infos[i] = {
                "terminal_observation": finals[i],
                "TimeLimit.truncated": bool(truncated[i]),
                "opponent": policy_name(self.games.opponents[opponents[i]]),
                "learner_won": bool(step.outcomes[i] > 0),
            }
        return self.games.observations(), rewards, done, infos

    def close(self) -> None:
        pass

    def action_masks(self) -> np.ndarray:
        """(n_envs, 36) bool masks of the current observations."""
        return self.games.action_masks()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "action_masks":
            return [self.action_masks] * len(self._get_indices(indices))
        if attr_name == "render_mode":  # asked by VecEnv.__init__; these games do not render
            return [None] * len(self._get_indices(indices))
        raise AttributeError(f"StrategicReserveVecEnv games have no attribute {attr_name!r}")

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks"

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"StrategicReserveVecEnv games have no settable attribute {attr_name!r}")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        if method_name != "action_masks":
            raise AttributeError(f"StrategicReserveVecEnv games have no method {method_name!r}")
        return list(self.action_masks()[self._get_indices(indices)])

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    # -- checkpoints ----------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Copies of everything the games need to go on exactly where they are, for checkpoints:
        `{"seed": int` (of the next `reset`), and the games'
        `get_state` `}`. The opponents themselves are not
        included: set them with `games.set_opponents` first."""
        return {"seed": int(self._seed), **self.games.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from `get_state` (of an env with the same `num_envs`); `ValueError` if it does not fit."""
        seed = state["seed"]
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"the saved seed is not an integer: {type(seed).__name__}")
        self.games.set_state(state)
        self._seed = seed

    def _get_indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)
