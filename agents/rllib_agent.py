"""An agent backed by a module trained with Ray RLlib (`train_rllib.py`), spec `rllib:PATH`.

`PATH` is the directory `train_rllib.py` writes (`model.json` +
`weights.npz`, see `strategic_reserve_env.agents.rllib_model`): loading it
reads arrays and JSON only, never pickles, and needs torch but not ray.
Actions are the masked policy's most likely square (`deterministic=True`,
the default) or a sample from it drawn with the caller's generator, exactly
as `PPOAgent` does for MaskablePPO models.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .ppo import PPOAgent, masked_probabilities


class RLlibAgent(PPOAgent):
    """Acts with a `BoardNet` (`policy`), masking illegal squares."""

    uses_observation = True

    @classmethod
    def load(cls, path: str | Path, deterministic: bool = True) -> RLlibAgent:
        """The agent of a module directory written by `train_rllib.py`; `ValueError` if it cannot be read."""
        from . import rllib_model

        if not str(path):
            raise ValueError("agent spec rllib:PATH: give the directory train_rllib.py wrote, e.g. rllib:runs/rllib")
        net, _ = rllib_model.load(path)
        return cls(net, f"rllib:{path}" + ("" if deterministic else ",deterministic=false"), deterministic)

    def probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(B, 36) action probabilities of the masked policy."""
        import torch

        with torch.no_grad():
            logits = self.policy.policy_head(self.policy.features(torch.as_tensor(np.asarray(observations))))
            return masked_probabilities(logits, torch.as_tensor(np.asarray(masks, dtype=bool))).numpy()

    def values(self, observations: np.ndarray) -> np.ndarray:
        """(B,) the value head's estimates (from the mover's side)."""
        import torch

        with torch.no_grad():
            return self.policy.value(self.policy.features(torch.as_tensor(np.asarray(observations)))).numpy()

    def __repr__(self) -> str:
        return f"RLlibAgent({self.name!r})"
