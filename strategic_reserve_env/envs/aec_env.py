"""# Strategic Reserve (PettingZoo AEC) - `strategic_reserve_v2`

Strategic Reserve is a two-player dice and placement game designed by Mark
Steere. Rules: docs/RULES.md; all game logic comes from the engine.

| Import             | `from strategic_reserve_env import env` (wrapped) / `raw_env`     |
|--------------------|-----------------------------------------------------------------------|
| Creation           | `pettingzoo.make("aec", "strategic_reserve_v2")` (PettingZoo >= 1.26) |
| Actions            | Discrete                                                              |
| Parallel API       | No                                                                    |
| Agents             | `["player_0", "player_1"]`: player_0 is Red, player_1 is Blue      |
| Action space       | `Discrete(36)`: the square to place on, `(rank - 1) * 6 + file`  |
| Observation shape  | `(6, 6, 9)` int8 in {0, 1}, plus `action_mask` `(36,)` int8     |
| Info keys          | `roll`, `roller`, `dice`, `hit`, `captured` (fixed shapes)  |

**Turn order.** Red (`player_0`) moves first from the standard start; a
custom `start` may give the move to Blue. Each turn's roll is made
automatically when the turn begins (the first one in `reset`): the dice
come from the env's seeded stream (`strategic_reserve_env.core.dice`), or
from forced rolls (below). The agent to move then places one checker.

**Observation** (`observe(agent)`, from that agent's side; never changes
the state): a dict `{"observation": (6, 6, 9) int8, "action_mask": (36,) int8}`.
Planes, cell `[rank_index, file_index]` = square `6 * rank_index + file_index`:
0 own checkers, 1 opponent checkers, 2 legal placements, 3 the rolled square,
4 squares the roll emptied, 5 all ones on an enemy hit, 6 all ones on a
friendly hit, 7 own reserve (the first `min(reserve, 36)` squares set),
8 opponent reserve (the same). The mask is all zeros for the agent not on move
and once a player has won or the game is truncated.

**Infos.** Every agent's info has the same five keys at every step (after
`reset`, after each `step`, at the end of the game), with numbers of fixed
shape, so that libraries can stack them. Both agents' infos describe the
latest roll, which is also what observation planes 3 to 6 show: during a turn
the roll the agent on move answers, once the game is over the roll before the
last placement.

| key        | value                | meaning                                                          |
|------------|----------------------|------------------------------------------------------------------|
| `roll`     | int                  | the rolled square, 0..35                                       |
| `roller`   | int                  | who rolled it: 0 `player_0` (Red), 1 `player_1` (Blue)      |
| `dice`     | (2,) int8            | (purple, green) as the roller read them, from its seat          |
| `hit`      | int                  | 0 empty, 1 enemy, 2 friendly (index into `rules.HIT_NAMES`)   |
| `captured` | (36,) int8           | 1 on each square the roll emptied                               |

Each info holds its own arrays. `describe` gives the readable form
(``{"roll": "e5", "roller": "player_0", "dice": (5, 5), "hit": "friendly",
"captured": ["e4", "d5"]}``). `roll_info` of a game with no roll yet
gives `roll`, `roller` and `hit` `-1` (`NO_ROLL`) and zero
arrays; the env never shows that, as `reset` makes the first roll.

**Rewards.** `reward="outcome"` (the default): +1 to the winner and -1 to
the loser when the placement that empties the winner's reserve is made; 0
otherwise. `reward="luck_adjusted"`: that outcome, and in each step whose
placement is followed by the next roll, that roll's luck
(`strategic_reserve_env.core.luck.roll_luck`, a difference of win
probabilities, under `DEFAULT_VALUE` or the
`value` of a `LuckAdjusted` given as
`reward`) on the reward's scale, where a win and a loss are 2 apart
(`REWARD_SCALE`): the roller's reward is
`-2 * luck`, the other agent's `+2 * luck` (the luck is taken out of the
return of the agent it favoured). So an agent's return is its outcome minus
twice its own rolls' luck plus twice its opponent's. Each luck term has mean zero
given the action before it (the 36 rolls are equally likely, whatever the
value function), so every policy's expected return is unchanged and policy
gradients stay unbiased, while most of the dice's variance goes
(`tests/test_rewards.py` measures both). The first roll, made in
`reset`, follows no action and is in no reward. `reward` may also be
any callable of a `Transition` with
one row per agent (`player_0`, `player_1`): the step's roll (`own`
for the roller) and the outcome; it must return two finite real numbers.
The rewards are worked out before the step is committed (the built-in
outcome's directly; any other reward function's by a
`Ledger` over a trial copy of the
step): a reward function that raises or returns
anything else (another shape, strings, NaN, an infinity, complex numbers)
raises and changes nothing, and one that cannot be called with one argument
is refused when the env is made. Through `env()` an
illegal action ends the game with -1 for the agent that made it (PettingZoo's
TerminateIllegalWrapper) and a warning; `raw_env` raises
`IllegalActionError` instead.

**Termination / truncation.** Both agents are terminated when a player wins.
Both are truncated (reward 0) when `ply_limit` placements have been made
(default 1000; the rules themselves have no limit).

**Actions and errors.** An action is a square index: a Python int, a numpy
integer or a 0-d integer array (bools are not actions). A done agent's only
action is `None`. Every bad call raises and changes nothing, so the env goes
on as before:

- a non-integer action: `TypeError` naming its type;
- a number outside 0..35: `IllegalActionError`
  (an illegal square of the board too on `raw_env`; through `env()` that one
  loses the game, as above);
- an action other than `None` for a done agent, an unknown agent name
  (`ValueError`; the second lists the agents);
- `step` before `reset`, or once every agent has left a finished game:
  `RuntimeError` saying to call `reset` (`env()` keeps PettingZoo's
  behaviour there: its own error before `reset`, a warning after the game);
- a bad `seed`, `options` or forced roll in `reset`: `ValueError` or
  `TypeError`; the old game and its dice stay.

`raw_env.check_action` holds the step checks; `env()` runs it before
PettingZoo's wrappers, in place of AssertOutOfBoundsWrapper.

**Copies.** `copy.deepcopy` and pickling (of `raw_env` and `env()`)
keep the game: the copy continues it with the same board, dice stream,
rewards, terminations, infos and agent to act, independently of the original
(a `"human"` window is not copied; the copy opens its own).

**Arguments.** `reserve` (1..12, default 7), `ply_limit` (default 1000),
`start` (a `StartPosition` or a dict
`{"board", "reserves": (red, blue), "to_move"}` whose absent fields are the
standard board, `(reserve, reserve)` and Red, as in a record), `render_mode`
(`"human"`, `"ansi"`, `"rgb_array"`), `reward` (above).

**Forcing the dice** (replay and analysis): `reset(seed, options={"rolls": [...]})`
takes rolled squares (indices or names such as `"e5"`) used in order, the
first for the roll made in `reset`; when they run out the seeded stream
takes over. `env.unwrapped.force_rolls([...])` queues more at any time.

**Version history.**
v2: the luck-adjusted reward's luck is on the reward's scale: 2 x luck
(luck is a difference of win probabilities, and a win and a loss are 2
apart in the rewards); v1 subtracted 1 x luck, which kept the expected
return but removed only part of the dice's variance (for greedy against
greedy under the race value, 3,000 games: the return's variance 0.30 of the
outcome's in v1, 0.09 in v2). The outcome reward and everything else are as
in v1. The Gymnasium envs moved from `StrategicReserve-v0` to
`StrategicReserve-v1` for the same reason. `strategic_reserve_v1` is no
longer registered: `pettingzoo.make` names v2.
v1: fixed infos for every agent at every step (`roll`, `roller`, `dice`
as a (2,) int8 array, `hit` as a code, `captured` as a (36,) int8 mask;
no strings or lists: `describe` gives the names); numpy integer actions;
copies and pickles keep the game; clear errors that change nothing.
`strategic_reserve_v0` is no longer registered.
v0: first release (the mover's info held names and lists, the other agent's
info was empty).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.wrappers.base import BaseWrapper

from strategic_reserve_env.core import luck
from strategic_reserve_env.core.board import (
    BLUE,
    DEFAULT_RESERVE,
    NO_PLAYER,
    NUM_SQUARES,
    RED,
    SQUARE_NAMES,
    dice_for,
    is_square_index,
    parse_square,
    square_mask,
)
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, StartPosition, make_config
from strategic_reserve_env.core.dice import DRAWN_SEEDS, GameDice
from strategic_reserve_env.core.engine import IllegalActionError, integers
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.luck import RaceValue
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE, mask_from_planes, planes
from strategic_reserve_env.core.outcome import (
    NO_RESULT,
    OUTCOME,
    Ledger,
    LuckAdjusted,
    OutcomeReward,
    Transition,
    as_reward_function,
    reward,
)
from strategic_reserve_env.core.rules import HIT_NAMES
from strategic_reserve_env.files.records import check_seed
from strategic_reserve_env.pictures import render as rendering

from .registration import ENV_NAME

AGENTS = ("player_0", "player_1")  # index = colour: player_0 Red, player_1 Blue
_EVERY_AGENT = np.ones(len(AGENTS), dtype=bool)  # (2,) bool: the rows of the step's ledger (a row an agent)
_EVERY_AGENT.flags.writeable = False
#: winner (RED, BLUE or NO_PLAYER) -> (2,) int64 each agent's outcome
# (:func:`~strategic_reserve_env.core.outcome.reward`)
_OUTCOMES = {winner: np.array([reward(winner, colour) for colour in (RED, BLUE)]) for winner in (RED, BLUE, NO_PLAYER)}
_NO_LUCK = np.zeros(len(AGENTS))  # (2,) float64: each agent's net luck in a step with no roll
_NO_LUCK.flags.writeable = False
#: roller (RED or BLUE) -> (2,) bool: the agent that rolled (``own`` of the roll's row)
_ROLLER = {roller: np.array([colour == roller for colour in (RED, BLUE)]) for roller in (RED, BLUE)}
for _array in (*_OUTCOMES.values(), *_ROLLER.values()):
    _array.flags.writeable = False
#: winner -> each agent's reward under the built-in outcome reward (:class:`~.outcome.OutcomeReward`'s values)
_OUTCOME_REWARDS = {
    winner: dict(zip(AGENTS, OUTCOME(Transition((), outcome, _EVERY_AGENT)).tolist(), strict=True))
    for winner, outcome in _OUTCOMES.items()
}
AGENT_INDEX = {agent: colour for colour, agent in enumerate(AGENTS)}
NO_ROLL = -1  # roll, roller and hit of an info when the game has no roll yet
INFO_KEYS = ("roll", "roller", "dice", "hit", "captured")
DICE_SHAPE = (2,)  # (purple, green)


def _read_only(array: np.ndarray) -> np.ndarray:
    """`array`, no longer writeable (a template that is copied, never handed out)."""
    array.flags.writeable = False
    return array


#: ``[roller][square]`` -> (2,) int8 (purple, green) of :func:`~.board.dice_for` (copied into each info)
_DICE = [
    [_read_only(np.array(dice_for(square, roller), dtype=np.int8)) for square in range(NUM_SQUARES)]
    for roller in (RED, BLUE)
]
_NO_DICE = _read_only(np.zeros(DICE_SHAPE, dtype=np.int8))  # the dice of a game with no roll yet
_NOTHING_CAPTURED = _read_only(np.zeros(NUM_SQUARES, dtype=np.int8))
CAPTURED_MASKS_CACHED = 4096  # captured bitboards whose info mask is kept (most captures are small groups)


def env(**kwargs: Any) -> AECEnv:
    """The AEC env in PettingZoo's standard wrappers: an illegal move loses (TerminateIllegalWrapper),
    actions are checked by `raw_env.check_action` (in place of AssertOutOfBoundsWrapper), and
    the call order is enforced (OrderEnforcingWrapper). The two PettingZoo wrappers are subclasses that read
    the attributes of every step from the raw env directly (`_RawAttributes`), not layer by layer."""
    environment = raw_env(**kwargs)
    environment = TerminateIllegalWrapper(environment, illegal_reward=-1)
    environment = CheckActionWrapper(environment)
    return OrderEnforcingWrapper(environment)


def parse_rolls(rolls) -> list[int]:
    """Forced rolls as square indices; names like `"e5"` or indices 0..35."""
    if isinstance(rolls, (str, bytes)) or not hasattr(rolls, "__iter__"):
        raise ValueError(f"rolls must be a sequence of squares, got {rolls!r}")
    if isinstance(rolls, (AbstractSet, Mapping)):  # their order is not the caller's (it can follow PYTHONHASHSEED)
        raise ValueError(f"rolls must be a sequence of squares in order (a list), got a {type(rolls).__name__}")
    squares = []
    for i, roll in enumerate(rolls):
        if isinstance(roll, str):
            try:
                squares.append(parse_square(roll))
            except ValueError as error:
                raise ValueError(f"rolls[{i}]: {error}") from None
        elif is_square_index(roll):
            squares.append(int(roll))
        else:
            raise ValueError(f"rolls[{i}]: {roll!r} is not a square (a1 .. f6 or 0..35)")
    return squares


def as_square(action) -> int:
    """An action as a square index: a Python int, a numpy integer or a 0-d integer array (anything
    `integers` reads as one integer).

    `TypeError` for anything else (bools included), naming its type;
    `IllegalActionError` for a number outside 0..35.
    """
    if type(action) is int:  # the usual action: an integer already
        value = action
    else:
        try:
            value = int(integers(action, (), "an action", TypeError))
        except TypeError:
            kind = (
                f"ndarray of {action.dtype}, shape {action.shape}"
                if isinstance(action, np.ndarray)
                else type(action).__name__
            )
            raise TypeError(
                f"an action is a square index 0..{NUM_SQUARES - 1} (int, numpy integer or 0-d integer array), "
                f"got {kind} {action!r}"
            ) from None
    if not 0 <= value < NUM_SQUARES:
        raise IllegalActionError(f"action {value} is not a square index (0..{NUM_SQUARES - 1})")
    return value


def agent_index(agent) -> int:
    """The colour of an agent name (0 Red for `player_0`, 1 Blue); `ValueError` naming the agents."""
    try:
        return AGENT_INDEX[agent]
    except (KeyError, TypeError):  # TypeError: not hashable
        raise ValueError(f"unknown agent {agent!r}; the agents are {', '.join(AGENTS)}") from None


def roll_info(game: Game) -> dict:
    """An agent's info: the latest roll of `game`, made by `Game.roller` (0 Red, 1 Blue); fresh arrays.

    `{"roll": int, "roller": int, "dice": (2,) int8, "hit": int, "captured": (36,) int8}`;
    with no roll yet `roll`, `roller` and `hit` are `NO_ROLL` and the arrays zeros.
    """
    return _own_copies(_roll_template(game), (None,))[None]


def _roll_template(game: Game) -> tuple:
    """The parts of `roll_info` `(roll, roller, dice, hit, captured)`, the arrays read-only
    templates (`_own_copies` makes infos of them)."""
    rolled = game.rolled
    if rolled == NO_ROLL:
        return NO_ROLL, NO_ROLL, _NO_DICE, NO_ROLL, _NOTHING_CAPTURED
    roller = game.roller
    return rolled, roller, _DICE[roller][rolled], game.hit, _captured_mask(game.captured)


def _own_copies(template: tuple, agents) -> dict:
    """`{agent: info}` for each of `agents`: an info of `_roll_template`'s parts, each holding its own
    copies of the arrays."""
    rolled, roller, dice, hit, captured = template
    infos = {}
    for agent in agents:  # a loop, not a comprehension: no frame of its own
        infos[agent] = {"roll": rolled, "roller": roller, "dice": dice.copy(), "hit": hit, "captured": captured.copy()}
    return infos


@functools.lru_cache(maxsize=CAPTURED_MASKS_CACHED)
def _captured_mask(captured: int) -> np.ndarray:
    """(36,) int8 read-only mask of a bitboard of captured checkers (copied into each info)."""
    return _read_only(square_mask(captured).view(np.int8))


def describe(info: dict) -> dict:
    """The readable form of an info: square and agent names, the dice as a tuple, the hit's name,
    the captured squares' names in index order; `None` for the parts of a missing roll.

    >>> describe({"roll": 28, "roller": 0, "dice": np.array([5, 5]), "hit": 2,
    ...           "captured": np.eye(36, dtype=np.int8)[[22, 27]].sum(0)})
    {'roll': 'e5', 'roller': 'player_0', 'dice': (5, 5), 'hit': 'friendly', 'captured': ['e4', 'd5']}
    """
    if info["roll"] == NO_ROLL:
        return {"roll": None, "roller": None, "dice": None, "hit": None, "captured": []}
    return {
        "roll": SQUARE_NAMES[info["roll"]],
        "roller": AGENTS[info["roller"]],
        "dice": tuple(int(d) for d in info["dice"]),
        "hit": HIT_NAMES[info["hit"]],
        "captured": [SQUARE_NAMES[s] for s in np.flatnonzero(info["captured"])],
    }


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """Strategic Reserve as a PettingZoo AEC environment; see the module docstring for the spec."""

    metadata = {
        "name": ENV_NAME,
        "render_modes": rendering.RENDER_MODES,
        "is_parallelizable": False,
        "render_fps": rendering.RENDER_FPS,
    }

    def __init__(
        self,
        reserve: int = DEFAULT_RESERVE,
        ply_limit: int = DEFAULT_PLY_LIMIT,
        start: StartPosition | dict | None = None,
        render_mode: str | None = None,
        reward="outcome",
    ) -> None:
        super().__init__()
        self.reward_function = as_reward_function(reward)
        self._renderer = rendering.Renderer(render_mode, rendering.RENDER_FPS)
        self.config = make_config(reserve, ply_limit, start)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 1, OBSERVATION_SHAPE, np.int8),
                "action_mask": spaces.Box(0, 1, (NUM_SQUARES,), np.int8),
            }
        )
        self.observation_spaces = {agent: observation_space for agent in AGENTS}
        self.action_spaces = {agent: spaces.Discrete(NUM_SQUARES) for agent in AGENTS}
        self.game = Game(self.config)
        self.dice = GameDice(int(cast(int, np.random.SeedSequence().entropy) % DRAWN_SEEDS))

    # -- copies and pickles carry the game -----------------------------------------------
    def __getstate__(self) -> dict:
        """Everything but the renderer (a window cannot be copied); the copy continues the game."""
        state = self.__dict__.copy()
        del state["_renderer"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._renderer = rendering.Renderer(self.render_mode, rendering.RENDER_FPS)

    # -- spaces ---------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[AGENTS[agent_index(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[AGENTS[agent_index(agent)]]

    # -- dice -------------------------------------------------------------------------
    def force_rolls(self, rolls) -> None:
        """Queue rolled squares (indices or names) for the next turns, before the seeded stream."""
        self.dice.forced.extend(parse_rolls(rolls))

    def _set_infos(self) -> None:
        """Every agent's info: the latest roll."""
        self.infos = _own_copies(_roll_template(self.game), self.agents)

    def _roll(self) -> None:
        """Roll for the player to move, hand it the turn and describe the roll in the infos."""
        self.game.roll(self.dice.next())
        self._hand_over()

    def _hand_over(self) -> None:
        """The turn goes to the player to move, and the infos describe the roll it made."""
        self.agent_selection = AGENTS[self.game.to_move]
        self._set_infos()

    # -- AEC API ----------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """A new game; `options={"rolls": [...]}` forces the first rolls (other keys are ignored, as in
        PettingZoo's classic envs). A bad seed or roll raises before anything changes."""
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        rolls = parse_rolls(options["rolls"]) if options and "rolls" in options else []
        dice = GameDice(check_seed(seed, "seed")) if seed is not None else self.dice  # ValueError for a bad seed
        # everything is validated: from here on nothing raises
        if seed is None:
            dice.forced.clear()
        dice.forced.extend(rolls)
        self.dice = dice
        self.game.reset()
        self.agents = list(AGENTS)
        self.rewards: dict[str, float] = dict.fromkeys(AGENTS, 0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self._roll()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict:
        view = planes(self.game, agent_index(agent))
        return {"observation": view, "action_mask": mask_from_planes(view)}

    def check_action(self, action) -> int | None:
        """`action` for the agent to act, checked: its square index, or `None` for a done agent.

        The one place where a step is validated (`step` and `env()`'s action check call it).
        Raises, changing nothing: `RuntimeError` before `reset` or once every agent has left a
        finished game; `ValueError` for a done agent's action other than `None`; `TypeError` or
        `IllegalActionError` from `as_square`. Whether the square is legal now is the
        engine's to say (`step`).
        """
        if "terminations" not in self.__dict__:
            raise RuntimeError("step() before reset(): call reset() to start a game")
        if not self.agents:
            raise RuntimeError("the game is over and every agent has left it: call reset() to start a new game")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(
                    f"the game is over: {agent} is done and its only valid action is None "
                    f"(step(None) for each done agent, or reset() for a new game), got {action!r}"
                )
            return None
        return as_square(action)

    def step(self, action) -> None:
        square = self.check_action(action)
        if square is None:  # a done agent leaves
            self._was_dead_step(None)
            return
        agent, game = self.agent_selection, self.game
        mover = game.to_move
        # the rewards are worked out before anything is committed: an illegal square, a bad forced roll or a
        # failing reward function raises with the game and the dice as they were
        if type(self.reward_function) is OutcomeReward:  # the built-in outcome: no trial game, no ledger
            rewards, over = self._outcome_step(square)
        elif self._race_adjusted:
            rewards, over = self._race_adjusted_step(square)
        else:
            rewards, over = self._ledger_step(square)
        self._cumulative_rewards[agent] = 0
        self.rewards = rewards
        if not over:
            self._hand_over()
        else:
            if game.winner == NO_PLAYER:
                self.truncations = dict.fromkeys(AGENTS, True)
            else:
                self.terminations = dict.fromkeys(AGENTS, True)
            self.agent_selection = AGENTS[mover ^ 1]
            self._set_infos()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _outcome_step(self, square: int) -> tuple[dict[str, float], bool]:
        """`step`'s rewards where the reward is the built-in outcome (`OutcomeReward`): it cannot fail and
        reads no roll, so a step needs no trial game and no ledger.

        Place on `square` and roll for the next turn, in the env's game: the outcome's rewards
        (`_OUTCOME_REWARDS`, `OutcomeReward`'s values) and whether the game is over. The next roll is
        read (and checked) before the placement, and nothing after the placement can raise."""
        game, dice = self.game, self.dice
        rolled = dice.peek()  # ValueError for a bad forced roll, changing nothing
        game.place(square)  # IllegalActionError names the square and the legal ones, changing nothing
        if game.done:
            return dict(_OUTCOME_REWARDS[game.winner]), True
        dice.advance()
        game.roll(rolled)
        return dict(_OUTCOME_REWARDS[NO_PLAYER]), False

    @property
    def _race_adjusted(self) -> bool:
        """The reward is the built-in luck-adjusted one (`LuckAdjusted`) under a `RaceValue`: its luck reads
        the race table and cannot fail, so a step needs no trial game and no ledger (`_race_adjusted_step`)."""
        reward_function = self.reward_function
        return type(reward_function) is LuckAdjusted and type(reward_function.value) is RaceValue

    def _race_adjusted_step(self, square: int) -> tuple[dict[str, float], bool]:
        """`_ledger_step` of the built-in luck-adjusted reward under a `RaceValue`, on the env's game as
        `_outcome_step` plays it: the next roll's luck worked out on Python floats
        (`luck.single_roll_luck`, `LuckAdjusted.of_one_row`), the same rewards bit for bit."""
        game, dice = self.game, self.dice
        reward_function = cast(LuckAdjusted, self.reward_function)
        rolled = dice.peek()  # ValueError for a bad forced roll, changing nothing
        game.place(square)  # IllegalActionError names the square and the legal ones, changing nothing
        if game.done:  # no roll follows: no luck in the rewards
            ended = reward_function.of_luck(_OUTCOMES[game.winner], _NO_LUCK).tolist()
            return dict(zip(AGENTS, ended, strict=True)), True
        dice.advance()
        me, opp, reserve_me, reserve_opp = game.me, game.opp, game.reserve_me, game.reserve_opp
        game.roll(rolled)
        roller_luck = luck.single_roll_luck(reward_function.value, me, opp, reserve_me, reserve_opp, rolled)
        roller = game.to_move
        rewards = {
            agent: reward_function.of_one_row(NO_RESULT, ((colour == roller, roller_luck),))
            for colour, agent in enumerate(AGENTS)
        }
        return rewards, False

    def _ledger_step(self, square: int) -> tuple[dict[str, float], bool]:
        """The step played on a trial copy of the game, its rewards worked out by the reward function
        (`Ledger`, one row an agent: its colour), then committed to the env's game and dice; the rewards
        and whether the game is over. The reward function raising or answering badly raises with nothing
        committed."""
        game, dice = self.game, self.dice
        rolled = dice.peek()
        trial = game.copy()
        trial.place(square)
        ledger = Ledger(len(AGENTS), self.reward_function)
        if trial.done:
            ledger.end(_EVERY_AGENT, _OUTCOMES[trial.winner])
        else:  # the game goes on: the next roll at once
            trial.roll(rolled)
            ledger.roll(trial, _ROLLER[trial.to_move], _EVERY_AGENT)
        rewards = ledger.settle().tolist()  # the reward function's, checked
        over = trial.done
        if not over:
            dice.advance()
        game.restore(trial)
        return dict(zip(AGENTS, rewards, strict=True)), over

    # -- rendering --------------------------------------------------------------------
    def render(self):
        return self._renderer.render(self.game)

    def close(self) -> None:
        self._renderer.close()


#: the env's attributes that the wrappers of :func:`env` and a user's loop read on every step
_STEP_ATTRIBUTES = (
    "agents",
    "agent_selection",
    "rewards",
    "_cumulative_rewards",
    "terminations",
    "truncations",
    "infos",
)


class _RawAttributes:
    """A wrapper of `env` that reads `_STEP_ATTRIBUTES` from `_raw` (the raw env) directly, not
    through PettingZoo's `__getattr__` of every layer in between. Where `_raw` is not set yet, or the raw
    env lacks the attribute (before `reset`), the read falls back to the wrapper's own `__getattr__`, which
    raises as PettingZoo's wrappers do."""

    _raw: raw_env


def _read_from_raw(name: str) -> property:
    """The property reading `name` of the raw env (an AttributeError falls back to `__getattr__`)."""
    return property(lambda wrapper: getattr(wrapper._raw, name), doc=f"the raw env's ``{name}``")


for _name in _STEP_ATTRIBUTES:
    setattr(_RawAttributes, _name, _read_from_raw(_name))


class TerminateIllegalWrapper(_RawAttributes, wrappers.TerminateIllegalWrapper):
    """PettingZoo's TerminateIllegalWrapper (an illegal move loses), reading the step's attributes directly."""

    def __init__(self, env: raw_env, illegal_reward: float) -> None:
        super().__init__(env, illegal_reward)
        self._raw = env


class CheckActionWrapper(_RawAttributes, BaseWrapper):
    """Runs `raw_env.check_action` before the wrappers inside it, which then get a plain int
    (or `None` for a done agent); bad actions raise its clear errors and change nothing."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._raw = env.unwrapped

    def step(self, action) -> None:
        super().step(self._raw.check_action(action))


class OrderEnforcingWrapper(_RawAttributes, wrappers.OrderEnforcingWrapper):
    """PettingZoo's OrderEnforcingWrapper, reading the step's attributes directly once `reset` was called
    (before it, its errors as PettingZoo words them)."""

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._raw = self.env.unwrapped
        super().reset(seed=seed, options=options)
