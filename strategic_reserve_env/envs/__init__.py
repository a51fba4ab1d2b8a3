"""The env adapters (PettingZoo AEC, Gymnasium, SB3, RLlib, OpenSpiel, pgx/JAX) over the core, their registration,
and the game loops that run agents: the learner's single-agent step and the arena (two agents, paired dice, each
agent's time budget).

See docs/ARCHITECTURE.md, "Package layout".
"""
