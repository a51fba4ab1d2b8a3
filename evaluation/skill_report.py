"""How much of Strategic Reserve is skill: the report docs/SKILL.md, its plots and data (docs/skill/).

    strategic-reserve skill               # the defaults: 8.5 min of CPU (one core)
    strategic-reserve skill --best SPEC   # a new best agent joins the ladder
    strategic-reserve skill --games 200 --variants 5=100 --out /tmp/skill   # a quick look

Every game is played by evaluate.py's round robin (`tournament.run`: paired dice, seats
swapped, one dice stream per pair of games, the same streams in every pairing; Bradley-Terry ratings with
95 % intervals, random at 0). The report has four parts:

1. **The ladder**: the round robin of `--agents` (plus `--best` when it is not among them) at the
   standard reserve of 7, `--games` games per pairing, seed `--seed`.
2. **First-player advantage**: Red's score (win 1, truncated game 1/2) in every pairing, with a t-interval
   over the dice pairs (each pair holds one game with each agent as Red; its Red score is the mean of the
   two). Pooled over the pairings among agents other than random, Red's score per dice pair is averaged
   over those pairings first (they all share the dice streams, so they are not independent samples), then
   the t-interval is taken over the pairs. Among random players: one more pairing of the same machinery,
   random against random, with the same games and seed.
3. **Headroom** (`strategic-reserve headroom`, `strategic_reserve_env.evaluation.placement_headroom`): its full run
takes
   longer than this whole report, so by default its figures are quoted from the run named in
   `quoted_headroom`; `--headroom-positions N` runs it here instead (as a command, its output read).
4. **Variants**: the same round robin at each reserve of `--variants` (`RESERVE=GAMES`; fewer games
   than the ladder, as games get long with big reserves), seed `--seed`. The shipped PPO model was trained
   at reserve 7; its observation (reserve counts on (6, 6) planes) has the same shape at every reserve, so it
   plays every variant, outside the positions it was trained on.

**Separation** of a variant: the spread of its Bradley-Terry ratings (highest minus lowest) over the whole
ladder, over the agents above random and over the search agents (`--search-agents`: those that play every
reserve by one rule, unlike a model trained at reserve 7), with 95 % intervals from the ratings' half-widths
(taken as independent: conservative). The games needed to tell two agents apart go as one over their
squared log-odds gap, and each game costs its plies; the report recommends for a benchmark the variant whose
whole ladder has the largest squared spread per ply played (`Ladder.per_ply`), and names the one that
spreads widest outright with its game length and truncations.

Writes `OUT/SKILL.md`, `OUT/skill/skill.json` (counts, scores and intervals of every pairing) and
`OUT/skill/ladder.png`, `variants.png`, `first_player.png`.
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from strategic_reserve_env.agents import RandomAgent
from strategic_reserve_env.core.board import DEFAULT_RESERVE
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT
from strategic_reserve_env.core.luck import RANDOM_RACE_VALUE
from strategic_reserve_env.core.policies import NamedPolicy
from strategic_reserve_env.files.outputs import write_figure, write_text

from .benchmark_protocol import SHIPPED_PPO
from .statistics import score_interval
from .tournament import (
    PAIRING_HEADER,
    Pairing,
    Settings,
    check_agent,
    format_interval,
    json_text,
    load_agents,
    markdown_table,
    pairing_rows,
    play_pairing,
    plot_ratings,
    run,
)

DEFAULT_AGENTS = ("random", "greedy", "expectimax:depth=1", "expectimax:depth=2", SHIPPED_PPO)
DEFAULT_BEST = "expectimax:depth=2"  # the strongest agent of the project when this report was written
DEFAULT_SEARCH_AGENTS = ("greedy", "expectimax:depth=1", "expectimax:depth=2")  # play any reserve by one rule
DEFAULT_GAMES = 4000
DEFAULT_SEED = 13  # issue 13
# (reserve, games per pairing): strong players' games last about 14, 18, 25, 45 and 300 plies at
# reserves 5, 6, 7, 9 and 12, so the bigger variants get fewer games
DEFAULT_VARIANTS = ((5, 2000), (6, 2000), (9, 1000), (12, 400))
MAIN_RESERVE = DEFAULT_RESERVE
REPORT = "SKILL.md"
FIGURES = "skill"  # folder beside the report: plots and skill.json
FIGURE_DPI = 100


@dataclass(frozen=True)
class Headroom:
    """Figures of the headroom measurement: the command that produced them and its output lines."""

    command: str
    lines: tuple[str, ...]
    source: str

    def figure(self, label: str) -> float | None:
        """The first number after `label` in the output (`split-sample gain`, `in-sample gain`,
        `best - worst placement`), None if no line has it."""
        for line in self.lines:
            found = re.search(re.escape(label) + r"[^+\-0-9]*([+-]?[0-9.]+)", line)
            if found:
                return float(found.group(1))
        return None


HEADROOM_QUOTED_OPTIONS = "--positions 300 --rollouts 2000 --seed 0"  # the measurement's defaults
HEADROOM_QUOTED_LINES = (
    "251 decisions, 2000 greedy rollouts per placement (common dice):",
    "  split-sample gain over greedy  +0.0030 +- 0.0014 (95 %) win probability per decision",
    "  in-sample gain over greedy     +0.0106 (biased upwards by noise)",
    "  best - worst placement         0.0982",
)
"""The output of the full headroom run the README's Results section quotes (with these options)."""


