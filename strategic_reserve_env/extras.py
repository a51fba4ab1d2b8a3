"""Which optional extra of `strategic-reserve-env` brings each library that the core does not install.

The core needs numpy, Pillow, Gymnasium and PettingZoo only. A command or an agent spec that needs more (scipy for
the evaluation's intervals, torch for the networks, ray for RLlib) says so in one line naming the extra to
install, through `needs_extra`, instead of a `ModuleNotFoundError` traceback.

One rule for every command (`strategic_reserve_env.__main__`): a command that declares extras (its
`Command.extras` in the registry: `train`, `train-rllib`, `train-az`) has them checked by
`missing_extra` before its code is imported, so before it reads or writes anything (`--help` aside, which
writes nothing and shows the options without the extra where the command's module imports); a library missing
later (an agent spec's, or one a command imports) is named the same way. The hint names the extra that brings
the missing library for that command (`train-rllib` without torch: `[rllib]`, not `[train]`), and the
exit status is `EXIT_MISSING_EXTRA` (2, as for any other refusal before a command starts).

An extra that brings torch (`train`, `rllib`) while torch is not installed is named after the command that
installs torch's CPU build (`TORCH_REQUIREMENT` from `TORCH_CPU_INDEX`): on Linux, PyPI's torch is the CUDA build
with about 3 GB of NVIDIA libraries, and pip keeps a torch already installed that satisfies the extra. The
Makefile (`TORCH`, `TORCH_INDEX`), the README and docs/installation.md name the same command.
"""

from __future__ import annotations

import importlib.util

DISTRIBUTION = "strategic-reserve-env"  # the name pip installs

TORCH_REQUIREMENT = "torch==2.13.0"
"""The torch release the project is tested with (the Makefile's `TORCH`, constraints-cpu.txt)."""

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's index of CPU builds (the Makefile's `TORCH_INDEX`)."""

TORCH_CPU_LINE = f"pip install {TORCH_REQUIREMENT} --index-url {TORCH_CPU_INDEX}"
"""The command that installs torch's CPU build, before an extra that brings torch."""

EXIT_MISSING_EXTRA = 2
"""The exit status of a command refused because a library of an optional extra is not installed (nothing run,
nothing written: as a usage error)."""

#: extra of pyproject.toml -> the top-level modules it brings (by import name), in the order they are checked
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "stable_baselines3", "sb3_contrib", "safetensors", "tqdm", "scipy", "matplotlib", "tensorboard"),
    "rllib": ("ray", "torch"),
    "jax": ("jax", "jaxlib", "pgx"),
    "mctx": ("jax", "jaxlib", "pgx", "mctx", "optax", "safetensors", "tensorboard"),
    "openspiel": ("pyspiel", "open_spiel"),
    "render": ("pygame",),
    "docs": ("mkdocs",),
}

#: top-level module -> the extra named for it when the code that needs it declared none that brings it (the
#: first extra of :data:`EXTRAS` that brings it: torch -> train, jax -> jax)
EXTRA_OF_MODULE: dict[str, str] = {}
for _extra, _modules in EXTRAS.items():
    for _module in _modules:
        EXTRA_OF_MODULE.setdefault(_module, _extra)


class MissingExtraError(ImportError, ValueError):
    """A library of an optional extra is not installed. An `ImportError` (what it is) and a `ValueError`
    (what the commands report in one line for an agent spec they cannot load)."""

    def __init__(self, message: str, module: str, extra: str) -> None:
        super().__init__(message, name=module)
        self.extra = extra


def _installed(module: str) -> bool:
    """Whether `module` can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module entry without a spec, or a broken install
        return False


def install_line(extra: str) -> str:
    """The pip command that installs `extra`: after `TORCH_CPU_LINE` when the extra brings torch and torch is
    not installed (else pip would take PyPI's CUDA build of torch on Linux)."""
    line = f"pip install '{DISTRIBUTION}[{extra}]'"
    if "torch" in EXTRAS.get(extra, ()) and not _installed("torch"):
        return f"{TORCH_CPU_LINE}, then {line}"
    return line


def _missing(module: str, what: str, declared: tuple[str, ...]) -> MissingExtraError | None:
    """The error for `module` missing in `what`: the first of `declared` that brings it, else the module's
    own extra; None for a module of no extra."""
    extra = next((name for name in declared if module in EXTRAS.get(name, ())), EXTRA_OF_MODULE.get(module))
    if extra is None:
        return None
    return MissingExtraError(f"{what} needs {module}, which is not installed: {install_line(extra)}", module, extra)


def needs_extra(error: ModuleNotFoundError, what: str, declared: tuple[str, ...] = ()) -> MissingExtraError | None:
    """A one-line `MissingExtraError` saying that `what` (e.g. `strategic-reserve evaluate` or
    `agent spec 'ppo'`) needs the library `error` could not import, and the extra to install (the first of
    `declared`, the extras `what` needs, that brings it); None when that library is not one of an extra's
    (the error is then someone else's: re-raise it)."""
    return _missing((error.name or "").partition(".")[0], what, declared)


def missing_extra(declared: tuple[str, ...], what: str) -> MissingExtraError | None:
    """The `MissingExtraError` of the first library of the extras `declared` that is not installed
    (found without importing anything), None when all are."""
    for extra in declared:
        for module in EXTRAS[extra]:
            if not _installed(module):
                return _missing(module, what, declared)
    return None


__all__ = [
    "DISTRIBUTION",
    "EXIT_MISSING_EXTRA",
    "EXTRAS",
    "EXTRA_OF_MODULE",
    "MissingExtraError",
    "TORCH_CPU_INDEX",
    "TORCH_CPU_LINE",
    "TORCH_REQUIREMENT",
    "install_line",
    "missing_extra",
    "needs_extra",
]
