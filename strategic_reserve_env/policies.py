"""The policy interface used for opponents, and the uniformly random policy.

A policy acts on a batch: ``act(observations, masks, rng) -> actions`` with
``observations`` ``(B, 6, 6, 9)`` int8 planes from the mover's side,
``masks`` ``(B, 36)`` int8 legal placements and ``rng`` a
``numpy.random.Generator``; it returns ``(B,)`` square indices, legal where
the mask has any legal square. A plain callable with that signature is a
policy too. A policy whose ``uses_observation`` attribute is False is given
``None`` for ``observations`` (it saves the encoding).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class UniformRandomPolicy:
    """Uniform over the legal squares."""

    uses_observation = False

    def act(self, observations, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One legal square per row of ``masks``, uniformly at random (0 where none is legal)."""
        masks = np.asarray(masks)
        counts = masks.sum(axis=-1)
        k = (rng.random(counts.shape) * counts).astype(np.int64)
        return (np.cumsum(masks, axis=-1) <= k[..., None]).sum(axis=-1).clip(max=masks.shape[-1] - 1)

    def __repr__(self) -> str:
        return "UniformRandomPolicy()"


class _CallablePolicy:
    """Adapts a function ``f(observations, masks, rng)`` to the policy interface."""

    uses_observation = True

    def __init__(self, function: Callable) -> None:
        self.function = function

    def act(self, observations, masks, rng):
        return self.function(observations, masks, rng)

    def __repr__(self) -> str:
        return f"policy({self.function!r})"


def as_policy(policy) -> object:
    """``"random"``, an object with ``act``, or a callable -> an object with ``act``."""
    if isinstance(policy, str):
        if policy == "random":
            return UniformRandomPolicy()
        raise ValueError(f"unknown policy {policy!r}; built in: 'random' (or pass an object with act(), or a callable)")
    if hasattr(policy, "act"):
        return policy
    if callable(policy):
        return _CallablePolicy(policy)
    raise ValueError(f"a policy must be 'random', an object with act(observations, masks, rng), or a callable; got {policy!r}")
