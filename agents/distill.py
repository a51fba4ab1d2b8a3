"""Distillation: teach a policy network the choices of a search agent (expectimax), by supervised learning.

Three steps, each a function:

1. `collect_positions` plays games between given agents (one engine
   batch per pairing, both seats) and keeps every decision: the mover's
   observation planes, its legal squares and whether the mover went on to
   win the game.
2. `expert_targets` labels each decision with the expert's choice, as
   a distribution over the 36 squares: `temperature=0` puts all of it on
   the square the expert plays (its top move value, ties shared); a positive
   temperature gives `softmax(values / temperature)` over the squares the
   expert searched (`expert.move_values(observations, masks, rng)`: expectimax's, or the rollout agent's
   for expert iteration, `strategic_reserve_env.agents.rollout.RolloutAgent.move_values`).
3. `fit` trains an SB3 `MaskableActorCriticPolicy` on them with plain
   torch: cross-entropy of the masked action distribution against the
   targets, plus `value_weight` times the squared error of the value head
   against the outcome (+1 the mover won, -1 it lost, 0 truncated).

The fitted policy is an ordinary MaskablePPO policy: `train.py` continues
it with PPO, `strategic_reserve_env.agents.ppo_file.save_policy` writes it, and
`ppo:FILE` plays it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from strategic_reserve_env.core.board import RED
from strategic_reserve_env.core.config import Config
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.core.outcome import REWARD_SCALE, reward
from strategic_reserve_env.envs import arena
from strategic_reserve_env.files.progress import Progress

from .position import argmin_random_ties
from .ppo import MASKED_LOGIT


@dataclass(frozen=True)
class Positions:
    """The expert's decisions in played games, from its side."""

    observations: np.ndarray  # (N, 6, 6, 9) int8 planes of the mover
    masks: np.ndarray  # (N, 36) bool legal squares
    values: np.ndarray  # (N, 36) float64 the expert's move values (NaN on squares it did not search)
    outcomes: np.ndarray  # (N,) float32: +1 the mover won the game, -1 it lost, 0 truncated

    def __len__(self) -> int:
        return len(self.masks)

    def take(self, rows) -> Positions:
        """The positions of `rows` (indices or a bool mask)."""
        return Positions(self.observations[rows], self.masks[rows], self.values[rows], self.outcomes[rows])

    @staticmethod
    def concatenate(parts: list[Positions]) -> Positions:
        """The positions of `parts`, in order."""
        return Positions(*(np.concatenate([getattr(p, name) for p in parts]) for name in Positions.__annotations__))


class LabellingExpert:
    """Plays as `expert` (the best of its move values, ties at random), or with probability `explore` a
    uniformly random legal square, and keeps each decision's planes, legal squares and move values."""

    uses_observation = True

    def __init__(self, expert, explore: float = 0.0) -> None:
        if not 0 <= explore <= 1:
            raise ValueError(f"explore must be in [0, 1], got {explore}")
        self.expert, self.explore = expert, explore
        self.name = f"{expert.name} (labelling)"
        self.kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def act(self, observations: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        values = self.expert.move_values(observations, masks, rng)
        self.kept.append((np.array(observations, dtype=np.int8), masks.copy(), values))
        best = argmin_random_ties(-np.nan_to_num(values, nan=-np.inf), ~np.isnan(values), rng, step=1e-9)
        wander = argmin_random_ties(np.zeros(masks.shape), masks, rng, step=1.0)  # uniform over the legal squares
        return np.where(rng.random(len(masks)) < self.explore, wander, best)


@dataclass(frozen=True)
class Cursor:
    """Where the labelling stands after a chunk of games: the next chunk is game `start` against opponent
    number `opponent`, the players' generators in the states `generators` ((2, 6) uint64, PCG64 states
    as `generator_words` writes them)."""

    opponent: int
    start: int
    generators: np.ndarray  # (2, 6) uint64: the labeller's and the opponent's generator


def generator_words(rng: np.random.Generator) -> np.ndarray:
    """(6,) uint64: a PCG64 generator's state (its 128-bit state and increment in halves, then its buffered
    32-bit draw), the inverse of `set_generator_words`."""
    state = rng.bit_generator.state
    if state["bit_generator"] != "PCG64":
        raise ValueError(f"only PCG64 generators are saved, not {state['bit_generator']}")
    words = [state["state"]["state"], state["state"]["inc"]]
    halves = [part for word in words for part in (word >> 64, word & (2**64 - 1))]
    return np.array([*halves, state["has_uint32"], state["uinteger"]], dtype=np.uint64)


def set_generator_words(rng: np.random.Generator, words: np.ndarray) -> None:
    """Put `rng` (PCG64) in the state `generator_words` gave."""
    high, low, inc_high, inc_low, has_uint32, uinteger = (int(word) for word in words)
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": high << 64 | low, "inc": inc_high << 64 | inc_low},
        "has_uint32": has_uint32,
        "uinteger": uinteger,
    }


