"""An agent backed by a MaskablePPO model (sb3-contrib) saved as a ``.zip``.

The model must have been trained on the observation planes of
:mod:`strategic_reserve_env.observation` (``Box(0, 1, (6, 6, 9), int8)``)
with ``Discrete(36)`` actions, as ``train.py`` does. Actions are the
masked policy's most likely square (``deterministic=True``, the default) or
a sample from it drawn with the caller's generator, so sampled play is
reproducible by seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from strategic_reserve_env.observation import OBSERVATION_SHAPE

MASKED_LOGIT = -1e8  # logit of an illegal square, as in sb3_contrib.common.maskable.distributions


class PPOAgent:
    """Acts with a MaskablePPO policy (``policy`` is the model's ``.policy``), masking illegal squares."""

    uses_observation = True

    def __init__(self, policy, name: str, deterministic: bool = True) -> None:
        self.policy = policy
        self.name = name
        self.deterministic = deterministic

    @classmethod
    def load(cls, path: str | Path, deterministic: bool = True) -> PPOAgent:
        """The agent of a saved MaskablePPO ``.zip``."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"ppo model not found: {path} (train one with train.py, or use the shipped models/)")
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise ValueError("the ppo agent needs sb3-contrib: pip install -e '.[train]'") from error
        model = MaskablePPO.load(path, device="cpu")
        shape = tuple(model.observation_space.shape)
        if shape != OBSERVATION_SHAPE:
            raise ValueError(f"{path}: the model observes shape {shape}, this environment gives {OBSERVATION_SHAPE}")
        return cls(model.policy, f"ppo:{path}" + ("" if deterministic else ",deterministic=false"), deterministic)

    def probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(B, 36) action probabilities of the masked policy."""
        import torch

        policy = self.policy
        with torch.no_grad():  # the policy's own layers, without building a torch distribution (3x less overhead)
            tensor, _ = policy.obs_to_tensor(observations)
            latent = policy.mlp_extractor.forward_actor(policy.extract_features(tensor, policy.pi_features_extractor))
            logits = policy.action_net(latent)
            legal = torch.as_tensor(np.asarray(masks, dtype=bool), device=logits.device)
            logits = torch.where(legal, logits, MASKED_LOGIT)  # the value sb3-contrib's masking uses
            return torch.softmax(logits, dim=-1).cpu().numpy()

    def values(self, observations: np.ndarray) -> np.ndarray:
        """(B,) the critic's value estimates (from the mover's side)."""
        import torch

        with torch.no_grad():
            tensor, _ = self.policy.obs_to_tensor(observations)
            return self.policy.predict_values(tensor).cpu().numpy().reshape(-1)

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        probabilities = np.where(masks, self.probabilities(observations, masks), 0.0)
        if self.deterministic:
            return np.argmax(probabilities, axis=-1)
        cumulative = np.cumsum(probabilities, axis=-1)
        draws = rng.random(len(masks)) * cumulative[:, -1]
        choice = (cumulative <= draws[:, None]).sum(axis=-1)
        return np.where(masks.any(axis=-1), np.minimum(choice, masks.shape[-1] - 1), 0)

    def __repr__(self) -> str:
        return f"PPOAgent({self.name!r})"
