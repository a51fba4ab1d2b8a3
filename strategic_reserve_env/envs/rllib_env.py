"""Ray RLlib (new API stack): Strategic Reserve through RLlib's multi-agent API, self-play with masked PPO.

Needs the rllib extra, `pip install 'strategic-reserve-env[rllib]'` (`ray[rllib]`);
`import strategic_reserve_env` never imports ray, this module does.

- `StrategicReserveMultiAgentEnv`: the PettingZoo env (`env()`, with
  PettingZoo's standard wrappers) through RLlib's own `PettingZooEnv`, which
  also counts the illegal actions it is sent (`env()` ends such a game with
  -1 for the agent that made it, as PettingZoo's classic games do; the game
  is reported terminated, not also truncated, which RLlib's episodes reject).
- `MaskedBoardModule`: an RLModule (PPO's `ValueFunctionAPI`) around
  `BoardNet`. It reads the env's
  observation dict `{"observation": (6, 6, 9) int8, "action_mask": (36,) int8}`
  as it comes: the planes feed the network (policy and value), the mask sets
  every illegal square's logit to `MASKED_LOGIT` in exploration, inference and
  training alike, so a sampled or greedy action is always legal and PPO's ratios,
  entropy and KL only ever see legal squares. (RLlib's stock encoders have no
  config for a Dict observation, and its action-masking example module expects
  the keys `"observations"` and `"action_mask"`; this module needs neither
  a connector nor a renamed space.)
- `IllegalActionCounter`: a callback logging the env's count of illegal
  actions per episode (`env_runners/illegal_actions`, per iteration, and
  `env_runners/illegal_actions_lifetime`).
- `ppo_config`: shared-policy self-play: both seats map to one module
  (`POLICY`), trained by PPO on all its decisions as Red and as Blue.
- `module_weights` / `save_module`: the trained network, written
  in the pickle-free format of `rllib_model`
  (`strategic_reserve_env.agents.load_agent("rllib:PATH")` plays it; RLlib's own checkpoints are
  pickles and are not used).

`train_rllib.py` is the command line (one machine or a Ray cluster).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from gymnasium import spaces
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

from strategic_reserve_env.agents import rllib_model
from strategic_reserve_env.agents.rllib_model import BoardNet, NetworkConfig
from strategic_reserve_env.core.board import NUM_SQUARES
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE

from .aec_env import env as aec_env

POLICY = "shared"  # the one module both seats map to
ILLEGAL_ACTIONS = "illegal_actions"  # metric: illegal actions received in the episodes ended this iteration
ILLEGAL_ACTIONS_LIFETIME = "illegal_actions_lifetime"  # metric: the same since training started
_NET = "net."  # prefix of BoardNet's parameters in the module's state dict


class StrategicReserveMultiAgentEnv(PettingZooEnv):
    """`PettingZooEnv(env(**config))`: RLlib's PettingZoo wrapper, unchanged, plus a count of illegal actions.

    `config` (RLlib's `env_config`) holds the env's keyword arguments
    (`reserve`, `ply_limit`, `start`). `illegal_actions` counts
    the actions of the current episode that were not legal when sent; such an
    action ends the game (`env()`'s TerminateIllegalWrapper: -1 for the
    agent that made it, 0 for the other, a warning), reported as terminated.
    """

    def __init__(self, config: dict | None = None) -> None:
        super().__init__(aec_env(**dict(config or {})))
        self.illegal_actions = 0  # in the current episode

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.illegal_actions = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: dict):
        agent = self.env.agent_selection
        square = action.get(agent)
        mask = self.env.observe(agent)["action_mask"]
        if square is None or (0 <= int(square) < NUM_SQUARES and mask[int(square)]):
            return super().step(action)
        self.illegal_actions += 1
        observations, rewards, terminateds, truncateds, infos = super().step(action)
        # PettingZoo's TerminateIllegalWrapper marks every agent terminated *and* truncated; RLlib's episodes
        # cannot hold both (their validation fails), so the game is reported as what it is: terminated.
        truncateds = dict.fromkeys(truncateds, False)
        return observations, rewards, terminateds, truncateds, infos


def _check_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """`ValueError` unless the spaces are the env's (observation dict, `Discrete(36)`)."""
    expected = f"Dict(observation=Box{OBSERVATION_SHAPE}, action_mask=Box({NUM_SQUARES},))"
    if not (
        isinstance(observation_space, spaces.Dict)
        and set(observation_space.spaces) == {"observation", "action_mask"}
        and observation_space["observation"].shape == OBSERVATION_SHAPE
        and observation_space["action_mask"].shape == (NUM_SQUARES,)
    ):
        raise ValueError(f"MaskedBoardModule needs the observation space {expected}, got {observation_space}")
    if not (isinstance(action_space, spaces.Discrete) and action_space.n == NUM_SQUARES):
        raise ValueError(f"MaskedBoardModule needs the action space Discrete({NUM_SQUARES}), got {action_space}")


class MaskedBoardModule(TorchRLModule, ValueFunctionAPI):
    """RLModule for PPO around `BoardNet`; illegal squares masked in every forward pass.

    `model_config` may set `NetworkConfig`'s fields (`channels`,
    `conv_layers`, `hidden`); RLlib's own keys in it are ignored.
    """

    def setup(self) -> None:
        _check_spaces(self.observation_space, self.action_space)
        model_config = self.model_config or {}
        if dataclasses.is_dataclass(model_config):
            model_config = dataclasses.asdict(model_config)
        self.net = BoardNet(NetworkConfig.from_mapping(model_config))

    def _features(self, batch: dict):
        observations = batch[Columns.OBS]
        return self.net.features(observations["observation"]), observations["action_mask"]

    def _forward(self, batch: dict, **kwargs) -> dict:
        """Exploration and inference: masked logits (RLlib samples from them, or takes their argmax)."""
        features, masks = self._features(batch)
        return {Columns.ACTION_DIST_INPUTS: self.net.logits(features, masks)}

    def _forward_train(self, batch: dict, **kwargs) -> dict:
        """Training: masked logits, and the features for the value head (no second torso pass)."""
        features, masks = self._features(batch)
        return {Columns.ACTION_DIST_INPUTS: self.net.logits(features, masks), Columns.EMBEDDINGS: features}

    def compute_values(self, batch: dict, embeddings: Any = None):
        """(B,) values of the planes (the mask is not needed: it is plane 2 of the observation too)."""
        if embeddings is None:
            embeddings = self.net.features(batch[Columns.OBS]["observation"])
        return self.net.value(embeddings)


class IllegalActionCounter(RLlibCallback):
    """Logs each finished episode's count of illegal actions (`StrategicReserveMultiAgentEnv`)."""

    def on_episode_end(
        self, *, episode, env_runner=None, metrics_logger=None, env=None, env_index: int = 0, **kwargs
    ) -> None:
        count = env.envs[env_index].unwrapped.illegal_actions
        metrics_logger.log_value(ILLEGAL_ACTIONS, count, reduce="sum")
        metrics_logger.log_value(ILLEGAL_ACTIONS_LIFETIME, count, reduce="lifetime_sum")


def shared_policy(agent_id, episode=None, **kwargs) -> str:
    """Both seats play the same module: self-play with one set of weights."""
    return POLICY


def ppo_config(
    *,
    network: NetworkConfig = NetworkConfig(),
    env_config: dict | None = None,
    num_env_runners: int = 2,
    num_envs_per_env_runner: int = 8,
    train_batch_size: int = 4000,
    minibatch_size: int = 500,
    num_epochs: int = 4,
    lr: float = 3e-4,
    gamma: float = 0.995,
    lambda_: float = 0.95,
    clip_param: float = 0.2,
    entropy_coeff: float = 0.01,
    vf_loss_coeff: float = 0.5,
    seed: int | None = 0,
) -> PPOConfig:
    """PPO with one shared `MaskedBoardModule` for both seats, on `StrategicReserveMultiAgentEnv`.

    `train_batch_size` counts env steps (placements) per iteration, summed
    over `num_env_runners` processes (0: sample in the driver) of
    `num_envs_per_env_runner` games each. `seed` seeds the env runners'
    dice and the network.
    """
    env_config = dict(env_config or {})
    aec_env(**env_config)  # bad env settings fail here, in the driver, with the env's own error
    return (
        PPOConfig()
        # RLlib's env checker would step a random action, usually illegal: a lost game and PettingZoo's warning
        # in every env runner's log. tests/integration/test_rllib.py runs the checker on the env instead.
        .environment(StrategicReserveMultiAgentEnv, env_config=env_config, disable_env_checking=True)
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=num_envs_per_env_runner)
        .multi_agent(policies={POLICY}, policy_mapping_fn=shared_policy)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    POLICY: RLModuleSpec(module_class=MaskedBoardModule, model_config=dataclasses.asdict(network)),
                }
            )
        )
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=lr,
            gamma=gamma,
            lambda_=lambda_,
            clip_param=clip_param,
            entropy_coeff=entropy_coeff,
            vf_loss_coeff=vf_loss_coeff,
        )
        .callbacks(IllegalActionCounter)
        .debugging(seed=seed)
    )


def module_weights(algorithm) -> dict[str, np.ndarray]:
    """The shared module's `BoardNet` parameters, as arrays, from the algorithm's learner(s)."""
    state = algorithm.learner_group.get_weights([POLICY])[POLICY]
    return {key.removeprefix(_NET): np.asarray(value) for key, value in state.items() if key.startswith(_NET)}


def set_module_weights(algorithm, weights: dict[str, np.ndarray]) -> None:
    """Set the shared module's `BoardNet` parameters (`weights`, as `module_weights` gives them) in
    the algorithm's learner(s), then in its env runners."""
    import torch

    algorithm.learner_group.set_weights(
        {POLICY: {_NET + key: torch.as_tensor(value) for key, value in weights.items()}}
    )
    algorithm.env_runner_group.sync_weights(from_worker_or_learner_group=algorithm.learner_group, inference_only=True)


def save_module(algorithm, directory, network: NetworkConfig, notes: dict | None = None):
    """Write the trained module to `directory` (`model.json` + `weights.npz`, no pickle); returns the path."""
    return rllib_model.save(directory, module_weights(algorithm), network, notes)
