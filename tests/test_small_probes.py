"""The smaller probes of the hostile review: each gets a clear error or the right behaviour."""

from __future__ import annotations

import io
import json

import gymnasium as gym
import numpy as np
import pytest

import strategic_reserve_env  # noqa: F401  (registers the Gymnasium envs)
from strategic_reserve_env import __main__ as cli
from strategic_reserve_env import records
from strategic_reserve_env.aec_env import env as aec_env
from strategic_reserve_env.agents.custom import SingleGameAgent
from strategic_reserve_env.policies import InvalidActionsError, checked_actions

from conftest import REPO


def test_a_single_game_function_returning_true_is_refused():
    agent = SingleGameAgent(lambda observation, mask: True)
    masks = np.ones((2, 36), dtype=bool)
    with pytest.raises(InvalidActionsError, match="returned True, a bool, not an integer square index 0..35"):
        agent.act(np.zeros((2, 6, 6, 9), np.int8), masks, np.random.default_rng(0))


def test_a_uint64_answer_past_int64_is_reported_as_it_is():
    with pytest.raises(InvalidActionsError, match="returned 9223372036854775808, not a square index 0..35"):
        checked_actions(np.array([2**63], dtype=np.uint64), np.array([1], dtype=np.int64))


def test_a_record_with_a_duplicate_key_is_refused():
    record = json.loads((REPO / "tests/data/conformance/cling_game_00.json").read_text())
    text = json.dumps(record)
    doubled = text[:-1] + ', "plies": []}'
    assert records.load_record(io.BytesIO(text.encode()), name="ok").plies  # the record itself reads
    with pytest.raises(records.RecordError, match=r"^dup: key 'plies' appears twice in one object$"):
        records.load_record(io.BytesIO(doubled.encode()), name="dup")


@pytest.mark.parametrize("rolls, kind", [({"a1", "b2"}, "set"), ({"a1": 0}, "dict"), (frozenset({3}), "frozenset")])
def test_forced_rolls_must_come_in_order(rolls, kind):
    game = aec_env()
    with pytest.raises(ValueError, match=f"rolls must be a sequence of squares in order \\(a list\\), got a {kind}"):
        game.reset(seed=1, options={"rolls": rolls})
    game.reset(seed=1, options={"rolls": ["a1", 7]})  # the env stays usable


@pytest.mark.parametrize("seconds", ["nan", "-1", "0", "inf"])
def test_bench_refuses_a_time_that_is_not_a_finite_positive_number(seconds, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "--seconds", seconds])
    assert exit_.value.code == 2
    assert f"argument --seconds: must be a finite number of seconds > 0, got '{seconds}'" in capsys.readouterr().err


def test_the_single_gymnasium_env_takes_a_numpy_integer_seed():
    one, other = gym.make("StrategicReserve-v1"), gym.make("StrategicReserve-v1")
    observation, info = one.reset(seed=np.int64(5))
    expected, expected_info = other.reset(seed=5)
    assert np.array_equal(observation, expected) and info.keys() == expected_info.keys()
    assert all(np.array_equal(info[key], expected_info[key]) for key in info)
