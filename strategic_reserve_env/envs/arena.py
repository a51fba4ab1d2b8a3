"""Play two agents against each other in one engine batch, with paired dice.

Game slot `i` rolls from dice stream `dice_seeds[i]`
(`BatchDice`): roll `t` of a game is
roll `t` of its stream, whatever the agents do. Give both games of a pair
the same seed and swap the seats, and they see the same rolls for as long as
their positions allow. The agents' own randomness comes from generators of
their own, apart from the dice.

An agent that raises, or answers with anything but one legal square per
game, stops the play with an `AgentError` naming the agent, the game
and its position.

Given a value function (`strategic_reserve_env.core.luck`), `play` also keeps each game's luck in a
`Ledger` whose rows are Red in each game: the sum over its rolls of the
roller's luck, counted for Red when Red rolled and against Red when Blue did (`Games.red_luck`, a
difference of win probabilities). `Games.adjusted` takes it out of a result on any scale
(`Scale`: 1 x luck from a score, 2 x from a +-1 reward): the
luck-adjusted result, with the same expectation as the outcome.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from strategic_reserve_env.core import engine, turns
from strategic_reserve_env.core.board import COLOURS, MESSAGE_LIMIT, RED, brief, clip, square_name
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.dice import BatchDice, GameDice
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.luck import ValueFunction
from strategic_reserve_env.core.outcome import Ledger, Scale
from strategic_reserve_env.core.policies import InvalidActionsError, choose
from strategic_reserve_env.interrupts import HANDLED, StopNow


class AgentError(RuntimeError):
    """An agent failed while playing: it raised, or its answer was not one legal square per game.

    `agent` is its index in the agents played (0 or 1), `name` its name,
    `game` the number of the game concerned (when the failure concerns the
    whole call, e.g. an exception or a wrong shape: the first game of the
    call, and `detail` says so), `detail` what went wrong and
    `position` that game's position. The cause is chained.
    """

    def __init__(self, agent: int, name: str, game: int, detail: str, position: str) -> None:
        super().__init__(f"agent {name!r} in game {game}: {detail}; position: {position}")
        self.agent, self.name, self.game, self.detail, self.position = agent, name, game, detail, position


def describe(state: engine.State, game: int) -> str:
    """One line on game `game` of `state` awaiting a placement: board, reserves, mover and roll."""
    one = state[game]
    red, blue = (int(n) for n in one.reserves()[0])
    roll = int(one.rolled[0])
    return (
        f"board {one.board_strings()[0]} (squares a1, b1, .., f6; R red, B blue), reserves red {red} blue {blue}, "
        f"{COLOURS[int(one.to_move[0])]} to place after rolling {square_name(roll) if roll >= 0 else 'nothing'}"
    )


def choose_checked(
    agent, index: int, state: engine.State, games: np.ndarray, rng: np.random.Generator, game_numbers: np.ndarray
) -> np.ndarray:
    """`choose` for games `games` of `state` ((k,) indices), turning any failure of the agent into an
    `AgentError` (`game_numbers`: (N,) numbers of the state's games for the message). Whatever the
    agent raises is its failure, `BaseException` included (`sys.exit()`, `GeneratorExit`, a class of its
    own, the time budget's `ActTimeoutError`, a `KeyboardInterrupt` of its own where a command handles the
    signals): it does not end the program. Only a stop of the whole run passes through: `StopNow`, and
    `KeyboardInterrupt` where SIGINT is Python's own (a Ctrl-C in a library session). An agent that replaces
    the handler of a signal the command stops on fails too (its handler is put back), so Ctrl-C still stops."""
    handlers = [signal.getsignal(signum) for signum in HANDLED]
    try:
        actions = choose(agent, state[games], rng)
        now = [signal.getsignal(signum) for signum in HANDLED]
        taken = [signum for signum, before, after in zip(HANDLED, handlers, now, strict=True) if after != before]
        if taken:
            for signum, handler in zip(HANDLED, handlers, strict=True):
                if handler is not None:
                    signal.signal(signum, handler)
            name = signal.Signals(taken[0]).name
            raise InvalidActionsError(f"replaced the handler of {name}, which stops the command; an agent may not")
        return actions
    except StopNow:
        raise
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt) and handlers[0] is signal.default_int_handler:
            raise
        row = error.row if isinstance(error, InvalidActionsError) else None
        game = int(games[row if row is not None else 0])
        said = f": {clip(str(error), MESSAGE_LIMIT)}" if str(error) else ""
        detail = (
            str(error)
            if isinstance(error, InvalidActionsError)
            else f"raised {type(error).__name__}{said}{raised_at(error)}"
        )
        if row is None:
            detail += f" (choosing for {len(games)} game(s) at once, the first shown)"
        name = str(getattr(agent, "name", repr(agent)))
        raise AgentError(index, name, int(game_numbers[game]), detail, describe(state, game)) from error


def raised_at(error: BaseException) -> str:
    """Where `error` was raised, as ` at FILE, line N` (the innermost frame of its traceback), '' without one:
    the one line that names an agent's failure says where in its code, instead of a traceback."""
    frames = error.__traceback__
    if frames is None:
        return ""
    while frames.tb_next is not None:
        frames = frames.tb_next
    return f" at {frames.tb_frame.f_code.co_filename}, line {frames.tb_lineno}"


@dataclass(frozen=True)
class Games:
    """Results of N games between agents 0 and 1."""

    red_agent: np.ndarray  # (N,) int64: which agent (0 or 1) played Red
    winner: np.ndarray  # (N,) int64: RED, BLUE or -1 (truncated)
    plies: np.ndarray  # (N,) int64 game lengths
    truncated: np.ndarray  # (N,) bool
    red_luck: np.ndarray | None = None  # (N,) float64: Red's total luck (Red's rolls minus Blue's), if kept

    @property
    def winning_agent(self) -> np.ndarray:
        """(N,) int64: 0 or 1 for the agent that won, -1 for a truncated game."""
        return np.where(self.winner < 0, -1, np.where(self.winner == RED, self.red_agent, 1 - self.red_agent))

    def adjusted(self, scale: Scale, results: np.ndarray, agent) -> np.ndarray:
        """(N,) float64: `results` of `agent` ((N,) or scalar 0/1: whose results they are, in each game) on
        `scale`, less that agent's net luck (Red's where it played Red, its negative elsewhere) on the
        same scale (`adjusted`). `ValueError` without kept luck."""
        if self.red_luck is None:
            raise ValueError("these games were played without a value function: no luck was kept")
        return scale.adjusted(results, np.where(self.red_agent == agent, self.red_luck, -self.red_luck))


def play(
    agents,
    red_agent: np.ndarray,
    dice_seeds: np.ndarray,
    config: Config,
    rngs,
    on_ply: Callable[[engine.State], None] | None = None,
    start: engine.State | None = None,
    game_numbers: np.ndarray | None = None,
    luck: ValueFunction | None = None,
) -> Games:
    """Play `len(red_agent)` games of `agents[0]` against `agents[1]` to the end (or the ply limit).

    `red_agent` ((N,) 0/1) says who plays Red in each game, `dice_seeds`
    ((N,) ints) the dice stream of each game, `rngs` one generator per
    agent. `on_ply(state)` is called with the state after the first roll
    and after every ply (for a progress bar, or to record the games).
    `start` (N games, each awaiting its next roll) continues given games
    instead of starting from the configured position. An agent's failure
    raises `AgentError`, numbering the games by `game_numbers`
    ((N,) ints, default 0..N-1). With `luck` (a value function), every roll's luck is recorded just
    after it in a `Ledger` (one row a game: Red) and summed into
    `Games.red_luck`.
    """
    red_agent = np.asarray(red_agent, dtype=np.int64)
    game_numbers = np.arange(len(red_agent)) if game_numbers is None else np.asarray(game_numbers)
    state = engine.init(config, len(red_agent)) if start is None else start
    if state.batch_size != len(red_agent) or np.any(state.legal != 0):
        raise ValueError(f"start must hold {len(red_agent)} games awaiting their roll")

    def act(position: engine.State, index: int, games: np.ndarray) -> np.ndarray:
        return choose_checked(agents[index], index, position, games, rngs[index], game_numbers)

    def decide(position: engine.State, acting: np.ndarray) -> np.ndarray:
        mover = np.where(position.to_move == RED, red_agent, 1 - red_agent)  # (N,) the agent of each mover
        return turns.actions_by_policy(position, acting, mover, len(agents), act)

    ledger = None if luck is None else Ledger(len(red_agent), value=luck)  # one row a game: Red

    def on_roll(position: engine.State) -> None:
        if ledger is not None:
            rolled = position.awaiting_placement  # exactly the games that have just rolled
            if rolled.any():
                ledger.roll(position, position.to_move == RED, rolled)
        if on_ply is not None:
            on_ply(position)

    state = turns.play_out(state, BatchDice(dice_seeds), decide, config, on_roll)
    return Games(
        red_agent=red_agent,
        winner=state.winner.copy(),
        plies=state.ply.copy(),
        truncated=state.truncated.copy(),
        red_luck=None if ledger is None else ledger.luck,
    )


@dataclass(frozen=True)
class Decision:
    """One decision of a logged game."""

    game: Game  # the position at the decision (after the roll), a copy
    agent: int  # 0 or 1: who decided
    action: int  # the square placed on


def play_logged(
    agents, red_agent: int, dice_seed: int, config: Config | None = None, rng: np.random.Generator | None = None
) -> tuple[list[Decision], Game]:
    """One game, kept decision by decision, for inspection (same dice as game slot `dice_seed` of
    `play`). Returns the decisions and the finished game (`records.record_of(game)` is its record)."""
    rng = rng if rng is not None else np.random.default_rng(dice_seed)
    game, dice = Game(config if config is not None else Config()), GameDice(dice_seed)
    decisions = []
    while not game.done:
        game.roll(dice.next())
        index = red_agent if game.to_move == RED else 1 - red_agent
        action = choose(agents[index], game, rng)
        decisions.append(Decision(game.copy(), index, action))
        game.place(action)
    return decisions, game


MAX_ACT_SECONDS = 86_400.0
"""The largest time budget per game (a day): budgets are range-checked, so no setting overflows the timer."""
_MAX_TIMER_SECONDS = 2.0**31 - 1  # the timer of a whole call is capped here (past time_t's range on some systems)


def checked_seconds(seconds, what: str, most: float = float("inf")) -> float:
    """`seconds` as a float if it is a finite number > 0 and at most `most` (a time budget); `ValueError`
    naming `what`."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a number of seconds, got {brief(seconds)}")
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{what} must be a finite number of seconds > 0, got {seconds}")
    if seconds > most:
        raise ValueError(f"{what} must be at most {most:g} seconds, got {seconds:g}")
    return float(seconds)


class ActTimeoutError(BaseException):
    """An agent's `act` ran past its time budget (`TimeLimited`). A `BaseException`, as
    `KeyboardInterrupt` is, so that an agent's `except Exception` does not swallow it; the arena turns it
    into the agent's failure like any exception the agent raises."""


class TimeLimited:
    """`agent` with a time budget on each `act` call: `seconds` per game of the call (a call for B games
    may take `B * seconds`; `seconds` at most `MAX_ACT_SECONDS`), past which the call fails with
    `ActTimeoutError`.

    Two checks: a `SIGALRM` timer (`signal.setitimer`; the main thread of a POSIX process only) stops a
    call still running at the budget, raising `ActTimeoutError` when the interpreter next runs a
    bytecode; and a call that returns after its budget (its code caught the timer's exception, or the
    timer could not fire) fails all the same, its answer thrown away.

    What this can and cannot guarantee: the agent runs in this process, so the budget binds code that
    cooperates or merely blunders (a slow search, an `except Exception` around a sleep), not hostile code.
    A hang inside compiled code that never returns to Python (a C extension's loop, a blocking call that
    retries on EINTR) is not stopped; an agent that replaces the `SIGALRM` handler or the timer
    (`signal.setitimer`), calls `os._exit`, forks, or walks the stack to edit the games' state defeats any
    in-process budget. Where the agent is not trusted, run it in a process of its own. Every other attribute
    is the agent's own."""

    def __init__(self, agent, seconds: float) -> None:
        self.agent, self.seconds = agent, checked_seconds(seconds, "act timeout", MAX_ACT_SECONDS)

    def __getattr__(self, name: str):
        return getattr(self.agent, name)

    def act(self, observations, masks, rng):
        games = len(masks)
        budget = self.seconds * max(games, 1)
        what = f"its budget of {budget:g} s ({self.seconds:g} s per game, {games} game(s))"

        def expire(signum, frame):
            raise ActTimeoutError(f"act() ran past {what}")

        previous = signal.signal(signal.SIGALRM, expire)
        start = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, min(budget, _MAX_TIMER_SECONDS))
        try:
            answer = self.agent.act(observations, masks, rng)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        elapsed = time.monotonic() - start
        if elapsed > budget:  # the timer's exception was caught inside act, or never raised
            raise ActTimeoutError(f"act() ran past {what}: it returned after {elapsed:.3g} s")
        return answer

    def __repr__(self) -> str:
        return f"TimeLimited({self.agent!r}, {self.seconds:g})"