def quoted_headroom() -> Headroom:
    """The full run's figures (`HEADROOM_QUOTED_LINES`), its command naming the module where it is now."""
    return Headroom(
        f"{HEADROOM_COMMAND} {HEADROOM_QUOTED_OPTIONS}",
        HEADROOM_QUOTED_LINES,
        "quoted from the run in the README's Results section (this report did not run it)",
    )


def parse_variant(text: str) -> tuple[int, int]:
    """`RESERVE=GAMES` as a pair of ints; `ValueError` naming the text otherwise."""
    reserve, sep, games = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return int(reserve), int(games)
    except ValueError:
        raise ValueError(f"variant {text!r}: write RESERVE=GAMES, e.g. 9=1000") from None


@dataclass(frozen=True)
class SkillSettings:
    """What the report plays; `ValueError` on construction if a setting is out of range."""

    agents: tuple[str, ...] = DEFAULT_AGENTS
    """Agent specs of the ladder (evaluate.py's grammar)."""
    best: str = DEFAULT_BEST
    """The spec of the best agent: added to the ladder if not in `agents`, named "best" in the report."""
    games: int = DEFAULT_GAMES
    """Games per pairing of the ladder at reserve 7 (even)."""
    variants: tuple[tuple[int, int], ...] = DEFAULT_VARIANTS
    """(reserve, games per pairing) of each variant; reserves distinct and other than 7."""
    seed: int = DEFAULT_SEED
    """Seed of the dice streams and the agents' generators, in every round robin."""
    batch: int = 1000
    """Games per engine batch (evaluate.py's --batch)."""
    search_agents: tuple[str, ...] = DEFAULT_SEARCH_AGENTS
    """Canonical names of the ladder's agents that play every reserve by the same rule (no model trained at one
    reserve size): the spread of their ratings compares the variants without a learned agent's transfer."""
    headroom_positions: int = 0
    """Run the headroom measurement on this many greedy self-play games (0: quote `quoted_headroom`)."""
    headroom_rollouts: int = 2000
    """Rollouts per placement of that run (even)."""
    headroom_seed: int = 0
    """Seed of that run."""
    progress: bool = True
    """Progress bars (or plain lines when not on a terminal) on stderr."""
    specs: tuple[str, ...] = field(init=False)
    """The ladder's specs: `agents`, then `best` unless it is one of them (same text)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", tuple(self.agents))
        object.__setattr__(self, "search_agents", tuple(self.search_agents))
        object.__setattr__(self, "variants", tuple(tuple(v) for v in self.variants))
        extra = () if self.best in self.agents else (self.best,)
        object.__setattr__(self, "specs", self.agents + extra)
        self.tournament(MAIN_RESERVE, self.games)  # checks games, seed and batch
        reserves = [reserve for reserve, _ in self.variants]
        if MAIN_RESERVE in reserves:
            raise ValueError(f"variants: reserve {MAIN_RESERVE} is the ladder's own (--games); give other reserves")
        if len(set(reserves)) != len(reserves):
            raise ValueError(f"variants: each reserve once, got {reserves}")
        for reserve, games in self.variants:
            try:
                self.tournament(reserve, games)
            except ValueError as error:
                raise ValueError(f"variant {reserve}={games}: {error}") from None
        if isinstance(self.headroom_positions, bool) or not isinstance(self.headroom_positions, int):
            raise ValueError(f"headroom_positions must be an integer >= 0, got {self.headroom_positions!r}")
        if self.headroom_positions < 0:
            raise ValueError(f"headroom_positions must be >= 0, got {self.headroom_positions}")
        if self.headroom_rollouts < 2 or self.headroom_rollouts % 2:
            raise ValueError(f"headroom_rollouts must be an even number >= 2, got {self.headroom_rollouts}")

    def tournament(self, reserve: int, games: int, agents: Sequence[str] | None = None) -> Settings:
        """evaluate.py's settings of one round robin of this report."""
        return Settings(
            agents=list(self.specs if agents is None else agents),
            games=games,
            seed=self.seed,
            batch=self.batch,
            reserve=reserve,
            ply_limit=DEFAULT_PLY_LIMIT,
            progress=self.progress,
        )

    def command(self) -> str:
        """The command line that plays exactly this report (every setting spelled out)."""
        words = ["strategic-reserve", "skill", "--agents", *self.agents]
        words += ["--best", self.best]
        words += ["--games", str(self.games), "--variants", *(f"{r}={g}" for r, g in self.variants)]
        words += ["--search-agents", *self.search_agents, "--seed", str(self.seed), "--batch", str(self.batch)]
        if self.headroom_positions:
            words += ["--headroom-positions", str(self.headroom_positions)]
            words += ["--headroom-rollouts", str(self.headroom_rollouts), "--headroom-seed", str(self.headroom_seed)]
        return " ".join(shlex.quote(word) for word in words)


