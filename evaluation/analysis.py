"""The analysis of one game, as GNU Backgammon analyses a match: the luck of every roll, the error of every
placement, and per player the total luck, the error rate and the luck-adjusted result.

    python -m strategic_reserve_env analyse RECORD [--agent SPEC] [--luck-value SPEC] [--json]

For each ply of a record (docs/RULES.md):

- **luck** of the roll, for the roller: `strategic_reserve_env.core.luck.luck_of_latest_roll` with the
  value function `--luck-value` (default `race`, the one the evaluation uses);
- **error** of the placement: the analysing agent's win probability after its best legal placement minus
  that after the placement played (0 when the played one is best), every legal placement valued
  (`strategic_reserve_env.agents.luck_values.placement_values`: a pruned search is widened), so any
  square played gets a value.

Per player: total luck (its rolls' luck minus nothing else: the luck of its opponent's rolls counts against
it in the adjusted result), the error rate (mean error per placement), the count of errors above
`MISTAKE` and the luck-adjusted result: its outcome (1 won, 0 lost, 1/2 unfinished) minus its own
rolls' luck plus its opponent's. The two players' adjusted results add up to 1.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.luck_values import RACE, load_luck_value, placement_values
from strategic_reserve_env.core.board import COLOURS, parse_square, square_name
from strategic_reserve_env.core.game import Game
from strategic_reserve_env.core.luck import before_roll, roll_luck
from strategic_reserve_env.core.observation import mask_from_planes, planes
from strategic_reserve_env.files.records import Record, replay

DEFAULT_AGENT = "expectimax:depth=2"
"""The analysing agent unless told otherwise (every legal placement searched to depth 2)."""
MISTAKE = 0.01
"""A placement whose error exceeds this (in win probability) counts as a mistake."""
CHUNK = 32
"""Plies analysed in one batch: the agent values this many positions in one call. Larger batches gain nothing
for the depth-2 search, whose memory grows with the batch (a few megabytes a position); the README gives the
cost per ply."""


@dataclass(frozen=True, slots=True)
class PlyAnalysis:
    """One ply: the roll's luck for its roller and the placement's error."""

    ply: int
    roller: str  # "red" or "blue": who rolled, then placed
    roll: str  # the rolled square
    luck: float  # the roller's luck of this roll
    placed: str  # the square played
    best: str  # the analysing agent's best placement (the one played when it is among the best, else the first)
    value_placed: float  # the agent's win probability after the placement played
    value_best: float  # ... after its best placement
    error: float  # value_best - value_placed (>= 0)


@dataclass(frozen=True)
class PlayerSummary:
    """One player's totals over the game."""

    player: str
    rolls: int
    luck: float  # the sum of its rolls' luck
    placements: int
    error_rate: float  # mean error per placement (0 with none)
    mistakes: int  # placements with error > MISTAKE
    result: float  # 1 won, 0 lost, 1/2 unfinished
    adjusted: float  # result - own luck + the opponent's luck


@dataclass(frozen=True)
class GameAnalysis:
    """The analysis of one game."""

    agent: str  # the analysing agent's name
    luck_value: str  # the value function of the luck terms
    winner: str | None  # "red", "blue", or None while unfinished
    plies: list[PlyAnalysis]
    players: list[PlayerSummary]  # red, then blue

    def as_json(self) -> dict:
        """The analysis as JSON-ready data (the fields above, nested)."""
        return asdict(self)

    def json(self) -> str:
        """`as_json` as indented text."""
        return json.dumps(self.as_json(), indent=1)

    def luck_by_ply(self) -> tuple[np.ndarray, np.ndarray]:
        """(plies,) ply numbers and (plies,) Red's share of each roll's luck (the roller's luck, negated
        for Blue's rolls): what a luck-per-roll plot shows; its cumulative sum is Red's luck so far."""
        sign = np.array([1.0 if p.roller == COLOURS[0] else -1.0 for p in self.plies])
        return np.array([p.ply for p in self.plies]), sign * np.array([p.luck for p in self.plies])

    def text(self) -> str:
        """A table of the plies, then the players' totals."""
        lines = [
            f"analysis by {self.agent}; luck from {self.luck_value} (the roller's win probability after the roll "
            "minus its mean over the 36 rolls); error = value of the best placement - value of the one played",
            "",
            f"{'ply':>4}  {'roller':<6} {'roll':<4} {'luck':>7}  {'placed':<6} {'best':<4} {'error':>6}",
        ]
        for p in self.plies:
            flag = "  ?" if p.error > MISTAKE else ""
            placement = f"{p.placed:<6} {p.best:<4} {p.error:>6.3f}{flag}"
            lines.append(f"{p.ply:>4}  {p.roller:<6} {p.roll:<4} {p.luck:>+7.3f}  {placement}")
        lines += ["", f"result: {self.winner + ' won' if self.winner else 'unfinished'}"]
        for s in self.players:
            lines.append(
                f"{s.player:<5} luck {s.luck:+.3f} over {s.rolls} rolls; error rate {s.error_rate:.4f} per placement, "
                f"{s.mistakes} mistake(s) > {MISTAKE}; result {s.result:g}, luck-adjusted {s.adjusted:.3f}"
            )
        return "\n".join(lines)


