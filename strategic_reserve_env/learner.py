"""B games in which a learner holds one seat and a policy plays the other, batched over the engine.

This is the one place where single-agent play is orchestrated; the
Gymnasium env (B = 1), the Gymnasium vector env and the SB3 VecEnv wrap it.
Every observation it returns is a decision of the learner; the opponent's
turns (its roll and its placement) happen inside :meth:`LearnerGames.step`.
Game ``i`` draws its dice from stream ``seeds[i]``
(:class:`~strategic_reserve_env.dice.DiceStreams`), roll by roll as a lone
game seeded ``seeds[i]`` would, so every interface replays the same game.
"""

from __future__ import annotations

import numpy as np

from . import engine
from .board import BLUE, COLOURS, RED
from .config import Config
from .dice import DiceStreams
from .observation import OBSERVATION_SHAPE, planes
from .observation import mask_from_planes as _mask_from_planes
from .policies import as_policy, choose

SEATS = ("random", "red", "blue")
ILLEGAL_ACTION = ("lose", "raise")


class LearnerGames:
    """The learner's side of B games; opponents move inside :meth:`step`.

    ``opponent`` is one policy (see :mod:`strategic_reserve_env.policies`) or
    a list of them; with a list, each game draws its opponent when it
    starts, with probabilities ``opponent_weights`` (uniform by default).
    Each distinct opponent acts once per turn, batched over its games.
    """

    def __init__(self, config: Config, num_games: int, opponent="random", seat: str = "random",
                 illegal_action: str = "lose", opponent_weights=None) -> None:
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        if illegal_action not in ILLEGAL_ACTION:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION}, got {illegal_action!r}")
        self.illegal_action = illegal_action
        start = config.start_position
        first = start.mover
        if start.reserves[first] == 1 and seat != COLOURS[first]:
            raise ValueError(
                f"with {COLOURS[first]} to move and 1 checker in reserve, {COLOURS[first]} wins on its first "
                f"placement before the learner can act; use seat={COLOURS[first]!r}"
            )
        self.config = config
        self.num_games = num_games
        self.set_opponents(opponent if isinstance(opponent, (list, tuple)) else [opponent], opponent_weights)
        self.opponent_id = np.zeros(num_games, dtype=np.int64)  # (B,) int64 index into self.opponents
        self.seat_choice = seat
        self.state = engine.init(config, num_games)
        self.seat = np.zeros(num_games, dtype=np.int64)  # (B,) int64 RED / BLUE: the learner's colour
        self.dice = DiceStreams(np.zeros(num_games, dtype=np.int64))
        self.rng = np.random.default_rng()
        self._planes: tuple[engine.State, np.ndarray] | None = None  # learner planes of one state, cached

    def set_opponents(self, opponents: list, weights=None) -> None:
        """Replace the opponent pool; games keep their opponent until they start again."""
        if not opponents:
            raise ValueError("the opponent pool is empty")
        weights = np.ones(len(opponents)) if weights is None else np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(opponents),) or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(f"opponent_weights must be {len(opponents)} non-negative numbers, not all 0; got {weights}")
        self.opponents = [as_policy(o) for o in opponents]
        self.opponent_weights = weights / weights.sum()

    def reset(self, seeds=None, rng: np.random.Generator | None = None) -> None:
        """Start every game again; new dice streams if ``seeds`` ((B,) ints) are given."""
        if seeds is not None:
            self.dice = DiceStreams(seeds)
        if rng is not None:
            self.rng = rng
        self.state = engine.init(self.config, self.num_games)
        everyone = np.ones(self.num_games, dtype=bool)
        self._draw_seats(everyone)
        self._advance(everyone)

    def restart(self, mask: np.ndarray) -> None:
        """Start the games where ``mask`` again and play them to the learner's first decision."""
        self.state = engine.reset(self.state, mask, self.config)
        self._draw_seats(mask)
        self._advance(mask)

    def step(self, actions, restart: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """The learner places ``actions``, then the opponent replies; games where ``restart``
        ((B,) bool) start a new game instead, their actions ignored, played to the learner's
        first decision.

        Returns (B,) ``rewards`` float32 (+1 learner won, -1 opponent won),
        ``terminated`` and ``truncated`` bools for the games that ended now,
        and ``illegal`` bools: with ``illegal_action="lose"`` an illegal
        action loses the game (reward -1); with ``"raise"`` it raises
        :class:`~strategic_reserve_env.engine.IllegalActionError`.
        """
        if restart is None:
            restart = np.zeros(self.num_games, dtype=bool)
        before = self.state.done
        rewards, illegal = self._learner_places(actions, ~restart)
        if restart.any():
            self.state = engine.reset(self.state, restart, self.config)
            self._draw_seats(restart)
        rewards -= self._advance(~self.state.done)
        ended = self.state.done & ~before  # restarted games were over before, so they are not counted
        return rewards.astype(np.float32), ended & (self.state.winner >= 0), ended & self.state.truncated, illegal

    def step_and_restart(self, actions) -> tuple[np.ndarray, ...]:
        """:meth:`step` for every game, where the games that end start again at once (SB3's convention).

        Returns (B,) ``rewards``, ``terminated``, ``truncated`` and ``illegal`` of the games as
        :meth:`step` does, ``finals`` (B, 6, 6, 9) int8: the learner's last observation of each game
        that ended (zeros elsewhere), and ``opponents`` (B,) the opponent index each game was played
        against. Games ended by the learner's placement start again before the opponents move, so
        their opening moves join the same batched opponent turn as the other games.
        """
        before = self.state.done
        opponents = self.opponent_id.copy()
        finals = np.zeros((self.num_games, *OBSERVATION_SHAPE), dtype=np.int8)
        rewards, illegal = self._learner_places(actions, ~before)
        by_learner = self.state.done & ~before
        terminated, truncated = by_learner & (self.state.winner >= 0), by_learner & self.state.truncated
        restart = by_learner | before
        if restart.any():
            finals[by_learner] = planes(self.state[by_learner], self.seat[by_learner])
            self.state = engine.reset(self.state, restart, self.config)
            self._draw_seats(restart)
        lost = self._advance(~self.state.done)
        by_opponent = self.state.done & ~restart
        if by_opponent.any():
            rewards -= lost * by_opponent
            terminated |= by_opponent & (self.state.winner >= 0)
            truncated |= by_opponent & self.state.truncated
            finals[by_opponent] = planes(self.state[by_opponent], self.seat[by_opponent])
            self.restart(by_opponent)
        return rewards.astype(np.float32), terminated, truncated, illegal, finals, opponents

    def _learner_places(self, actions, placing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The learner places where ``placing``; (B,) rewards (+1 won, -1 illegal) and illegal flags."""
        before = self.state.done
        illegal = np.zeros(self.num_games, dtype=bool)
        if self.illegal_action == "lose":
            illegal = engine.illegal_actions(self.state, actions, placing)
            if illegal.any():
                self.state = engine.forfeit(self.state, illegal)
        self.state = engine.place(self.state, actions, self.config, active=placing & ~illegal)
        rewards = np.where(self.state.done & ~before & (self.state.winner == self.seat), 1.0, 0.0) - illegal
        return rewards, illegal

    def _draw_seats(self, mask: np.ndarray) -> None:
        """Choose the learner's colour and the opponent in the games of ``mask``."""
        if self.seat_choice == "random":
            drawn = self.rng.integers(0, 2, size=self.num_games)
        else:
            drawn = np.full(self.num_games, RED if self.seat_choice == "red" else BLUE)
        self.seat = np.where(mask, drawn, self.seat)
        if len(self.opponents) > 1:
            picked = self.rng.choice(len(self.opponents), size=self.num_games, p=self.opponent_weights)
            self.opponent_id = np.where(mask, picked, self.opponent_id)
        else:
            self.opponent_id = np.where(mask, 0, self.opponent_id)

    def _advance(self, mask: np.ndarray) -> np.ndarray:
        """Roll, and let the opponent move where it is to move, until the learner decides.

        Returns (B,) 1.0 where the opponent's placement won the game, else 0.
        """
        state = self.state
        opponent_turn = mask & ~state.done & (state.to_move != self.seat)
        lost = np.zeros(self.num_games)
        if opponent_turn.any():
            state = engine.roll(state, self.dice.next(opponent_turn), active=opponent_turn)
            actions = np.zeros(self.num_games, dtype=np.int64)
            for index, opponent in enumerate(self.opponents):
                mine = self.opponent_id == index
                if not np.any(opponent_turn & mine):
                    continue
                if mine.all():  # one opponent in every game: act on the whole batch (other rows are ignored)
                    actions = choose(opponent, state, self.rng)
                else:
                    chosen = np.flatnonzero(opponent_turn & mine)
                    actions[chosen] = choose(opponent, state[chosen], self.rng)
            before = state.done
            state = engine.place(state, actions, self.config, active=opponent_turn)
            lost = np.where(state.done & ~before & (state.winner >= 0), 1.0, 0.0)
        learner_turn = mask & ~state.done
        if learner_turn.any():
            state = engine.roll(state, self.dice.next(learner_turn), active=learner_turn)
        self.state = state
        return lost

    # -- the learner's view ----------------------------------------------------------------
    def observations(self) -> np.ndarray:
        """(B, 6, 6, 9) int8 planes from the learner's side (legal plane empty when it is not to move)."""
        if self._planes is None or self._planes[0] is not self.state:
            self._planes = (self.state, planes(self.state, self.seat))
        return self._planes[1]

    def action_masks(self) -> np.ndarray:
        """(B, 36) bool legal placements of the learner (all False in finished games)."""
        return _mask_from_planes(self.observations()).view(bool)

