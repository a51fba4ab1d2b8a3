"""Network parts for training on the observation planes.

`BoardCNN` is a features extractor for SB3 policies: three 3x3
convolutions over the `(6, 6, 9)` planes (channels last in the
observation, moved first here) keep the board's locality, which is what
captures depend on (groups and their neighbours); a linear layer maps the
feature map to `features_dim`.
"""

from __future__ import annotations

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


class BoardCNN(BaseFeaturesExtractor):
    """3x3 convolutions over the board planes, then a linear layer."""

    def __init__(self, observation_space: spaces.Box, channels: int = 32, features_dim: int = 256) -> None:
        super().__init__(observation_space, features_dim)
        height, width, planes = observation_space.shape
        self.convolutions = nn.Sequential(
            nn.Conv2d(planes, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        self.linear = nn.Sequential(nn.Linear(channels * height * width, features_dim), nn.ReLU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.linear(self.convolutions(observations.float().permute(0, 3, 1, 2)))
