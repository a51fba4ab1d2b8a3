"""Experiments on the agents, run as modules from the repository root (not part of the installed package).

- `python -m experiments.fit_race_model`: refit the reserve-race win probability of the expectimax agent.

The headroom measurement (how much a placement can gain over greedy's) is installed:
`strategic-reserve headroom`; the skill report runs it.
"""
