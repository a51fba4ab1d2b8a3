"""A user's script, type-checked against the installed package (tests/wheel/check.sh)."""

from typing import assert_type

import numpy as np

from strategic_reserve_env import Config, Game
from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.core.policies import NamedPolicy
from strategic_reserve_env.envs.gym_env import StrategicReserveEnv
from strategic_reserve_env.files import records

game = Game(Config(reserve=5))
game.roll(3)
assert_type(game.legal_squares(), list[int])
assert_type(game.done, bool)
assert_type(game.reserves, tuple[int, int])
record = records.record_of(game, players=("me", "you"), seed=1)
assert_type(record, records.Record)
assert_type(record.result, str | None)
agent = load_agent("greedy")
assert_type(agent, NamedPolicy)
env = StrategicReserveEnv(opponent="greedy")
observation, info = env.reset(seed=0)
mask: np.ndarray = env.action_masks()
