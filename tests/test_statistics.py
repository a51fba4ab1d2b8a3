"""The evaluation's statistics against cases computed by hand: t-intervals and Bradley-Terry ratings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from strategic_reserve_env.evaluation.benchmark_protocol import PROTOCOL_V1, fit_rating
from strategic_reserve_env.evaluation.statistics import ELO_PER_NAT, PRIOR_GAMES, Duel, fit_ratings, score_interval
from strategic_reserve_env.evaluation.tournament import Pairing

T_975_9 = 2.2621571628  # Student's t, 97.5 % quantile, 9 degrees of freedom (printed tables)


def test_score_interval_is_students_t_interval_by_hand():
    scores = [1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0, 1, 0.5]  # mean 0.6; squared deviations add up to 0.9
    standard_error = math.sqrt(0.9 / 9) / math.sqrt(10)  # = 0.1
    low, high = score_interval(scores)
    assert low == pytest.approx(0.6 - T_975_9 * standard_error, abs=1e-9)
    assert high == pytest.approx(0.6 + T_975_9 * standard_error, abs=1e-9)


def test_score_interval_edge_cases():
    assert score_interval([0.5]) is None and score_interval([]) is None  # no spread from one pair
    assert score_interval([0.75] * 6) == (0.75, 0.75)
    low, high = score_interval([1.0, 1.0, 1.0, 0.5])  # the t-interval pokes above 1: clipped
    assert high == 1.0 and 0 < low < 0.875


def test_two_player_rating_is_the_log_odds_of_the_score():
    """One fitted player against one fixed at 100 Elo: the maximum-likelihood log-odds is
    log((w + 1/2) / (n - w + 1/2)) with the pseudo-game, its variance 1 / ((n + 1) p (1 - p))."""
    wins, games = 600.0, 1000
    ratings, half = fit_ratings(2, [Duel(0, 1, wins, games)], {1: 100.0})
    p = (wins + PRIOR_GAMES / 2) / (games + PRIOR_GAMES)
    assert ratings[1] == 100.0 and half[1] == 0.0
    assert ratings[0] == pytest.approx(100 + ELO_PER_NAT * math.log(p / (1 - p)), abs=1e-4)
    assert half[0] == pytest.approx(1.959964 * ELO_PER_NAT / math.sqrt((games + PRIOR_GAMES) * p * (1 - p)), rel=1e-5)


def test_rating_against_a_panel_solves_the_score_equation():
    """Against several fixed opponents the fitted rating makes expected wins equal actual wins."""
    anchors = {1: 0.0, 2: 150.0, 3: 300.0}
    duels = [Duel(0, 1, 700, 1000), Duel(0, 2, 480, 1000), Duel(0, 3, 150, 500)]
    ratings, _ = fit_ratings(4, duels, anchors)
    expected = sum((d.games + PRIOR_GAMES) / (1 + np.exp((anchors[d.j] - ratings[0]) / ELO_PER_NAT)) for d in duels)
    assert expected == pytest.approx(sum(d.wins + PRIOR_GAMES / 2 for d in duels), abs=1e-6)


def test_a_round_robin_of_equals_rates_everyone_equal():
    duels = [Duel(0, 1, 500, 1000), Duel(1, 2, 500, 1000), Duel(0, 2, 500, 1000)]
    ratings, half = fit_ratings(3, duels, {0: 0.0})
    assert np.allclose(ratings, 0, atol=1e-4) and half[0] == 0 and half[1] == pytest.approx(half[2])


def test_an_unlinked_player_is_refused():
    with pytest.raises(ValueError, match=r"players \[2\] have no games linking them"):
        fit_ratings(3, [Duel(0, 1, 5, 10)], {0: 0.0})
    with pytest.raises(ValueError, match="fix at least one rating"):
        fit_ratings(2, [Duel(0, 1, 5, 10)], {})


def test_the_benchmark_rating_holds_the_panel_fixed():
    """A benchmarked agent scoring exactly what the panel's ratings predict gets a rating near the one
    that produced the scores (the pseudo-game pulls slightly towards 50 %)."""
    true = 120.0
    results = []
    for member in PROTOCOL_V1.panel:
        p = 1 / (1 + 10 ** ((member.rating - true) / 400))
        pairs = member.games // 2
        wins = round(p * member.games)
        scores = [1.0] * (wins // 2) + [0.5] * (wins % 2) + [0.0] * (pairs - wins // 2 - wins % 2)
        results.append((member, Pairing("x", member.label, member.games, 0, 1, 0, 1, 0, 0, 1.0, scores)))
    value, half = fit_rating(PROTOCOL_V1, results)
    assert value == pytest.approx(true, abs=2.0) and 0 < half < 15


def test_the_evaluation_commands_start_without_scipy():
    """scipy (seconds to import) loads with the first interval or rating, not with the commands' modules: a
    command refused at its start, or stopped before its first result, never pays for it."""
    import subprocess
    import sys

    probe = (
        "import sys; import strategic_reserve_env.commands.evaluate; "  # evaluate's and benchmark's module
        "from strategic_reserve_env.evaluation import statistics; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    assert score_interval([0.0, 1.0]) is not None  # and the functions load it when they need it
