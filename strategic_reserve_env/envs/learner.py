"""B games in which a learner holds one seat and a policy plays the other, batched over the engine.

This is the one place where single-agent play is orchestrated; the
Gymnasium env (B = 1), the Gymnasium vector env and the SB3 VecEnv wrap it.
A batch of one game (the Gymnasium env) plays its turns on the single-game
path (`Game` on Python ints, as the AEC env does; `LearnerGames._step_one`),
drawing the same streams on ints: the same games as the batched path.
Every observation it returns is a decision of the learner; the opponent's
turns (its roll and its placement) happen inside `LearnerGames.step`,
through the one turn loop (`strategic_reserve_env.core.turns.turn`). One
step serves both auto-reset conventions: Gymnasium's next step (`restart`)
and SB3's same step (`autoreset`, with the final observations).

**Seeding.** Game `i` is a pure function of `seeds[i]` (and the
learner's actions): its dice come from stream `seeds[i]`
(`BatchDice`), roll by roll as a lone
game seeded `seeds[i]` would, and its other chance from its own uniform
stream (`UniformStreams`, the same seed
under another tag): two numbers at each start (the learner's seat when it is
`"random"`, then the opponent drawn from the pool) and one for each choice
of an opponent with `act_from_uniforms` (the built-in random opponent;
`strategic_reserve_env.core.policies`). A game that ends and starts again
continues both streams. So game `i` of a batch plays exactly the games of
a batch of one seeded `seeds[i]`, for the built-in random opponent and for
any deterministic opponent (e.g. greedy). Any other stochastic opponent
draws from one `numpy.random.Generator` shared by the batch (`rng` of
`LearnerGames.reset`), so its choices in one game depend on the other
games of the batch.

**Rewards.** `reward` (`as_reward_function`)
is `"outcome"` (+1 win, -1 loss, 0 otherwise), `"luck_adjusted"` (the
outcome minus the learner's luck in the rolls since its decision, on the
reward's scale: the opponent's roll counts against it, its own for it;
`LuckAdjusted`, whose `value` is a
setting) or a callable of a `Transition`.
Rewards are computed in `strategic_reserve_env.core.outcome` alone: each step
records its rolls and results in a `Ledger`
(one row a game), which calls the reward function and checks its answer
(finite real numbers, one a game) before anything is committed.

**Bad input.** Every public method checks its input and either completes or
raises with nothing changed: learner actions must be integers of shape (B,)
(a scalar when B = 1); stepping before `LearnerGames.reset`, or
stepping a game that is over without restarting it, raises
`ResetNeeded`; an opponent that raises, returns a wrong shape or
type, or an illegal square raises `OpponentError` naming the
opponent, the game and the square. The engine's functions are pure, so a
step works on new states and only commits them (with the streams'
counters) once everything succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import NamedTuple, cast

import numpy as np

from strategic_reserve_env.core import engine, luck, turns
from strategic_reserve_env.core.board import BIT, BLUE, COLOURS, NUM_SQUARES, RED, checked_int, clip
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.dice import BatchDice, UniformStreams
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE, planes
from strategic_reserve_env.core.observation import mask_from_planes as _mask_from_planes
from strategic_reserve_env.core.outcome import (
    NO_RESULT,
    REWARD_SCALE,
    Ledger,
    LuckAdjusted,
    OutcomeReward,
    as_reward_function,
    reward,
)
from strategic_reserve_env.core.policies import (
    InvalidActionsError,
    UniformRandomPolicy,
    checked_actions,
    policy_inputs,
    policy_name,
)

SEATS = ("random", "red", "blue")
ILLEGAL_ACTION = ("lose", "raise")
_HALF = 0.5  # a seat draw below one half gives the learner Red
_ERROR_TEXT = 200  # characters of an opponent's own error message repeated in OpponentError


class ResetNeeded(RuntimeError):
    """A step of games that were never started, or of a game that is over and was not restarted."""


class OpponentError(RuntimeError):
    """An opponent policy raised, or did not return a legal square for each of its games."""


def as_actions(actions: object, num_games: int) -> np.ndarray:
    """(B,) int64 square indices from the learner's integer `actions` of shape (B,), or a scalar when
    B = 1 (`as_squares`: `ValueError` for any other type or shape).

    A value outside the action space (0..35) is a malformed action, an error
    (`IllegalActionError`, as the PettingZoo env raises for it); a square of the board that is
    not a legal placement now is an illegal action, the documented forfeit (or an error with
    `illegal_action="raise"`)."""
    if type(actions) is int and num_games == 1 and 0 <= actions < NUM_SQUARES:  # the single env's usual action
        return np.array([actions], dtype=np.int64)
    integer = isinstance(actions, (int, np.integer)) and not isinstance(actions, bool)
    if num_games == 1 and (
        integer or isinstance(actions, np.ndarray) and actions.shape == () and actions.dtype.kind in "iu"
    ):
        actions = np.asarray(actions).reshape(1)
    squares = engine.as_squares(actions, num_games, "actions")
    outside = (squares < 0) | (squares >= NUM_SQUARES)
    if outside.any():
        game = int(np.flatnonzero(outside)[0])
        where = f" (game {game})" if num_games > 1 else ""
        raise engine.IllegalActionError(
            f"action {int(squares[game])}{where} is not a square index (0..{NUM_SQUARES - 1})"
        )
    return squares


class LearnerStep(NamedTuple):
    """What `LearnerGames.step` returns, one row per game."""

    rewards: np.ndarray  # (B,) float32: the reward function's (by default the outcome: +1 the learner won,
    # -1 it lost (or forfeited), 0 otherwise)
    terminated: np.ndarray  # (B,) bool: the game ended with a winner in this step
    truncated: np.ndarray  # (B,) bool: the ply limit ended the game in this step
    illegal: np.ndarray  # (B,) bool: the learner's action was illegal (a forfeit)
    finals: np.ndarray | None  # (B, 6, 6, 9) int8: with autoreset, the learner's last observation of each game
    # that ended (else 0); None without (the observations after the step are the final ones)
    opponents: np.ndarray  # (B,) int64: the opponent index of each game before the step
    outcomes: np.ndarray  # (B,) int64: the outcome of the games that ended (+1 won, -1 lost), 0 elsewhere


class _Results:
    """The rows of a `LearnerStep`, filled in as games end (before any of them restarts), and the
    step's `Ledger` (one row a game: its learner), which turns them into rewards."""

    def __init__(self, num_games: int, opponents: np.ndarray, finals: bool, ledger: Ledger) -> None:
        self.outcomes = np.zeros(num_games, dtype=np.int64)  # (B,) int64: outcome.reward of the games ended
        self.ended = np.zeros(num_games, dtype=bool)  # (B,) bool: ended in this step
        self.terminated = np.zeros(num_games, dtype=bool)  # (B,) bool
        self.truncated = np.zeros(num_games, dtype=bool)  # (B,) bool
        self.finals = np.zeros((num_games, *OBSERVATION_SHAPE), dtype=np.int8) if finals else None  # (B, 6, 6, 9)
        self.opponents = opponents  # (B,) int64
        self.ledger = ledger

    def record(self, games: LearnerGames, ended: np.ndarray) -> None:
        """The games of `ended` ((B,) bool) have just ended in `games`: their reward, how they ended
        and (with `finals`) the learner's last observation."""
        if not ended.any():
            return
        state = games.state
        self.outcomes[ended] = reward(state.winner[ended], games.seat[ended])
        self.ledger.end(ended, self.outcomes)
        self.ended |= ended
        self.terminated |= ended & (state.winner >= 0)
        self.truncated |= ended & state.truncated
        if self.finals is not None:
            self.finals[ended] = planes(state[ended], games.seat[ended])

    def done(self, illegal: np.ndarray) -> LearnerStep:
        """The step's rows, the rewards settled by the ledger (the reward function's, checked)."""
        rewards = self.ledger.settle(np.float32)
        return LearnerStep(
            rewards, self.terminated, self.truncated, illegal, self.finals, self.opponents, self.outcomes
        )


