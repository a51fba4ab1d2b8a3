"""The supervised phase before PPO (agents/distill.py), kept in the run folder as it goes.

The expert's labelled decisions go to `distillation/labels_NNNN.npz` a chunk of games at a time (numbers only,
each with the `Cursor` after it); the fit's state to `distillation/fit.pt` after each epoch. A resumed run goes
on where it stopped, with the result of one that never stopped. Each file carries the run id and settings
digest (`folder.identity`) and is checked before the run writes anything (`check_saved`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import torch

from strategic_reserve_env.agents import distill, load_agent
from strategic_reserve_env.core.board import is_integer
from strategic_reserve_env.core.config import DEFAULT_PLY_LIMIT
from strategic_reserve_env.core.observation import OBSERVATION_SHAPE
from strategic_reserve_env.files import outputs, safe_json
from strategic_reserve_env.files.model_files import npz_arrays, npz_headers
from strategic_reserve_env.files.progress import Progress

from .checkpoint import all_finite, load_tensors
from .folder import IDENTITY, check_belongs, identity
from .run import say
from .settings import OBSERVATION_SIZE, TrainSettings, max_file_bytes

FOLDER = "distillation"
FIT_FILE = "fit.pt"
CHUNK_GAMES = 500  # games labelled per chunk file
MAX_DECISIONS_PER_GAME = DEFAULT_PLY_LIMIT // 2 + 1  # a player decides at most every other ply
# a chunk's file is at most its arrays uncompressed (int8 planes, bool masks, float64 values, float32 outcome)
# and the zip's own bytes
MAX_CHUNK_BYTES = CHUNK_GAMES * MAX_DECISIONS_PER_GAME * (OBSERVATION_SIZE + 36 + 8 * 36 + 4) + (1 << 20)
RUN_ID_BYTES, HASH_BYTES = 32, 64  # the run id and the settings' digest, as ASCII hex digits


def distill_agents(settings: TrainSettings) -> tuple[object, list]:
    """The distillation's expert and opponents; `ValueError` if a spec does not load or the expert has no
    `move_values`."""
    expert = load_agent(settings.distill_expert)
    if not callable(getattr(expert, "move_values", None)):
        raise ValueError(
            f"--distill-expert {settings.distill_expert!r:.60} has no move_values(observations, masks, rng)"
        )
    opponents = [load_agent(spec) for spec in settings.distill_opponent_specs]
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
        "run_id": ("uint8", (RUN_ID_BYTES,)),
        "settings_hash": ("uint8", (HASH_BYTES,)),
    }


def write_chunk(path: Path, positions: distill.Positions, cursor: distill.Cursor, belongs: tuple[str, str]) -> None:
    """One chunk of labelled decisions and the cursor after it, an .npz of numbers written atomically, with the
    run id and settings digest it `belongs` to."""
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
            **identity(belongs, arrays=True),
        )


def read_chunk(
    path: Path, opponents: int, games: int, belongs: tuple[str, str] | None = None
) -> tuple[distill.Positions, distill.Cursor]:
    """A chunk of `write_chunk`, checked (`ValueError` naming the file): a regular file of a bounded size, its
    arrays' headers before any is read, then its values, what it `belongs` to (when given), its cursor."""
    with safe_json.open_regular(path, MAX_CHUNK_BYTES):
        pass
    headers = npz_headers(path)
    decisions = headers["masks"].shape[0] if "masks" in headers and headers["masks"].shape else -1
    expected = _expected(decisions)
    if {name: (t.dtype, t.shape) for name, t in headers.items()} != expected:
        raise ValueError(f"{path}: not a chunk of labelled decisions (arrays {sorted(headers)})")
    if not 0 < decisions <= CHUNK_GAMES * MAX_DECISIONS_PER_GAME:
        raise ValueError(f"{path}: {decisions} decisions, more than {CHUNK_GAMES} games can hold")
    loaded = npz_arrays(path, expected)
    values, outcomes = loaded["values"], loaded["outcomes"]  # a value NaN: a square the expert did not search
    if np.isinf(values).any() or np.isnan(values).all(axis=-1).any():
        raise ValueError(f"{path}: its values hold infinities or a decision with no searched square (damaged?)")
    if not (np.isfinite(outcomes) & (np.abs(outcomes) <= 1)).all():
        raise ValueError(f"{path}: its outcomes are not all finite numbers in -1..1 (damaged?); they are not used")
    if belongs is not None:
        check_belongs(path, loaded, belongs)
    cursor = distill.Cursor(int(loaded["opponent"]), int(loaded["start"]), loaded["generators"])
    if not (0 <= cursor.opponent < opponents and 0 < cursor.start <= games):
        raise ValueError(f"{path}: its cursor (opponent {cursor.opponent}, game {cursor.start}) is not of this run")
    positions = distill.Positions(loaded["observations"], loaded["masks"], loaded["values"], loaded["outcomes"])
    return positions, cursor


def saved_chunks(folder: Path, opponents: int, settings: TrainSettings, belongs: tuple[str, str]):
    """The chunks of labels in `folder`, read back in order (`read_chunk`)."""
    number = 0
    while os.path.lexists(_chunk_path(folder, number)):
        yield read_chunk(_chunk_path(folder, number), opponents, settings.distill_games, belongs)
        number += 1


