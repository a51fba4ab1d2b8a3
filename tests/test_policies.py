"""The agent interface of policies.py (the uniformly random policy, the checks of an answer) and the time budget
of arena.py's `TimeLimited`."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_reserve_env.core.board import bitboards_to_array
from strategic_reserve_env.core.policies import InvalidActionsError, UniformRandomPolicy, checked_actions
from strategic_reserve_env.envs.arena import MAX_ACT_SECONDS, ActTimeoutError, TimeLimited


def test_act_from_uniforms_is_the_choice_act_makes_from_the_same_uniforms():
    legal = np.array([0b1011, 0, 1 << 40 | 1], dtype=np.int64)
    masks = bitboards_to_array(legal)
    policy = UniformRandomPolicy()
    for seed in range(20):
        uniforms = np.random.default_rng(seed).random(3)
        np.testing.assert_array_equal(
            policy.act(None, masks, np.random.default_rng(seed)), policy.act_from_uniforms(legal, uniforms)
        )


# -- the time budget (TimeLimited) ------------------------------------------------------------------------------------


def test_the_act_timeout_fails_an_agent_that_swallows_the_alarm_itself():
    """An agent that catches everything (BaseException) still returns too late: the call is failed then."""

    class Swallower:
        name = "swallower"

        def act(self, observations, masks, rng):
            try:
                import time

                time.sleep(0.3)
            except BaseException:
                import time

                time.sleep(0.3)
            return np.zeros(len(masks), dtype=np.int64)

    limited = TimeLimited(Swallower(), 0.1)
    with pytest.raises(ActTimeoutError, match="ran past its budget"):
        limited.act(None, np.ones((1, 36), dtype=bool), np.random.default_rng(0))


def test_the_timeout_error_is_not_an_exception_an_agent_catches_by_accident():
    assert not issubclass(ActTimeoutError, Exception)


def test_the_largest_act_timeout_on_a_large_batch_does_not_overflow():
    limited = TimeLimited(type("Quick", (), {"act": lambda self, o, m, r: np.zeros(len(m), dtype=np.int64)})(),
                          MAX_ACT_SECONDS)  # fmt: skip
    masks = np.ones((4096, 36), dtype=bool)
    assert limited.act(None, masks, np.random.default_rng(0)).shape == (4096,)


# -- the checks of an answer ------------------------------------------------------------------------------------------


def test_a_uint64_answer_past_int64_is_reported_as_it_is():
    with pytest.raises(InvalidActionsError, match="returned 9223372036854775808, not a square index 0..35"):
        checked_actions(np.array([2**63], dtype=np.uint64), np.array([1], dtype=np.int64))
