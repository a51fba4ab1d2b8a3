"""The settings of a training run: dataclasses over `RunSettings` with a docstring per field, checked when made
(nothing read from disk, no agent loaded). A field's range, choices and role on `--resume` are its metadata
(`setting`), checked once by `RunSettings.__post_init__`.
"""

from __future__ import annotations

import math
import os
import types
import typing
from dataclasses import dataclass, field, fields

from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.core.outcome import REWARDS

FEATURES = ("mlp", "cnn")
DEVICES = ("cpu", "cuda")  # the torch device types a run is tested on (meta holds no data; mps lacks float64)
# narrower than the game's seed bound (core.dice.MAX_SEED): SB3 seeds numpy's global generator, which takes 32 bits
MAX_TRAINING_SEED = 2**32 - 1
OBSERVATION_SIZE = math.prod(OBSERVATION_SHAPE)  # 324 planes' cells, float32 in SB3's rollout buffer
ACTIONS = 36
DECISIONS_PER_GAME = 40  # an upper bound of the expert's decisions in a distillation game
CNN_FEATURES = 256  # BoardCNN's features_dim
MEMORY_MARGIN = 64 << 20  # bytes a run's state file may hold beyond what its settings size

ROLE, RANGE, CHOICES = "lifecycle", "range", "choices"  # the metadata keys of a settings field
MAY_CHANGE = "may change on resume"  # e.g. the run's length, its cadence of evaluations
PROCESS = "how this process runs"  # not a setting of the run: its folder, --resume, --restart


def setting(default, low=None, high=math.inf, *, open_low=False, choices=(), role=None):
    """A settings field: its `default`, its range `[low, high]` (`(low, high]` with `open_low`) or `choices`,
    and its `role` on `--resume` (None: it defines the run)."""
    metadata = {ROLE: role} if role else {}
    if low is not None:
        metadata[RANGE] = (low, high, open_low)
    if choices:
        metadata[CHOICES] = choices
    return field(default=default, metadata=metadata)


def changeable(default, *bounds, **options):
    """A `setting` a resumed run may change (`--resume --total-steps N`): not in the run's settings digest."""
    return setting(default, *bounds, role=MAY_CHANGE, **options)


def process_field(default):
    """A `setting` of how this process runs, not of what the run is (not in the digest, not compared)."""
    return setting(default, role=PROCESS)


def with_role(cls, role: str) -> tuple[str, ...]:
    """The names of the fields of the settings dataclass `cls` (or instance) of `role`."""
    return tuple(item.name for item in fields(cls) if item.metadata.get(ROLE) == role)


def defining(settings) -> dict:
    """The fields of `settings` that define the run (no `role`), tuples as lists (as settings.json holds them)."""
    return {
        item.name: list(value) if isinstance(value := getattr(settings, item.name), tuple) else value
        for item in fields(settings)
        if ROLE not in item.metadata
    }


def option(name: str) -> str:
    """The command-line option of a field: `n_envs` -> `--n-envs`."""
    return "--" + name.replace("_", "-")


def _is(value, kind) -> bool:
    """Whether `value` is of the annotated type `kind` (an `int` takes no bool or float; a `float` takes an int)."""
    if kind in (int, float):
        return isinstance(value, (int, kind)) and not isinstance(value, bool)
    if typing.get_origin(kind) is tuple:
        return isinstance(value, tuple) and all(_is(item, typing.get_args(kind)[0]) for item in value)
    return isinstance(value, kind)


def check_range(name: str, value: float, low: float, high: float = math.inf, open_low: bool = False) -> None:
    """`ValueError` naming the option unless `value` is finite and in [low, high] ((low, high] with `open_low`)."""
    if not math.isfinite(value) or value < low or value > high or (open_low and value == low):
        interval = f"{'(' if open_low else '['}{_number(low)}, {_number(high)}]" if math.isfinite(high) else None
        bound = interval or (f"> {_number(low)}" if open_low else f">= {_number(low)}")
        raise ValueError(f"{option(name)} must be {'in ' if interval else ''}{bound}, got {value!r:.40}")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) or value.is_integer() and abs(value) < 2**53 else f"{value:g}"


