"""# Strategic Reserve (PettingZoo AEC) - ``strategic_reserve_v0``

Strategic Reserve is a two-player dice and placement game designed by Mark
Steere. Rules: docs/RULES.md; all game logic comes from the engine.

| Import             | ``from strategic_reserve_env import env`` (wrapped) / ``raw_env``     |
|--------------------|-----------------------------------------------------------------------|
| Creation           | ``pettingzoo.make("aec", "strategic_reserve_v0")`` (PettingZoo >= 1.26) |
| Actions            | Discrete                                                              |
| Parallel API       | No                                                                    |
| Agents             | ``["player_0", "player_1"]``: player_0 is Red, player_1 is Blue      |
| Action space       | ``Discrete(36)``: the square to place on, ``(rank - 1) * 6 + file``  |
| Observation shape  | ``(6, 6, 9)`` int8 in {0, 1}, plus ``action_mask`` ``(36,)`` int8     |

**Turn order.** Red (``player_0``) moves first from the standard start; a
custom ``start`` may give the move to Blue. Each turn's roll is made
automatically when the turn begins (the first one in ``reset``): the dice
come from the env's seeded stream (:mod:`strategic_reserve_env.dice`), or
from forced rolls (below). The agent to move then places one checker.

**Observation** (``observe(agent)``, from that agent's side; never changes
the state): a dict ``{"observation": (6, 6, 9) int8, "action_mask": (36,) int8}``.
Planes, cell ``[rank_index, file_index]`` = square ``6 * rank_index + file_index``:
0 own checkers, 1 opponent checkers, 2 legal placements, 3 the rolled square,
4 squares the roll emptied, 5 all ones on an enemy hit, 6 all ones on a
friendly hit, 7 own reserve (the first ``min(reserve, 36)`` squares set),
8 opponent reserve (the same). The mask is all zeros for the agent not on move.

**Infos.** ``infos[mover]`` after each roll: ``roll`` (square index),
``roll_name`` (e.g. ``"e5"``), ``dice`` ((purple, green) from the mover's
seat), ``hit`` (``"enemy"``, ``"friendly"``, ``"empty"``), ``captured``
(square indices emptied by the roll). The other agent's info is ``{}``.

**Rewards.** +1 to the winner and -1 to the loser when the placement that
empties the winner's reserve is made; 0 otherwise. Through ``env()`` an
illegal action ends the game with -1 for the agent that made it (PettingZoo's
TerminateIllegalWrapper) and a warning; ``raw_env`` raises
:class:`~strategic_reserve_env.engine.IllegalActionError` instead.

**Termination / truncation.** Both agents are terminated when a player wins.
Both are truncated (reward 0) when ``ply_limit`` placements have been made
(default 1000; the rules themselves have no limit).

**Arguments.** ``reserve`` (1..12, default 7), ``ply_limit`` (default 1000),
``start`` (a :class:`~strategic_reserve_env.config.StartPosition` or a dict
``{"board", "reserves": (red, blue), "to_move"}``), ``render_mode``
(``"human"``, ``"ansi"``, ``"rgb_array"``).

**Forcing the dice** (replay and analysis): ``reset(seed, options={"rolls": [...]})``
takes rolled squares (indices or names such as ``"e5"``) used in order, the
first for the roll made in ``reset``; when they run out the seeded stream
takes over. ``env.unwrapped.force_rolls([...])`` queues more at any time.

**Version history.** v0: first release.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from . import render as rendering
from .board import NUM_SQUARES, dice_for, parse_square, square_name, squares_of
from .config import Config, StartPosition
from .dice import DiceStream
from .game import Game
from .observation import LEGAL_PLANE, OBSERVATION_SHAPE, planes
from .rules import HIT_NAMES

AGENTS = ("player_0", "player_1")  # index = colour: player_0 Red, player_1 Blue
ENV_NAME = "strategic_reserve_v0"


def env(**kwargs: Any) -> AECEnv:
    """The AEC env in PettingZoo's standard wrappers (illegal move loses, bounds check, call order)."""
    environment = raw_env(**kwargs)
    environment = wrappers.TerminateIllegalWrapper(environment, illegal_reward=-1)
    environment = wrappers.AssertOutOfBoundsWrapper(environment)
    return wrappers.OrderEnforcingWrapper(environment)


def make_config(reserve: int = 7, ply_limit: int = 1000, start: StartPosition | dict | None = None) -> Config:
    """A Config from env keyword arguments (``start`` may be a plain dict)."""
    if isinstance(start, dict):
        start = StartPosition(**start)
    return Config(reserve=reserve, ply_limit=ply_limit, start=start)