def analyse(
    record: Record, agent_spec: str = DEFAULT_AGENT, luck_value: str = RACE, chunk: int = CHUNK
) -> GameAnalysis:
    """The analysis of `record` by the agent `agent_spec` (one that values its placements), the luck from
    the value function `luck_value`; `ValueError` for an agent or value function that cannot serve,
    `RecordError` for a bad record.

    The record is replayed once; its positions are analysed `chunk` plies at a time (the luck of the rolls
    and the values of the placements, each one batched call), so the time grows with the plies as the replay's
    does, and the memory holds one chunk's positions besides the results."""
    agent = load_agent(agent_spec)
    value = load_luck_value(luck_value)
    placement_values(agent, *_observe_one(Game(record.config)))  # refuses an agent without values now
    positions: list[tuple[int, ...]] = []  # per ply of the chunk: the luck's fields of the position after the roll
    observations: list[np.ndarray] = []  # per ply of the chunk: (6, 6, 9) int8 planes from the mover's side
    entries: list[dict] = []  # per ply of the chunk: its trace entry
    plies: list[PlyAnalysis] = []

    def on_roll(game: Game) -> None:
        positions.append((game.me, game.opp, game.reserve_me, game.reserve_opp, game.captured, game.rolled))
        observations.append(planes(game, game.to_move))

    winner = None
    for entry in replay(record, on_roll=on_roll):
        entries.append(entry)
        winner = entry["winner"]
        if len(entries) == chunk:
            plies += _analyse_chunk(agent, value, positions, observations, entries)
            for pending in (positions, observations, entries):
                pending.clear()
    if entries:
        plies += _analyse_chunk(agent, value, positions, observations, entries)
    return GameAnalysis(agent.name, value.name, winner, plies, [_summary(colour, plies, winner) for colour in COLOURS])


def _analyse_chunk(
    agent, value, positions: list, observations: list[np.ndarray], entries: list[dict]
) -> list[PlyAnalysis]:
    """The analysis of consecutive plies: `positions` (each just after its roll: me, opp, reserve_me,
    reserve_opp, captured, rolled, from the mover's side), their `observations` and trace `entries`."""
    me, opp, reserve_me, reserve_opp, captured, rolled = np.array(positions, dtype=np.int64).T  # each (n,) int64
    luck = roll_luck(value, *before_roll(me, opp, reserve_me, reserve_opp, captured), rolled)  # (n,) float64
    stacked = np.stack(observations)  # (n, 6, 6, 9) int8
    values = placement_values(agent, stacked, mask_from_planes(stacked))  # (n, 36) float64
    placed = np.array([parse_square(entry["place"]) for entry in entries])  # (n,) int64
    best_value = np.nanmax(values, axis=1)
    played_value = values[np.arange(len(entries)), placed]
    best = np.where(played_value >= best_value, placed, np.nanargmax(values, axis=1))
    return [
        PlyAnalysis(
            ply=entry["ply"],
            roller=entry["mover"],
            roll=entry["roll"],
            luck=float(luck[k]),
            placed=entry["place"],
            best=square_name(int(best[k])),
            value_placed=float(played_value[k]),
            value_best=float(values[k, best[k]]),
            error=float(values[k, best[k]] - played_value[k]),
        )
        for k, entry in enumerate(entries)
    ]


def _observe_one(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """(1, 6, 6, 9) planes and (1, 36) mask of a game, from its mover's side."""
    observation = planes(game, game.to_move)[None]
    return observation, mask_from_planes(observation)


def _summary(colour: str, plies: list[PlyAnalysis], winner: str | None) -> PlayerSummary:
    own = [p for p in plies if p.roller == colour]
    other = [p for p in plies if p.roller != colour]
    luck = sum(p.luck for p in own)
    result = 0.5 if winner is None else float(winner == colour)
    errors = [p.error for p in own]
    return PlayerSummary(
        player=colour,
        rolls=len(own),
        luck=luck,
        placements=len(own),
        error_rate=float(np.mean(errors)) if errors else 0.0,
        mistakes=sum(e > MISTAKE for e in errors),
        result=result,
        adjusted=result - luck + sum(p.luck for p in other),
    )


__all__ = ["DEFAULT_AGENT", "MISTAKE", "GameAnalysis", "PlayerSummary", "PlyAnalysis", "analyse"]