def red_pair_scores(red_agent: np.ndarray, winning_agent: np.ndarray) -> np.ndarray:
    """(pairs,) Red's score in each dice pair from a pairing's (games,) arrays (who was Red, who won, -1 for a
    truncated game; games `2 k` and `2 k + 1` are pair `k`): 1 a win, 1/2 a truncated game, averaged."""
    points = np.where(winning_agent < 0, 0.5, (winning_agent == red_agent).astype(np.float64))
    return points.reshape(-1, 2).mean(axis=1)


@dataclass(frozen=True)
class FirstPlayer:
    """Red's score over some games: its mean and 95 % interval over dice pairs."""

    score: float
    interval: tuple[float, float] | None

    @classmethod
    def of(cls, pair_scores: np.ndarray) -> FirstPlayer:
        return cls(float(np.mean(pair_scores)), score_interval(pair_scores))

    def text(self) -> str:
        return f"{self.score:.3f} {format_interval(self.interval)}"

    def as_json(self) -> dict:
        return {"score": self.score, "ci95": None if self.interval is None else list(self.interval)}


@dataclass
class Ladder:
    """One round robin of the report (one reserve), with Red's scores."""

    reserve: int
    games: int
    pairings: list[Pairing]
    ratings: dict[str, tuple[float, float]]
    red: list[np.ndarray]  # per pairing: (pairs,) Red's score per dice pair
    random_red: np.ndarray | None  # (pairs,) Red's score per dice pair of random against random
    red_adjusted: list[np.ndarray] | None = None  # the same, luck-adjusted (Pairing.red_adjusted_pair_scores)
    random_red_adjusted: np.ndarray | None = None  # random against random, adjusted with V = race-random

    def strong(self) -> list[int]:
        """Indices of the pairings between agents other than random."""
        return [k for k, p in enumerate(self.pairings) if RandomAgent.name not in (p.a, p.b)]

    def red_strong(self, adjusted: bool = True) -> FirstPlayer | None:
        """Red's score pooled over the pairings among agents above random (see the module docstring),
        luck-adjusted where kept."""
        strong, red = self.strong(), self.red_adjusted if adjusted and self.red_adjusted is not None else self.red
        return FirstPlayer.of(np.mean([red[k] for k in strong], axis=0)) if strong else None

    def red_random(self, adjusted: bool = True) -> FirstPlayer | None:
        red = self.random_red_adjusted if adjusted and self.random_red_adjusted is not None else self.random_red
        return None if red is None else FirstPlayer.of(red)

    def pairing(self, a: str, b: str) -> tuple[float, tuple[float, float] | None] | None:
        """`a`'s luck-adjusted score against `b` (the raw one where no luck was kept) and its interval, from
        whichever side the pairing was played."""
        for p in self.pairings:
            score = p.score if p.score_adjusted is None else p.score_adjusted
            interval = p.interval() if p.score_adjusted is None else p.interval_adjusted()
            if (p.a, p.b) == (a, b):
                return score, interval
            if (p.a, p.b) == (b, a):
                return 1 - score, None if interval is None else (1 - interval[1], 1 - interval[0])
        return None

    def spread(self, names: Sequence[str]) -> tuple[float, float] | None:
        """Highest minus lowest rating among `names` and the 95 % half-width of that difference (the two
        half-widths combined as if independent); None with fewer than two."""
        rated = [self.ratings[name] for name in names if name in self.ratings]
        if len(rated) < 2:
            return None
        top, bottom = max(rated), min(rated)
        return top[0] - bottom[0], math.hypot(top[1], bottom[1])

    def mean_plies(self) -> float:
        return sum(p.total_plies for p in self.pairings) / sum(p.games for p in self.pairings)

    def per_ply(self, names: Sequence[str]) -> float | None:
        """The squared rating spread of `names` (Elo²) per ply played: the games a benchmark needs to tell two
        agents apart go as one over their squared log-odds gap, each game costing its plies, so a variant that
        separates more per ply separates for less play (None with fewer than two rated)."""
        spread = self.spread(names)
        return None if spread is None else spread[0] ** 2 / self.mean_plies()

    def truncated(self) -> int:
        return sum(p.truncated for p in self.pairings)

    def as_json(self) -> dict:
        strong, random = self.red_strong(), self.red_random()
        return {
            "reserve": self.reserve,
            "games_per_pairing": self.games,
            "pairings": [
                {key: value for key, value in p.as_json().items() if key != "pair_scores"}
                | {"red": FirstPlayer.of(red).as_json()}
                for p, red in zip(self.pairings, self.red, strict=True)
            ],
            "ratings_elo": {name: {"rating": v, "ci95_half_width": h} for name, (v, h) in self.ratings.items()},
            "red_among_strong": None if strong is None else strong.as_json(),
            "red_among_random": None if random is None else random.as_json(),
            "red_among_strong_raw": None if self.red_strong(False) is None else self.red_strong(False).as_json(),
            "red_among_random_raw": None if self.red_random(False) is None else self.red_random(False).as_json(),
            "mean_plies": self.mean_plies(),
        }


