"""Tianshou 2.0: the env as its tic-tac-toe example uses `tictactoe_v3` (test/pettingzoo/tic_tac_toe.py of
thu-ml/tianshou v2.0.1): `tianshou.env.PettingZooEnv` around the AEC env, `MultiAgentOffPolicyAlgorithm`
(Tianshou 2's `MultiAgentPolicyManager`) over one algorithm per agent, a `Collector` and its trainer."""

from __future__ import annotations

import numpy as np
import torch
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

import strategic_reserve_env

NUM_ENVS = 4


def get_env(render_mode: str | None = None) -> PettingZooEnv:
    return PettingZooEnv(strategic_reserve_env.env(render_mode=render_mode))


def random_agents() -> MultiAgentOffPolicyAlgorithm:
    env = get_env()
    agents = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents]
    return MultiAgentOffPolicyAlgorithm(algorithms=agents, env=env)


def dqn_against_random() -> tuple[MultiAgentOffPolicyAlgorithm, DQN]:
    """The example's get_agents: a DQN learner as the second player, a masked random opponent."""
    env = get_env()
    observation_space = env.observation_space.spaces["observation"]
    net = Net(state_shape=observation_space.shape, action_shape=env.action_space.n, hidden_sizes=[64, 64])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.05)
    learner = DQN(
        policy=policy, optim=AdamOptimizerFactory(lr=1e-4), n_step_return_horizon=3, gamma=0.9, target_update_freq=50
    )
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    return MultiAgentOffPolicyAlgorithm(algorithms=[opponent, learner], env=env), learner


def check_buffer(buffer: VectorReplayBuffer) -> int:
    """No NaN, every action allowed by the mask it was chosen under, every finished game won and lost,
    the infos stacked with their fixed shapes. Returns the number of finished games."""
    data = buffer[buffer.sample_indices(0)]  # every stored transition
    assert len(buffer) > 0 and not buffer.hasnull()
    assert data.obs.mask[np.arange(len(data)), data.act].all(), "an illegal action was taken"
    assert data.obs.obs.shape[1:] == (6, 6, 9) and data.obs.mask.shape[1:] == (36,)
    assert data.info.dice.shape[1:] == (2,) and data.info.captured.shape[1:] == (36,)
    assert set(np.unique(data.info.roller)) <= {0, 1} and ((0 <= data.info.roll) & (data.info.roll < 36)).all()
    finished = data.terminated
    assert not data.truncated.any()
    assert (np.sort(data.rew[finished], axis=1) == [-1, 1]).all()  # a winner and a loser
    assert (data.rew[~finished] == 0).all()
    return int(finished.sum())


def test_random_masked_policies_play_whole_games(caplog):
    envs = DummyVectorEnv([get_env for _ in range(NUM_ENVS)])
    envs.seed(0)
    collector = Collector[CollectStats](
        random_agents(), envs, VectorReplayBuffer(4000, NUM_ENVS), exploration_noise=True
    )
    collector.reset()
    stats = collector.collect(n_episode=8)
    assert stats.n_collected_episodes >= 8
    assert check_buffer(collector.buffer) >= 8
    assert "Illegal move" not in caplog.text


def test_a_short_dqn_run(caplog):
    """The example's train_agent, a few hundred steps: it completes games, takes no illegal action, and
    neither the buffer nor the network hold a NaN."""
    np.random.seed(0)
    torch.manual_seed(0)
    training_envs = DummyVectorEnv([get_env for _ in range(NUM_ENVS)])
    test_envs = DummyVectorEnv([get_env for _ in range(2)])
    training_envs.seed(0)
    test_envs.seed(100)
    marl_algorithm, learner = dqn_against_random()
    training_collector = Collector[CollectStats](
        marl_algorithm, training_envs, VectorReplayBuffer(4000, NUM_ENVS), exploration_noise=True
    )
    test_collector = Collector[CollectStats](marl_algorithm, test_envs, exploration_noise=True)
    training_collector.reset()
    training_collector.collect(n_step=32 * NUM_ENVS)
    result = marl_algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=1,
            epoch_num_steps=300,
            collection_step_num_env_steps=12,
            test_step_num_episodes=2,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.1,
            test_in_training=False,
            multi_agent_return_reduction=lambda rews: rews[:, 1],
            show_progress=False,
        )
    )
    assert result.update_step > 0 and np.isfinite(result.best_reward)
    assert check_buffer(training_collector.buffer) > 0
    assert all(torch.isfinite(p).all() for p in learner.policy.parameters())
    assert "Illegal move" not in caplog.text
