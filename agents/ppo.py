"""An agent backed by a MaskablePPO policy (sb3-contrib).

Its model is a policy file (`.safetensors`, `strategic_reserve_env.agents.ppo_file`),
which cannot run code when loaded; `train.py` writes one beside its SB3
`model.zip`. An SB3 `.zip` stores its settings as pickles, so loading
one runs whatever code a crafted file holds: it loads only with the
explicit opt-in `trust="pickle"` (agent spec `ppo:PATH.zip,trust=pickle`),
for files you made or trust. `trust` is an error on a policy file, where
it would change nothing: each model has one spelling, so one agent name
(evaluate.py and the tournament reject an agent named twice). The policy
must observe the planes of `strategic_reserve_env.core.observation`
(`Box(0, 1, (6, 6, 9), int8)`) and choose among `Discrete(36)`
squares. Actions are the masked policy's most likely square
(`deterministic=True`, the default) or a sample from it drawn with the
caller's generator, so sampled play is reproducible by seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from strategic_reserve_env import models
from strategic_reserve_env.core.board import brief
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE

from .custom import spec_name

MASKED_LOGIT = -1e8  # an illegal square's logit in training losses (finite, as in sb3-contrib); play excludes them
TRUST_PICKLE = "pickle"  # the opt-in that lets an SB3 .zip (pickles: it can run code) load


class PPOAgent:
    """Acts with a MaskablePPO policy (`policy` is the model's `.policy`), masking illegal squares."""

    uses_observation = True

    def __init__(self, policy, name: str, deterministic: bool = True) -> None:
        self.policy = policy
        self.name = name
        self.deterministic = deterministic

    @classmethod
    def load(
        cls, path: str | Path, deterministic: bool = True, trust: str | None = None, label: str | None = None
    ) -> PPOAgent:
        """The agent of a policy file (`.safetensors`), or of an SB3 `.zip` with `trust="pickle"`;
        `label` names it in place of `ppo:PATH` (`ppo` for the shipped model)."""
        path = Path(path)
        if trust not in (None, TRUST_PICKLE):
            raise ValueError(f"ppo: trust must be {TRUST_PICKLE!r} (to unpickle an SB3 .zip), got {brief(trust)}")
        if not path.is_file():
            raise ValueError(
                f"ppo model not found: {path} (train one with strategic-reserve train, or use the shipped model: "
                "spec 'ppo')"
            )
        if trust and path.suffix != ".zip":
            raise ValueError(
                f"ppo: trust={trust} is only for an SB3 .zip; {path} is a policy file, which loads "
                f"without it (drop ,trust={trust})"
            )
        options = ("" if deterministic else ",deterministic=false") + (f",trust={trust}" if trust else "")
        # without torch (the train extra) this raises ModuleNotFoundError, which load_agent turns into one line
        # naming the extra
        if path.suffix == ".zip":
            policy = _load_pickled_zip(path, trust)
        else:
            from .ppo_file import load_policy

            policy, _ = load_policy(path)
        return cls(policy, spec_name("ppo", path, label, options), deterministic)

    @classmethod
    def shipped(cls, deterministic: bool = True, trust: str | None = None) -> PPOAgent:
        """The agent of the shipped policy file (`models.SHIPPED_POLICY`), named `ppo` (the spec `ppo`)."""
        return cls.load(models.path(models.SHIPPED_POLICY), deterministic, trust, label="ppo")

    def probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(B, 36) action probabilities of the masked policy."""
        import torch

        policy = self.policy
        with torch.no_grad():  # the policy's own layers, without building a torch distribution (3x less overhead)
            tensor, _ = policy.obs_to_tensor(observations)
            latent = policy.mlp_extractor.forward_actor(policy.extract_features(tensor, policy.pi_features_extractor))
            logits = policy.action_net(latent)
            legal = torch.as_tensor(np.asarray(masks, dtype=bool), device=logits.device)
            return masked_probabilities(logits, legal).cpu().numpy()

    def values(self, observations: np.ndarray) -> np.ndarray:
        """(B,) the critic's value estimates (from the mover's side)."""
        import torch

        with torch.no_grad():
            tensor, _ = self.policy.obs_to_tensor(observations)
            return self.policy.predict_values(tensor).cpu().numpy().reshape(-1)

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        probabilities = self.probabilities(observations, masks)
        broken = masks.any(axis=-1) & ~(np.isfinite(probabilities).all(axis=-1) & (probabilities.sum(axis=-1) > 0))
        if broken.any():
            raise ValueError(
                f"{self.name}: the network's output is not finite (NaN or infinite logits) on position "
                f"{int(np.flatnonzero(broken)[0])}: its weights overflow float32"
            )
        if self.deterministic:
            return np.argmax(probabilities, axis=-1)
        cumulative = np.cumsum(probabilities, axis=-1)
        draws = rng.random(len(masks)) * cumulative[:, -1]
        choice = (cumulative <= draws[:, None]).sum(axis=-1)
        return np.where(masks.any(axis=-1), np.minimum(choice, masks.shape[-1] - 1), 0)

    def __repr__(self) -> str:
        return f"PPOAgent({self.name!r})"


def masked_probabilities(logits, legal):
    """(B, 36) softmax of torch `logits` over the squares `legal` (bool) allows: an illegal square's
    probability is exactly 0 whatever the logits (they are excluded, not pushed down to a large negative
    value, which huge finite logits would overtake)."""
    import torch

    return torch.softmax(torch.where(legal, logits, -torch.inf), dim=-1)


def _load_pickled_zip(path: Path, trust: str | None):
    """The policy of an SB3 MaskablePPO `.zip`: unpickled, so only with `trust="pickle"`."""
    if trust != TRUST_PICKLE:
        raise ValueError(
            f"{path} is an SB3 .zip: loading it unpickles its contents, which can run any code a crafted file "
            f"holds. Use its policy file instead (strategic-reserve train writes model.safetensors beside model.zip; "
            f"'strategic-reserve policy-file convert {path}' converts a zip you trust), "
            f"or opt in with "
            f"ppo:{path},trust={TRUST_PICKLE} if you trust where the file came from"
        )
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(path, device="cpu")
    shape = tuple(model.observation_space.shape)
    if shape != OBSERVATION_SHAPE:
        raise ValueError(f"{path}: the model observes shape {shape}, this environment gives {OBSERVATION_SHAPE}")
    return model.policy
