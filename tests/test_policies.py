"""The agent interface of policies.py: the uniformly random policy, the checks of an answer, the time budget."""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.board import bitboards_to_array
from strategic_reserve_env.policies import UniformRandomPolicy


def test_act_from_uniforms_is_the_choice_act_makes_from_the_same_uniforms():
    legal = np.array([0b1011, 0, 1 << 40 | 1], dtype=np.int64)
    masks = bitboards_to_array(legal)
    policy = UniformRandomPolicy()
    for seed in range(20):
        uniforms = np.random.default_rng(seed).random(3)
        np.testing.assert_array_equal(
            policy.act(None, masks, np.random.default_rng(seed)), policy.act_from_uniforms(legal, uniforms)
        )
