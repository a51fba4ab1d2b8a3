"""Baseline agents for Strategic Reserve, and agents of your own, named by spec strings.

| spec | agent |
| --- | --- |
| `random` | uniform over the legal squares |
| `greedy` | one-ply lookahead: fewest own checkers expected to be sent back by the opponent's next roll |
| `expectimax:depth=2` | search through both players' next rolls with a reserve-race win probability (`depth` 1 or 2, `width` candidate placements searched deeper) |
| `rollout[:rollouts=64]` | one step of rollout improvement of greedy: the `width` best placements by greedy, each scored by luck-adjusted greedy rollouts with common dice (`strategic_reserve_env.agents.rollout`); `base=ppo` improves the shipped network instead |
| `value[:PATH][,depth=2]` | expectimax over own placements (the shipped network without PATH) and the opponent's roll with a learned value network at the leaves (`strategic_reserve_env.agents.value_search`) |
| `ppo[:PATH.safetensors]` | a MaskablePPO policy file, the shipped one without PATH (`,deterministic=false` to sample from it); an SB3 `.zip` holds pickles that can run code, so it needs `,trust=pickle` (see `strategic_reserve_env.agents.ppo`) |
| `mctx[:simulations=64]` | Stochastic MuZero search (mctx) on the true model inside jit, chance nodes for the rolls, one ply of exact lookahead over reserve-race values at the root (`lookahead=true`: at every decision); `net=PATH`: a network of `train-az` at the leaves (`simulations=0`: the network alone); the `mctx` extra: `mctx_agent` |
| `openspiel-mcts[:...]` | OpenSpiel's MCTS with random rollouts (`simulations=100,rollouts=1,uct=2.0`; the `openspiel` extra: `openspiel_mcts`) |
| `NAME[:options]` | an agent an installed package registers under `NAME` (entry-point group `strategic_reserve_env.agents`) |
| `pkg.module:attr[:opts]` | an agent of your own from a module |
| `path/file.py:attr` | ... or from a Python file (see `strategic_reserve_env.agents.custom`) |

Every agent is a `strategic_reserve_env.core.policies.Policy` (it acts on a
batch: `agent.act(observations, masks, rng) -> actions`). `load_agent(spec).name`
is the canonical spelling of the spec (`expectimax` ->
`expectimax:depth=2`): two specs with the same name are the same agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strategic_reserve_env import models
from strategic_reserve_env.core.board import brief, clip
from strategic_reserve_env.core.policies import NamedPolicy, Policy, UniformRandomPolicy, as_policy
from strategic_reserve_env.extras import needs_extra

from .custom import (
    ENTRY_POINT_GROUP,
    USER_SPEC_FORMS,
    canonical_path,
    describe_registered,
    is_user_spec,
    load_registered_agent,
    load_user_agent,
    parse_options,
)
from .expectimax import ExpectimaxAgent
from .greedy import GreedyAgent


class RandomAgent(UniformRandomPolicy):
    """Uniformly random legal squares."""

    name = "random"

    def __repr__(self) -> str:
        return "RandomAgent()"


def _options(spec: str, text: str, allowed: dict[str, type]) -> dict[str, object]:
    """The options of a built-in agent: `key=value,...` read by `custom.parse_options` (the one
    option grammar: each key at most once, values read as bool, int, float or text), each key one of
    `allowed` ({key: type}) and its value of exactly that type (`true` is no int, `2` no text)."""
    options = parse_options(spec, text)
    for key, value in options.items():
        if key not in allowed:
            raise ValueError(f"agent spec {brief(spec)}: unknown option {brief(key)}; options: {', '.join(allowed)}")
        if type(value) is not allowed[key]:
            raise ValueError(f"agent spec {brief(spec)}: {key} must be {allowed[key].__name__}, got {brief(value)}")
    return options


@dataclass(frozen=True)
class BuiltIn:
    """One built-in agent of the registry."""

    usage: str
    """Its spec grammar, as shown to users."""
    summary: str
    """What it is, in a few words."""
    load: Callable[[str, str], NamedPolicy]
    """`load(spec, options)`: the agent, from the whole spec and the text after `name:`."""


def _without_options(agent_class: type[NamedPolicy]) -> Callable[[str, str], NamedPolicy]:
    def load(spec: str, options: str) -> NamedPolicy:
        if options:
            raise ValueError(f"agent spec {brief(spec)}: {spec.partition(':')[0]} takes no options")
        return agent_class()

    return load


def _expectimax(spec: str, options: str):
    return ExpectimaxAgent(**_options(spec, options, {"depth": int, "width": int}))


def _rollout(spec: str, options: str):
    from .rollout import RolloutAgent

    allowed = {"rollouts": int, "width": int, "luck": bool, "horizon": int, "base": str}
    return RolloutAgent(**_options(spec, options, allowed))  # type: ignore[arg-type]


def _model_and_options(rest: str) -> tuple[str, str]:
    """`PATH[,options]` or `options` alone (the shipped model): (path or "", options)."""
    path, _, more = rest.partition(",")
    return ("", rest) if "=" in path else (path, more)


def _ppo(spec: str, rest: str):
    path, more = _model_and_options(rest)
    from .ppo import PPOAgent

    options = _options(spec, more, {"deterministic": bool, "trust": str})
    if path:
        return PPOAgent.load(canonical_path(path), **options)
    return PPOAgent.shipped(**options)  # type: ignore[arg-type]


def _value(spec: str, rest: str):
    path, more = _model_and_options(rest)
    from .value_search import ValueSearchAgent

    options = _options(spec, more, {"depth": int, "width": int})
    if path:
        return ValueSearchAgent.load(canonical_path(path), **options)
    return ValueSearchAgent.load(models.path(models.VALUE_NET), label="value", **options)


def _rllib(spec: str, rest: str):
    path, _, more = rest.partition(",")  # a directory written by train_rllib.py (no pickle; plays without ray)
    from .rllib_agent import RLlibAgent

    return RLlibAgent.load(canonical_path(path) if path else path, **_options(spec, more, {"deterministic": bool}))


def _openspiel_mcts(spec: str, options: str):
    try:
        from .openspiel_mcts import MCTSAgent
    except ImportError as error:  # OpenSpiel missing, or Python 3.10: the module's message says which
        raise ValueError(f"agent spec {brief(spec)}: {error}") from None
    return MCTSAgent(**_options(spec, options, {"simulations": int, "rollouts": int, "uct": float}))


def _mctx(spec: str, options: str):
    import mctx  # noqa: F401  (without the mctx extra: load_agent's one line naming it)

    from .az_net import NetFileError
    from .mctx_agent import MctxAgent

    chosen = _options(spec, options, {"simulations": int, "lookahead": bool, "net": str})
    if "net" in chosen:
        chosen["net"] = canonical_path(str(chosen["net"]))
    try:
        return MctxAgent(**chosen)  # type: ignore[arg-type]
    except NetFileError as error:
        raise ValueError(f"agent spec {spec!r}: {error}") from None


# one entry per built-in agent; heavy imports stay inside the loaders
BUILT_IN: dict[str, BuiltIn] = {
    "random": BuiltIn("random", "uniform over the legal squares", _without_options(RandomAgent)),
    "greedy": BuiltIn(
        "greedy", "fewest own checkers expected to be captured by the next roll", _without_options(GreedyAgent)
    ),
    "expectimax": BuiltIn("expectimax[:depth=1|2,width=K]", "search through both players' next rolls", _expectimax),
    "rollout": BuiltIn(
        "rollout[:rollouts=N,width=K,horizon=H,luck=false,base=greedy|ppo]",
        "greedy improved by luck-adjusted greedy rollouts of its best placements, common dice",
        _rollout,
    ),
    "value": BuiltIn(
        "value[:PATH.safetensors][,depth=1|2,width=K]",
        "expectimax with a learned value at the leaves (the shipped value network unless PATH is given)",
        _value,
    ),
    "ppo": BuiltIn(
        "ppo[:PATH.safetensors][,deterministic=false] (ppo:PATH.zip needs ,trust=pickle)",
        "a MaskablePPO policy file (the shipped model unless PATH is given)",
        _ppo,
    ),
    "rllib": BuiltIn("rllib:PATH[,deterministic=false]", "a Ray RLlib module written by train_rllib.py", _rllib),
    "mctx": BuiltIn(
        "mctx[:simulations=N,lookahead=true] or mctx:net=PATH[,simulations=N]",
        "Stochastic MuZero search on the true model in jit, reserve-race leaves (needs the mctx extra)",
        _mctx,
    ),
    "openspiel-mcts": BuiltIn(
        "openspiel-mcts[:simulations=N,rollouts=K,uct=C]",
        "OpenSpiel's MCTS with random rollouts (needs the openspiel extra)",
        _openspiel_mcts,
    ),
}
KNOWN_AGENTS = ", ".join(entry.usage for entry in BUILT_IN.values())


def load_agent(spec: str) -> NamedPolicy:
    """The agent named by `spec` (see the module docstring and `custom` for the grammar);
    `ValueError` saying what is wrong (unknown name, bad option, module or file not found, missing
    attribute, wrong signature), listing the known agents for an unknown name; for a built-in agent whose
    library is not installed, `MissingExtraError` (a `ValueError` and an
    `ImportError`) naming the extra to install."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(
            f"an agent spec must be a non-empty string; known agents: {KNOWN_AGENTS}; your own agent: {USER_SPEC_FORMS}"
        )
    name, _, rest = spec.partition(":")
    try:
        if is_user_spec(name):
            return load_user_agent(spec)
        if name in BUILT_IN:
            try:
                return BUILT_IN[name].load(spec, rest)
            except ModuleNotFoundError as error:  # e.g. ppo without torch: one line naming the extra
                missing = needs_extra(error, f"agent spec {clip(spec)!r}")
                if missing is None:
                    raise
                raise missing from None
        return load_registered_agent(spec, name, rest, KNOWN_AGENTS)
    except OSError as error:  # a path the system refuses (too long, a loop of links, no permission)
        raise ValueError(f"agent spec {brief(spec)}: {error.strerror or type(error).__name__}") from None


def as_agent(agent: str | Policy | Callable[..., Any]) -> Policy:
    """The one place an agent spec string becomes an agent: a string through `load_agent`, a `Policy` as
    it is, a callable with the signature of `Policy.act` wrapped (`policies.as_policy`). What every
    interface that takes "an agent or its spec" calls (the envs' opponents, the tournament, the benchmark);
    `ValueError` saying what is wrong."""
    return load_agent(agent) if isinstance(agent, str) else as_policy(agent)


def list_agents() -> list[tuple[str, str]]:
    """(spec, description) of every agent a name can load: the built-ins, then those of installed packages."""
    rows = [(entry.usage, entry.summary) for entry in BUILT_IN.values()]
    for name, where in describe_registered():
        rows.append((name, where + ("  [ignored: a built-in has this name]" if name in BUILT_IN else "")))
    return rows


__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "ExpectimaxAgent",
    "GreedyAgent",
    "KNOWN_AGENTS",
    "RandomAgent",
    "as_agent",
    "list_agents",
    "load_agent",
]