def opponent_mixture(text: str) -> list[tuple[str, float]]:
    """'random:1,greedy:2,self:1' -> [(name, weight), ...]; `ValueError` naming `--opponents` unless the weights
    are finite, >= 0, with a finite positive sum (the names are loaded by `pool`)."""
    mixture = []
    for item in filter(None, text.split(",")):
        name, _, weight = item.rpartition(":")
        try:
            value = float(weight)
        except ValueError:
            raise ValueError(f"--opponents: {item!r:.60} is not name:weight") from None
        if not name or not math.isfinite(value) or value < 0:
            raise ValueError(
                f"--opponents: the weight of {name!r:.60} must be a finite number >= 0, got {weight!r:.20}"
            )
        mixture.append((name, value))
    if not mixture or not 0 < sum(weight for _, weight in mixture) < math.inf:
        raise ValueError(
            f"--opponents needs at least one positive weight, and weights with a finite sum, got {text!r:.80}"
        )
    return mixture


@dataclass(frozen=True)
class RunSettings:
    """What every training command's settings share: the run's folder, how it starts and its seed."""

    seed: int = 0
    """Seed of everything random in the run (the dice, the opponents, the seats, the network), in 0..4294967295."""
    out: str = process_field("runs/run")
    """Output directory: the run's folder."""
    resume: bool = process_field(False)
    """Continue the run in --out from its last checkpoint with the settings it was started with (its
    settings.json); only the options the command's help names may be given again."""
    restart: bool = process_field(False)
    """Start over in an --out that holds another run of this command: its results, settings and checkpoints go
    first (files of no run are never removed)."""

    def __post_init__(self) -> None:
        """`ValueError` (one line naming the option) for the first field of the wrong type, out of its range or
        choices, --resume with --restart, or an empty --out."""
        hints = typing.get_type_hints(type(self))
        for item in fields(self):
            value, hint = getattr(self, item.name), hints[item.name]
            union = typing.get_origin(hint) in (typing.Union, types.UnionType)
            if not any(_is(value, kind) for kind in (typing.get_args(hint) if union else (hint,))):
                raise ValueError(f"{option(item.name)} must be {hint}, got {value!r:.60}")
        check_range("seed", self.seed, 0, MAX_TRAINING_SEED)
        if self.resume and self.restart:
            raise ValueError("--resume and --restart exclude each other: continue the run in --out, or start over")
        if not self.out:
            raise ValueError("--out must name a folder, got ''")
        for item in fields(self):
            value = getattr(self, item.name)
            if RANGE in item.metadata and value is not None:
                check_range(item.name, value, *item.metadata[RANGE])
            if CHOICES in item.metadata and value not in item.metadata[CHOICES]:
                choices = ", ".join(item.metadata[CHOICES])
                raise ValueError(f"{option(item.name)} must be one of {choices}, got {value!r:.40}")


@dataclass(frozen=True)
class PPOSettings(RunSettings):
    """The PPO hyperparameters of `train` (SB3) and `train-rllib` (RLlib), one name each."""

    n_epochs: int = setting(4, 1)
    """Passes over each rollout (or iteration's batch)."""
    learning_rate: float = setting(3e-4, 0, 1, open_low=True)
    """Adam learning rate, in (0, 1]."""
    gamma: float = setting(0.995, 0, 1, open_low=True)
    """Discount per decision, in (0, 1]; a game ends with +1 or -1 after 13 to 30 decisions per player."""
    gae_lambda: float = setting(0.95, 0, 1)
    """GAE lambda, in [0, 1]."""
    clip_range: float = setting(0.2, 0, 1, open_low=True)
    """PPO clip range, in (0, 1]."""
    ent_coef: float = setting(0.01, 0)
    """Entropy bonus (>= 0)."""