def parse_rolls(rolls) -> list[int]:
    """Forced rolls as square indices; names like ``"e5"`` or indices 0..35."""
    if isinstance(rolls, (str, bytes)) or not hasattr(rolls, "__iter__"):
        raise ValueError(f"rolls must be a sequence of squares, got {rolls!r}")
    squares = []
    for i, roll in enumerate(rolls):
        if isinstance(roll, str):
            try:
                squares.append(parse_square(roll))
            except ValueError as error:
                raise ValueError(f"rolls[{i}]: {error}") from None
        elif isinstance(roll, (int, np.integer)) and not isinstance(roll, bool) and 0 <= roll < NUM_SQUARES:
            squares.append(int(roll))
        else:
            raise ValueError(f"rolls[{i}]: {roll!r} is not a square (a1 .. f6 or 0..35)")
    return squares


def roll_info(game: Game) -> dict:
    """The mover's info after a roll: square, its name, dice from the mover's seat, hit, captures."""
    return {
        "roll": game.rolled,
        "roll_name": square_name(game.rolled),
        "dice": dice_for(game.rolled, game.to_move),
        "hit": HIT_NAMES[game.hit],
        "captured": squares_of(game.captured),
    }


class raw_env(AECEnv, EzPickle):  # noqa: N801 - PettingZoo's naming convention
    """Strategic Reserve as a PettingZoo AEC environment; see the module docstring for the spec."""

    metadata = {
        "name": ENV_NAME,
        "render_modes": rendering.RENDER_MODES,
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(self, reserve: int = 7, ply_limit: int = 1000, start: StartPosition | dict | None = None,
                 render_mode: str | None = None) -> None:
        EzPickle.__init__(self, reserve=reserve, ply_limit=ply_limit, start=start, render_mode=render_mode)
        super().__init__()
        self._renderer = rendering.Renderer(render_mode, self.metadata["render_fps"])
        self.config = make_config(reserve, ply_limit, start)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        observation_space = spaces.Dict({
            "observation": spaces.Box(0, 1, OBSERVATION_SHAPE, np.int8),
            "action_mask": spaces.Box(0, 1, (NUM_SQUARES,), np.int8),
        })
        self.observation_spaces = {agent: observation_space for agent in AGENTS}
        self.action_spaces = {agent: spaces.Discrete(NUM_SQUARES) for agent in AGENTS}
        self.game = Game(self.config)
        self.dice = DiceStream(int(np.random.SeedSequence().entropy % 2**63))

    # -- spaces ---------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # -- dice -------------------------------------------------------------------------
    def force_rolls(self, rolls) -> None:
        """Queue rolled squares (indices or names) for the next turns, before the seeded stream."""
        self.dice.forced.extend(parse_rolls(rolls))

    def _roll(self) -> None:
        """Roll for the player to move and record the roll in its info."""
        game = self.game
        game.roll(self.dice.next())
        mover = AGENTS[game.to_move]
        self.agent_selection = mover
        self.infos = {agent: {} for agent in self.agents}
        self.infos[mover] = roll_info(game)

    # -- AEC API ----------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        options = options or {}  # only "rolls" is read; other keys are ignored, as in PettingZoo's classic envs
        if seed is not None:
            self.dice = DiceStream(seed)
        else:
            self.dice.forced.clear()
        if "rolls" in options:
            self.force_rolls(options["rolls"])
        self.game.reset()
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self._roll()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict:
        view = planes(self.game, AGENTS.index(agent))
        return {"observation": view, "action_mask": view[..., LEGAL_PLANE].reshape(NUM_SQUARES).copy()}

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self.game
        mover = game.to_move
        game.place(action)  # IllegalActionError names the square and the legal ones
        self._cumulative_rewards[agent] = 0
        self.rewards = dict.fromkeys(AGENTS, 0)
        if game.winner >= 0:
            self.rewards[AGENTS[mover]] = 1
            self.rewards[AGENTS[mover ^ 1]] = -1
            self.terminations = dict.fromkeys(AGENTS, True)
            self.infos = {a: {} for a in AGENTS}
            self.agent_selection = AGENTS[mover ^ 1]
        elif game.truncated:
            self.truncations = dict.fromkeys(AGENTS, True)
            self.infos = {a: {} for a in AGENTS}
            self.agent_selection = AGENTS[mover ^ 1]
        else:
            self._roll()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    # -- rendering --------------------------------------------------------------------
    def render(self):
        return self._renderer.render(self.game)

    def close(self) -> None:
        self._renderer.close()