def labelled_chunks(
    expert,
    opponents: list,
    games: int,
    seed: int,
    explore: float = 0.0,
    config: Config | None = None,
    batch: int = 500,
    after: Cursor | None = None,
) -> Iterator[tuple[Positions, Cursor, int]]:
    """The expert's decisions of `collect_positions`, a chunk of `batch` games at a time: yields each
    chunk's positions, the `Cursor` after it and its number of games. `after`: go on after that
    cursor (the chunks that follow are those an uninterrupted run makes)."""
    if games < 2 or games % 2:
        raise ValueError(f"games per opponent must be an even number >= 2, got {games}")
    config = config or Config()
    step = batch + batch % 2
    for index, (opponent, sequence) in enumerate(
        zip(opponents, np.random.SeedSequence(seed).spawn(len(opponents)), strict=True)
    ):
        if after is not None and index < after.opponent:
            continue
        dice_seed, rng_a, rng_b = sequence.spawn(3)
        dice = np.random.default_rng(dice_seed).integers(0, 2**62, games // 2).repeat(2)
        rngs = [np.random.default_rng(rng_a), np.random.default_rng(rng_b)]
        first = 0
        if after is not None and index == after.opponent:
            for rng, words in zip(rngs, after.generators, strict=True):
                set_generator_words(rng, words)
            first = after.start
        for start in range(first, games, step):
            chunk = dice[start : start + step]
            positions = _labelled_games(expert, opponent, chunk, rngs, explore, config)
            cursor = Cursor(index, start + len(chunk), np.stack([generator_words(rng) for rng in rngs]))
            yield positions, cursor, len(chunk)


def collect_positions(
    expert,
    opponents: list,
    games: int,
    seed: int,
    explore: float = 0.0,
    config: Config | None = None,
    progress: bool = False,
    batch: int = 500,
) -> Positions:
    """The expert's decisions in `games` games (even) against each of `opponents` (agents with `act`;
    the expert itself is a fine opponent), half of them as Red, exploring with probability `explore`
    (`LabellingExpert`), `batch` games at a time; dice and generators come from `seed`."""
    parts: list[Positions] = []
    bar = Progress(games * len(opponents), "game", description="expert games", enabled=progress)
    for positions, _, played in labelled_chunks(expert, opponents, games, seed, explore, config, batch):
        parts.append(positions)
        bar.update(played)
    bar.close()
    return Positions.concatenate(parts)


def _labelled_games(expert, opponent, dice: np.ndarray, rngs: list, explore: float, config: Config) -> Positions:
    """The expert's decisions in the games of `dice` ((G,) seeds, G even) against `opponent`, as Red in
    the even-numbered ones."""
    labeller = LabellingExpert(expert, explore)
    red_agent = np.tile([0, 1], len(dice) // 2)  # agent 0 (the labeller) is Red in the even games
    deciding: list[np.ndarray] = []  # per ply, the games where the labeller decides, in arena.play's order

    def keep(state) -> None:
        labeller_moves = (state.to_move == RED) == (red_agent == 0)
        deciding.append(np.flatnonzero(~state.done & labeller_moves))

    played = arena.play([labeller, opponent], red_agent, dice, config, rngs, keep)
    game = np.concatenate([rows for rows in deciding if rows.size])
    observations, masks, values = (np.concatenate(kept) for kept in zip(*labeller.kept, strict=True))
    if len(game) != len(masks):  # pragma: no cover - arena.play asks the agents in this order
        raise RuntimeError(f"{len(game)} labeller decisions seen, {len(masks)} made")
    winner, mover = played.winner[game], np.where(red_agent[game] == 0, RED, 1 - RED)
    outcome = REWARD_SCALE.of(reward(winner, mover)).astype(np.float32)  # the mover's +1 / -1 / 0
    return Positions(observations, masks, values, outcome)


def expert_targets(positions: Positions, temperature: float = 0.0) -> np.ndarray:
    """(N, 36) float32 target distributions from the expert's move values (see the module docstring);
    rows sum to 1 and are 0 on squares the expert did not search."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    searched = ~np.isnan(positions.values)
    values = np.where(searched, positions.values, -np.inf)
    best = values.max(axis=-1, keepdims=True)
    if temperature == 0:
        weights = (values >= best - 1e-12).astype(np.float64)
    else:
        weights = np.where(searched, np.exp((values - best) / temperature), 0.0)
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


@dataclass(frozen=True)
class FitSettings:
    """Settings of `fit`."""

    epochs: int = 10
    """Passes over the training positions."""
    batch_size: int = 1024
    """Positions per gradient step."""
    learning_rate: float = 1e-3
    """Adam learning rate (decayed linearly to 0 over the fit)."""
    value_weight: float = 0.5
    """Weight of the value head's squared error next to the action cross-entropy."""
    seed: int = 0
    """Seed of the minibatch order."""


def _heads(policy, observations):
    """The policy's masked-free action logits (B, 36) and values (B,) for int8 planes (a tensor)."""
    features = policy.extract_features(observations.float(), policy.pi_features_extractor)
    latent_pi, latent_vf = policy.mlp_extractor(features)
    return policy.action_net(latent_pi), policy.value_net(latent_vf).squeeze(-1)


def agreement(policy, positions: Positions, targets: np.ndarray, batch: int = 8192) -> float:
    """Share of `positions` where the policy's most likely legal square is one the targets rate highest."""
    import torch

    hits = 0
    with torch.no_grad():
        for start in range(0, len(positions), batch):
            rows = slice(start, start + batch)
            logits, _ = _heads(policy, torch.as_tensor(positions.observations[rows]))
            legal = torch.as_tensor(positions.masks[rows])
            choice = torch.where(legal, logits, MASKED_LOGIT).argmax(dim=-1).numpy()
            target = targets[rows]
            hits += int((target[np.arange(len(choice)), choice] >= target.max(axis=-1) - 1e-6).sum())
    return hits / max(len(positions), 1)


def fit(
    policy,
    positions: Positions,
    targets: np.ndarray,
    settings: FitSettings,
    progress: bool = False,
    saved: dict | None = None,
    after_epoch: Callable[[dict], None] | None = None,
) -> list[dict[str, float]]:
    """Train `policy` (an SB3 `MaskableActorCriticPolicy`, in place) on `targets` ((N, 36)
    distributions) and the outcomes of `positions`; returns the mean losses of each epoch.

    `after_epoch` is called after each epoch with the fit's state (tensors, numbers and lists: `epoch`,
    `history`, the `policy`'s, `optimizer`'s and `schedule`'s state dicts and the minibatch
    `generator`'s state); given back as `saved`, the fit goes on after that epoch exactly as if it had
    never stopped."""
    import torch

    if positions.observations.shape[1:] != OBSERVATION_SHAPE or targets.shape != positions.masks.shape:
        raise ValueError(f"positions {positions.observations.shape} and targets {targets.shape} do not match")
    generator = torch.Generator().manual_seed(settings.seed)
    observations = torch.as_tensor(positions.observations)
    legal = torch.as_tensor(positions.masks)
    target = torch.as_tensor(targets)
    outcome = torch.as_tensor(positions.outcomes)
    optimizer = torch.optim.Adam(policy.parameters(), lr=settings.learning_rate)
    steps_per_epoch = -(-len(positions) // settings.batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: max(0.0, 1.0 - step / (settings.epochs * steps_per_epoch))
    )
    history: list[dict[str, float]] = []
    if saved is not None:
        policy.load_state_dict(saved["policy"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        generator.set_state(saved["generator"])
        history = [dict(row) for row in saved["history"]]
    done = len(history)
    bar = Progress(settings.epochs * len(positions), "position", description="fit", enabled=progress)
    bar.update(done * len(positions))
    policy.train()
    for epoch in range(done, settings.epochs):
        totals = {"cross_entropy": 0.0, "value_mse": 0.0}
        order = torch.randperm(len(positions), generator=generator)
        for start in range(0, len(positions), settings.batch_size):
            rows = order[start : start + settings.batch_size]
            logits, values = _heads(policy, observations[rows])
            log_p = torch.log_softmax(torch.where(legal[rows], logits, MASKED_LOGIT), dim=-1)
            cross_entropy = -(target[rows] * torch.where(legal[rows], log_p, 0.0)).sum(dim=-1).mean()
            value_mse = torch.mean((values - outcome[rows]) ** 2)
            loss = cross_entropy + settings.value_weight * value_mse
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            totals["cross_entropy"] += float(cross_entropy.detach()) * len(rows)
            totals["value_mse"] += float(value_mse.detach()) * len(rows)
            bar.update(len(rows))
        history.append({name: total / len(positions) for name, total in totals.items()} | {"epoch": epoch + 1})
        bar.write(  # progress, not an error: on stdout, as the run's other progress lines
            f"fit epoch {epoch + 1}/{settings.epochs}: cross-entropy {history[-1]['cross_entropy']:.4f}, "
            f"value MSE {history[-1]['value_mse']:.4f}",
            sys.stdout,
        )
        if after_epoch is not None:
            after_epoch(
                {
                    "epoch": epoch + 1,
                    "history": history,
                    "policy": policy.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(),
                    "generator": generator.get_state(),
                }
            )
    bar.close()
    policy.eval()
    return history