@dataclass(frozen=True)
class TrainSettings(PPOSettings):
    """Settings of a `train` run (every field is a command-line option)."""

    total_steps: int = changeable(0, 0)
    """PPO: learner decisions to train on (summed over the games); 0: none, the distilled network is the model."""
    n_envs: int = setting(512, 1)
    """Games played at once in one engine batch."""
    n_steps: int = setting(32, 1)
    """Steps per game between two PPO updates (the rollout is n_envs * n_steps)."""
    batch_size: int = setting(4096, 2)  # PPO normalises advantages over each minibatch
    """Minibatch size of the PPO update."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layers of the policy and value networks."""
    features: str = setting("mlp", choices=FEATURES)
    """Input network: "mlp" (flattened planes) or "cnn" (3x3 convolutions, agents/networks.py)."""
    cnn_channels: int = setting(32, 1)
    """Channels of the convolutions when --features cnn."""
    opponents: str = "random:1,greedy:3,self:1"
    """Opponent mixture, name:weight; names are agent specs or "self" (snapshots of the learner)."""
    snapshot_every: int = setting(500_000, 1)
    """Steps between two snapshots of the learner added to the pool."""
    max_snapshots: int = setting(4, 1)
    """Snapshots kept in the pool (the oldest leave first); at least 1 (no self-play: give "self" weight 0)."""
    eval_every: int = changeable(1_000_000, 0)
    """Steps between evaluations against random and greedy (0: none)."""
    eval_games: int = changeable(400)
    """Games per opponent in a periodic evaluation (paired dice)."""
    final_eval_games: int = changeable(2000)
    """Games per opponent in the final evaluation (paired dice)."""
    checkpoint_every: int = changeable(500_000, 1)
    """Steps between checkpoints (a resumed run loses at most this much; a signal writes one too)."""
    reward: str = setting("outcome", choices=REWARDS)
    """The learner's reward: "outcome" (+1 win, -1 loss) or "luck_adjusted" (minus its luck since its decision)."""
    out: str = process_field("runs/ppo")
    """Output directory: the run's folder (its settings, checkpoints, model and evaluation)."""
    device: str = changeable("cpu")
    """Torch device."""
    threads: int = changeable(1, 1, os.cpu_count() or 1)
    """Torch CPU threads, at most the machine's cores."""
    progress: bool = changeable(True)
    """Show progress: a bar on a terminal, a plain line every 30 s when stderr is a file or a pipe."""
    distill_games: int = setting(10_000, 0)
    """Distillation before PPO: games (even) the expert plays against each of --distill-opponents (0: none)."""
    distill_expert: str = "expectimax:depth=2"
    """The agent imitated: one with move_values(observations, masks, rng), e.g. expectimax or rollout."""
    distill_opponents: str = "greedy,expectimax:depth=2"
    """Comma-separated agent specs the expert plays against while its decisions are labelled."""
    distill_explore: float = setting(0.1, 0, 1)
    """Probability that the expert plays a random legal square instead (labels stay its own choice)."""
    distill_temperature: float = setting(0.0, 0)
    """0: the target is the expert's choice; > 0: softmax of its move values at this temperature."""
    distill_epochs: int = setting(10, 1)
    """Passes of the supervised fit over the labelled decisions."""
    distill_batch_size: int = setting(1024, 1)
    """Decisions per gradient step of the supervised fit."""
    distill_learning_rate: float = setting(1e-3, 0, 1, open_low=True)
    """Adam learning rate of the supervised fit (decayed linearly to 0), in (0, 1]."""
    distill_value_weight: float = setting(0.5, 0)
    """Weight of the value head's squared error (against the game's outcome) in the supervised loss."""

    def __post_init__(self) -> None:
        """`ValueError` (one line naming the option) for the first bad setting."""
        super().__post_init__()
        if self.n_envs * self.n_steps < 2:
            raise ValueError(
                f"--n-envs times --n-steps must be >= 2 (a rollout of one step has no advantage spread), "
                f"got {self.n_envs} x {self.n_steps}"
            )
        if self.distill_games % 2:
            raise ValueError(
                f"--distill-games must be even (each opponent is met as Red and as Blue), got {self.distill_games}"
            )
        if self.distill_games and not self.distill_opponent_specs:
            raise ValueError(f"--distill-opponents needs at least one agent spec, got {self.distill_opponents!r:.80}")
        for name in ("eval_games", "final_eval_games"):
            games = getattr(self, name)
            if games < 2 or games % 2:
                raise ValueError(f"{option(name)} must be an even number >= 2 (paired dice), got {games}")
        if not self.net_arch or any(size < 1 for size in self.net_arch):
            raise ValueError(f"--net-arch needs one or more sizes >= 1, got {list(self.net_arch)}")
        import torch

        try:
            device = torch.device(self.device)
        except RuntimeError:
            raise ValueError(f"--device {self.device!r:.40} is not a torch device (e.g. cpu, cuda)") from None
        if device.type not in DEVICES:
            raise ValueError(f"--device {self.device!r:.40}: training runs on {' or '.join(DEVICES)}")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"--device {self.device}: this torch build or machine has no CUDA device")
        if not self.distill_games and not self.total_steps:
            raise ValueError("--total-steps 0 and --distill-games 0: nothing to train")
        opponent_mixture(self.opponents)
        check_memory(self)

    @property
    def distill_opponent_specs(self) -> list[str]:
        """The agent specs of --distill-opponents."""
        return list(filter(None, self.distill_opponents.split(",")))


