"""Round-robin tournaments of Strategic Reserve agents, with paired dice (the code behind evaluate.py).

Luck control: every pair of games shares one dice stream (roll t of both
games is the same) and swaps the seats, so both agents meet the same rolls
for as long as the positions allow. Dice are drawn per game slot and ply from
streams derived from the seed and independent of the agents' own
randomness; every pairing reuses the same streams.

Reported per pairing: score of the first agent (win 1, truncated game 1/2)
with a 95 % t-interval over the per-pair scores, its win rate as Red and as
Blue, mean game length, truncations and games per second.

Luck-adjusted score: every roll's luck (`strategic_reserve_env.core.luck`: the roller's win probability
after the roll minus its mean over the 36 rolls, from the value function `Settings.luck_value`, fixed
before the games) is taken out of each game's result: the first agent's adjusted result is its score
minus its own rolls' luck plus its opponent's, on the score's scale
(`strategic_reserve_env.core.outcome.Scale.adjusted` with `SCORE_SCALE`: luck is a difference of win
probabilities, which a score of 1 for a win and 0 for a loss counts once). Each luck term has mean zero
given the game so far, so the adjusted score has the raw score's expectation; it is reported with its own
t-interval over the adjusted per-pair scores and the variance ratio (raw per-pair variance over adjusted).

Ratings: Bradley-Terry on the whole table (Elo scale, `random` anchored at 0 when present, else the
first agent), fitted on the adjusted scores with the adjusted per-pair variance
(`duel_of`); see `strategic_reserve_env.evaluation.statistics`.

Before the first game every agent is loaded once, under its canonical name
(`load_agent(spec).name`; two specs naming the same agent are refused),
and asked for a move on a few test positions, so a broken agent fails
before anything is played. An agent that fails later stops the tournament
with a `PairingError` naming the agent, the game and the position;
the pairings finished before it are kept on the error (and written by
evaluate.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from strategic_reserve_env import __version__
from strategic_reserve_env.agents import RandomAgent, as_agent
from strategic_reserve_env.agents.luck_values import RACE, load_luck_value
from strategic_reserve_env.core import engine
from strategic_reserve_env.core.board import DEFAULT_RESERVE, MESSAGE_LIMIT, RED, brief, clip
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT, Config
from strategic_reserve_env.core.luck import ValueFunction
from strategic_reserve_env.core.outcome import SCORE_SCALE, reward
from strategic_reserve_env.core.policies import NamedPolicy
from strategic_reserve_env.core.sampling import uniform_square
from strategic_reserve_env.envs import arena
from strategic_reserve_env.files.outputs import write_figure, write_text
from strategic_reserve_env.files.progress import Progress

from .statistics import Duel, effective_games, fit_ratings, score_interval, variance_ratio

PROBE_POSITIONS = 8  # positions every agent is asked about before the first game
MAX_GAMES = 1_000_000
"""Most games per pairing: each pair's raw and adjusted scores, Red's and Red's adjusted, are kept in memory
and in results.json (four lists of games / 2 numbers: about 64 MB in memory at this size)."""
MAX_BATCH = 65_536
"""Most games in one engine batch: the batch's state and the agents' inputs (observations of 324 bytes a game,
searches of 36 placements a game) grow with it; past a few thousand games a batch plays no faster."""
UNFINISHED = (
    "the run was going on when this was written; a later write replaces this, so if no process holds the "
    "folder's .lock now, the run ended without a final word (killed)"
)
"""The `error` of results written while a run goes on: true whether the run then ends, fails or is killed."""
DICE_SALT = 0xD1CE  # mixed into the seed of the dice streams, apart from the agents' generators


@dataclass(frozen=True)
class Settings:
    """What to play; `ValueError` on construction if a setting is out of range."""

    agents: list[str]
    """Agent specs (at least two): random, greedy, expectimax:depth=2, ppo:PATH.safetensors ..."""
    games: int = 2000
    """Games per pairing; even, as each dice stream is played twice with the seats swapped."""
    seed: int = 0
    """Seed of the dice streams and of the agents' generators (>= 0)."""
    batch: int = 1000
    """Games played at once in one engine batch (memory grows with it for the search agents); even."""
    reserve: int = DEFAULT_RESERVE
    """Reserve size of the variant (1..12)."""
    ply_limit: int = DEFAULT_PLY_LIMIT
    """Plies after which a game counts as truncated (half a point each)."""
    out: str | None = None
    """Directory for results.json, results.md and ratings.png (nothing written if unset)."""
    progress: bool = True
    """Show a progress bar."""
    luck_value: str = RACE
    """The value function of the luck of a roll (`race`, or an agent valuing its placements, e.g.
    `expectimax:depth=1`: `strategic_reserve_env.agents.luck_values.load_luck_value`)."""

    def __post_init__(self) -> None:
        for name, most in (("games", MAX_GAMES), ("batch", MAX_BATCH)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2 or value % 2:
                raise ValueError(f"{name} must be an even number >= 2, got {brief(value)}")
            if value > most:  # checked before anything is allocated for it
                raise ValueError(f"{name} must be at most {most:,}, got {brief(value)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if not isinstance(self.luck_value, str) or not self.luck_value:
            raise ValueError(f"luck_value must name a value function, got {self.luck_value!r}")
        self.config()  # checks reserve and ply_limit

    def config(self) -> Config:
        """The game settings."""
        return Config(reserve=self.reserve, ply_limit=self.ply_limit)


@dataclass
class Pairing:
    """Raw counts of one pairing (agent `a` against agent `b`), from `a`'s side."""

    a: str
    b: str
    games: int
    wins_as_red: int
    games_as_red: int
    wins_as_blue: int
    games_as_blue: int
    truncated: int
    total_plies: int
    seconds: float
    pair_scores: list[float] = field(repr=False)
    luck_value: str | None = None
    """The value function of the luck terms (None: no luck kept, no adjusted score)."""
    adjusted_pair_scores: list[float] | None = field(default=None, repr=False)
    """Per pair, the mean of `a`'s two luck-adjusted results (outcome minus `a`'s net luck)."""
    red_pair_scores: list[float] | None = field(default=None, repr=False)
    """Per pair, the mean of Red's two results (whoever played Red): the first player's score."""
    red_adjusted_pair_scores: list[float] | None = field(default=None, repr=False)
    """Per pair, the mean of Red's two luck-adjusted results (outcome minus Red's net luck)."""

    @property
    def score(self) -> float:
        return float(np.mean(self.pair_scores))

    def interval(self) -> tuple[float, float] | None:
        """95 % t-interval of the mean per-pair score; None with a single pair (see
        `strategic_reserve_env.evaluation.statistics.score_interval`)."""
        return score_interval(self.pair_scores)

    @property
    def score_adjusted(self) -> float | None:
        """The luck-adjusted score (same expectation as `score`); None when no luck was kept."""
        return None if self.adjusted_pair_scores is None else float(np.mean(self.adjusted_pair_scores))

    def interval_adjusted(self) -> tuple[float, float] | None:
        """95 % t-interval of the mean adjusted per-pair score; None without luck or with a single pair."""
        return None if self.adjusted_pair_scores is None else score_interval(self.adjusted_pair_scores)

    @property
    def variance_ratio(self) -> float | None:
        """Raw per-pair variance over adjusted (how many times fewer games the adjusted score needs for the
        same interval); None when undefined (no luck kept, one pair, or an adjusted variance of 0)."""
        return (
            None if self.adjusted_pair_scores is None else variance_ratio(self.pair_scores, self.adjusted_pair_scores)
        )

    def red(self, adjusted: bool) -> tuple[float, tuple[float, float] | None] | None:
        """The first player's (Red's) score, raw or luck-adjusted, and its 95 % interval over the pairs; None
        when not kept."""
        scores = self.red_adjusted_pair_scores if adjusted else self.red_pair_scores
        return None if scores is None else (float(np.mean(scores)), score_interval(scores))

    def as_json(self) -> dict:
        """The raw counts, the score and its interval (`ci95` null when undefined), the adjusted score, its
        interval and the variance ratio (null when undefined), Red's raw and adjusted scores with intervals."""
        interval, adjusted = self.interval(), self.interval_adjusted()
        red, red_adjusted = self.red(False), self.red(True)
        return asdict(self) | {
            "score": self.score,
            "ci95": list(interval) if interval else None,
            "score_adjusted": self.score_adjusted,
            "ci95_adjusted": list(adjusted) if adjusted else None,
            "variance_ratio": self.variance_ratio,
            "red_score": None if red is None else red[0],
            "red_ci95": None if red is None or red[1] is None else list(red[1]),
            "red_score_adjusted": None if red_adjusted is None else red_adjusted[0],
            "red_ci95_adjusted": None if red_adjusted is None or red_adjusted[1] is None else list(red_adjusted[1]),
        }


class PairingError(RuntimeError):
    """An agent failed during a pairing; the `AgentError` is the cause.
    `pairings` holds the pairings finished before (set by `run`), `card` the benchmark's score
    card so far (set by `strategic_reserve_env.evaluation.benchmark_protocol.run_benchmark`)."""

    def __init__(self, message: str, pairings: list[Pairing] | None = None) -> None:
        super().__init__(message)
        self.pairings = pairings or []
        self.card = None


def dice_seeds(seed: int, pairs: int) -> np.ndarray:
    """One dice stream per pair of games, the same two games in a row; derived from `seed` only."""
    per_pair = np.random.SeedSequence([seed, DICE_SALT]).generate_state(pairs, dtype=np.uint64) >> np.uint64(1)
    return np.repeat(per_pair.astype(np.int64), 2)


def load_agents(specs: Sequence[str | NamedPolicy]) -> list[NamedPolicy]:
    """The agents of `specs` (spec strings, or agent objects with a `name`), each loaded once;
    `ValueError` if fewer than two are given or two of them are the same agent (same canonical
    name), naming the spellings."""
    agents = [cast(NamedPolicy, as_agent(spec)) for spec in specs]
    spellings: dict[str, list[str]] = {}
    for spec, agent in zip(specs, agents, strict=True):
        spellings.setdefault(agent.name, []).append(spec if isinstance(spec, str) else repr(spec))
    repeated = [(name, given) for name, given in spellings.items() if len(given) > 1]
    if repeated:
        raise ValueError(
            "; ".join(
                f"{' and '.join(brief(s) for s in given)} are the same agent ({clip(name, MESSAGE_LIMIT)})"
                if len(set(given)) > 1
                else f"{brief(given[0])} is given {len(given)} times"
                for name, given in repeated
            )
            + ": give each agent once"
        )
    if len(agents) < 2:
        raise ValueError(f"give at least two different agents, got {len(agents)}")
    return agents


def probe_positions(config: Config, seed: int = 0) -> engine.State:
    """Up to `PROBE_POSITIONS` positions awaiting a placement, game `k` after `2 k` uniformly random
    plies (games already over are left out); random dice and placements from `seed`."""
    rng = np.random.default_rng([seed, DICE_SALT, 1])
    state = engine.roll(engine.init(config, PROBE_POSITIONS), engine.draw_rolls(rng, PROBE_POSITIONS))
    stop_at = 2 * np.arange(PROBE_POSITIONS)
    for ply in range(int(stop_at.max())):
        moving = (ply < stop_at) & ~state.done
        state = engine.place(state, uniform_square(state.legal, rng.random(PROBE_POSITIONS)), config, active=moving)
        state = engine.roll(state, engine.draw_rolls(rng, PROBE_POSITIONS), active=moving & ~state.done)
    return state[~state.done]


def check_agent(agent: NamedPolicy, config: Config, seed: int = 0) -> None:
    """Ask `agent` for a placement on the test positions of `probe_positions`; `ValueError`
    naming the agent, what it did wrong and the position if it raises or answers with anything but
    one legal square per position. Its own generator for this is seeded apart from the games'."""
    positions = probe_positions(config, seed)
    games = np.arange(positions.batch_size)
    try:
        arena.choose_checked(agent, 0, positions, games, np.random.default_rng([seed, DICE_SALT, 2]), games)
    except arena.AgentError as error:
        raise ValueError(
            f"agent {error.name!r} failed before the first game, on test position {error.game}: "
            f"{error.detail}; position: {error.position}"
        ) from error


@contextlib.contextmanager
def one_torch_thread():
    """While games are played, torch (if an agent imported it) computes on one thread; restored after.

    The agents' batches are small (at most `Settings.batch` positions), and on a busy machine torch's
    thread pool waits for cores instead of computing: the shipped PPO against random ran 2,600 games/s
    on one thread and 170 on two, with two cores shared by several processes."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def play_pairing(
    a: str | NamedPolicy,
    b: str | NamedPolicy,
    settings: Settings,
    progress=None,
    on_games: Callable[[np.ndarray, np.ndarray], None] | None = None,
    luck: ValueFunction | None = None,
) -> Pairing:
    """All games of one pairing (agent specs or agent objects), in engine batches, with paired
    dice and swapped seats, each roll's luck from `luck` (default: `settings.luck_value` loaded).
    `PairingError` if an agent fails. `on_games(red_agent, winning_agent)`,
    if given, receives the games one by one: two (games,) int64 arrays, who played Red (0 `a`, 1 `b`) and
    who won (0, 1, or -1 truncated), game `2 k` and `2 k + 1` being dice pair `k`."""
    agents = tuple(cast(NamedPolicy, as_agent(x)) for x in (a, b))
    luck = load_luck_value(settings.luck_value) if luck is None else luck
    config = settings.config()
    seeds = dice_seeds(settings.seed, settings.games // 2)
    red_agent = np.tile([0, 1], settings.games // 2)  # even game: a is Red; odd game: b is Red
    rngs = [np.random.default_rng([settings.seed, 1, index]) for index in range(2)]
    results = []
    start = time.perf_counter()
    finished_before = 0

    def advance(state) -> None:
        """Move the progress bar by the games finished since the last ply."""
        nonlocal finished_before
        finished = int(state.done.sum())
        if progress is not None:
            progress.update(finished - finished_before)
        finished_before = finished

    with one_torch_thread():
        for first in range(0, settings.games, settings.batch):
            chunk = slice(first, min(first + settings.batch, settings.games))
            finished_before = 0
            try:
                results.append(
                    arena.play(
                        agents,
                        red_agent[chunk],
                        seeds[chunk],
                        config,
                        rngs,
                        on_ply=advance,
                        game_numbers=np.arange(chunk.start, chunk.stop),
                        luck=luck,
                    )
                )
            except arena.AgentError as error:
                raise PairingError(f"{agents[0].name} vs {agents[1].name}: {error}") from error
    seconds = time.perf_counter() - start
    red = np.concatenate([r.red_agent for r in results])
    winner = np.concatenate([r.winning_agent for r in results])
    a_points = [SCORE_SCALE.of(reward(r.winning_agent, 0)) for r in results]  # a's scores (1, 1/2, 0)
    red_points_of = [SCORE_SCALE.of(reward(r.winner, RED)) for r in results]  # Red's scores
    points = np.concatenate(a_points)
    adjusted = np.concatenate([r.adjusted(SCORE_SCALE, p, 0) for r, p in zip(results, a_points, strict=True)])
    red_points = np.concatenate(red_points_of)
    red_adjusted = np.concatenate(
        [SCORE_SCALE.adjusted(p, r.red_luck) for r, p in zip(results, red_points_of, strict=True)]
    )
    if on_games is not None:
        on_games(red, winner)
    return Pairing(
        a=agents[0].name,
        b=agents[1].name,
        games=settings.games,
        wins_as_red=int(((red == 0) & (winner == 0)).sum()),
        games_as_red=int((red == 0).sum()),
        wins_as_blue=int(((red == 1) & (winner == 0)).sum()),
        games_as_blue=int((red == 1).sum()),
        truncated=int((winner < 0).sum()),
        total_plies=int(np.concatenate([r.plies for r in results]).sum()),
        seconds=seconds,
        pair_scores=points.reshape(-1, 2).mean(axis=1).tolist(),
        luck_value=luck.name,
        adjusted_pair_scores=adjusted.reshape(-1, 2).mean(axis=1).tolist(),
        red_pair_scores=red_points.reshape(-1, 2).mean(axis=1).tolist(),
        red_adjusted_pair_scores=red_adjusted.reshape(-1, 2).mean(axis=1).tolist(),
    )


def duel_of(pairing: Pairing, i: int, j: int, adjusted: bool = True) -> Duel:
    """The pairing's result as a `Duel` between players `i` (its `a`) and `j`.

    `adjusted` (and the pairing kept its luck): the luck-adjusted score, over the *effective* number of
    games whose binomial variance equals the adjusted score's measured variance
    (`effective_games`), so the ratings' intervals come from the adjusted per-pair
    variance; otherwise the raw score over the games played (protocol v1)."""
    if adjusted and pairing.adjusted_pair_scores is not None:
        games = effective_games(pairing.adjusted_pair_scores)
        if games is not None:
            score = float(np.clip(pairing.score_adjusted, 0.0, 1.0))
            return Duel(i, j, score * games, games)
    return Duel(i, j, pairing.score * pairing.games, pairing.games)


def anchor_of(names: list[str]) -> str:
    """The agent whose rating is fixed at 0 (Elo scale): `random` when it plays, else the first agent."""
    return RandomAgent.name if RandomAgent.name in names else names[0]


def anchor_line(ratings: dict[str, tuple[float, float]]) -> str:
    """The line under a ratings table saying which agent the ratings are relative to."""
    anchor = anchor_of(list(ratings))
    why = "" if anchor == RandomAgent.name else " (the first agent given; random is anchored when it plays)"
    return f"ratings relative to {anchor}, fixed at 0{why}: only differences between ratings mean anything"


def bradley_terry(names: list[str], pairings: list[Pairing]) -> dict[str, tuple[float, float]]:
    """Elo-scale ratings and 95 % half-widths, fitted by maximum likelihood on all pairings
    (`random` fixed at 0 when present, else the first agent); names must be distinct."""
    if len(set(names)) != len(names):
        raise ValueError(f"agent names must be distinct, got {names}")
    index = {name: i for i, name in enumerate(names)}
    unknown = sorted(({p.a for p in pairings} | {p.b for p in pairings}) - set(index))
    if unknown:
        raise ValueError(f"pairings of agents not rated: {unknown}")
    anchor = index[anchor_of(names)]
    ratings, half = fit_ratings(len(names), [duel_of(p, index[p.a], index[p.b]) for p in pairings], {anchor: 0.0})
    return {name: (float(ratings[i]), float(half[i])) for name, i in index.items()}


def format_interval(interval: tuple[float, float] | None, digits: int = 3) -> str:
    """`[low, high]` with `digits` decimals, `n/a` when undefined."""
    return "n/a" if interval is None else f"[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def result_cells(p: Pairing) -> list[str]:
    """The table cells of a pairing's result, from `a`'s side: score, 95 % interval, win rates as Red and as
    Blue, mean plies, truncated games (the tournament's and the benchmark card's tables both show them)."""
    return [
        f"{p.score:.3f}",
        format_interval(p.interval()),
        *adjusted_cells(p),
        f"{p.wins_as_red / p.games_as_red:.3f}",
        f"{p.wins_as_blue / p.games_as_blue:.3f}",
        f"{p.total_plies / p.games:.1f}",
        str(p.truncated),
    ]


def adjusted_cells(p: Pairing) -> list[str]:
    """The luck-adjusted score, its 95 % interval and the variance ratio as table cells (`n/a` if undefined)."""
    ratio = p.variance_ratio
    score = p.score_adjusted
    return [
        "n/a" if score is None else f"{score:.4f}",
        format_interval(p.interval_adjusted(), digits=4),
        "n/a" if ratio is None else f"{ratio:.1f}",
    ]


def red_lines(pairings: list[Pairing]) -> list[str]:
    """One line per pairing: the first player's (Red's) score, raw and luck-adjusted, with 95 % intervals."""
    lines = []
    for p in pairings:
        raw, adjusted = p.red(False), p.red(True)
        if raw is not None and adjusted is not None:
            lines.append(
                f"{p.a} vs {p.b}: Red scores {raw[0]:.4f} {format_interval(raw[1], 4)} raw, "
                f"{adjusted[0]:.4f} {format_interval(adjusted[1], 4)} luck-adjusted"
            )
    return lines


def luck_line(pairings: list[Pairing]) -> str:
    """One line naming the value function of the adjusted scores."""
    names = sorted({p.luck_value for p in pairings if p.luck_value is not None})
    return (
        f"adjusted: luck-adjusted score (outcome minus luck, value function {', '.join(names) or 'n/a'}); "
        "var ratio: raw per-pair variance / adjusted; ratings from the adjusted scores"
    )


def speed_cell(p: Pairing) -> str:
    """Games per second of a pairing, as a table cell."""
    return f"{p.games / p.seconds:,.0f}"


def pairing_rows(pairings: list[Pairing]) -> list[list[str]]:
    """Table rows (`PAIRING_HEADER`): one per pairing."""
    return [[p.a, p.b, *result_cells(p), str(p.games), speed_cell(p)] for p in pairings]


PAIRING_HEADER = [
    "agent A",
    "agent B",
    "A score",
    "95% CI",
    "adjusted",
    "95% CI adj",
    "var ratio",
    "A win as Red",
    "A win as Blue",
    "mean plies",
    "truncated",
    "games",
    "games/s",
]


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain aligned table."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def rating_rows(ratings: dict[str, tuple[float, float]]) -> list[list[str]]:
    """Table rows: agents by rating."""
    ordered = sorted(ratings.items(), key=lambda item: -item[1][0])
    return [[name, f"{value:+z.0f}", f"±{half:.0f}"] for name, (value, half) in ordered]


_NUMBER_LIST = re.compile(r"\[\n\s*((?:-?[0-9][0-9.e+-]*,\n\s*)*-?[0-9][0-9.e+-]*)\n\s*\]")


def json_text(payload: dict) -> str:
    """`payload` as indented JSON with each list of numbers on one line (per-pair scores stay readable
    and small); NaN or infinity raise `ValueError` (JSON has neither)."""
    text = json.dumps(payload, indent=1, allow_nan=False)
    return _NUMBER_LIST.sub(lambda match: "[" + re.sub(r",\n\s*", ", ", match.group(1)) + "]", text) + "\n"


def write_outputs(
    directory: Path,
    settings: Settings,
    pairings: list[Pairing],
    ratings,
    stem: str = "results",
    plot: bool = True,
    extra: dict | None = None,
    error: str | None = None,
) -> None:
    """`{stem}.json` (raw counts and settings, plus `extra`), `{stem}.md` and, if `plot` and the
    ratings are there, ratings.png. `ratings` None and `error` describe an unfinished tournament:
    the files then hold the pairings finished so far, with `"complete": false` and `error` (default
    `UNFINISHED`: written while the run goes on)."""
    if ratings is None and error is None:
        error = UNFINISHED
    directory.mkdir(parents=True, exist_ok=True)
    payload = {
        "package_version": __version__,
        "complete": ratings is not None and error is None,
        "error": error,
        "settings": asdict(settings),
        "pairings": [p.as_json() for p in pairings],
        "ratings_elo": None
        if ratings is None
        else {name: {"rating": value, "ci95_half_width": half} for name, (value, half) in ratings.items()},
        **(extra or {}),
    }
    if plot and ratings is not None:  # every other file first: the JSON says complete only when all are there
        plot_ratings(directory / "ratings.png", settings, ratings)
    markdown = [
        f"# Tournament: {settings.games} games per pairing, seed {settings.seed}, reserve {settings.reserve}",
        "",
        markdown_table(PAIRING_HEADER, pairing_rows(pairings)),
        "",
        luck_line(pairings),
        "",
        *(f"- {line}" for line in red_lines(pairings)),
        "",
    ]
    if ratings is not None:
        markdown += [
            "## Bradley-Terry ratings (Elo scale, 95 % intervals; from the adjusted scores)",
            "",
            markdown_table(["agent", "rating", "95% CI"], rating_rows(ratings)),
            "",
            f"*{anchor_line(ratings)}.*",
            "",
        ]
    else:
        markdown += [f"**Unfinished**: {error}", ""]
    write_text(directory / f"{stem}.md", "\n".join(markdown))
    write_text(directory / f"{stem}.json", json_text(payload))


def plot_ratings(path: Path, settings: Settings, ratings) -> None:
    """Ratings with their intervals as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(ratings.items(), key=lambda item: item[1][0])
    figure, axes = plt.subplots(figsize=(6, 0.6 * len(ordered) + 1.2))
    axes.errorbar(
        [v for _, (v, _) in ordered], range(len(ordered)), xerr=[h for _, (_, h) in ordered], fmt="o", capsize=4
    )
    axes.set_yticks(range(len(ordered)), [name for name, _ in ordered])
    axes.set_xlabel("Bradley-Terry rating (Elo scale), 95 % interval")
    axes.set_title(f"Strategic Reserve, {settings.games} games per pairing")
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    write_figure(path, figure, dpi=120)
    plt.close(figure)


def prepare_agents(specs: Sequence[str | NamedPolicy], config: Config, seed: int = 0) -> list[NamedPolicy]:
    """`load_agents`, then `check_agent` on each: `ValueError` before any game is played."""
    agents = load_agents(specs)
    for agent in agents:
        check_agent(agent, config, seed)
    return agents


def run(
    settings: Settings,
    agents: Sequence | None = None,
    on_pairing: Callable[[list[Pairing]], None] | None = None,
    checked: bool = False,
    on_games: Callable[[np.ndarray, np.ndarray], None] | None = None,
) -> tuple[list[Pairing], dict[str, tuple[float, float]]]:
    """Play the round robin of `agents` (default: `settings.agents`), loaded and checked first by
    `prepare_agents` unless `checked` says the caller did, and fit the ratings.
    `on_pairing(pairings)` is called after each pairing with those finished so far, `on_games` (see
    `play_pairing`) just before it, once per pairing, in the order of the pairings.
    `PairingError` (carrying them) if an agent fails."""
    agents = (
        list(agents)
        if checked
        else prepare_agents(settings.agents if agents is None else agents, settings.config(), settings.seed)
    )
    matchups = list(itertools.combinations(agents, 2))
    luck = load_luck_value(settings.luck_value)
    pairings: list[Pairing] = []
    with Progress(len(matchups) * settings.games, "game", enabled=settings.progress) as progress:
        for a, b in matchups:
            progress.set_description(f"{a.name} vs {b.name}")
            try:
                pairings.append(play_pairing(a, b, settings, progress, on_games, luck))
            except PairingError as error:
                error.pairings = list(pairings)
                raise
            if on_pairing is not None:
                on_pairing(list(pairings))
    return pairings, bradley_terry([agent.name for agent in agents], pairings)
