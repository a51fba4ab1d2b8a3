"""Strategic Reserve as an OpenSpiel game, OpenSpiel's MCTS as an agent, and agents as OpenSpiel bots.

Importing this module registers the game with OpenSpiel under the short name `python_strategic_reserve`:

```python
import pyspiel
import strategic_reserve_env.envs.openspiel  # registers the game

game = pyspiel.load_game("python_strategic_reserve", {"reserve": 6})
```

It is the only module of the package that imports `pyspiel` (the `openspiel` extra: OpenSpiel 2.0.2, whose
wheels need Python 3.11 or newer); without OpenSpiel, or on Python 3.10, importing it raises an `ImportError`
saying so.

**The game.** Sequential, explicit stochastic chance, perfect information, zero-sum, terminal rewards, two players:
player 0 is Red, player 1 Blue. Every turn starts with a chance node of 36 outcomes, each of probability
1/36: **chance outcome k is the rolled square k** (0..35, `6 * rank + file` as everywhere in the
project, the square the two dice name from the roller's seat). At the decision node that follows, the legal
actions are the legal placements: **action k puts a checker on square k**. `action_to_string` gives the
square's name (`"c4"`; `"roll c4"` for a chance outcome). The rules are those of
`Game` (its `roll` and `place`), which every state holds: nothing
of the rules is written here. An illegal action raises
`IllegalActionError` and changes nothing.

**Parameters.** `reserve` (1..12, default 7): each player's checkers off the board at the start. `ply_limit`
(1..`MAX_PLY_LIMIT`, default `DEFAULT_PLY_LIMIT`): the
placements after which an unfinished game ends with utility 0 for both players. That is the
environment's truncation (as in every interface of the project, `Config`),
not a rule of the game: the game itself has no length limit, and a finite one is what lets OpenSpiel bound
its games. `max_game_length()` is the ply limit (OpenSpiel counts decisions there) and
`max_chance_nodes_in_history()` is the ply limit too (one roll before each placement), so
`max_history_length()` and `max_move_number()`, which count the chance nodes, are twice the ply limit.

**Observations.** `observation_tensor(player)` is `strategic_reserve_env.core.observation.planes` of the position from
`player`'s side, `(6, 6, 9)` of 0/1 (as float32, flattened by OpenSpiel): the observer's and the
opponent's checkers, the legal squares (when the observer is to place), the latest roll, its captures and
its kind, both reserves. `observation_string(player)` and `str(state)` are the board as
`strategic_reserve_env.pictures.render.ansi` draws it. The information state string is the history of actions
(the game has perfect information).

**Clone, serialization.** `clone()` copies the held `Game`. `serialize()` and
`game.deserialize_state` work as for every OpenSpiel Python game: OpenSpiel writes the state's Python
attributes **pickled**, and unpickling runs code, so deserialize only strings you wrote yourself (to load
an untrusted game, replay its actions: a record, `strategic_reserve_env.files.records`, is checked on load).

**Any position.** `StrategicReserveGame.state_at` gives the OpenSpiel state of any
`Game` (a custom start, a game in progress), played on under the
OpenSpiel game's ply limit.

**MCTS as an agent.** `mcts_bot` is OpenSpiel's `MCTSBot` with random rollouts;
`strategic_reserve_env.agents.openspiel_mcts.MCTSAgent` (the spec
`openspiel-mcts[:simulations=N,rollouts=K,uct=C]`) plays it through the project's agent interface, so
`evaluate.py` and the benchmark measure it with paired dice. It searches from
`StrategicReserveGame.decision_state`: the position an observation shows, at ply 0 (an observation holds
no ply count) of a game whose ply limit is `DEFAULT_PLY_LIMIT`, with the
player to move as Red (nor does it hold the colours, which the rules treat alike). So its search (a rollout)
scores a game still unfinished that many placements after the searched position as a draw, whatever the
real game's ply count and limit.

**Agents as bots.** `PolicyBot` is a `pyspiel.Bot` playing any agent of the project
(`strategic_reserve_env.agents.load_agent`), so `pyspiel.evaluate_bots` and OpenSpiel's tools can
play it against OpenSpiel's bots.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import replace

import numpy as np

from strategic_reserve_env.core import engine, outcome
from strategic_reserve_env.core.board import BLUE, NUM_SQUARES, RED, square_name
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, Config
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE, planes
from strategic_reserve_env.core.policies import Policy, choose, policy_name
from strategic_reserve_env.pictures.render import ansi

if sys.version_info < (3, 11):
    raise ImportError(
        "strategic_reserve_env.envs.openspiel needs Python 3.11 or newer (OpenSpiel 2.0.2's wheels); "
        f"this is Python {platform.python_version()}"
    )

try:
    import pyspiel
    from open_spiel.python.algorithms import mcts
    from open_spiel.python.observation import IIGObserverForPublicInfoGame
except ImportError as error:
    raise ImportError(
        f"strategic_reserve_env.envs.openspiel needs OpenSpiel ({error}): pip install "
        f"'strategic-reserve-env[openspiel]'"
    ) from error

GAME_NAME = "python_strategic_reserve"
NUM_PLAYERS = 2
#: the largest ply limit: OpenSpiel's move numbers (twice the ply limit, chance nodes counted) are int32
MAX_PLY_LIMIT = (2**31 - 1) // 2
CHANCE_OUTCOMES = tuple((square, 1.0 / NUM_SQUARES) for square in range(NUM_SQUARES))
DEFAULT_PARAMETERS = {"reserve": Config.reserve, "ply_limit": DEFAULT_PLY_LIMIT}

GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Strategic Reserve (strategic-reserve-env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=NUM_PLAYERS,
    min_num_players=NUM_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMETERS,
)


class _Held:
    """The `Game` a state holds. OpenSpiel clones a Python state by deep-copying its attributes:
    this copies the game with `Game.copy` (a few fields) instead of the generic deep copy."""

    __slots__ = ("game",)

    def __init__(self, game: Game) -> None:
        self.game = game

    def __deepcopy__(self, memo: dict) -> _Held:
        return _Held(self.game.copy())


class StrategicReserveGame(pyspiel.Game):
    """The game, with its parameters `reserve` and `ply_limit` (see the module docstring)."""

    def __init__(self, params: dict | None = None) -> None:
        values = {**DEFAULT_PARAMETERS, **(params or {})}  # pyspiel.load_game checks the names and types
        try:
            config = Config(reserve=values["reserve"], ply_limit=values["ply_limit"])
        except ValueError as error:
            raise ValueError(f"{GAME_NAME}: {error}") from None
        if config.ply_limit > MAX_PLY_LIMIT:
            raise ValueError(
                f"{GAME_NAME}: ply_limit must be at most {MAX_PLY_LIMIT} (OpenSpiel counts moves, rolls included, "
                f"in int32), got {config.ply_limit}"
            )
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_SQUARES,
            max_chance_outcomes=NUM_SQUARES,
            num_players=NUM_PLAYERS,
            min_utility=float(outcome.LOSS),
            max_utility=float(outcome.WIN),
            utility_sum=0.0,
            max_game_length=config.ply_limit,
        )
        super().__init__(GAME_TYPE, info, values)
        self.config = config
        self._start = Game(self.config)  # copied by every new state

    def new_initial_state(self) -> StrategicReserveState:
        """The start position, before Red's first roll (a chance node)."""
        return StrategicReserveState(self, self._start.copy())

    def state_at(self, position: Game) -> StrategicReserveState:
        """The state of `position` (any `Game`: a custom start, a game in progress, between roll and
        placement or before a roll), with its ply count, played on under this game's ply limit. `position`
        is copied, not changed. Its OpenSpiel history starts empty."""
        game = Game(self.config)
        game.load(position.to_state(), 0)
        return StrategicReserveState(self, game)

    def decision_state(self, me: int, opp: int, reserve_me: int, reserve_opp: int, legal: int) -> StrategicReserveState:
        """The decision node where the player to move, as Red at ply 0 (what a position read from an observation
        knows: `strategic_reserve_env.agents.position.read_position`), has the checkers `me` (a bitboard)
        and `reserve_me` in reserve, Blue `opp` and `reserve_opp`, and places on a square of `legal` (a
        bitboard, not 0). The latest roll is not known (as before the first roll)."""
        if not legal:
            raise ValueError(f"{GAME_NAME}: a decision node needs a legal square")
        one = np.ones(1, dtype=np.int64)
        state = engine.init(self.config, 1)
        values = {"me": me, "opp": opp, "reserve_me": reserve_me, "reserve_opp": reserve_opp, "legal": legal}
        position = Game(self.config)
        position.load(replace(state, **{name: int(value) * one for name, value in values.items()}), 0)
        return StrategicReserveState(self, position)

    def max_chance_nodes_in_history(self) -> int:
        """One roll before each placement: the ply limit."""
        return self.config.ply_limit

    def make_py_observer(self, iig_obs_type=None, params=None):
        """The observer of `StrategicReserveState.observation_tensor` (`iig_obs_type` None or a
        public-information type), else OpenSpiel's observer of a public-information game (the history)."""
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return PlanesObserver(params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class StrategicReserveState(pyspiel.State):
    """A position: a chance node before each roll, a decision node (the mover's placement) after it."""

    def __init__(self, game: StrategicReserveGame, position: Game) -> None:
        super().__init__(game)
        self._held = _Held(position)

    @property
    def position(self) -> Game:
        """A copy of the `Game` this state holds (its fields, history and readable views)."""
        return self._held.game.copy()

    def current_player(self) -> int:
        """`pyspiel.PlayerId.TERMINAL` once the game is won or truncated, `CHANCE` before a roll, else the
        mover (0 Red, 1 Blue)."""
        game = self._held.game
        if game.done:
            return pyspiel.PlayerId.TERMINAL
        if not game.legal:
            return pyspiel.PlayerId.CHANCE
        return game.to_move

    def _legal_actions(self, player: int) -> list[int]:
        """The legal placements in square order (OpenSpiel asks only for the mover's)."""
        return self._held.game.legal_squares()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The 36 rolled squares, 1/36 each."""
        return list(CHANCE_OUTCOMES)

    def _apply_action(self, action: int) -> None:
        """A chance node rolls square `action`; a decision node places on it (`IllegalActionError` if that
        is not legal, changing nothing)."""
        game = self._held.game
        if game.legal:
            game.place(action)
        else:
            game.roll(action)

    def _action_to_string(self, player: int, action: int) -> str:
        """The square's name; `"roll <square>"` for a chance outcome."""
        name = square_name(action)
        return f"roll {name}" if player == pyspiel.PlayerId.CHANCE else name

    def is_terminal(self) -> bool:
        """Won, or truncated at the ply limit."""
        return self._held.game.done

    def returns(self) -> list[float]:
        """(Red's, Blue's) utility: +1 to the winner and -1 to the loser; 0 each while the game goes on and
        after a truncation."""
        winner = self._held.game.winner
        return [float(outcome.reward(winner, RED)), float(outcome.reward(winner, BLUE))]

    def __str__(self) -> str:
        """The board as the text renderer draws it (`strategic_reserve_env.pictures.render.ansi`)."""
        return ansi(self._held.game)


class PlanesObserver:
    """OpenSpiel's observer of the project's observation planes (`strategic_reserve_env.core.observation.planes`)."""

    def __init__(self, params=None) -> None:
        if params:
            raise ValueError(f"{GAME_NAME}: the observation takes no parameters; given {params}")
        self.tensor = np.zeros(int(np.prod(OBSERVATION_SHAPE)), np.float32)
        self.dict = {"observation": self.tensor.reshape(OBSERVATION_SHAPE)}

    def set_from(self, state: StrategicReserveState, player: int) -> None:
        """The planes of `state` from `player`'s side."""
        self.dict["observation"][...] = planes(state._held.game, player)

    def string_from(self, state: StrategicReserveState, player: int) -> str:
        """The board as the text renderer draws it (the same for both players: the game has perfect information)."""
        return ansi(state._held.game)


pyspiel.register_game(GAME_TYPE, StrategicReserveGame)


def load_game(reserve: int = Config.reserve, ply_limit: int = DEFAULT_PLY_LIMIT) -> StrategicReserveGame:
    """`pyspiel.load_game("python_strategic_reserve", {"reserve": reserve, "ply_limit": ply_limit})`."""
    return pyspiel.load_game(GAME_NAME, {"reserve": reserve, "ply_limit": ply_limit})


# -------------------------------------------------------------------------------------------- agents


DEFAULT_UCT = 2.0  # the exploration constant of OpenSpiel's MCTS examples
#: how ``numpy.random.RandomState.choice`` draws one of the 36 rolls with probabilities 1/36 (a uniform number
#: searched in the normalised cumulative sum), so that :class:`GameRolloutEvaluator` draws what it would
_ROLL_CDF = np.cumsum([probability for _, probability in CHANCE_OUTCOMES])
_ROLL_CDF /= _ROLL_CDF[-1]
_ROLL_CDF.flags.writeable = False


class GameRolloutEvaluator(mcts.RandomRolloutEvaluator):
    """OpenSpiel's `RandomRolloutEvaluator` (a leaf's value: the mean
    returns of `n_rollouts` games played on with uniformly random rolls and placements), its rollouts played
    on the state's `Game` itself rather than through OpenSpiel's state interface, several times faster.
    It draws from `random_state` exactly what OpenSpiel's evaluator draws (`choice` of a roll with
    probabilities 1/36, `choice` of a legal action), so for the same random state the two give the same
    values (tests/integration/test_openspiel.py checks it)."""

    def evaluate(self, state: StrategicReserveState) -> np.ndarray:
        """(Red's, Blue's) mean returns of `n_rollouts` random games from `state`."""
        draw = self._random_state
        total = np.zeros(NUM_PLAYERS)
        for _ in range(self.n_rollouts):
            game = state._held.game.copy()
            while not game.done:
                if game.legal:
                    legal = game.legal_squares()
                    game.place(legal[draw.randint(len(legal))])
                else:
                    game.roll(int(_ROLL_CDF.searchsorted(draw.random_sample(), side="right")))
            total += (outcome.reward(game.winner, RED), outcome.reward(game.winner, BLUE))
        return total / self.n_rollouts


def mcts_bot(
    game: StrategicReserveGame, simulations: int, rollouts: int, random_state: np.random.RandomState, uct: float
) -> mcts.MCTSBot:
    """OpenSpiel's `MCTSBot` for `game`: `simulations` searches a
    move (with OpenSpiel's defaults: UCT selection, solved subtrees backed up), each new leaf valued by
    the mean returns of `rollouts` uniformly random games (`GameRolloutEvaluator`), `uct` the
    exploration constant; `random_state` draws the tree's chance outcomes and tie-breaks and the rollouts."""
    evaluator = GameRolloutEvaluator(n_rollouts=rollouts, random_state=random_state)
    return mcts.MCTSBot(game, uct, simulations, evaluator, random_state=random_state)


class PolicyBot(pyspiel.Bot):
    """An agent of the project (any `Policy`) as an OpenSpiel bot
    for `python_strategic_reserve`: at its turn it is given the position from the mover's side, as in every
    interface, and its answer is checked (`choose`). `rng`: the
    generator of its choices (default: seeded 0)."""

    def __init__(self, policy: Policy, rng: np.random.Generator | None = None) -> None:
        super().__init__()
        self.policy = policy
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def step(self, state: StrategicReserveState) -> int:
        """The policy's placement in `state` (a decision node of `python_strategic_reserve`)."""
        if not isinstance(state, StrategicReserveState) or state.current_player() < 0:
            raise ValueError(f"{policy_name(self.policy)}: a bot steps at a decision node of {GAME_NAME}")
        return choose(self.policy, state._held.game, self.rng)

    def restart_at(self, state) -> None:
        """Nothing to reset: the bot reads every position afresh."""

    def inform_action(self, state, player_id: int, action: int) -> None:
        """Nothing to track: the bot reads every position afresh."""

    def __repr__(self) -> str:
        return f"PolicyBot({policy_name(self.policy)})"


__all__ = [
    "GAME_NAME",
    "GAME_TYPE",
    "GameRolloutEvaluator",
    "MAX_PLY_LIMIT",
    "mcts_bot",
    "PlanesObserver",
    "PolicyBot",
    "StrategicReserveGame",
    "StrategicReserveState",
    "load_game",
]
