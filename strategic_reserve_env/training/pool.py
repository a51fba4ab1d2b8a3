"""The opponent pool: baseline agents plus frozen snapshots of the learner sharing the "self" weight."""

from __future__ import annotations

import copy

from strategic_reserve_env.agents import load_agent
from strategic_reserve_env.agents.ppo import PPOAgent

from .settings import opponent_mixture


class OpponentPool:
    """The opponents of `--opponents` (loaded here: `ValueError` for a spec that does not load) and up to
    `max_snapshots` snapshots of the learner, which share the weight of "self"."""

    def __init__(self, opponents: str, max_snapshots: int) -> None:
        mixture = opponent_mixture(opponents)
        self.baselines = [(load_agent(name), weight) for name, weight in mixture if name != "self"]
        self.self_weight = sum(weight for name, weight in mixture if name == "self")
        self.max_snapshots = max_snapshots
        self.snapshots: list[PPOAgent] = []

    def add_snapshot(self, policy, name: str, weights: dict | None = None) -> None:
        """Freeze a copy of `policy` (with `weights`, a state_dict, if given) into the pool as `name`."""
        frozen = copy.deepcopy(policy)
        if weights is not None:
            frozen.load_state_dict(weights)
        self.snapshots = (self.snapshots + [PPOAgent(frozen.eval(), name, deterministic=False)])[-self.max_snapshots :]

    def get_state(self) -> list[dict]:
        """The snapshots as tensors and names (for a checkpoint; `set_state` reads it back)."""
        return [{"name": snapshot.name, "policy": snapshot.policy.state_dict()} for snapshot in self.snapshots]

    def set_state(self, state: list[dict], policy) -> None:
        """The snapshots of `get_state`, each a copy of `policy` with its saved weights."""
        self.snapshots = []
        for snapshot in state:
            self.add_snapshot(policy, snapshot["name"], snapshot["policy"])

    def members(self) -> tuple[list, list[float]]:
        """Opponents and their weights for the environment (the random agent alone while the pool holds
        nothing yet: "self" alone before its first snapshot)."""
        agents = [agent for agent, _ in self.baselines]
        weights = [weight for _, weight in self.baselines]
        for snapshot in self.snapshots:
            agents.append(snapshot)
            weights.append(self.self_weight / len(self.snapshots))
        if not agents:
            return [load_agent("random")], [1.0]
        return agents, weights
