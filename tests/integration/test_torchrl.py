"""TorchRL: the AEC env through `PettingZooWrapper(env=..., use_mask=True)` as TorchRL's docs wrap
`tictactoe_v3.env()` (one group per agent, categorical actions, `"mask"` for the agent on move and
`"action_mask"` for its legal actions), checked with `check_env_specs` and rolled out with TorchRL's
random policy, which samples from the masked action spec."""

from __future__ import annotations

import torch
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import check_env_specs

import strategic_reserve_env

AGENTS = ("player_0", "player_1")


def make_env(seed: int = 0) -> PettingZooWrapper:
    return PettingZooWrapper(env=strategic_reserve_env.env(), use_mask=True, seed=seed)


def test_specs():
    env = make_env()
    assert env.group_map == {agent: [agent] for agent in AGENTS}
    check_env_specs(env)
    info_spec = env.observation_spec["player_0", "info"]
    assert {key: tuple(spec.shape) for key, spec in info_spec.items()} == {
        "roll": (1,),
        "roller": (1,),
        "dice": (1, 2),
        "hit": (1,),
        "captured": (1, 36),
    }


def test_masked_random_rollout_takes_no_illegal_action(caplog):
    env = make_env()
    rollout = env.rollout(300, break_when_any_done=False)  # finished games are reset by the rollout
    on_move = torch.stack([rollout[agent, "mask"][:, 0] for agent in AGENTS], dim=1)  # (T, 2)
    assert (on_move.sum(dim=1) == 1).all()  # exactly one agent acts at each step
    illegal = 0
    for index, agent in enumerate(AGENTS):
        acting = on_move[:, index]
        actions = rollout[agent, "action"][acting, 0]
        masks = rollout[agent, "action_mask"][acting, 0]
        assert masks.any(dim=1).all()
        illegal += int((~masks.gather(1, actions[:, None])).sum())
        # the acting agent's info is the roll it answers
        assert (rollout[agent, "info", "roller"][acting, 0] == index).all()
    assert illegal == 0
    done = rollout["next", "done"][:, 0]
    assert done.sum() >= 3  # whole games were played
    rewards = torch.cat([rollout["next", agent, "reward"][:, 0] for agent in AGENTS], dim=1)  # (T, 2)
    assert (rewards[done].sort(dim=1).values == torch.tensor([-1.0, 1.0])).all()  # a winner and a loser
    assert (rewards[~done] == 0).all()
    assert "Illegal move" not in caplog.text
