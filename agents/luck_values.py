"""Agents as value functions: the win probability of every legal placement, and the luck of a roll from it.

The luck of a roll (`strategic_reserve_env.core.luck`) needs `V`, the roller's win probability just
after a roll, before its placement. The core's default is the reserve-race model (`race`); an agent that
gives a win probability for each of its placements serves too, through `AgentValue`: `V` of a
position is the agent's value of its best legal placement there.

`placement_values` gives that value for **every** legal placement, also those a pruned search would
skip (the analysis of a game needs the value of the placement played, whatever it was):

- `expectimax:depth=1|2`: `ExpectimaxAgent.move_values` with `width=36` (every legal square
  searched to the agent's depth);
- `value[...]`: the value-search agent. The shipped value network is a *pre-roll* value (the win
  probability of the player about to roll), so it is adapted through one placement: the value of placing
  on `p` is `1 - V_pre` of the position the opponent is then about to roll (depth 1), or at depth 2
  the mean over the opponent's 36 rolls of `V_pre` of the agent about to roll again, every legal square
  a candidate.

Other agents (random, greedy, PPO) choose placements without win probabilities and are refused with a
`ValueError` saying so.
"""

from __future__ import annotations

import numpy as np

from strategic_reserve_env.core.board import NUM_SQUARES, bitboards_to_array
from strategic_reserve_env.core.luck import DEFAULT_VALUE, RANDOM_RACE_VALUE, AfterRoll, ValueFunction
from strategic_reserve_env.core.observation import encode

from .expectimax import ExpectimaxAgent
from .value_search import ValueSearchAgent

RACE = DEFAULT_VALUE.name
"""The spec of the reserve-race model (the default value function of the luck of a roll)."""
NO_HIT = 0  # the ``hit`` code of a position with no roll shown (the agents read only checkers and reserves)


def placement_values(agent, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(B, 36) float64: `agent`'s win probability after placing on each legal square (every one of them
    valued, none pruned), NaN on the illegal ones; `ValueError` for an agent that gives none."""
    legal = np.asarray(masks, dtype=bool)
    if isinstance(agent, ExpectimaxAgent):
        values = ExpectimaxAgent(depth=agent.depth, width=NUM_SQUARES).move_values(observations, masks)
    elif isinstance(agent, ValueSearchAgent):
        if agent.depth == 1:
            values = agent.placement_values(observations, masks)
        else:
            every = np.broadcast_to(np.arange(NUM_SQUARES), legal.shape)
            values = agent.candidate_values(observations, masks, every)
    elif getattr(agent, "values_every_placement", False):  # the mctx agent
        values = agent.move_values(observations, masks)
    else:
        name = getattr(agent, "name", repr(agent))
        raise ValueError(
            f"agent {name!r} gives no win probability of its placements: use expectimax[:depth=1|2], value[...]"
            " or mctx[...]"
        )
    return np.where(legal, values, np.nan)


def observe(after: AfterRoll) -> tuple[np.ndarray, np.ndarray]:
    """(B, 6, 6, 9) planes and (B, 36) masks of flattened positions just after a roll, from the roller's side."""
    me, opp, legal, reserve_me, reserve_opp = (
        np.asarray(x, dtype=np.int64).reshape(-1)
        for x in (after.me, after.opp, after.legal, after.reserve_me, after.reserve_opp)
    )
    nothing = np.zeros_like(me)
    planes = encode(me, opp, legal, nothing - 1, nothing, nothing + NO_HIT, reserve_me, reserve_opp)
    return planes, bitboards_to_array(legal)


class AgentValue:
    """A `ValueFunction` from an agent: the roller's win probability just
    after a roll is the agent's value of its best legal placement (`placement_values`)."""

    def __init__(self, agent) -> None:
        placement_values(agent, *observe(_one_position()))  # refuses an agent without values, now
        self.agent, self.name = agent, agent.name

    def __call__(self, after: AfterRoll) -> np.ndarray:
        shape = np.shape(after.me)
        values = placement_values(self.agent, *observe(after))
        return np.nanmax(values, axis=-1).reshape(shape)

    def __repr__(self) -> str:
        return f"AgentValue({self.agent!r})"


def _one_position() -> AfterRoll:
    """An empty board with both reserves at 2, every square legal: a position to check an agent on."""
    one = np.ones(1, dtype=np.int64)
    return AfterRoll(me=0 * one, opp=0 * one, reserve_me=2 * one, reserve_opp=2 * one, legal=(1 << NUM_SQUARES) - one)


def load_luck_value(spec: str) -> ValueFunction:
    """The value function named `spec`: `race` (the reserve-race model, the default), `race-random` (the
    same fitted on random self-play, for scoring random players) or the spec of an
    agent that values its placements (`expectimax:depth=1`, `value`, ...: `AgentValue`);
    `ValueError` saying what is wrong."""
    if spec == RACE:
        return DEFAULT_VALUE
    if spec == RANDOM_RACE_VALUE.name:
        return RANDOM_RACE_VALUE
    from . import load_agent

    return AgentValue(load_agent(spec))


LUCK_VALUE_SPECS = (
    f"{RACE} (default: the reserve-race model), {RANDOM_RACE_VALUE.name} (the same fitted on random play), "
    "expectimax[:depth=1|2], value[:PATH][,depth=1|2]"
)
"""The value functions a luck setting may name, for help texts."""

__all__ = ["LUCK_VALUE_SPECS", "RACE", "AgentValue", "load_luck_value", "observe", "placement_values"]