def play_ladder(settings: SkillSettings, agents: list[NamedPolicy], reserve: int, games: int) -> Ladder:
    """The round robin of `agents` (loaded and checked) at `reserve`, then random against random."""
    tournament = settings.tournament(reserve, games, [agent.name for agent in agents])
    red: list[np.ndarray] = []
    pairings, ratings = run(
        tournament, agents, checked=True, on_games=lambda who, won: red.append(red_pair_scores(who, won))
    )
    random_red: list[np.ndarray] = []
    randoms = play_pairing(
        RandomAgent(),
        RandomAgent(),
        tournament,
        on_games=lambda who, won: random_red.append(red_pair_scores(who, won)),
        luck=RANDOM_RACE_VALUE,  # the race model fitted on random play: the other removes little there
    )
    adjusted = [np.asarray(p.red_adjusted_pair_scores) for p in pairings]
    return Ladder(
        reserve, games, pairings, ratings, red, random_red[0], adjusted, np.asarray(randoms.red_adjusted_pair_scores)
    )


HEADROOM_COMMAND = "strategic-reserve headroom"  # the headroom measurement, run as a command


def run_headroom(settings: SkillSettings) -> Headroom:
    """The headroom measurement run as a command (its progress on stderr), its output kept."""
    options = ["--positions", str(settings.headroom_positions), "--rollouts", str(settings.headroom_rollouts)]
    options += ["--seed", str(settings.headroom_seed)]
    command = [sys.executable, "-m", "strategic_reserve_env", "headroom", *options]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{HEADROOM_COMMAND} {' '.join(options)} failed with status {done.returncode}")
    lines = tuple(line.rstrip() for line in done.stdout.splitlines() if line.strip())
    return Headroom(f"{HEADROOM_COMMAND} {' '.join(options)}", lines, "run by this report")


@dataclass
class Report:
    """Everything measured."""

    settings: SkillSettings
    names: list[str]  # canonical names of the ladder's agents, in the order given
    best: str  # canonical name of the best agent
    ladders: list[Ladder]  # the main ladder first, then the variants by reserve
    headroom: Headroom
    seconds: float = 0.0

    @property
    def main(self) -> Ladder:
        return self.ladders[0]

    def by_reserve(self) -> list[Ladder]:
        return sorted(self.ladders, key=lambda ladder: ladder.reserve)

    def strong_names(self) -> list[str]:
        return [name for name in self.names if name != RandomAgent.name]

    def search_names(self) -> list[str]:
        return [name for name in self.names if name in self.settings.search_agents]

    def ranked(self, names: Sequence[str], per_ply: bool = False) -> list[Ladder]:
        """The ladders by the rating spread of `names` (or by it squared per ply played), widest first; empty
        without two of them rated."""
        measured = [
            (ladder.per_ply(names) if per_ply else (ladder.spread(names) or (None,))[0], ladder)
            for ladder in self.ladders
        ]
        rated = [(value, ladder) for value, ladder in measured if value is not None]
        return [ladder for _, ladder in sorted(rated, key=lambda item: -item[0])]

    def recommended(self) -> Ladder | None:
        """The variant a benchmark should use: the one whose whole ladder separates most per ply played."""
        ranked = self.ranked(self.names, per_ply=True)
        return ranked[0] if ranked else None

    def as_json(self) -> dict:
        return {
            "command": self.settings.command(),
            "settings": {k: v for k, v in asdict(self.settings).items() if k != "specs"},
            "agents": self.names,
            "best": self.best,
            "wall_seconds": self.seconds,
            "ladders": [ladder.as_json() for ladder in self.ladders],
            "headroom": asdict(self.headroom),
        }


