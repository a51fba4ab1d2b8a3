"""Which optional extra brings each library the core does not install, so that a missing one is one line naming
the extra to install (`needs_extra`, `missing_extra`; exit status `EXIT_MISSING_EXTRA`), never a traceback. A
command's extras are declared in the registry (`Command.extras` in `strategic_reserve_env.__main__`), checked
before its code is imported; where torch is missing, its CPU build comes first (`TORCH_CPU_LINE`).
"""

from __future__ import annotations

import importlib.util

DISTRIBUTION = "strategic-reserve-env"  # the name pip installs

TORCH_REQUIREMENT = "torch==2.13.0"  # the release the project is tested with (the Makefile's `TORCH`)
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # PyTorch's CPU builds (the Makefile's `TORCH_INDEX`)
TORCH_CPU_LINE = f"pip install {TORCH_REQUIREMENT} --index-url {TORCH_CPU_INDEX}"  # before an extra with torch
EXIT_MISSING_EXTRA = 2  # the exit status of a command that lacks a library of an extra (as a usage error)

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

#: top-level module -> the extra named for it when the code that needs it declares none that brings it: the
#: first of `EXTRAS` that brings it (torch -> train, jax -> jax)
EXTRA_OF_MODULE = {module: extra for extra, modules in reversed(EXTRAS.items()) for module in modules}


class MissingExtraError(ImportError, ValueError):
    """A library of an optional extra is not installed: an `ImportError`, and a `ValueError` (one line)."""

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
    """The pip command that installs `extra`, after `TORCH_CPU_LINE` when it brings torch and torch is missing."""
    line = f"pip install '{DISTRIBUTION}[{extra}]'"
    return f"{TORCH_CPU_LINE}, then {line}" if "torch" in EXTRAS.get(extra, ()) and not _installed("torch") else line


def needs_extra(error: ModuleNotFoundError, what: str, declared: tuple[str, ...] = ()) -> MissingExtraError | None:
    """A `MissingExtraError` saying that `what` needs the library `error` could not import, naming the first of
    `declared` that brings it, else its own extra; None for a library of no extra (re-raise `error` then)."""
    module = (error.name or "").partition(".")[0]
    extra = next((name for name in declared if module in EXTRAS.get(name, ())), EXTRA_OF_MODULE.get(module))
    if extra is None:
        return None
    return MissingExtraError(f"{what} needs {module}, which is not installed: {install_line(extra)}", module, extra)


def missing_extra(declared: tuple[str, ...], what: str) -> MissingExtraError | None:
    """`needs_extra` of the first library of the extras `declared` not installed (imports nothing), or None."""
    for module in (module for extra in declared for module in EXTRAS[extra]):
        if not _installed(module):
            return needs_extra(ModuleNotFoundError(name=module), what, declared)
    return None