def memory_needed(settings: TrainSettings) -> dict[str, float]:
    """Bytes the run will allocate, roughly (from above), per setting that sizes them."""
    widths, channels = [*settings.net_arch], settings.cnn_channels
    if settings.features == "cnn":
        extractor = 9 * OBSERVATION_SHAPE[2] * channels + 2 * 9 * channels * channels + channels * 36 * CNN_FEATURES
        sizes = [CNN_FEATURES, *widths]
    else:
        extractor, sizes = 0, [OBSERVATION_SIZE, *widths]
    mlp = sum(a * b + b for a, b in zip(sizes, sizes[1:], strict=False)) * 2 + widths[-1] * (ACTIONS + 1)
    per_step = 4 * OBSERVATION_SIZE + ACTIONS + 4 * 8  # float32 observations, the masks, six float32 numbers
    activations = settings.batch_size * (4.0 * (sum(widths) * 2 + OBSERVATION_SIZE) * 3)
    if settings.features == "cnn":
        activations += settings.batch_size * 4.0 * channels * 36 * 3 * 3
    decisions = settings.distill_games * len(settings.distill_opponent_specs) * DECISIONS_PER_GAME
    network = 4.0 * (extractor + mlp) * (6 + settings.max_snapshots)  # weights, gradients, Adam, snapshots, copies
    return {
        "--net-arch" if settings.features == "mlp" else "--cnn-channels": network,
        "--n-envs x --n-steps (the rollout buffer)": float(settings.n_envs) * settings.n_steps * per_step,
        "--n-envs (the games)": 4096.0 * settings.n_envs,
        "--batch-size (the minibatch's activations)": activations,
        "--distill-games (the labelled decisions)": decisions * (OBSERVATION_SIZE + 3 * 4 * ACTIONS + 16.0),
    }


def max_file_bytes(settings: TrainSettings) -> int:
    """The largest file of a run's state (a checkpoint, the fit's state) read back: `memory_needed` but the
    distillation's, and a margin."""
    parts = memory_needed(settings)
    return int(sum(value for name, value in parts.items() if not name.startswith("--distill"))) + MEMORY_MARGIN


def check_memory(settings, needed=memory_needed) -> None:
    """`ValueError` naming the setting that takes most when `needed(settings)` (bytes per setting) exceeds this
    machine's memory."""
    parts = needed(settings)
    total = sum(parts.values())
    try:
        available = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # the system does not say
        available = math.inf
    if total > available:
        name, largest = max(parts.items(), key=lambda item: item[1])
        raise ValueError(
            f"{name}: these settings would allocate about {total / 2**30:,.1f} GiB ({largest / 2**30:,.1f} GiB for "
            f"{name.split(' ')[0]}), more than this machine's {available / 2**30:,.1f} GiB of memory"
        )
