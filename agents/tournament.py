"""Round-robin tournaments of Strategic Reserve agents, with paired dice (the code behind evaluate.py).

Luck control: every pair of games shares one dice stream (roll t of both
games is the same) and swaps the seats, so both agents meet the same rolls
for as long as the positions allow. Dice are drawn per game slot and ply from
streams derived from ``--seed`` and independent of the agents' own
randomness; every pairing reuses the same streams.

Reported per pairing: score of the first agent (win 1, truncated game 1/2)
with a 95 % t-interval over the per-pair scores, its win rate as Red and as
Blue, mean game length, truncations and games per second. Ratings:
Bradley-Terry fitted by maximum likelihood on the whole table (Elo scale,
``random`` anchored at 0 when present, else the first agent), with 95 %
intervals from the Fisher information. Games within a pair are treated as
independent there, which the paired design makes conservative.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import optimize, stats
from tqdm import tqdm

from . import load_agent
from strategic_reserve_env import arena
from strategic_reserve_env.config import Config

ELO_PER_NAT = 400 / math.log(10)  # Bradley-Terry strength (natural log-odds) to Elo points
PRIOR_GAMES = 1.0  # one pseudo-game drawn per pairing keeps ratings finite when a side never loses


@dataclass
class Settings:
    """What to play."""

    agents: list[str]
    """Agent specs (at least two): random, greedy, expectimax:depth=2, ppo:PATH.zip ..."""
    games: int = 2000
    """Games per pairing; even, as each dice stream is played twice with the seats swapped."""
    seed: int = 0
    """Seed of the dice streams and of the agents' generators."""
    batch: int = 1000
    """Games played at once in one engine batch (memory grows with it for the search agents)."""
    reserve: int = 7
    """Reserve size of the variant (1..12)."""
    ply_limit: int = 1000
    """Plies after which a game counts as truncated (half a point each)."""
    out: str | None = None
    """Directory for results.json, results.md and ratings.png (nothing written if unset)."""
    progress: bool = True
    """Show a progress bar."""


@dataclass
class Pairing:
    """Raw counts of one pairing (agent ``a`` against agent ``b``), from ``a``'s side."""

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

    @property
    def score(self) -> float:
        return float(np.mean(self.pair_scores))

    def interval(self) -> tuple[float, float]:
        """95 % t-interval of the mean per-pair score."""
        scores = np.asarray(self.pair_scores)
        half = stats.t.ppf(0.975, len(scores) - 1) * scores.std(ddof=1) / math.sqrt(len(scores))
        return self.score - half, self.score + half


def dice_seeds(seed: int, pairs: int) -> np.ndarray:
    """One dice stream per pair of games, the same two games in a row; derived from ``seed`` only."""
    per_pair = np.random.SeedSequence([seed, 0xD1CE]).generate_state(pairs, dtype=np.uint64) >> np.uint64(1)
    return np.repeat(per_pair.astype(np.int64), 2)


def play_pairing(a, b, settings: Settings, progress=None) -> Pairing:
    """All games of one pairing (agent specs or agent objects), in engine batches, with paired
    dice and swapped seats."""
    agents = tuple(load_agent(x) if isinstance(x, str) else x for x in (a, b))
    config = Config(reserve=settings.reserve, ply_limit=settings.ply_limit)
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

    for first in range(0, settings.games, settings.batch):
        chunk = slice(first, min(first + settings.batch, settings.games))
        finished_before = 0
        results.append(arena.play(agents, red_agent[chunk], seeds[chunk], config, rngs, on_ply=advance))
    seconds = time.perf_counter() - start
    red = np.concatenate([r.red_agent for r in results])
    winner = np.concatenate([r.winning_agent for r in results])
    points = np.where(winner == 0, 1.0, np.where(winner < 0, 0.5, 0.0))
    return Pairing(
        a=agents[0].name, b=agents[1].name, games=settings.games,
        wins_as_red=int(((red == 0) & (winner == 0)).sum()), games_as_red=int((red == 0).sum()),
        wins_as_blue=int(((red == 1) & (winner == 0)).sum()), games_as_blue=int((red == 1).sum()),
        truncated=int((winner < 0).sum()), total_plies=int(np.concatenate([r.plies for r in results]).sum()),
        seconds=seconds, pair_scores=points.reshape(-1, 2).mean(axis=1).tolist(),
    )


