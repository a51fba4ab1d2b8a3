"""Shared fixtures: the conformance records of tests/data/conformance and small helpers."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # render_mode="human" opens a window without a display
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import numpy as np
import pytest

from strategic_reserve_env.core import engine
from strategic_reserve_env.core.config import Config


# before any test module imports jax
def _jax_compilation_cache() -> None:
    """JAX's persistent compilation cache in a folder of this test session's own, shared by the xdist workers
    (they inherit the controller's environment) and every command they start: the pgx env, the mctx search and
    train-az compile the same functions in many processes, and a process that finds them compiled loads them
    instead. Only XLA's compiling is skipped (tracing, and so jit's own cache, is as without it); a max size
    makes JAX lock the folder, so no process reads an entry another is still writing. A session started with
    JAX_COMPILATION_CACHE_DIR set keeps its own."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="strategic-reserve-jax-cache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # in the process that made it: the controller
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")  # the many small ones too
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(JAX_CACHE_MAX_BYTES))


JAX_CACHE_MAX_BYTES = 2**30  # far over a session's entries (a few MB): it only turns JAX's file lock on
_jax_compilation_cache()


def _xla_quick_compiles() -> None:
    """XLA's CPU code in this session, and in every command it starts, compiled without LLVM's optimisation
    passes (`XLA_TEST_FLAGS`): the tests' small games spend far more time compiling than running, and the
    passes change how fast the code runs, not what it computes (the exact comparisons here hold either way).
    A session started with the flag in XLA_FLAGS keeps its own value."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {XLA_TEST_FLAGS}".strip()


XLA_TEST_FLAGS = "--xla_backend_optimization_level=0"
_xla_quick_compiles()

REPO = Path(__file__).resolve().parents[1]
CONFORMANCE = REPO / "tests" / "data" / "conformance"  # records with their expected traces (docs/RULES.md)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # what the commands stop on


def as_from_a_shell() -> None:
    """`preexec_fn` of a child process a test stops with a signal: SIGINT, SIGTERM and SIGHUP at their default
    disposition and unblocked, as a shell starts a command in the foreground. A child inherits an ignored or
    blocked signal from the process that starts it (the commands, as Python itself, leave an ignored signal
    ignored: `nohup` keeps SIGHUP away, a shell without job control starts a background job with SIGINT
    ignored), and a pytest-xdist worker was once seen (in CI, on one worker only) passing SIGINT on so that a
    child never saw its Ctrl-C."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_SIGNALS))


# the tests' own process (and every child that inherits from it) as a foreground command: a suite started by
# nohup or as a background job of a script would otherwise pass ignored stop signals on to what it tests
for _signum in STOP_SIGNALS:
    if signal.getsignal(_signum) == signal.SIG_IGN:
        signal.signal(_signum, signal.default_int_handler if _signum == signal.SIGINT else signal.SIG_DFL)


def conformance_records() -> list[Path]:
    """The record files of the conformance set (each has a .trace.jsonl beside it)."""
    records = sorted(CONFORMANCE.glob("*.json"))
    if not records:
        raise RuntimeError(f"no conformance records in {CONFORMANCE}: the checkout is incomplete")
    return records


def expected_trace(record: Path) -> str:
    """The expected trace text of a conformance record."""
    return record.with_name(record.stem + ".trace.jsonl").read_text()


def batch_of(configs: list[Config]) -> engine.State:
    """One batched state holding one game per config (start positions may differ)."""
    return engine.concatenate([engine.init(config, 1) for config in configs])


@pytest.fixture
def unwritable_directory(tmp_path) -> Path:
    """An existing directory this process cannot create files in (as root, which writes wherever a file system
    lets it: /proc)."""
    if os.geteuid() == 0:
        return Path("/proc")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return locked


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def random_start(rng: np.random.Generator, max_reserve: int = 12):
    """A random valid start position: random occupancy, at least one empty square."""
    from strategic_reserve_env.core.config import StartPosition

    density = rng.uniform(0.1, 0.9)
    cells = rng.choice(np.array(list(".RB")), size=36, p=[1 - density, density / 2, density / 2])
    cells[rng.integers(36)] = "."
    reserves = (int(rng.integers(1, max_reserve + 1)), int(rng.integers(1, max_reserve + 1)))
    return StartPosition("".join(cells), reserves, str(rng.choice(["red", "blue"])))


class RaceByRolls:
    """The default race value asked about each distinct position after a roll (`luck.distinct_rolls`, or
    `luck.every_roll` on arrays), as any value function of one's own is: the general path that the race
    value's own (its reserves after each roll's captures, `luck.roll_captures`) must equal bit for bit."""

    name = "race-by-rolls"

    def __call__(self, after):
        from strategic_reserve_env.core import luck

        return luck.DEFAULT_VALUE(after)