def measure(settings: SkillSettings, log=None) -> Report:
    """Play everything of the report (progress on stderr)."""
    log = log or (lambda text: print(f"[skill] {text}", file=sys.stderr, flush=True))
    start = time.perf_counter()
    agents = load_agents(list(settings.specs))
    names = [agent.name for agent in agents]
    best = agents[settings.specs.index(settings.best)].name
    canonical = dict(zip(settings.specs, (agent.name for agent in agents), strict=True))
    settings = replace(settings, agents=tuple(canonical[spec] for spec in settings.agents), best=best)
    rounds = ((MAIN_RESERVE, settings.games), *settings.variants)
    for reserve, games in rounds:  # every agent at every reserve before the first game
        config = settings.tournament(reserve, games).config()
        for agent in agents:
            check_agent(agent, config, settings.seed)
    if settings.headroom_positions:
        log(f"headroom: {settings.headroom_positions} positions, {settings.headroom_rollouts} rollouts")
        headroom = run_headroom(settings)
    else:
        headroom = quoted_headroom()
    ladders = []
    for reserve, games in rounds:
        pairings = len(agents) * (len(agents) - 1) // 2 + 1
        log(f"reserve {reserve}: {pairings} pairings (random against random included) x {games} games")
        ladders.append(play_ladder(settings, agents, reserve, games))
    return Report(settings, names, best, ladders, headroom, time.perf_counter() - start)


# ---------------------------------------------------------------- the report


def _score(value: tuple[float, tuple[float, float] | None] | None) -> str:
    return "—" if value is None else f"{value[0]:.3f} {format_interval(value[1])}"


def _spread(value: tuple[float, float] | None) -> str:
    return "—" if value is None else f"{value[0]:.0f} ± {value[1]:.0f}"


def ladder_table(report: Report, ladder: Ladder) -> str:
    """Agents by rating, with their scores against random, greedy and the best agent."""
    ordered = sorted(ladder.ratings.items(), key=lambda item: -item[1][0])
    opponents = [name for name in (RandomAgent.name, "greedy", report.best) if name in ladder.ratings]
    header = ["agent", "rating (Elo, 95 %)"] + [f"score vs {name}" for name in opponents]
    rows = []
    for name, (value, half) in ordered:
        label = f"`{name}`" + (" (best)" if name == report.best else "")
        cells = ["—" if name == other else _score(ladder.pairing(name, other)) for other in opponents]
        rows.append([label, f"{value:+z.0f} ± {half:.0f}", *cells])
    return markdown_table(header, rows)


def first_player_table(ladder: Ladder) -> str:
    adjusted = ladder.red_adjusted if ladder.red_adjusted is not None else [None] * len(ladder.red)
    rows = [
        [f"`{p.a}` vs `{p.b}`", FirstPlayer.of(red).text(), "—" if fit is None else FirstPlayer.of(fit).text()]
        + [f"{p.wins_as_red / p.games_as_red:.3f}", f"{p.wins_as_blue / p.games_as_blue:.3f}", str(p.games)]
        for p, red, fit in zip(ladder.pairings, ladder.red, adjusted, strict=True)
    ]
    for label, raw, fit, games in (
        (
            "agents above random, pooled",
            ladder.red_strong(False),
            ladder.red_strong(),
            sum(ladder.pairings[k].games for k in ladder.strong()),
        ),
        ("random vs random", ladder.red_random(False), ladder.red_random(), ladder.games),
    ):
        if raw is not None and fit is not None:
            rows.append([f"**{label}**", f"**{raw.text()}**", f"**{fit.text()}**", "", "", str(games)])
    header = ["pairing (A vs B)", "Red's score (95 %)", "luck-adjusted (95 %)", "A wins as Red", "A wins as Blue"]
    return markdown_table([*header, "games"], rows)


def variants_table(report: Report) -> str:
    """Per reserve: length of the games, the scores that show skill, the rating spreads and their spread per ply."""
    main_per_ply = report.main.per_ply(report.names)
    header = ["reserve", "games per pairing", "mean plies", "truncated", "greedy vs random"]
    header += [f"{report.best} vs greedy", "spread, all (Elo)", "spread above random", "spread, search agents"]
    header += [f"spread² per ply, all (reserve {report.main.reserve} = 1)"]
    rows = []
    for ladder in report.by_reserve():
        per_ply = ladder.per_ply(report.names)
        rows.append(
            [
                str(ladder.reserve) + (" (ladder)" if ladder is report.main else ""),
                f"{ladder.games:,}",
                f"{ladder.mean_plies():.1f}",
                str(ladder.truncated()),
                _score(ladder.pairing("greedy", RandomAgent.name)),
                "—" if report.best == "greedy" else _score(ladder.pairing(report.best, "greedy")),
                _spread(ladder.spread(report.names)),
                _spread(ladder.spread(report.strong_names())),
                _spread(ladder.spread(report.search_names())),
                "—" if per_ply is None or not main_per_ply else f"{per_ply / main_per_ply:.2f}",
            ]
        )
    return markdown_table(header, rows)


