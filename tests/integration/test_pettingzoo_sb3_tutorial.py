"""PettingZoo's SB3 action-mask tutorial (tutorials/SB3/connect_four/sb3_connect_four_action_mask.py of
Farama-Foundation/PettingZoo), run on this env: its `SB3ActionMaskWrapper` and `mask_fn` are copied
here unchanged (the tutorial is not part of the installed package), then its training and evaluation
steps, with a few hundred MaskablePPO steps instead of 20,480."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pettingzoo.utils
from pettingzoo import make
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.wrappers import ActionMasker

import strategic_reserve_env  # noqa: F401 - registers strategic_reserve_v2

ENV_ID = "strategic_reserve_v2"


# -- the tutorial's code, unchanged -----------------------------------------------------------
# To pass into other gymnasium wrappers, we need to ensure that pettingzoo's wrappper
# can also be a gymnasium Env. Thus, we subclass under gym.Env as well.
class SB3ActionMaskWrapper(pettingzoo.utils.BaseWrapper, gym.Env):
    """Wrapper to allow PettingZoo environments to be used with SB3 illegal action masking."""

    def reset(self, seed=None, options=None):
        """Gymnasium-like reset function which assigns obs/action spaces to be the same for each agent.

        This is required as SB3 is designed for single-agent RL and doesn't expect obs/action spaces to be functions
        """
        super().reset(seed, options)

        # Strip the action mask out from the observation space
        self.observation_space = super().observation_space(self.possible_agents[0])["observation"]
        self.action_space = super().action_space(self.possible_agents[0])

        # Return initial observation, info (PettingZoo AEC envs do not by default)
        return self.observe(self.agent_selection), {}

    def step(self, action):
        """Gymnasium-like step function, returning observation, reward, termination, truncation, info.

        The observation is for the next agent (used to determine the next action), while the remaining
        items are for the agent that just acted (used to understand what just happened).
        """
        current_agent = self.agent_selection

        super().step(action)

        next_agent = self.agent_selection
        return (
            self.observe(next_agent),
            self._cumulative_rewards[current_agent],
            self.terminations[current_agent],
            self.truncations[current_agent],
            self.infos[current_agent],
        )

    def observe(self, agent):
        """Return only raw observation, removing action mask."""
        return super().observe(agent)["observation"]

    def action_mask(self):
        """Separate function used in order to access the action mask."""
        return super().observe(self.agent_selection)["action_mask"]


def mask_fn(env):
    # Do whatever you'd like in this function to return the action mask
    # for the current env. In this example, we assume the env has a
    # helpful method we can rely on.
    return env.action_mask()


# -- the tutorial's train_action_mask and eval_action_mask, small --------------------------------
def test_maskable_ppo_trains_and_plays_through_the_tutorial_wrapper(caplog):
    env = make("aec", ENV_ID)
    env = SB3ActionMaskWrapper(env)
    env.reset(seed=0)  # Must call reset() in order to re-define the spaces
    env = ActionMasker(env, mask_fn)  # Wrap to enable masking (SB3 function)
    model = MaskablePPO(MaskableActorCriticPolicy, env, n_steps=128, batch_size=64, n_epochs=2, seed=0, verbose=0)
    model.learn(total_timesteps=384)
    assert model.num_timesteps >= 384
    assert all(np.isfinite(p.detach().numpy()).all() for p in model.policy.parameters())
    env.close()

    # evaluation against a random agent, the trained model as possible_agents[1]
    env = make("aec", ENV_ID)
    wins = dict.fromkeys(env.possible_agents, 0)
    for i in range(6):
        env.reset(seed=i)
        env.action_space(env.possible_agents[0]).seed(i)
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            observation, action_mask = obs.values()
            if termination or truncation:
                assert sorted(env.rewards.values()) == [-1, 1]
                wins[max(env.rewards, key=env.rewards.get)] += 1
                break
            if agent == env.possible_agents[0]:
                act = env.action_space(agent).sample(action_mask)
            else:
                act = int(model.predict(observation, action_masks=action_mask, deterministic=True)[0])
            assert action_mask[act] == 1
            env.step(act)
        assert env.unwrapped.game.winner >= 0  # a real win, not an illegal move
    env.close()
    assert sum(wins.values()) == 6
    assert "Illegal move" not in caplog.text
