"""The supervised phase before PPO (agents/distill.py): the expert's labelled decisions, then the fit."""

from __future__ import annotations

import time

from strategic_reserve_env.agents import distill, load_agent

from .settings import TrainSettings


def distill_agents(settings: TrainSettings) -> tuple[object, list]:
    """The expert and the opponents of the distillation; ``ValueError`` if a spec does not load or the
    expert has no ``move_values``."""
    expert = load_agent(settings.distill_expert)
    if not callable(getattr(expert, "move_values", None)):
        raise ValueError(
            f"--distill-expert {settings.distill_expert!r:.60} has no move_values(observations, masks, rng)"
        )
    opponents = [load_agent(spec) for spec in filter(None, settings.distill_opponents.split(","))]
    return expert, opponents


def distill_policy(policy, settings: TrainSettings) -> None:
    """Label the expert's decisions and fit ``policy`` (in place) to them; prints what it did and how often
    the network now agrees with the expert."""
    expert, opponents = distill_agents(settings)
    start = time.perf_counter()
    positions = distill.collect_positions(
        expert, opponents, settings.distill_games, settings.seed, settings.distill_explore, progress=settings.progress
    )
    labelled = time.perf_counter()
    print(
        f"distillation: {len(positions):,} decisions of {expert.name} in {settings.distill_games} games against each "
        f"of {', '.join(o.name for o in opponents)} ({labelled - start:.0f} s)",
        flush=True,
    )
    targets = distill.expert_targets(positions, settings.distill_temperature)
    fit_settings = distill.FitSettings(
        epochs=settings.distill_epochs,
        batch_size=settings.distill_batch_size,
        learning_rate=settings.distill_learning_rate,
        value_weight=settings.distill_value_weight,
        seed=settings.seed,
    )
    history = distill.fit(policy, positions, targets, fit_settings, progress=settings.progress)
    agreement = distill.agreement(policy, positions, distill.expert_targets(positions))
    print(
        f"distillation: fit in {time.perf_counter() - labelled:.0f} s, cross-entropy "
        f"{history[-1]['cross_entropy']:.3f}, the network plays the expert's choice in {100 * agreement:.1f} % of "
        f"its decisions",
        flush=True,
    )