def first_player_by_reserve_table(report: Report) -> str:
    rows = []
    for ladder in report.by_reserve():
        strong, random = ladder.red_strong(), ladder.red_random()
        rows.append(
            [
                str(ladder.reserve),
                "—" if strong is None else strong.text(),
                "—" if random is None else random.text(),
                f"{ladder.games:,}",
            ]
        )
    return markdown_table(["reserve", "Red among agents above random", "Red among random", "games per pairing"], rows)


def variant_ratings_table(report: Report) -> str:
    ladders = report.by_reserve()
    rows = []
    for name in report.names:
        cells = []
        for ladder in ladders:
            value, half = ladder.ratings[name]
            cells.append(f"{value:+z.0f} ± {half:.0f}")
        rows.append([f"`{name}`" + (" (best)" if name == report.best else ""), *cells])
    return markdown_table(["agent"] + [f"reserve {ladder.reserve}" for ladder in ladders], rows)


def summary(report: Report) -> list[str]:
    """The key findings, as Markdown bullet lines, from the measured figures."""
    main, best = report.main, report.best
    lines = []
    top = sorted(main.ratings.items(), key=lambda item: -item[1][0])
    lines.append(
        f"- **Ladder** (reserve {main.reserve}, {main.games:,} games per pairing): "
        + " > ".join(f"`{name}` {value:+z.0f} ± {half:.0f}" for name, (value, half) in top)
        + " (Bradley-Terry, Elo scale, random at 0)."
    )
    vs_random = main.pairing(best, RandomAgent.name)
    vs_greedy = None if best == "greedy" else main.pairing(best, "greedy")
    if vs_random is not None:
        text = f"- **Skill against a beginner**: the best agent, `{best}`, scores {_score(vs_random)} against random"
        if vs_greedy is not None:
            text += f"; against greedy it scores {_score(vs_greedy)}"
        lines.append(text + ".")
    strong, random = main.red_strong(), main.red_random()
    if strong is not None or random is not None:
        parts = []
        if strong is not None:
            parts.append(f"{strong.text()} when agents above random meet")
        if random is not None:
            parts.append(f"{random.text()} among random players")
        text = "- **First-player advantage**: Red (the first player) scores " + ", and ".join(parts)
        if strong is not None and vs_greedy is not None:
            text += (
                f"; between strong agents the seat is worth {strong.score - 0.5:+.3f} to Red, the best agent's "
                f"edge over greedy is {vs_greedy[0] - 0.5:+.3f}"
            )
        lines.append(text + ".")
    split, upper = report.headroom.figure("split-sample gain"), report.headroom.figure("in-sample gain")
    if split is not None and upper is not None:
        lines.append(
            f"- **Headroom**: one step of improvement over greedy's placement is worth {split:+.4f} (split-sample) "
            f"to {upper:+.4f} (in-sample, an upper-side figure) win probability per decision "
            f"(`{report.headroom.command}`)."
        )
    lines += variant_summary(report)
    return lines


def _spreads(report: Report, names: Sequence[str]) -> str:
    """'reserve 12 97 ± 51; reserve 9 ...' widest first, and whether the widest's lead is within the noise."""
    ranked = report.ranked(names)
    text = "; ".join(f"reserve {ladder.reserve} {_spread(ladder.spread(names))}" for ladder in ranked) + " Elo"
    if len(ranked) > 1:
        (top, top_half), (second, second_half) = (ladder.spread(names) or (0.0, 0.0) for ladder in ranked[:2])
        gap, noise = top - second, math.hypot(top_half, second_half)
        within = "within" if gap < noise else "outside"
        text += f" (the widest leads the next by {gap:.0f} ± {noise:.0f}, {within} the noise)"
    return text


def variant_summary(report: Report) -> list[str]:
    """The variants' bullet lines of the summary: how skill shows by reserve, and the recommended variant."""
    chosen, main = report.recommended(), report.main
    if chosen is None or len(report.ladders) < 2:  # nothing to compare
        return []
    ladders = report.by_reserve()
    text = "- **Variants**: "
    if "greedy" in report.names and RandomAgent.name in report.names:
        scores = ", ".join(f"{(ladder.pairing('greedy', RandomAgent.name) or (0.0,))[0]:.3f}" for ladder in ladders)
        text += (
            f"greedy scores {scores} against random at reserve {', '.join(str(ladder.reserve) for ladder in ladders)}; "
        )
    text += f"rating spread of the whole ladder, widest first: {_spreads(report, report.names)}"
    strong, search = report.strong_names(), report.search_names()
    for label, names in (("above random", strong), ("among the search agents", search)):
        if len(names) > 1 and (names is strong or names != strong):
            text += f"; {label} ({', '.join(f'`{name}`' for name in names)}): {_spreads(report, names)}"
    lines = [text + "."]
    widest = report.ranked(report.names)[0]
    ratio = chosen.per_ply(report.names) / (main.per_ply(report.names) or float("nan"))
    versus = "" if chosen is main else f"spread² per ply {ratio:.2f} times reserve {main.reserve}'s; "
    text = (
        f"- **Benchmark**: per ply played, reserve {chosen.reserve} separates the ladder most ({versus}"
        f"its games last {chosen.mean_plies():.0f} plies on average, "
        f"{chosen.truncated()} of {chosen.games * len(chosen.pairings):,} reached the ply limit), so a benchmark "
        f"should use reserve {chosen.reserve}"
    )
    if widest is not chosen:
        text += (
            f". Reserve {widest.reserve} spreads widest outright, but its games last {widest.mean_plies():.0f} plies "
            f"and {widest.truncated()} of {widest.games * len(widest.pairings):,} reached the ply limit"
        )
    return lines + [text + "."]


