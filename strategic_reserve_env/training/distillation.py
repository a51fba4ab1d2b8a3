"""The supervised phase before PPO (agents/distill.py), kept in the run folder as it goes.

The expert's labelled decisions are written to ``distillation/labels_NNNN.npz`` chunk by chunk as they are
made (500 games a chunk; numbers only, written atomically), each with the :class:`~.distill.Cursor` after
it; the fit writes its state after each epoch to ``distillation/fit.pt`` (tensors and numbers, read with
``weights_only=True``). A run stopped during the distillation goes on with ``--resume`` where it stopped:
the chunks already labelled are read back (checked from their headers before any array is read: the
arrays and shapes a chunk holds, its decisions at most what its games can hold), the labelling goes on
after the last one, and the fit after its last epoch, with the same result as a run that never stopped.
The fit's losses per epoch and the final agreement with the expert go to TensorBoard (``tb/distillation``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from strategic_reserve_env import outputs
from strategic_reserve_env.agents import distill, load_agent
from strategic_reserve_env.config import DEFAULT_PLY_LIMIT
from strategic_reserve_env.model_files import npz_headers
from strategic_reserve_env.observation import OBSERVATION_SHAPE
from strategic_reserve_env.progress import Progress

from .settings import TrainSettings

FOLDER = "distillation"
FIT_FILE = "fit.pt"
CHUNK_GAMES = 500  # games labelled per chunk file
MAX_DECISIONS_PER_GAME = DEFAULT_PLY_LIMIT // 2 + 1  # a player decides at most every other ply


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


def _chunk_path(folder: Path, number: int) -> Path:
    return folder / f"labels_{number:04d}.npz"


def _expected(decisions: int) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {
        "observations": ("int8", (decisions, *OBSERVATION_SHAPE)),
        "masks": ("bool", (decisions, 36)),
        "values": ("float64", (decisions, 36)),
        "outcomes": ("float32", (decisions,)),
        "opponent": ("int64", ()),
        "start": ("int64", ()),
        "generators": ("uint64", (2, 6)),
    }


def write_chunk(path: Path, positions: distill.Positions, cursor: distill.Cursor) -> None:
    """One chunk of labelled decisions and the cursor after it, as an .npz of numbers, atomically."""
    with outputs.atomic(path) as handle:
        np.savez_compressed(
            handle,
            observations=positions.observations.astype(np.int8),
            masks=positions.masks.astype(bool),
            values=positions.values.astype(np.float64),
            outcomes=positions.outcomes.astype(np.float32),
            opponent=np.int64(cursor.opponent),
            start=np.int64(cursor.start),
            generators=cursor.generators.astype(np.uint64),
        )


def read_chunk(path: Path, opponents: int, games: int) -> tuple[distill.Positions, distill.Cursor]:
    """A chunk of :func:`write_chunk`, checked from its headers before any array is read (``ValueError``
    naming the file): the arrays and their shapes, at most :data:`MAX_DECISIONS_PER_GAME` decisions per game
    of a chunk, a cursor within ``opponents`` and ``games``."""
    headers = npz_headers(path)
    decisions = headers["masks"].shape[0] if "masks" in headers and headers["masks"].shape else -1
    expected = _expected(decisions)
    if {name: (t.dtype, t.shape) for name, t in headers.items()} != expected:
        raise ValueError(f"{path}: not a chunk of labelled decisions (arrays {sorted(headers)})")
    if not 0 < decisions <= CHUNK_GAMES * MAX_DECISIONS_PER_GAME:
        raise ValueError(f"{path}: {decisions} decisions, more than {CHUNK_GAMES} games can hold")
    with np.load(path, allow_pickle=False) as arrays:
        loaded = {name: arrays[name] for name in expected}
    cursor = distill.Cursor(int(loaded["opponent"]), int(loaded["start"]), loaded["generators"])
    if not (0 <= cursor.opponent < opponents and 0 < cursor.start <= games):
        raise ValueError(f"{path}: its cursor (opponent {cursor.opponent}, game {cursor.start}) is not of this run")
    positions = distill.Positions(loaded["observations"], loaded["masks"], loaded["values"], loaded["outcomes"])
    return positions, cursor


def label(expert, opponents: list, settings: TrainSettings, folder: Path) -> distill.Positions:
    """The expert's labelled decisions: those already in ``folder``, then the rest, each chunk written as it
    is made."""
    folder.mkdir(exist_ok=True)
    parts, cursor = [], None
    while _chunk_path(folder, len(parts)).exists():
        positions, cursor = read_chunk(_chunk_path(folder, len(parts)), len(opponents), settings.distill_games)
        parts.append(positions)
    games = settings.distill_games
    done = 0 if cursor is None else cursor.opponent * games + cursor.start
    if parts:
        print(f"distillation: {len(parts)} chunk(s) of labelled decisions read back ({done} games)", flush=True)
    bar = Progress(games * len(opponents), "game", description="expert games", initial=done, enabled=settings.progress)
    chunks = distill.labelled_chunks(
        expert, opponents, games, settings.seed, settings.distill_explore, batch=CHUNK_GAMES, after=cursor
    )
    for positions, cursor, played in chunks:
        write_chunk(_chunk_path(folder, len(parts)), positions, cursor)
        parts.append(positions)
        bar.update(played)
    bar.close()
    return distill.Positions.concatenate(parts)


def read_fit(path: Path) -> dict | None:
    """The fit's state of ``path`` (None if there is none); ``ValueError`` if it does not load or its
    contents are not what :func:`agents.distill.fit` saves."""
    if not path.exists():
        return None
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for damaged or crafted files
        raise ValueError(f"{path}: does not load ({type(error).__name__})") from None
    keys = {"epoch", "history", "policy", "optimizer", "schedule", "generator"}
    epoch = saved.get("epoch") if isinstance(saved, dict) else None
    if (
        set(saved) != keys
        or not isinstance(epoch, int)
        or isinstance(epoch, bool)
        or not isinstance(saved["history"], list)
        or len(saved["history"]) != epoch
        or not isinstance(saved["generator"], torch.Tensor)
    ):
        raise ValueError(f"{path}: not the state of a distillation fit")
    return saved


def distill_policy(policy, settings: TrainSettings, out: Path) -> None:
    """Label the expert's decisions and fit ``policy`` (in place) to them, going on from what ``out`` holds
    (see the module docstring); prints what it did and how often the network now agrees with the expert."""
    from torch.utils.tensorboard import SummaryWriter

    expert, opponents = distill_agents(settings)
    folder = out / FOLDER
    start = time.perf_counter()
    positions = label(expert, opponents, settings, folder)
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
    saved = read_fit(folder / FIT_FILE)
    if saved is not None:
        print(f"distillation: the fit goes on after epoch {saved['epoch']}", flush=True)
    with SummaryWriter(str(out / "tb" / "distillation")) as writer:

        def after_epoch(state: dict) -> None:
            row = state["history"][-1]
            for name in ("cross_entropy", "value_mse"):
                writer.add_scalar(f"distill/{name}", row[name], state["epoch"])
            writer.flush()
            with outputs.atomic(folder / FIT_FILE) as handle:
                torch.save(state, handle)

        history = distill.fit(
            policy, positions, targets, fit_settings, progress=settings.progress, saved=saved, after_epoch=after_epoch
        )
        agreement = distill.agreement(policy, positions, distill.expert_targets(positions))
        writer.add_scalar("distill/agreement", agreement, len(history))
    print(
        f"distillation: fit in {time.perf_counter() - labelled:.0f} s, cross-entropy "
        f"{history[-1]['cross_entropy']:.3f}, the network plays the expert's choice in {100 * agreement:.1f} % of "
        f"its decisions",
        flush=True,
    )
