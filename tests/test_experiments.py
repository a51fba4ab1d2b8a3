"""The experiments (experiments/): headroom over greedy, and the refit of the expectimax race model."""

from __future__ import annotations

import numpy as np
import pytest

from experiments import fit_race_model
from strategic_reserve_env.agents.greedy import expected_losses
from strategic_reserve_env.commands.maintainer import headroom as headroom_command
from strategic_reserve_env.core.board import bitboards_to_array, squares_of
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.luck import DEFAULT_VALUE
from strategic_reserve_env.evaluation import placement_headroom as headroom


def test_headroom_gains_score_the_choice_on_the_other_half():
    wins = np.zeros((3, 8), dtype=bool)
    wins[0] = True  # placement 0 always wins
    wins[2, :4] = True  # placement 2 wins in the first half only: noise that looks good there
    greedy = np.array([False, True, False])
    split, in_sample, spread = headroom.Decision(np.arange(3), wins, greedy).gains()
    assert (split, in_sample, spread) == (1.0, 1.0, 1.0)
    same = headroom.Decision(np.arange(3), np.tile(wins[2], (3, 1)), greedy).gains()
    assert same == (0.0, 0.0, 0.0)


def test_headroom_rolls_out_every_legal_placement_and_marks_greedys_choices(capsys):
    config = Config()
    decisions = headroom.sample_decisions(6, seed=4, config=config)
    assert decisions.batch_size >= 3 and not decisions.done.any() and (decisions.legal != 0).all()
    decision = decisions[np.array([0])]
    result = headroom.rollouts(decision, 6, 123, config, np.random.default_rng(0))
    legal = squares_of(int(decision.legal[0]))
    assert list(result.squares) == legal and result.results.shape == (len(legal), 6)
    losses = expected_losses(decision.me, decision.opp, bitboards_to_array(decision.legal))[0, legal]
    assert np.array_equal(result.greedy, losses == losses.min())
    assert headroom_command(["--positions", "3", "--rollouts", "4", "--seed", "1"]) == 0
    assert "split-sample gain over greedy" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        headroom_command(["--rollouts", "3"])


@pytest.mark.slow
def test_headroom_luck_adjusted_rollouts_are_the_same_games_with_less_noise(capsys):
    """--luck scores the very same rollouts (the luck terms draw nothing), minus the mover's luck: the mean
    stays within the noise and the spread of the results shrinks several times."""
    config = Config()
    decision = headroom.sample_decisions(6, seed=4, config=config)[np.array([1])]
    raw = headroom.rollouts(decision, 300, 77, config, np.random.default_rng(5))
    adjusted = headroom.rollouts(decision, 300, 77, config, np.random.default_rng(5), luck=DEFAULT_VALUE)
    assert set(np.unique(raw.results)) <= {0.0, 1.0} and not set(np.unique(adjusted.results)) <= {0.0, 1.0}
    luck = raw.results - adjusted.results  # (C, 300): the mover's net luck in each rollout
    error = luck.std(axis=1, ddof=1) / np.sqrt(luck.shape[1])
    assert np.all(np.abs(luck.mean(axis=1)) < 4.5 * error)  # mean-zero luck, per placement
    assert raw.results.var(axis=1).mean() > 4 * adjusted.results.var(axis=1).mean()
    assert headroom_command(["--positions", "2", "--rollouts", "4", "--seed", "1", "--luck"]) == 0
    assert "luck-adjusted greedy rollouts per placement" in capsys.readouterr().out


def test_race_model_records_every_decision_of_greedy_self_play():
    mine, theirs, won = fit_race_model.self_play_decisions(40, seed=1)
    assert len(mine) == len(theirs) == len(won) > 40 * 10  # greedy self-play games last about 24 plies
    assert (mine >= 1).all() and (theirs >= 1).all()
    assert (won[mine == 1] == 1).all()  # placing one's last checker wins
    assert 0.3 < won.mean() < 0.7  # the mover and the other player both win games
    a, b = fit_race_model.fit(mine, theirs, won)
    assert a > 0  # fewer checkers left to place than the opponent: more likely to win
    again = fit_race_model.self_play_decisions(40, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip((mine, theirs, won), again, strict=True))
