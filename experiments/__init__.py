"""Experiments on the agents, run as modules from the repository root (not part of the installed package).

- ``python -m experiments.headroom``: how much a placement can gain over greedy's (rollouts on common dice);
- ``python -m experiments.fit_race_model``: refit the reserve-race win probability of the expectimax agent.
"""