def report_markdown(report: Report) -> str:
    settings, main = report.settings, report.main
    reserves = ", ".join(str(ladder.reserve) for ladder in report.by_reserve())
    parts = [
        "# How much of Strategic Reserve is skill",
        "",
        "<!-- generated by strategic-reserve skill; do not edit by hand -->",
        "",
        f"Generated by `strategic-reserve skill` in {report.seconds / 60:.0f} min; every setting spelled out:",
        "",
        "```bash",
        settings.command(),
        "```",
        "",
        "Every figure comes from evaluate.py's round robin (`evaluation/tournament.py`): paired dice (each pair "
        "of games shares one dice stream, the seats swapped), scores luck-adjusted (each roll's luck taken out, "
        "the same expectation: docs/BENCHMARK.md), 95 % t-intervals over the dice pairs, "
        "Bradley-Terry ratings on the Elo scale with random at 0 (`evaluation/statistics.py`). "
        f"Seed {settings.seed} for the dice and the agents in every round robin; the raw counts are in "
        f"[{FIGURES}/skill.json]({FIGURES}/skill.json).",
        "",
        "## Summary",
        "",
        *summary(report),
        "",
        f"## The ladder (reserve {main.reserve}, {main.games:,} games per pairing, seed {settings.seed})",
        "",
        ladder_table(report, main),
        "",
        f"![Bradley-Terry ratings at reserve {main.reserve}]({FIGURES}/ladder.png)",
        "",
        "Every pairing (A's score, its 95 % interval, the luck-adjusted score with its interval and the variance "
        "ratio, A's win rates by seat); the ladder's scores and ratings are the luck-adjusted ones "
        '(docs/BENCHMARK.md, "The luck-adjusted estimator"; V = race):',
        "",
        markdown_table(PAIRING_HEADER, pairing_rows(main.pairings)),
        "",
        "## First-player advantage",
        "",
        "Red places first. Red's score per pairing has a t-interval over the dice pairs (each pair holds one game "
        "with each agent as Red); pooled, Red's score per dice pair is first averaged over the pairings (they "
        "share the dice streams). Random against random is one more pairing of the same machinery "
        f"({main.games:,} games, seed {settings.seed}). The luck-adjusted column takes each roll's luck out of "
        "Red's results (same expectation, narrower interval; V = race, and for random against random "
        "race-random, the same model fitted on random play). The summary and the table by reserve quote the "
        "adjusted scores.",
        "",
        first_player_table(main),
        "",
        "By reserve (the variants below):",
        "",
        first_player_by_reserve_table(report),
        "",
        f"![Red's score by pairing and by reserve]({FIGURES}/first_player.png)",
        "",
        "## Headroom above greedy",
        "",
        f"`{report.headroom.command}`, {report.headroom.source}:",
        "",
        "```",
        *report.headroom.lines,
        "```",
        "",
        "The split-sample gain is what a placement chosen by rollouts on half of them gains on the other half "
        "over greedy's choice, per decision; the in-sample gain counts the noise as gain and bounds the best "
        "one-step improvement from above (`evaluation/placement_headroom.py` explains both).",
        "",
        f"## Variants: reserve {reserves}",
        "",
        "The same round robin at each reserve size, seed "
        f"{settings.seed}; reserve {main.reserve} is the ladder above. The bigger the reserve, the longer "
        "the games, so the variants play fewer games per pairing (the intervals say how much that costs). "
        "The PPO model was trained at reserve 7 only: its observation has the same shape at every reserve, "
        "so it plays every variant, but outside the positions it learned on. A truncated game (ply limit "
        f"{DEFAULT_PLY_LIMIT}) counts half a point for each side.",
        "",
        variants_table(report),
        "",
        "Spreads are the highest minus the lowest rating (Elo, 95 %, the two half-widths combined as if "
        "independent) over the whole ladder, over the agents above random, and over the search agents ("
        + ", ".join(f"`{name}`" for name in report.search_names())
        + "), which play every reserve by the same rule (a learned agent trained at reserve 7 plays the other "
        "reserves out of its training distribution, which widens the spread above random for another reason). "
        "The games a benchmark needs to tell two agents apart go as one over the square of their rating gap, "
        "each game costing its plies: spread² per ply compares the variants at equal cost. Ratings per reserve:",
        "",
        variant_ratings_table(report),
        "",
        f"![Ratings by reserve]({FIGURES}/variants.png)",
        "",
    ]
    return "\n".join(parts)