def check_saved(out: Path, settings: TrainSettings, belongs: tuple[str, str]) -> None:
    """`ValueError` naming the first file of `out`'s distillation that does not load or is not this run's."""
    folder = out / FOLDER
    if not folder.is_dir() or folder.is_symlink():
        return
    opponents = len(settings.distill_opponent_specs)
    for _ in saved_chunks(folder, opponents, settings, belongs):
        pass
    read_fit(folder / FIT_FILE, settings, belongs)


def label(
    expert, opponents: list, settings: TrainSettings, folder: Path, belongs: tuple[str, str]
) -> distill.Positions:
    """The expert's labelled decisions: those in `folder`, then the rest, each chunk written as it is made."""
    folder.mkdir(exist_ok=True)
    parts, cursor = [], None
    for positions, after in saved_chunks(folder, len(opponents), settings, belongs):
        parts.append(positions)
        cursor = after
    games = settings.distill_games
    done = 0 if cursor is None else cursor.opponent * games + cursor.start
    if parts:
        say(f"distillation: {len(parts)} chunk(s) of labelled decisions read back ({done} games)")
    bar = Progress(games * len(opponents), "game", description="expert games", initial=done, enabled=settings.progress)
    chunks = distill.labelled_chunks(
        expert, opponents, games, settings.seed, settings.distill_explore, batch=CHUNK_GAMES, after=cursor
    )
    for positions, cursor, played in chunks:
        write_chunk(_chunk_path(folder, len(parts)), positions, cursor, belongs)
        parts.append(positions)
        bar.update(played)
    bar.close()
    return distill.Positions.concatenate(parts)


def read_fit(path: Path, settings: TrainSettings, belongs: tuple[str, str]) -> dict | None:
    """The fit's state of `path` (None if there is none); `ValueError` if it is too large for the run's network,
    does not load, is not what the fit saves, or is not this run's."""
    if not os.path.lexists(path):
        return None
    try:
        saved = load_tensors(path, max_file_bytes(settings))
    except ValueError as error:
        raise ValueError(f"{path}: does not load ({error})") from None
    if not isinstance(saved, dict) or not all(isinstance(saved.get(key), str) for key in IDENTITY):
        raise ValueError(f"{path}: not the state of a distillation fit of this version (no run id)")
    check_belongs(path, saved, belongs)
    saved = {key: value for key, value in saved.items() if key not in IDENTITY}
    keys = {"epoch", "history", "policy", "optimizer", "schedule", "generator"}
    epoch = saved.get("epoch") if isinstance(saved, dict) else None
    if (
        set(saved) != keys
        or not is_integer(epoch)
        or not isinstance(saved["history"], list)
        or len(saved["history"]) != epoch
        or not isinstance(saved["generator"], torch.Tensor)
    ):
        raise ValueError(f"{path}: not the state of a distillation fit")
    if not 0 < epoch <= settings.distill_epochs or not all_finite([saved["policy"], saved["optimizer"]]):
        raise ValueError(f"{path}: its epoch or its network's numbers are out of range (NaN?); it is not used")
    return saved


def distill_policy(policy, settings: TrainSettings, out: Path, belongs: tuple[str, str], experts) -> None:
    """Label the expert's decisions and fit `policy` (in place) to them, going on from what `out` holds;
    `experts`: `distill_agents`. Prints how often the network now agrees."""
    from torch.utils.tensorboard import SummaryWriter

    expert, opponents = experts
    folder = out / FOLDER
    start = time.perf_counter()
    positions = label(expert, opponents, settings, folder, belongs)
    labelled = time.perf_counter()
    say(
        f"distillation: {len(positions):,} decisions of {expert.name} in {settings.distill_games} games against each "
        f"of {', '.join(o.name for o in opponents)} ({labelled - start:.0f} s)"
    )
    targets = distill.expert_targets(positions, settings.distill_temperature)
    fit = ("epochs", "batch_size", "learning_rate", "value_weight")  # --distill-NAME: the fit's NAME
    fit_settings = distill.FitSettings(
        **{name: getattr(settings, f"distill_{name}") for name in fit}, seed=settings.seed
    )
    saved = read_fit(folder / FIT_FILE, settings, belongs)
    if saved is not None:
        say(f"distillation: the fit goes on after epoch {saved['epoch']}")
    with outputs.naming(out / "tb" / "distillation"), SummaryWriter(str(out / "tb" / "distillation")) as writer:

        def after_epoch(state: dict) -> None:
            row = state["history"][-1]
            for name in ("cross_entropy", "value_mse"):
                writer.add_scalar(f"distill/{name}", row[name], state["epoch"])
            writer.flush()
            with outputs.atomic(folder / FIT_FILE) as handle:
                torch.save(state | identity(belongs), handle)

        history = distill.fit(
            policy, positions, targets, fit_settings, progress=settings.progress, saved=saved, after_epoch=after_epoch
        )
        agreement = distill.agreement(policy, positions, distill.expert_targets(positions))
        writer.add_scalar("distill/agreement", agreement, len(history))
    say(
        f"distillation: fit in {time.perf_counter() - labelled:.0f} s, cross-entropy "
        f"{history[-1]['cross_entropy']:.3f}, the network plays the expert's choice in {100 * agreement:.1f} % of "
        f"its decisions"
    )
