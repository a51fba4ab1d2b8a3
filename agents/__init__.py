"""Baseline agents for Strategic Reserve, named by spec strings.

=========================  ===============================================
spec                       agent
=========================  ===============================================
``random``                 uniform over the legal squares
``greedy``                 one-ply lookahead: fewest own checkers expected
                           to be sent back by the opponent's next roll
``expectimax:depth=2``     search through both players' next rolls with a
                           reserve-race win probability (``depth`` 1 or 2,
                           ``width`` candidate placements searched deeper)
``ppo:PATH.zip``           a MaskablePPO model (``,deterministic=false`` to
                           sample from it)
``rllib:PATH``             a module trained by ``train_rllib.py`` (Ray RLlib;
                           plays without ray; ``,deterministic=false``)
=========================  ===============================================

Every agent acts on a batch (:mod:`agents.base`):
``agent.act(observations, masks, rng) -> actions``.
"""

from __future__ import annotations

from strategic_reserve_env.policies import UniformRandomPolicy

from .expectimax import ExpectimaxAgent
from .greedy import GreedyAgent

KNOWN_AGENTS = ("random, greedy, expectimax[:depth=1|2,width=K], ppo:PATH.zip[,deterministic=false], "
                "rllib:PATH[,deterministic=false]")


class RandomAgent(UniformRandomPolicy):
    """Uniformly random legal squares."""

    name = "random"

    def __repr__(self) -> str:
        return "RandomAgent()"


def _options(spec: str, text: str, allowed: dict) -> dict:
    """Parse ``key=value,key=value`` with the types of ``allowed`` ({key: type})."""
    options = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or key not in allowed:
            raise ValueError(f"agent spec {spec!r}: unknown option {item!r}; options: {', '.join(allowed)}")
        kind = allowed[key]
        try:
            if kind is bool:
                if value.lower() not in ("true", "false"):
                    raise ValueError
                options[key] = value.lower() == "true"
            else:
                options[key] = kind(value)
        except ValueError:
            raise ValueError(f"agent spec {spec!r}: {key} must be {kind.__name__}, got {value!r}") from None
    return options


def load_agent(spec: str):
    """The agent named by ``spec`` (see the module docstring); ``ValueError`` listing the known agents."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an agent spec must be a non-empty string; known agents: {KNOWN_AGENTS}")
    name, _, rest = spec.partition(":")
    if name == "random" and not rest:
        return RandomAgent()
    if name == "greedy" and not rest:
        return GreedyAgent()
    if name == "expectimax":
        return ExpectimaxAgent(**_options(spec, rest, {"depth": int, "width": int}))
    if name == "ppo":
        path, _, more = rest.partition(",")
        if not path:
            raise ValueError(f"agent spec {spec!r}: give the model file, e.g. ppo:models/ppo_baseline.zip")
        from .ppo import PPOAgent

        return PPOAgent.load(path, **_options(spec, more, {"deterministic": bool}))
    if name == "rllib":  # a directory written by train_rllib.py (loads without pickle, plays without ray)
        from .rllib_agent import RLlibAgent

        path, _, more = rest.partition(",")
        return RLlibAgent.load(path, **_options(spec, more, {"deterministic": bool}))
    raise ValueError(f"unknown agent {spec!r}; known agents: {KNOWN_AGENTS}")


__all__ = ["ExpectimaxAgent", "GreedyAgent", "KNOWN_AGENTS", "RandomAgent", "load_agent"]