# ---------------------------------------------------------------- plots


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _error(interval: tuple[float, float] | None, value: float) -> list[float]:
    return [0.0, 0.0] if interval is None else [value - interval[0], interval[1] - value]


def plot_variants(path: Path, report: Report) -> None:
    """Each agent's rating against the reserve size, with 95 % intervals."""
    plt = _pyplot()
    ladders = report.by_reserve()
    reserves = [ladder.reserve for ladder in ladders]
    figure, axes = plt.subplots(figsize=(7, 4.2))
    for offset, name in enumerate(report.names):
        shift = 0.06 * (offset - (len(report.names) - 1) / 2)  # side by side, so the intervals do not overlap
        values = [ladder.ratings[name] for ladder in ladders]
        axes.errorbar(
            [r + shift for r in reserves],
            [v for v, _ in values],
            yerr=[h for _, h in values],
            marker="o",
            capsize=3,
            label=name + (" (best)" if name == report.best else ""),
        )
    axes.set_xticks(reserves)
    axes.set_xlabel("reserve size (checkers each player starts with)")
    axes.set_ylabel("Bradley-Terry rating (Elo), 95 %")
    axes.set_title(f"Ratings by variant, random at 0 (seed {report.settings.seed})")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    write_figure(path, figure, dpi=FIGURE_DPI)
    plt.close(figure)


LABEL_SIZE = 10  # points: the pairing labels of the first-player plot


def plot_first_player(path: Path, data: dict) -> None:
    """Save [first_player_figure][] of `data` at `path`."""
    plt = _pyplot()
    figure = first_player_figure(data)
    write_figure(path, figure, dpi=FIGURE_DPI)
    plt.close(figure)


def first_player_figure(data: dict):
    """Red's score per pairing of the ladder, and pooled by reserve, from the report as `skill.json` holds it
    (`Report.as_json()`): the saved file redraws the same picture. Returns the matplotlib figure."""
    plt = _pyplot()
    main = data["ladders"][0]
    pairings = main["pairings"]
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(12, 0.45 * len(pairings) + 2.2), gridspec_kw={"width_ratios": (1.2, 1)}
    )
    labels = [f"{p['a']} vs {p['b']}" for p in pairings]
    red = [FirstPlayer(p["red"]["score"], _interval(p["red"]["ci95"])) for p in pairings]
    left.errorbar(
        [r.score for r in red],
        range(len(red)),
        xerr=np.array([_error(r.interval, r.score) for r in red]).T,
        fmt="o",
        capsize=3,
    )
    left.set_yticks(range(len(red)), labels, fontsize=LABEL_SIZE)
    left.axvline(0.5, color="grey", lw=0.8)
    left.set_xlabel("Red's score (0..1), 95 %: both seatings of each pairing")
    left.set_title(f"Reserve {main['reserve']}, by pairing")
    ladders = sorted(data["ladders"], key=lambda ladder: ladder["reserve"])
    for label, key in (("agents above random", "red_among_strong"), ("random vs random", "red_among_random")):
        points = [(ladder["reserve"], ladder[key]) for ladder in ladders if ladder[key] is not None]
        if points:
            right.errorbar(
                [r for r, _ in points],
                [v["score"] for _, v in points],
                yerr=np.array([_error(_interval(v["ci95"]), v["score"]) for _, v in points]).T,
                marker="o",
                capsize=3,
                label=label,
            )
    right.axhline(0.5, color="grey", lw=0.8)
    right.set_xticks([ladder["reserve"] for ladder in ladders])
    right.set_xlabel("reserve size")
    right.set_ylabel("Red's score (0..1), 95 %")
    right.set_title("By reserve, pooled")
    right.legend(fontsize=9)
    for axes in (left, right):
        axes.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def _interval(ci95: list[float] | None) -> tuple[float, float] | None:
    """A 95 % interval as `skill.json` writes it (a list, or null), as a tuple."""
    return None if ci95 is None else (ci95[0], ci95[1])


def write_report(report: Report, out: Path) -> None:
    """`out/SKILL.md` and `out/skill/` (skill.json and the plots)."""
    figures = out / FIGURES
    figures.mkdir(parents=True, exist_ok=True)
    data = report.as_json()
    write_text(figures / "skill.json", json_text(data))
    plot_ratings(
        figures / "ladder.png", report.settings.tournament(MAIN_RESERVE, report.main.games), report.main.ratings
    )
    plot_variants(figures / "variants.png", report)
    plot_first_player(figures / "first_player.png", data)
    write_text(out / REPORT, report_markdown(report))


__all__ = ["Report", "SkillSettings", "measure", "red_pair_scores", "write_report"]