#: the fields of LearnerGames a step may replace (put back by ``_atomically`` when it fails), besides the
#: dice and chance streams' counters and the state of ``rng``'s generator
_STEP_FIELDS = ("_state", "_game", "seat", "opponent_id", "dice", "chance", "rng", "started")
_ONE_TRUE, _ONE_FALSE = np.ones(1, dtype=bool), np.zeros(1, dtype=bool)  # (1,) bool rows of a batch of one game
_ONE_TRUE.flags.writeable = _ONE_FALSE.flags.writeable = False


class LearnerGames:
    """The learner's side of B games; opponents move inside `step`.

    `opponent` is one policy (see `strategic_reserve_env.core.policies`) or
    a list of them; with a list, each game draws its opponent when it
    starts, with probabilities `opponent_weights` (uniform by default).
    Each distinct opponent acts once per turn, batched over its games.
    The random state is `dice` and `chance` (each with `keys` and
    `counters`) and `rng` (for stochastic opponents of one's own).
    """

    def __init__(
        self,
        config: Config,
        num_games: int,
        opponent="random",
        seat: str = "random",
        illegal_action: str = "lose",
        opponent_weights=None,
        reward="outcome",
    ) -> None:
        num_games = checked_int("num_games", num_games, 1)
        self.reward_function = as_reward_function(reward)
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        if illegal_action not in ILLEGAL_ACTION:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION}, got {illegal_action!r}")
        self.illegal_action = illegal_action
        start = config.start_position
        first = start.mover
        if seat != COLOURS[first]:  # the learner may move second: the first placement must leave it a move
            if start.reserves[first] == 1:
                raise ValueError(
                    f"with {COLOURS[first]} to move and 1 checker in reserve, {COLOURS[first]} wins on its first "
                    f"placement before the learner can act; use seat={COLOURS[first]!r}"
                )
            if config.ply_limit == 1:
                raise ValueError(
                    f"ply_limit=1 ends every game after {COLOURS[first]}'s first placement, before the learner "
                    f"can act as {COLOURS[1 - first]}; use seat={COLOURS[first]!r} or a ply_limit of 2 or more"
                )
        self.config = config
        self.num_games = num_games
        self.set_opponents(list(opponent) if isinstance(opponent, (list, tuple)) else [opponent], opponent_weights)
        self.opponent_id = np.zeros(num_games, dtype=np.int64)  # (B,) int64 index into self.opponents
        self.seat_choice = seat
        # the games: `_state`, or for B = 1 the one game `_game` (a Game) that the single-game path keeps, from
        # which `state` is made when it is first read (`_state` None until then); both set when both are known
        self._state: engine.State | None = engine.init(config, num_games)
        self._game: Game | None = None
        self.seat = np.zeros(num_games, dtype=np.int64)  # (B,) int64 RED / BLUE: the learner's colour
        self.dice = BatchDice(np.zeros(num_games, dtype=np.int64))
        self.chance = UniformStreams(np.zeros(num_games, dtype=np.int64))
        self.rng = np.random.default_rng()
        self.started = False  # reset() was called: every game is playing or over
        self._cached_view: tuple | None = None  # (position, planes, masks) of the latest position asked about

    @property
    def state(self) -> engine.State:
        """The games as an engine `State` (for B = 1, made of the kept game when first read after a step)."""
        if self._state is None:
            self._state = cast(Game, self._game).to_state()
        return self._state

    @state.setter
    def state(self, state: engine.State) -> None:
        self._state, self._game = state, None

    def set_opponents(self, opponents: list, weights=None) -> None:
        """Replace the opponent pool; games keep their opponent until they start again."""
        if not opponents:
            raise ValueError("the opponent pool is empty")
        weights = np.ones(len(opponents)) if weights is None else np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(opponents),) or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(
                f"opponent_weights must be {len(opponents)} non-negative numbers, not all 0; got {weights}"
            )
        # the agents' layer turns spec strings into agents (the one place); imported when the pool is set, so
        # importing the env adapters loads no agent
        from strategic_reserve_env.agents import as_agent

        self.opponents = [as_agent(o) for o in opponents]
        # whether an opponent draws from `rng` (one without act_from_uniforms): only then a step saves its state
        self._rng_drawn = not all(hasattr(opponent, "act_from_uniforms") for opponent in self.opponents)
        self.opponent_weights = weights / weights.sum()
        self._cumulative_weights = np.cumsum(self.opponent_weights)  # (K,) float64: draws below [k] pick <= k

    # -- the public steps: each commits everything or nothing ----------------------------------
    def reset(self, seeds=None, rng: np.random.Generator | None = None) -> None:
        """Start every game again; new dice and chance streams if `seeds` ((B,) ints) are given,
        and `rng` (for stochastic opponents of one's own) if given."""
        self._atomically(self._reset, seeds, rng)

    def restart(self, mask: np.ndarray) -> None:
        """Start the games where `mask` again and play them to the learner's first decision."""
        self._atomically(self._restart, mask)

    def step(self, actions, restart: np.ndarray | None = None, autoreset: bool = False) -> LearnerStep:
        """The learner places `actions`, then the opponent replies, until the learner's next decision.

        `restart` ((B,) bool): these games start a new game instead, their actions ignored, played to
        the learner's first decision (Gymnasium's next-step auto-reset). With `autoreset`, every game
        that ends in this step starts again at once (SB3's same-step convention), and so does every
        game that was over before it: a game the learner's placement ends starts again before the
        opponents move, so its opening moves join the same batched opponent turn as the other games.
        Without it, a game that is over must be restarted (or everything reset): stepping it raises
        `ResetNeeded`.

        Returns a `LearnerStep`: (B,) `rewards` float32 (the reward function's of the step's
        `Transition`: the rolls since the learner's decision, the
        opponent's then its own, and the outcome; by default the outcome alone, +1 learner won, -1 opponent
        won, `reward`), `terminated` and `truncated` bools for the
        games that ended now, `illegal` bools (with `illegal_action="lose"` an illegal action loses
        the game, reward -1; with `"raise"` it raises
        `IllegalActionError`), `finals`: with `autoreset`,
        (B, 6, 6, 9) int8, the learner's last observation of each game that ended (zeros elsewhere;
        without it None: `observations` after the step shows them), and `opponents` (B,)
        int64: the opponent index each game was played against before the step, and `outcomes` (B,) int64:
        the outcome of each game that ended now (0 elsewhere). The rolls of a game that starts again in
        this step (before the learner's first decision of the new game) are in no reward.
        """
        return self._atomically(self._step, actions, restart, autoreset)

    def _atomically(self, run, *args):
        """`run(*args)`; if it raises, every field it may change is put back first (`rng` with the
        state of its generator: a stochastic opponent may have drawn from it before failing; the state is
        saved only when an opponent of the pool draws from it)."""
        saved = {name: getattr(self, name) for name in _STEP_FIELDS}
        counters = [(streams, streams.counters) for streams in (self.dice, self.chance)]
        rng_state = self.rng.bit_generator.state if self._rng_drawn else None
        try:
            return run(*args)
        except BaseException:
            for name, value in saved.items():
                setattr(self, name, value)
            for streams, value in counters:
                streams.counters = value
            if rng_state is not None:
                self.rng.bit_generator.state = rng_state
            raise

    # -- the steps themselves ----------------------------------------------------------------
    def _reset(self, seeds, rng) -> None:
        if seeds is not None:
            seeds = np.atleast_1d(np.asarray(seeds))
            if seeds.shape != (self.num_games,):
                raise ValueError(f"seeds must be {self.num_games} integers, got shape {seeds.shape}")
            self.dice, self.chance = BatchDice(seeds), UniformStreams(seeds)
        if rng is not None:
            self.rng = rng
        self.state = engine.init(self.config, self.num_games)
        everyone = np.ones(self.num_games, dtype=bool)
        self._draw_seats(everyone)
        self._advance(everyone)
        self.started = True

    def _restart(self, mask) -> None:
        mask = self._game_mask(mask, "mask")
        self._check_started()
        self.state = engine.reset(self.state, mask, self.config)
        self._draw_seats(mask)
        self._advance(mask)

    def _step(self, actions, restart, autoreset: bool) -> LearnerStep:
        actions = as_actions(actions, self.num_games)
        if self.num_games == 1 and restart is None and not autoreset:
            self._check_started()
            return self._step_one(actions)
        restart = np.zeros(self.num_games, dtype=bool) if restart is None else self._game_mask(restart, "restart")
        self._check_started()
        before = self.state.done
        if autoreset:
            restart = restart | before
        elif (over := before & ~restart).any():
            game = int(np.flatnonzero(over)[0])
            raise ResetNeeded(
                f"game {game} is over (its episode ended): reset (or restart) it before stepping it again"
            )
        result = _Results(
            self.num_games, self.opponent_id.copy(), autoreset, Ledger(self.num_games, self.reward_function)
        )
        illegal = self._learner_places(actions, ~restart)
        result.record(self, self.state.done & ~before)  # ended by the learner's placement (or forfeit)
        if autoreset:
            restart = restart | result.ended
        if restart.any():
            self.state = engine.reset(self.state, restart, self.config)
            self._draw_seats(restart)
        self._advance(~self.state.done, result.ledger, ~restart)
        by_opponent = self.state.done & ~before & ~result.ended  # (a live game restarted in step mode counts)
        if autoreset:
            by_opponent &= ~restart
        if by_opponent.any():
            result.record(self, by_opponent)
            if autoreset:
                self._restart(by_opponent)
        return result.done(illegal)

    def _check_started(self) -> None:
        if not self.started:
            raise ResetNeeded("call reset() before step(): no game has started")

    def _game_mask(self, mask, name: str) -> np.ndarray:
        """(B,) bool from `mask`, or ValueError."""
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.shape != (self.num_games,):
            raise ValueError(f"{name} must be a ({self.num_games},) bool array, got {mask.dtype} {mask.shape}")
        return mask

    def _learner_places(self, actions: np.ndarray, placing: np.ndarray) -> np.ndarray:
        """The learner places where `placing`; (B,) bool: the illegal actions (each a forfeit)."""
        illegal = np.zeros(self.num_games, dtype=bool)
        if self.illegal_action == "lose":
            illegal = engine.illegal_actions(self.state, actions, placing)
            if illegal.any():
                self.state = engine.forfeit(self.state, illegal)
        self.state = engine.place(self.state, actions, self.config, active=placing & ~illegal)
        return illegal

    def _draw_seats(self, mask: np.ndarray) -> None:
        """Choose the learner's colour and the opponent in the games of `mask` (two chance draws each)."""
        games = np.flatnonzero(mask)
        seat_draw, opponent_draw = self.chance.take(games), self.chance.take(games)
        seat, opponent_id = self.seat.copy(), self.opponent_id.copy()
        if self.seat_choice == "random":
            seat[games] = np.where(seat_draw < _HALF, RED, BLUE)
        else:
            seat[games] = RED if self.seat_choice == "red" else BLUE
        picked = np.searchsorted(self._cumulative_weights, opponent_draw, side="right")
        opponent_id[games] = np.minimum(picked, len(self.opponents) - 1)  # the sum may end a hair below 1
        self.seat, self.opponent_id = seat, opponent_id

    def _advance(self, mask: np.ndarray, ledger: Ledger | None = None, recorded: np.ndarray | None = None) -> None:
        """The opponent takes its turn where it is to move (`turn`), then the learner rolls,
        in the live games of `mask`: every one of them ends over or awaiting the learner's decision.
        With `ledger`, the rolls of the games of `recorded` ((B,) bool; default `mask`) are recorded
        in it (`roll`: the opponent's, then the learner's). A batch of one game takes the single-game
        path (`_advance_one`)."""
        recorded = mask if recorded is None else recorded
        if self.num_games == 1:
            self._advance_one(mask, ledger, recorded)
            return
        opponent_turn = mask & ~self.state.done & (self.state.to_move != self.seat)
        on_roll = None
        if ledger is not None:
            mine, theirs = np.ones(self.num_games, dtype=bool), np.zeros(self.num_games, dtype=bool)

            def on_roll(state: engine.State) -> None:
                ledger.roll(state, theirs, opponent_turn & recorded)

        if opponent_turn.any():
            self.state = turns.turn(self.state, opponent_turn, self.dice, self._opponents_decide, self.config, on_roll)
        learner_turn = mask & ~self.state.done
        if learner_turn.any():
            self.state = turns.roll(self.state, self.dice, learner_turn)
            if ledger is not None:
                ledger.roll(self.state, mine, learner_turn & recorded)

    def _advance_one(self, mask: np.ndarray, ledger: Ledger | None, recorded: np.ndarray) -> None:
        """`_advance` of one game (B = 1) on the single-game path (`Game`, Python ints, as the AEC env
        plays): the same rolls from the same streams, the opponent asked the same way (`_opponents_decide`),
        the same records in `ledger`, without the batch machinery's arrays of one."""
        game = self._one_game()
        if not mask[0] or game.done:
            return
        game = game.copy()

        def record(played: Game, own: bool) -> None:
            cast(Ledger, ledger).roll(played, _ONE_TRUE if own else _ONE_FALSE, recorded)

        self._play_one(game, None if ledger is None else record)
        self._commit_one(game)

    def _one_game(self) -> Game:
        """The batch's one game (B = 1) as a `Game`, kept (`_game`): the one the latest step committed, or
        loaded from `state`. Callers copy it before they change it."""
        if self._game is None:
            self._game = Game.of(cast(engine.State, self._state), 0, self.config)
        return self._game

    def _commit_one(self, game: Game) -> None:
        """`game` becomes the batch's one game; `state` is made of it when it is first read."""
        self._state, self._game = None, game

    def _play_one(self, game: Game, record: Callable[[Game, bool], None] | None) -> None:
        """The opponent's turn in the live `game` (the batch's one game) if it is to move (its roll unless
        made, its choice, its placement), then the learner's roll unless the game is over; each roll passed
        to `record` with whether the learner made it, as `turns.turn` and `_advance` record them."""
        if game.to_move != self.seat[0]:
            if not game.legal:
                game.roll(self.dice.next_of_one())
            if record is not None:
                record(game, False)
            opponent = self.opponents[int(self.opponent_id[0])]
            if type(opponent).act is UniformRandomPolicy.act:  # the built-in random opponent (`random`): on ints
                game.place(int(opponent.act_from_uniforms(game.legal, self.chance.next_of_one())))
            else:
                game.place(int(self._opponents_decide(game.to_state(), _ONE_TRUE)[0]))
        if not game.done:
            game.roll(self.dice.next_of_one())
            if record is not None:
                record(game, True)

    def _step_one(self, actions: np.ndarray) -> LearnerStep:
        """`_step` of one game (B = 1) with neither restart nor autoreset, on the single-game path
        (`Game`, as `_advance_one`): the same game, rewards and errors, without the arrays of one. The
        built-in rewards are worked out on Python floats (`REWARD_SCALE.of_one`, and for `LuckAdjusted`
        each roll's luck on ints and `LuckAdjusted.of_one_row`), the same bits as the ledger that settles
        any other reward function."""
        square = int(actions[0])
        game = self._one_game()
        if game.done:
            raise ResetNeeded("game 0 is over (its episode ended): reset (or restart) it before stepping it again")
        game = game.copy()
        reward_function, ledger, lucks = self.reward_function, None, []
        record: Callable[[Game, bool], None] | None = None
        if type(reward_function) is LuckAdjusted:
            value = reward_function.value

            def record(played: Game, own: bool) -> None:
                lucks.append((own, float(luck.luck_of_latest_roll(value, played))))

        elif type(reward_function) is not OutcomeReward:
            ledger = Ledger(1, reward_function)

            def record(played: Game, own: bool) -> None:
                cast(Ledger, ledger).roll(played, _ONE_TRUE if own else _ONE_FALSE, _ONE_TRUE)

        illegal = not game.legal & BIT[square]
        if not illegal:
            game.place(square)
        elif self.illegal_action == "lose":
            game.forfeit()
        else:
            self._learner_places(actions, _ONE_TRUE)  # raises the batch's IllegalActionError, changing nothing
        if not game.done:
            self._play_one(game, record)
        result = reward(game.winner, int(self.seat[0])) if game.done else NO_RESULT
        outcome = np.array([result], dtype=np.int64)
        if ledger is not None:
            if game.done:
                ledger.end(_ONE_TRUE, outcome)
            rewards = ledger.settle(np.float32)
        elif type(reward_function) is LuckAdjusted:
            rewards = np.array([reward_function.of_one_row(result, lucks)], dtype=np.float32)
        else:
            rewards = np.array([REWARD_SCALE.of_one(result)], dtype=np.float32)
        self._commit_one(game)
        return LearnerStep(
            rewards,
            np.array([game.winner >= 0]),
            np.array([game.truncated]),
            np.array([illegal]),
            None,
            self.opponent_id.copy(),
            outcome,
        )

    def _opponents_decide(self, state: engine.State, acting: np.ndarray) -> np.ndarray:
        """(B,) the opponents' choices in the games of `acting` (each opponent once, on its own games)."""
        return turns.actions_by_policy(state, acting, self.opponent_id, len(self.opponents), self._opponent_acts)

    def _opponent_acts(self, state: engine.State, index: int, games: np.ndarray) -> np.ndarray:
        """Opponent `index`'s choices in `games` ((k,) indices; its turn, rolled). It is asked about
        those games only, as in evaluate (a policy never sees a game with no move due, an empty mask);
        when they are every game of the batch, it acts on the whole batch without a copy. Its answer is
        checked by `checked_actions`; any fault is an `OpponentError`."""
        opponent = self.opponents[index]
        whole = games.size == self.num_games
        chosen = slice(None) if whole else games
        mine = np.zeros(self.num_games, dtype=bool)
        mine[games] = True
        name = policy_name(opponent)
        try:
            if hasattr(opponent, "act_from_uniforms"):
                picked = opponent.act_from_uniforms(state.legal[chosen], self.chance.next(mine)[chosen])
            else:
                picked = opponent.act(*policy_inputs(opponent, state if whole else state[games]), self.rng)
        except Exception as error:
            raise OpponentError(
                f"opponent {name!r} raised {type(error).__name__}: {clip(str(error), _ERROR_TEXT)}"
            ) from error
        rows = np.arange(self.num_games)[chosen]  # (k,) int64: the game of each row the opponent was given
        try:
            picked = checked_actions(picked, np.where(mine, state.legal, 0)[chosen])  # only its own games' rows
        except InvalidActionsError as error:
            where = (
                f"in game {rows[error.row]}"
                if error.row is not None
                else f"(choosing for game(s) {clip(', '.join(map(str, rows)), _ERROR_TEXT)})"
            )
            raise OpponentError(f"opponent {name!r} {where} {error}") from None
        return picked[games] if whole else picked

    # -- saving and continuing (checkpoints) ----------------------------------------------------
    def get_state(self) -> dict:
        """Copies of everything the games need to go on exactly where they are (the opponents excepted:
        give the same pool to `set_opponents` before `set_state`).

        `{"started": bool, "engine": {field: (B,) array}` (the `State`),
        `"seat"`, `"opponent_id"`: (B,) int64, `"dice"`, `"chance"`: `{"keys", "counters"}` (B,) uint64
        (the dice and uniform streams and the values drawn), `"rng"`: the bit-generator state of the
        generator of stochastic opponents of one's own `}`.
        """
        return {
            "started": bool(self.started),
            "engine": {field.name: getattr(self.state, field.name).copy() for field in fields(self.state)},
            "seat": self.seat.copy(),
            "opponent_id": self.opponent_id.copy(),
            "dice": self.dice.get_state(),
            "chance": self.chance.get_state(),
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: dict) -> None:
        """Continue from `get_state` (of games of the same number and opponent pool); `ValueError`
        if it does not fit, with nothing changed."""
        size = self.num_games
        names = {field.name for field in fields(self.state)}
        if not isinstance(state.get("engine"), dict) or set(state["engine"]) != names:
            raise ValueError(f"the saved games' engine state does not hold the fields {sorted(names)}")
        arrays = {name: np.asarray(array) for name, array in state["engine"].items()}
        seat, opponent_id = np.asarray(state["seat"]), np.asarray(state["opponent_id"])
        if any(np.shape(array) != (size,) for array in [*arrays.values(), seat, opponent_id]):
            raise ValueError(f"the saved games are not {size} games")
        if not np.all((seat == RED) | (seat == BLUE)):
            raise ValueError("the saved games' seats are not all red (0) or blue (1)")
        if np.any((opponent_id < 0) | (opponent_id >= len(self.opponents))):
            raise ValueError(f"the saved games use opponents beyond the {len(self.opponents)} of the pool")
        dice = BatchDice.from_state(state["dice"], size)
        chance = UniformStreams.from_state(state["chance"], size)
        rng = np.random.default_rng()
        rng.bit_generator.state = state["rng"]
        self.state = engine.State(**{name: array.copy() for name, array in arrays.items()})
        self.seat, self.opponent_id = seat.astype(np.int64), opponent_id.astype(np.int64)
        self.dice, self.chance, self.rng, self.started = dice, chance, rng, bool(state["started"])

    # -- the learner's view ----------------------------------------------------------------
    def observations(self) -> np.ndarray:
        """(B, 6, 6, 9) int8 planes from the learner's side (legal plane empty when it is not to move);
        a new array on every call."""
        return self._view()[0].copy()

    def plies(self) -> np.ndarray:
        """(B,) int64: the placements made in each game so far; a new array on every call."""
        if self._game is not None:  # B = 1: the kept game's, without making `state` of it
            return np.array([self._game.ply], dtype=np.int64)
        return self.state.ply.copy()

    def action_masks(self) -> np.ndarray:
        """(B, 36) bool legal placements of the learner (all False in finished games); a new array on
        every call."""
        return self._view()[1].copy()

    def _view(self) -> tuple[np.ndarray, np.ndarray]:
        """The planes and masks of the current position, computed once per position and never handed out."""
        position = self._game if self._game is not None else self._state  # B = 1: the game, when it is kept
        if self._cached_view is None or self._cached_view[0] is not position:
            if self.num_games == 1:  # one game: the planes on Python ints (as the AEC env observes)
                view = planes(self._one_game(), int(self.seat[0]))[None]
                position = self._game
            else:
                view = planes(self.state, self.seat)
            self._cached_view = (position, view, _mask_from_planes(view).view(bool))
        return self._cached_view[1:]
