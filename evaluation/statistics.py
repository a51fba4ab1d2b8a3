"""The statistics of the evaluation: score intervals and Bradley-Terry ratings (scipy underneath).

**Score interval.** A pairing's score is the mean of its per-pair scores
(each pair of games shares one dice stream, seats swapped; a pair scores 0,
1/4, ..., 1). Its 95 % interval is Student's t-interval over those pair
scores (Student's t quantile `scipy.special.stdtrit`), clipped to [0, 1]. It is undefined (`None`)
with fewer than two pairs, and has zero width when every pair scored the
same.

**Bradley-Terry ratings.** P(i beats j) = 1 / (1 + exp(s_j - s_i)), fitted
by maximum likelihood (`scipy.optimize.minimize`) on win counts, a
truncated game counting half a win for each side. A luck-adjusted score
enters as `(score n, n)` with `n` the effective games of
`effective_games`: the binomial count whose variance is the adjusted
score's measured per-pair variance, so the ratings and their intervals
follow the adjusted scores. Some ratings are held
fixed (a round robin fixes one agent at 0; the benchmark fixes the whole
panel at its protocol's ratings) and the others are fitted. One pseudo-game
per duel, split evenly, keeps a rating finite when a side never loses. The
95 % intervals come from the Fisher information of the fitted ratings with
the fixed ones taken as known; games within a dice pair are treated as
independent there, which the paired design makes conservative. Ratings are
given on the Elo scale (400 / ln 10 points per unit of log-odds).

scipy is imported by the functions that use it, not with the module: the commands that import the evaluation
(`evaluate`, `benchmark`) start without it, and a run refused at its start never loads it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
ELO_PER_NAT = 400 / math.log(10)  # Bradley-Terry strength (natural log-odds) to Elo points
PRIOR_GAMES = 1.0  # one pseudo-game drawn per duel keeps ratings finite when a side never loses
VARIANCE_FLOOR = 1e-12  # a per-pair variance this small is float rounding (e.g. an agent against itself): none
SCORE_FLOOR = 1e-3  # effective_games keeps a score this far from 0 and 1 (a sure result has no binomial variance)


def score_interval(pair_scores: Sequence[float]) -> tuple[float, float] | None:
    """95 % t-interval of the mean of `pair_scores` (each in [0, 1]), clipped to [0, 1];
    None with fewer than two pairs (no spread can be estimated)."""
    from scipy import special

    scores = np.asarray(pair_scores, dtype=np.float64)
    if scores.size < 2:
        return None
    mean, error = float(scores.mean()), float(np.std(scores, ddof=1) / np.sqrt(scores.size))  # standard error
    if error == 0.0:
        return mean, mean
    half = error * float(special.stdtrit(scores.size - 1, 0.5 + CONFIDENCE / 2))  # as scipy.stats.t.interval
    return max(0.0, mean - half), min(1.0, mean + half)


def variance_ratio(raw: Sequence[float], adjusted: Sequence[float]) -> float | None:
    """The sample variance of `raw` over that of `adjusted` (two per-pair score lists); None with fewer
    than two pairs or an adjusted variance of 0 (at most `VARIANCE_FLOOR`)."""
    if len(raw) < 2 or len(adjusted) < 2:
        return None
    denominator = float(np.var(adjusted, ddof=1))
    return float(np.var(raw, ddof=1)) / denominator if denominator > VARIANCE_FLOOR else None


def effective_games(pair_scores: Sequence[float]) -> float | None:
    """The number of independent games `n` whose binomial variance `p (1 - p) / n` equals the measured
    variance of the mean of `pair_scores` (`p` their mean, clipped into [1/1000, 999/1000]); None with
    fewer than two pairs or no spread (a variance of at most `VARIANCE_FLOOR`: the caller falls back on
    the games played). Feeding `(p n, n)` to `fit_ratings` gives a rating whose
    interval follows that measured variance (by the delta method), e.g. of luck-adjusted scores."""
    scores = np.asarray(pair_scores, dtype=np.float64)
    if scores.size < 2:
        return None
    variance = float(scores.var(ddof=1))
    if variance <= VARIANCE_FLOOR:
        return None
    variance_of_mean = variance / scores.size
    p = float(np.clip(scores.mean(), SCORE_FLOOR, 1 - SCORE_FLOOR))
    return p * (1 - p) / variance_of_mean


@dataclass(frozen=True)
class Duel:
    """Results between players `i` and `j` (indices): `wins` of `i` (a truncated game counts
    1/2) out of `games` (a float: effective games of a luck-adjusted score, `effective_games`)."""

    i: int
    j: int
    wins: float
    games: float


def fit_ratings(players: int, duels: Sequence[Duel], fixed: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """Bradley-Terry ratings of `players` players (Elo scale) by maximum likelihood, with the
    ratings of `fixed` ({index: Elo}) held and the others fitted; returns `(ratings, half_widths)`,
    two (players,) arrays, the half-widths of the 95 % intervals (0 for the fixed players).
    `ValueError` if a fitted player is not linked to a fixed one by duels (its rating is undefined)."""
    from scipy import optimize, special

    if not fixed:
        raise ValueError("fix at least one rating (the scale has no origin otherwise)")
    free = [k for k in range(players) if k not in fixed]
    base = np.zeros(players)
    for k, value in fixed.items():
        base[k] = value / ELO_PER_NAT
    i = np.array([d.i for d in duels], dtype=np.int64)
    j = np.array([d.j for d in duels], dtype=np.int64)
    wins = np.array([d.wins for d in duels], dtype=np.float64) + PRIOR_GAMES / 2
    games = np.array([d.games for d in duels], dtype=np.float64) + PRIOR_GAMES
    _check_linked(players, i, j, fixed)

    def strengths(theta: np.ndarray) -> np.ndarray:
        full = base.copy()
        full[free] = theta
        return full

    def negative_log_likelihood(theta: np.ndarray) -> float:
        s = strengths(theta)
        return float(np.sum(wins * np.logaddexp(0, s[j] - s[i]) + (games - wins) * np.logaddexp(0, s[i] - s[j])))

    def gradient(theta: np.ndarray) -> np.ndarray:
        s = strengths(theta)
        expected = games / (1 + np.exp(s[j] - s[i]))  # expected wins of i
        full = np.zeros(players)
        np.add.at(full, i, expected - wins)
        np.add.at(full, j, wins - expected)
        return full[free]

    s = base
    if free:
        result = optimize.minimize(
            negative_log_likelihood, np.zeros(len(free)), jac=gradient, method="BFGS", options={"gtol": 1e-9}
        )
        s = strengths(result.x)
    p = 1 / (1 + np.exp(s[j] - s[i]))
    information = np.zeros((players, players))
    np.add.at(information, (i, i), games * p * (1 - p))
    np.add.at(information, (j, j), games * p * (1 - p))
    np.add.at(information, (i, j), -games * p * (1 - p))
    np.add.at(information, (j, i), -games * p * (1 - p))
    half = np.zeros(players)
    if free:
        covariance = np.linalg.inv(information[np.ix_(free, free)])
        z95 = float(special.ndtri(0.5 + CONFIDENCE / 2))  # 1.96: a 95 % normal interval's half-width in std devs
        half[free] = z95 * np.sqrt(np.diag(covariance))
    ratings = s * ELO_PER_NAT
    ratings[list(fixed)] = list(fixed.values())  # exactly as given, not round-tripped through log-odds
    return ratings, half * ELO_PER_NAT


def _check_linked(players: int, i: np.ndarray, j: np.ndarray, fixed: dict[int, float]) -> None:
    """Every player must reach a fixed one through duels."""
    reached, frontier = set(fixed), list(fixed)
    while frontier:
        k = frontier.pop()
        for a, b in zip(i, j, strict=True):
            for here, there in ((a, b), (b, a)):
                if here == k and there not in reached:
                    reached.add(int(there))
                    frontier.append(int(there))
    missing = sorted(set(range(players)) - reached)
    if missing:
        raise ValueError(f"players {missing} have no games linking them to a rated player")