def bradley_terry(names: list[str], pairings: list[Pairing]) -> dict[str, tuple[float, float]]:
    """Elo-scale ratings and 95 % half-widths, fitted by maximum likelihood on all pairings."""
    index = {name: i for i, name in enumerate(names)}
    anchor = index.get("random", 0)
    free = [i for i in range(len(names)) if i != anchor]
    duels = [(index[p.a], index[p.b], p.score * p.games + PRIOR_GAMES / 2, p.games + PRIOR_GAMES) for p in pairings]

    def strengths(theta: np.ndarray) -> np.ndarray:
        full = np.zeros(len(names))
        full[free] = theta
        return full

    def negative_log_likelihood(theta: np.ndarray) -> float:
        s = strengths(theta)
        return -sum(w * -np.logaddexp(0, s[j] - s[i]) + (n - w) * -np.logaddexp(0, s[i] - s[j])
                    for i, j, w, n in duels)

    theta = optimize.minimize(negative_log_likelihood, np.zeros(len(free)), method="BFGS").x
    s = strengths(theta)
    information = np.zeros((len(names), len(names)))
    for i, j, _, n in duels:
        p = 1 / (1 + math.exp(s[j] - s[i]))
        d = np.zeros(len(names))
        d[i], d[j] = 1, -1
        information += n * p * (1 - p) * np.outer(d, d)
    covariance = np.linalg.inv(information[np.ix_(free, free)])
    half = np.zeros(len(names))
    half[free] = 1.96 * np.sqrt(np.diag(covariance))
    return {name: (float(s[i] * ELO_PER_NAT), float(half[i] * ELO_PER_NAT)) for name, i in index.items()}


def pairing_rows(pairings: list[Pairing]) -> list[list[str]]:
    """Table rows: one per pairing."""
    rows = []
    for p in pairings:
        low, high = p.interval()
        rows.append([
            p.a, p.b, f"{p.score:.3f}", f"[{low:.3f}, {high:.3f}]",
            f"{p.wins_as_red / p.games_as_red:.3f}", f"{p.wins_as_blue / p.games_as_blue:.3f}",
            f"{p.total_plies / p.games:.1f}", str(p.truncated), str(p.games), f"{p.games / p.seconds:,.0f}",
        ])
    return rows


PAIRING_HEADER = ["agent A", "agent B", "A score", "95% CI", "A win as Red", "A win as Blue",
                  "mean plies", "truncated", "games", "games/s"]


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain aligned table."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)) for line in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def rating_rows(ratings: dict[str, tuple[float, float]]) -> list[list[str]]:
    """Table rows: agents by rating."""
    ordered = sorted(ratings.items(), key=lambda item: -item[1][0])
    return [[name, f"{value:+.0f}", f"±{half:.0f}"] for name, (value, half) in ordered]


def write_outputs(directory: Path, settings: Settings, pairings: list[Pairing], ratings, stem: str = "results",
                  plot: bool = True, extra: dict | None = None) -> None:
    """``{stem}.json`` (raw counts and settings, plus ``extra``), ``{stem}.md`` and, if ``plot``, ratings.png."""
    directory.mkdir(parents=True, exist_ok=True)
    payload = {
        "settings": asdict(settings),
        "pairings": [asdict(p) | {"score": p.score, "ci95": list(p.interval())} for p in pairings],
        "ratings_elo": {name: {"rating": value, "ci95_half_width": half} for name, (value, half) in ratings.items()},
        **(extra or {}),
    }
    (directory / f"{stem}.json").write_text(json.dumps(payload, indent=1) + "\n")
    markdown = [
        f"# Tournament: {settings.games} games per pairing, seed {settings.seed}, reserve {settings.reserve}",
        "", markdown_table(PAIRING_HEADER, pairing_rows(pairings)), "",
        "## Bradley-Terry ratings (Elo scale, 95 % intervals)", "",
        markdown_table(["agent", "rating", "95% CI"], rating_rows(ratings)), "",
    ]
    (directory / f"{stem}.md").write_text("\n".join(markdown))
    if plot:
        plot_ratings(directory / "ratings.png", settings, ratings)


def plot_ratings(path: Path, settings: Settings, ratings) -> None:
    """Ratings with their intervals as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(ratings.items(), key=lambda item: item[1][0])
    figure, axes = plt.subplots(figsize=(6, 0.6 * len(ordered) + 1.2))
    axes.errorbar([v for _, (v, _) in ordered], range(len(ordered)), xerr=[h for _, (_, h) in ordered],
                  fmt="o", capsize=4)
    axes.set_yticks(range(len(ordered)), [name for name, _ in ordered])
    axes.set_xlabel("Bradley-Terry rating (Elo scale), 95 % interval")
    axes.set_title(f"Strategic Reserve, {settings.games} games per pairing")
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run(settings: Settings) -> tuple[list[Pairing], dict[str, tuple[float, float]]]:
    """Play the round robin and fit the ratings."""
    matchups = list(itertools.combinations(settings.agents, 2))
    total = len(matchups) * settings.games
    with tqdm(total=total, unit="game", disable=not settings.progress, file=sys.stderr) as progress:
        pairings = []
        for a, b in matchups:
            progress.set_description(f"{a} vs {b}")
            pairings.append(play_pairing(a, b, settings, progress))
    return pairings, bradley_terry(list(settings.agents), pairings)
